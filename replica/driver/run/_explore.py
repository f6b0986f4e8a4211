"""``trio-reconcile explore``: run specs under schedules chosen on purpose.

Each spec runs as one program under :func:`actors.testing.explore`: a schedule
fails when any stanza differs from its expected block (a read that hangs
prints its timeout error, so it differs too), when the replica breaks an
invariant, or when the run deadlocks. The first failing schedule is
minimised and printed with the spec's mismatches and the command that
replays it (``--replay``); the exploration of that spec stops there. A spec
that runs differently under the same schedule (``NondeterminismError``)
fails too, with no replay to print.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from typing import Literal, TextIO

import attrs

import actors
from actors.testing import Exploration, NondeterminismError, Schedule, StrategyName, explore
from actors.testing._explore import Reduction

from ..lang._errors import DriverError
from ..lang._escape import escaped
from ..lang._spec import Spec
from ..pictures._timeline import Panel, render
from ._paths import write_text
from ._report import report, report_violations
from ._runner import SpecRun, Topology, _run
from ._shared import SHARED

# The command line's reductions, as explore takes them.
_REDUCTION: dict[str, Reduction] = {"traces": "traces", "states": "states", "none": False}

# A progress line every this many runs.
PROGRESS_EVERY = 100


class SpecFailedError(DriverError):
    """A run in which a stanza differed or an invariant broke."""

    def __init__(self, run: SpecRun) -> None:
        differing = [outcome.stanza.line for outcome in run.outcomes if not outcome.matched]
        parts = []
        if differing:
            parts.append(f"stanzas at lines {', '.join(map(str, differing[:5]))} differ")
        if run.violations:
            parts.append(f"{len(run.violations)} invariants broke: {run.violations[0]}")
        super().__init__("; ".join(parts))
        self.run = run


@attrs.frozen
class ExploreOptions:
    """How ``explore`` explores each spec, and the options that replay it."""

    strategy: StrategyName
    budget: int
    bound: int
    depth: int
    seed: int
    replay: str | None
    # The command-line options that give the same replica and seed.
    options: tuple[str, ...]
    # The delay budget (tasks a run may hold back), the message latency of
    # each run, and where to draw the failing run's timeline.
    delays: int = 0
    latency: float | tuple[float, float] | None = None
    timeline: str | None = None
    # dfs's reduction: traces, states or none (docs/actors.md, "Reduction").
    reduction: Literal["traces", "states", "none"] = "traces"
    count_traces: bool = False
    # Report the dependent pairs of steps by what both touched.
    count_dependence: bool = False
    # dfs: the processes that share the search.
    jobs: int = 1


def explore_command(
    specs: Sequence[Spec], topology: Topology, how: ExploreOptions, out: TextIO
) -> int:
    """Explore each spec on ``topology``; 1 if any schedule failed."""
    failed = False
    for spec in specs:
        failed |= _explore_one(spec, topology, how, out)
    return 1 if failed else 0


def _explore_one(spec: Spec, topology: Topology, how: ExploreOptions, out: TextIO) -> bool:
    name = escaped(spec.path)

    async def main() -> None:
        run = await _run(spec, topology, None)
        if not run.passed:
            raise SpecFailedError(run)

    def progress(runs: int, so_far: Exploration) -> None:
        if runs % PROGRESS_EVERY == 0:
            print(
                f"[{runs}/{how.budget}] {name}: {so_far.interleavings} interleavings, "
                f"{so_far.choice_points} choice points",
                file=out,
                flush=True,
            )

    what = _strategy_text(how)
    try:
        exploration = explore(
            main,
            strategy=how.strategy,
            budget=how.budget,
            seed=how.seed,
            bound=how.bound,
            depth=how.depth,
            replay=how.replay,
            raise_on_failure=False,
            progress=progress,
            delays=how.delays,
            latency=how.latency,
            reduction=_REDUCTION[how.reduction],
            count_traces=how.count_traces,
            shared=SHARED,
            count_dependence=how.count_dependence,
            jobs=how.jobs,
        )
    except NondeterminismError as error:
        # The replica is meant to be deterministic for a schedule: a finding.
        print(f"FAIL {name}: {what}: {error} ({topology})", file=out)
        return True
    failure = exploration.failure
    if failure is None:
        print(f"ok {name}: {what}: {_counts(exploration)} ({topology})", file=out)
        _print_dependence(exploration, out)
        return False
    if isinstance(failure.error, SpecFailedError):
        report(spec, failure.error.run.outcomes, topology, out)
        report_violations(spec, failure.error.run, out)
    else:
        print(f"{name}: the run failed: {failure.error!r}", file=out)
    print(
        f"FAIL {name}: {what}: a failing schedule in run {exploration.runs} "
        f"({_counts(exploration)}) ({topology})",
        file=out,
    )
    holds = failure.schedule.holds
    held = f", {holds} of them held tasks back" if holds else ""
    print(
        f"  schedule: {failure.schedule} ({len(failure.schedule)} non-default choices{held}; "
        f"minimised from {len(failure.found)} in {failure.minimise_runs} runs)",
        file=out,
    )
    for deviation in failure.deviations:
        print(f"  choice {deviation}", file=out)
    print(f"  last steps: {' > '.join(failure.trace_tail)}", file=out)
    command = ["trio-reconcile", "explore", spec.path, *how.options]
    command += ["--replay", str(failure.schedule)]
    print(f"  replay: {escaped(shlex.join(command))}", file=out)
    _print_dependence(exploration, out)
    if how.timeline is not None:
        _draw(spec, topology, how, failure.schedule, out)
    return True


def _print_dependence(exploration: Exploration, out: TextIO) -> None:
    """With --dependence: the dependent pairs of steps by what both touched,
    most first."""
    if exploration.dependence is None:
        return
    if not exploration.dependence:
        print(
            "  no dependent pairs of steps in one batch counted (pct's runs, and their "
            "replays, choose one task at each step: no batch)",
            file=out,
        )
        return
    print(
        "  dependent pairs of steps in one batch, by what both touched (a pair counts "
        "under each thing it met on):",
        file=out,
    )
    for label, count in exploration.dependence[:DEPENDENCE_SHOWN]:
        print(f"  {count:10d}  {escaped(label)}", file=out)
    if len(exploration.dependence) > DEPENDENCE_SHOWN:
        rest = sum(count for _, count in exploration.dependence[DEPENDENCE_SHOWN:])
        print(f"  {rest:10d}  ({len(exploration.dependence) - DEPENDENCE_SHOWN} more)", file=out)


# The most frequent causes of dependence --dependence prints.
DEPENDENCE_SHOWN = 15


def _draw(
    spec: Spec, topology: Topology, how: ExploreOptions, schedule: Schedule, out: TextIO
) -> None:
    """Replay the failing ``schedule`` once more with a trace, and draw it."""
    assert how.timeline is not None
    trace = actors.Trace()

    async def traced() -> None:
        del trace.events[:]
        run = await _run(spec, topology, trace)
        if not run.passed:
            raise SpecFailedError(run)

    again = explore(
        traced,
        seed=how.seed,
        replay=str(schedule),
        raise_on_failure=False,
        latency=how.latency,
    )
    if again.failure is None:
        print(f"  timeline: not drawn: the traced replay of {schedule} did not fail", file=out)
        return
    title = f"{spec.path} ({topology}) under {schedule}"
    write_text("--timeline", how.timeline, render([Panel.from_trace(title, trace)]))
    print(f"  timeline: {escaped(how.timeline)}", file=out)


def _strategy_text(how: ExploreOptions) -> str:
    latency = "" if how.latency is None else f" latency {_latency_text(how.latency)}"
    if how.replay is not None:
        return f"replay {how.replay}{latency}"
    delays = f" delays {how.delays}" if how.delays else ""
    if how.strategy == "dfs":
        # (Bound 0 and no delay: one schedule, no level to share.)
        jobs = f" jobs {how.jobs}" if how.jobs > 1 and how.bound + how.delays else ""
        return f"dfs bound {how.bound}{delays}{latency}{jobs}"
    if how.strategy == "pct":
        return f"pct depth {how.depth}{latency}"
    return f"random{delays}{latency}"


def _latency_text(latency: float | tuple[float, float]) -> str:
    if isinstance(latency, tuple):
        return f"{latency[0]:g}-{latency[1]:g}s"
    return f"0-{latency:g}s"


def _counts(exploration: Exploration) -> str:
    complete = ", complete" if exploration.complete else ""
    merged = f", {exploration.merged} merged" if exploration.merged else ""
    if exploration.skipped:
        merged += f", {exploration.skipped} skipped"
    traces = "" if exploration.traces is None else f" ({exploration.traces} traces)"
    return (
        f"{exploration.runs} runs{complete}, {exploration.interleavings} interleavings"
        f"{traces}, {exploration.choice_points} choice points{merged}"
    )
