"""The spec files shipped inside the package."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from importlib import resources
from pathlib import Path

BUNDLED_TWO_RUNTIME = (
    "reconciliation.spec",
    "two_runtime_recreate_index.spec",
    "two_runtime_recreate_race.spec",
    "compaction.spec",
    "drops.spec",
    "two_indexes.spec",
    "reconnects.spec",
    "rows.spec",
    "reused_id.spec",
    "held_compaction.spec",
    "divergent_compaction_interactive_only.spec",
    "divergent_compaction_maintenance_only.spec",
    "divergent_drop_interactive_only.spec",
    "divergent_drop_maintenance_only.spec",
    "divergent_create_interactive_only.spec",
    "divergent_create_maintenance_only.spec",
    "typed_schemas.spec",
    "synthetic_rows.spec",
    "spec_syntax.spec",
    "project.spec",
    "reduce_count.spec",
    "join.spec",
    "exports_and_until.spec",
    "as_of.spec",
    "mv_sink.spec",
    "mv_correction.spec",
    "mv_foreign_write.spec",
    "subscribe.spec",
    "counting.spec",
    "peek_budget.spec",
    "configuration.spec",
    "query_dataflow.spec",
    "query_while_maintenance_held.spec",
    "placement_by_class.spec",
    "interactive_dataflows_off.spec",
    "transient_subscribe.spec",
    "deferred_import.spec",
    "reexports.spec",
    "await_frontier.spec",
    "input_errors.spec",
    "lookup_errors.spec",
    "reconnect_dataflows.spec",
    "arithmetic.spec",
    "union_negate_threshold.spec",
    "top_k.spec",
    "flat_map.spec",
    "let.spec",
    "explain.spec",
    "holds_counterexample.spec",
    "hold_gap.spec",
    "holds_reconnect_untaken.spec",
    "holds_reconnect_taken.spec",
    "holds_recreate_same_incarnation.spec",
    "holds_reexport_reconnect.spec",
)


@contextmanager
def bundled_spec(name: str) -> Iterator[Path]:
    """A path to bundled spec ``name``, valid inside the block (works from an
    installed package, in any directory)."""
    with resources.as_file(resources.files("replica.driver") / "specs" / name) as path:
        yield path
