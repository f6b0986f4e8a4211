"""Which mechanism keeps a shared arrangement readable by the runtime that
reads it (docs/protocol.md, "Read holds and physical compaction"), and the
gauges that show what it costs.

``publisher`` is the design of record: the publishing runtime registers a
peer hold when it publishes an index, and the reading runtime takes it over
when it records the peer; ``AllowCompaction`` on the reader's stream moves it.
``broadcast`` and ``routed`` are the designs the real team refuted with
TLA+, kept as diagnostic, UNSAFE switches: every command reaches both
runtimes but no peer holds anything (``broadcast``), or, in addition, a
compaction reaches only the runtime that renders the collection (``routed``).
Under either, maintenance may compact a shared arrangement past the ``as_of``
of a dataflow the interactive runtime has yet to build, whose import then
panics (I1).
"""

from __future__ import annotations

import enum

HOLD_GAP = "mz_compute_shared_arrangement_hold_gap_ms"
"""The largest difference, over the arrangements a maintenance worker
publishes, between the compaction frontier the controller allowed and the
one the holds let the arrangement apply (in virtual milliseconds: a
timestamp is one). ``metrics`` reads the largest over the workers."""

HELD_COUNT = "mz_compute_shared_arrangement_held_count"
"""How many of the arrangements a maintenance worker publishes are held back
at all. ``metrics`` reads the largest over the workers."""


class HoldMechanism(enum.StrEnum):
    """How the reading runtime keeps a shared arrangement from compacting
    past what it has yet to read (``--holds``)."""

    PUBLISHER = "publisher"
    """The design of record: peer holds registered by the publisher."""
    BROADCAST = "broadcast"
    """Refuted: every command to both runtimes, no peer hold. UNSAFE."""
    ROUTED = "routed"
    """Refuted: a compaction reaches only the renderer, no peer hold. UNSAFE."""
