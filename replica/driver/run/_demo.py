"""``trio-reconcile demo``: the race, and the barrier that fixes it."""

from __future__ import annotations

from typing import TextIO

import actors

from ..lang._spec import read_spec
from ..pictures._timeline import Panel, render
from ._bundled import bundled_spec
from ._paths import write_text
from ._runner import Outcome, Topology, run_spec

SPEC = "two_runtime_recreate_index.spec"
COLUMN = 44
WORKERS = ("maintenance/p0/w0", "interactive/p0/w0")


def demo(seed: int, out: TextIO, timeline: str | None = None) -> int:
    """Run the recreate scenario with the barrier off, then on; print each run's
    reconcile phases per worker on virtual time, and the final read. Exit 0
    when the race shows without the barrier and the fix with it."""
    with bundled_spec(SPEC) as path:
        spec = read_spec(path, SPEC)
    print(
        "Index 1001 is recreated at the same as_of under a new key while the maintenance\n"
        "runtime is held; then the interactive runtime serves a read of it.\n",
        file=out,
    )
    results = []
    panels: list[Panel] = []
    for barrier in (False, True):
        topology = Topology(processes=1, workers=1, interactive=True, barrier=barrier)
        trace = actors.Trace()
        outcomes = run_spec(spec, topology, seed=seed, trace=trace).outcomes
        title = "barrier ON (the default)" if barrier else "barrier OFF (--no-barrier, unsafe)"
        print(f"== {title}", file=out)
        _timeline(trace, outcomes[-1], out)
        read = outcomes[-1]
        print(f"   final read: {' | '.join(read.actual)}", file=out)
        note = f"read: {read.actual[0]}"
        panels.append(Panel.from_trace(title, trace, note, start="reconcile position=1"))
        matched = all(outcome.matched for outcome in outcomes)
        results.append(matched if barrier else read.actual[0].startswith("error: timed out"))
        print(file=out)
    if timeline is not None:
        write_text("--timeline", timeline, render(panels))
        print(f"wrote the timelines of both runs to {timeline}\n", file=out)
    race, fix = results
    print(
        "without the barrier the interactive peer bound the incarnation maintenance was "
        f"about to drop: {'shown' if race else 'NOT shown'}\n"
        f"with the barrier it bound the new incarnation and the read answered: "
        f"{'shown' if fix else 'NOT shown'}",
        file=out,
    )
    return 0 if race and fix else 1


def _timeline(trace: actors.Trace, read: Outcome, out: TextIO) -> None:
    reconnected = False
    print(f"   {'t (virtual s)':>13} | {WORKERS[0]:<{COLUMN}} | {WORKERS[1]}", file=out)
    for event in trace:
        if event.kind != "mark" or event.actor not in WORKERS or event.detail is None:
            continue
        reconnected |= event.detail == "reconcile position=1"
        if not reconnected:
            continue
        cells = ["", ""]
        cells[WORKERS.index(event.actor)] = event.detail
        print(f"   {event.time:>13.3f} | {cells[0]:<{COLUMN}} | {cells[1]}", file=out)
    line = read.stanza
    print(
        f"   {read.time:>13.3f} | {'':<{COLUMN}} | read (line {line.line}): "
        f"{read.actual[0]}{' ...' if len(read.actual) > 1 else ''}",
        file=out,
    )
