"""``run --topologies``: every spec on several topologies, and a table of the
results, one row a spec and one column a topology; then the mismatches, as
``run`` prints them, under the run they belong to; then the totals and the
wall time."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import TextIO

from ..lang._escape import escaped
from ..lang._spec import Spec
from ._report import report, report_violations
from ._runner import SpecRun, Topology

TOPOLOGIES: dict[str, Topology] = {
    "solo-w1": Topology(processes=1, workers=1, interactive=False),
    "solo-w2p2": Topology(processes=2, workers=2, interactive=False),
    "two-w1": Topology(processes=1, workers=1),
    "two-w2": Topology(processes=1, workers=2),
    "two-w2p2": Topology(processes=2, workers=2),
}
"""The topologies by name: ``solo`` is one runtime, ``two`` both; ``wN`` the
workers a process, ``p2`` two processes a runtime (one without it)."""

ALL = "all"

Run = Callable[[Spec, Topology, int], SpecRun]


def topology_names(text: str) -> tuple[str, ...]:
    """The names ``--topologies`` gives: ``all``, or a comma-separated list
    of names of :data:`TOPOLOGIES`, each once; :class:`ValueError` otherwise."""
    if text == ALL:
        return tuple(TOPOLOGIES)
    names = tuple(text.split(","))
    for index, name in enumerate(names):
        if name not in TOPOLOGIES:
            raise ValueError(
                f"unknown topology {name!r} (all, or a comma-separated list of "
                f"{', '.join(TOPOLOGIES)})"
            )
        if name in names[:index]:
            raise ValueError(f"topology {name!r} is named twice")
    return names


def matrix_command(
    specs: Sequence[Spec], topologies: Mapping[str, Topology], seed: int, run: Run, out: TextIO
) -> int:
    """Run every spec on every topology with ``run``; print the table (a row
    as soon as its spec ran everywhere), the failed runs' mismatches and the
    totals. A cell is ``ok`` or ``FAIL (n)``: ``n`` stanzas differed or
    invariants broke. Exit 0 when every run passed, else 1."""
    start = time.perf_counter()
    width = max(len("spec"), *(len(escaped(spec.path)) for spec in specs))
    column = max(len("FAIL (999)"), *(len(name) for name in topologies))

    def row(first: str, cells: Sequence[str]) -> None:
        line = f"{first:<{width}}" + "".join(f"  {cell:<{column}}" for cell in cells)
        print(line.rstrip(), file=out, flush=True)

    row("spec", list(topologies))
    failed: list[tuple[Spec, str, Topology, SpecRun]] = []
    for spec in specs:
        cells: list[str] = []
        for name, topology in topologies.items():
            result = run(spec, topology, seed)
            bad = sum(not outcome.matched for outcome in result.outcomes)
            bad += len(result.violations)
            cells.append(f"FAIL ({bad})" if bad else "ok")
            if bad:
                failed.append((spec, name, topology, result))
            else:
                # A passing run's warnings (a misfit, an unknown id) on stderr.
                report_violations(spec, result, out)
        row(escaped(spec.path), cells)
    for spec, name, topology, result in failed:
        print(f"\n{escaped(spec.path)} on {name}:", file=out)
        report(spec, result.outcomes, topology, out)
        report_violations(spec, result, out)
    runs = len(specs) * len(topologies)
    seconds = time.perf_counter() - start
    print(
        f"\n{runs} runs ({len(specs)} specs on {len(topologies)} topologies): "
        f"{runs - len(failed)} passed, {len(failed)} failed, in {seconds:.1f}s",
        file=out,
    )
    return 1 if failed else 0
