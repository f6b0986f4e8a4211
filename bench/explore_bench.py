"""Benchmarks and figures of schedule exploration (``actors.testing.explore``).

Rows beside ``../shared/bench/baseline.py`` (``bench/run.py`` loads this module
with ``--extra``):

* ``spec seeded runs recreate W=1``: n plain seeded runs (``run_spec``, seeds
  1..n) of the bundled ``two_runtime_recreate_index.spec`` on one process of
  one worker, both runtimes. One op is one run.
* ``explore dfs recreate W=1``: ``explore`` of the same spec, ``dfs`` with
  bound 1, n runs (its 36 schedules, again and again). One op is one run, so the
  ratio of the two rows is what choosing every batch's order costs a run.
* ``explore dfs delays recreate W=1``: the same with one delay and no
  reordering (``bound=0, delays=1``): its runs each hold a task back.

Figures, printed by ``.venv/bin/python bench/explore_bench.py [--proofs]``:

* runs until the race is found without the barrier, on the bundled
  ``two_runtime_recreate_race.spec`` (nothing held): ``pct`` and ``random``
  for exploration seeds 0..19 (median), and ``dfs`` (deterministic);
* with ``--proofs B [--delays D]``, the exhaustive runs: ``dfs`` with
  reorder bound B and delay budget D on the recreate and divergent
  scenarios, P, W in {1, 2}, with the barrier: runs, choice points and time
  until complete (``--with-race`` prints the figures above first);
* with ``--cross --bound B --delays D [--small]``, the proofs with the
  reduction and without it, each counting its distinct traces (the same
  both ways, if the reduction loses nothing);
* with ``--shared --bound B --delays D [--small]``, the recreate scenario's
  proof (P=2 W=2, or P=1 W=1 with ``--small``) in one process, then with
  its last level shared by two (``jobs=2``): the runs, traces and times,
  and their ratio (``--proofs`` takes ``--jobs N`` too);
* with ``--ablation --bound B --delays D [--small]``, on the recreate
  scenario (P=2 W=2, or P=1 W=1 with ``--small``): the traces, and again
  with the accesses of each of the things the steps were most often
  dependent on left out, one thing at a time (``--dependence``'s labels):
  an unsound search, run only to measure how much each thing keeps orders
  apart (fewer traces, a finer relation could gain as much);
* with ``--full-count --bound B --delays D [--small]``, the schedules the
  full enumeration (no reduction) runs on the recreate scenario, its last
  level counted from the runs of the level before (``full_count``), at
  P=1 W=1 (and P=2 W=2 without ``--small``); with ``--sample K``, a lower
  bound of it where the level before the last is too many to run: the last
  level counted below only K schedules of that level
  (``full_count_at_least``).
"""

from __future__ import annotations

import functools
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from actors.testing import Exploration, StrategyName
from actors.testing import explore as _explore
from actors.testing._schedule import Decide, _Run, _run_once, hold, wait
from replica.driver.lang._spec import Spec, read_spec
from replica.driver.run._bundled import bundled_spec
from replica.driver.run._runner import Topology, _run, run_spec
from replica.driver.run._shared import SHARED

# Every exploration with the replica's shared state declared (the reduction's).
explore = functools.partial(_explore, shared=SHARED)

RUNS = 200
RECREATE = "two_runtime_recreate_index.spec"
RACE = "two_runtime_recreate_race.spec"
PROOF_SPECS = (
    RECREATE,
    RACE,
    "divergent_compaction_interactive_only.spec",
    "divergent_compaction_maintenance_only.spec",
    "divergent_drop_interactive_only.spec",
    "divergent_drop_maintenance_only.spec",
    "divergent_create_interactive_only.spec",
    "divergent_create_maintenance_only.spec",
    "reconnects.spec",
)


def bundled(name: str) -> Spec:
    with bundled_spec(name) as path:
        return read_spec(path, name)


class SpecDiffers(Exception):
    pass


def spec_main(spec: Spec, topology: Topology) -> Callable[[], Awaitable[None]]:
    async def main() -> None:
        run = await _run(spec, topology, None)
        if not run.passed:
            raise SpecDiffers(run.violations)

    return main


def exhaust(
    main: Callable[[], Awaitable[None]],
    bound: int,
    delays: int,
    *,
    reduction: bool = True,
    count_traces: bool = False,
    count_dependence: bool = False,
    progress: Callable[[int, Exploration], None] | None = None,
    jobs: int = 1,
) -> Exploration:
    """``dfs`` of ``main`` until every schedule within ``bound`` and
    ``delays`` has run (or ``progress`` raises), a failure reported, not
    raised."""
    return explore(
        main,
        strategy="dfs",
        bound=bound,
        delays=delays,
        budget=10**9,
        reduction=reduction,
        raise_on_failure=False,
        count_traces=count_traces,
        count_dependence=count_dependence,
        progress=progress,
        jobs=jobs,
    )


def seeded_runs(n: int) -> tuple[int, float]:
    spec = bundled(RECREATE)
    start = time.perf_counter()
    for seed in range(1, n + 1):
        assert run_spec(spec, Topology(1, 1), seed=seed, trace=None).passed
    return n, time.perf_counter() - start


def explored_runs(n: int) -> tuple[int, float]:
    main = spec_main(bundled(RECREATE), Topology(1, 1))
    start = time.perf_counter()
    done = 0
    while done < n:
        exploration = explore(main, strategy="dfs", bound=1, budget=n - done)
        done += exploration.runs
    return done, time.perf_counter() - start


def explored_runs_with_delays(n: int) -> tuple[int, float]:
    main = spec_main(bundled(RECREATE), Topology(1, 1))
    start = time.perf_counter()
    done = 0
    while done < n:
        exploration = explore(main, strategy="dfs", bound=0, delays=1, budget=n - done)
        done += exploration.runs
    return done, time.perf_counter() - start


def explore_benchmarks() -> list[object]:
    from baseline import Bench  # registered by baseline.py before it loads this module

    return [
        Bench("spec seeded runs recreate W=1", seeded_runs, RUNS, RUNS // 10, "run"),
        Bench("explore dfs recreate W=1", explored_runs, RUNS, RUNS // 10, "run"),
        Bench(
            "explore dfs delays recreate W=1", explored_runs_with_delays, RUNS, RUNS // 10, "run"
        ),
    ]


BENCHMARKS = explore_benchmarks


def runs_until_found(topology: Topology) -> None:
    main = spec_main(bundled(RACE), topology)
    strategy: StrategyName
    for strategy in ("pct", "random"):
        runs = []
        for seed in range(20):
            found = explore(
                main,
                strategy=strategy,
                budget=1000,
                seed=seed,
                minimise=False,
                raise_on_failure=False,
            )
            runs.append(found.runs if found.failure is not None else None)
        shown = ", ".join("-" if r is None else str(r) for r in runs)
        median = statistics.median(10**9 if r is None else r for r in runs)
        print(f"  {strategy:6} ({topology}): seeds 0..19: {shown}; median {median:g}")
    dfs = explore(
        main,
        strategy="dfs",
        bound=2,
        budget=100_000,
        minimise=False,
        raise_on_failure=False,
    )
    where = f"at run {dfs.runs}" if dfs.failure is not None else f"not in {dfs.runs} runs"
    print(f"  dfs    ({topology}): bound 2, found {where}")


TOPOLOGIES = ((1, 1), (1, 2), (2, 1), (2, 2))


def proofs(
    bound: int,
    delays: int = 0,
    specs: tuple[str, ...] = PROOF_SPECS,
    topologies: tuple[tuple[int, int], ...] = TOPOLOGIES,
    jobs: int = 1,
) -> None:
    for name in specs:
        spec = bundled(name)
        for processes, workers in topologies:
            topology = Topology(processes, workers)
            start = time.perf_counter()
            exploration = exhaust(spec_main(spec, topology), bound, delays, jobs=jobs)
            print(
                f"  {name} ({topology}): {exploration.summary()} "
                f"[{time.perf_counter() - start:.1f}s]",
                flush=True,
            )


def cross_check(
    bound: int,
    delays: int = 0,
    specs: tuple[str, ...] = PROOF_SPECS,
    topologies: tuple[tuple[int, int], ...] = TOPOLOGIES,
) -> bool:
    """The proofs with the reduction and without it, each counting its
    distinct traces: whether every one completed with no failure and the
    reduced search reached the traces the full one did."""
    agreed = True
    for name in specs:
        spec = bundled(name)
        for processes, workers in topologies:
            main = spec_main(spec, Topology(processes, workers))
            cells: list[str] = []
            traces: list[int | None] = []
            for reduced in (True, False):
                start = time.perf_counter()
                exploration = exhaust(main, bound, delays, reduction=reduced, count_traces=True)
                agreed &= exploration.complete and exploration.failure is None
                traces.append(exploration.traces)
                cells.append(
                    f"{exploration.runs} runs, {exploration.traces} traces, "
                    f"{'complete' if exploration.complete else 'INCOMPLETE'}, "
                    f"{'no failure' if exploration.failure is None else 'FAILED'}, "
                    f"{time.perf_counter() - start:.1f}s"
                )
            agreed &= traces[0] == traces[1]
            print(
                f"{name} P={processes} W={workers} b{bound} d{delays}: "
                f"reduced {cells[0]} | full {cells[1]}",
                flush=True,
            )
    return agreed


def shared(bound: int, delays: int, topology: Topology) -> None:
    """The recreate scenario's proof in one process and with its last level
    shared by two (``jobs=2``), one after the other: runs, traces and time,
    and the ratio of the times."""
    main = spec_main(bundled(RECREATE), topology)
    times = []
    for jobs in (1, 2):
        start = time.perf_counter()
        exploration = exhaust(main, bound, delays, count_traces=True, jobs=jobs)
        times.append(time.perf_counter() - start)
        print(f"  jobs={jobs}: {exploration.summary()} [{times[-1]:.1f}s]", flush=True)
    print(f"  one process / two: {times[0] / times[1]:.2f}x the time", flush=True)


def found_with_delays() -> None:
    """Without the barrier, dfs with one delay and no reordering, each
    topology: the run that finds the frozen read, and its schedule."""
    spec = bundled(RACE)
    for processes, workers in ((1, 1), (1, 2), (2, 1), (2, 2)):
        topology = Topology(processes, workers, barrier=False)
        start = time.perf_counter()
        found = explore(
            spec_main(spec, topology),
            strategy="dfs",
            bound=0,
            delays=1,
            budget=10**6,
            raise_on_failure=False,
        )
        failure = found.failure
        what = "not found" if failure is None else f"found at run {found.runs}: {failure.schedule}"
        print(f"  {RACE} ({topology}): {what} [{time.perf_counter() - start:.1f}s]", flush=True)


class _OutOfTime(Exception):
    pass


def reduction(
    bound: int, delays: int, topology: Topology, seconds: float, spec: str = RECREATE
) -> None:
    """A scenario with and without the reduction, each for at most
    ``seconds``: runs and distinct interleavings (the same, if the reduction
    loses nothing and both completed)."""
    main = spec_main(bundled(spec), topology)
    for reduced in (True, False):
        start = time.perf_counter()
        last: list[Exploration] = []

        def progress(
            runs: int, so_far: Exploration, last: list[Exploration] = last, start: float = start
        ) -> None:
            last[:] = [so_far]
            if time.perf_counter() - start > seconds:
                raise _OutOfTime

        try:
            exploration = exhaust(main, bound, delays, reduction=reduced, progress=progress)
            summary = exploration.summary()
        except _OutOfTime:
            summary = f"stopped after {seconds:g} s: {last[0].summary()}"
        print(
            f"  {spec} ({topology}) bound {bound} delays {delays}, reduction "
            f"{'on' if reduced else 'off'}: {summary} [{time.perf_counter() - start:.1f}s]",
            flush=True,
        )


def full_count(
    bound: int, delays: int, topology: Topology, spec: str = RECREATE, *, upto: int | None = None
) -> int:
    """The schedules the full enumeration (``reduction=False``) runs at
    ``bound`` and ``delays`` on a scenario with no failure, with its last
    level counted rather than run: every schedule of the last level (as
    many non-default picks as the bounds allow in all) is a schedule of the
    level before, one more non-default pick at a choice point after its
    last one, and then the default: its options there are those of that
    run. So the levels before are run (as the full enumeration runs them)
    and the last one is the sum, over their runs with one pick fewer, of
    the picks the bounds allow at each choice point after their last
    non-default one. Exact for the enumeration ``explore`` runs (checked
    against a run one at bound 1, one delay: ``--full-count``). With
    ``upto``, only the schedules of at most ``upto`` non-default picks (the
    levels up to it): a lower bound of the full count where its last
    levels are too many to run."""
    from actors.testing._strategies import _Dfs

    main = spec_main(bundled(spec), topology)
    cap = bound + delays if upto is None else min(upto, bound + delays)
    search = _Dfs(bound, delays)
    ran = 0
    last: int = 0
    for index in range(10**9):
        decide = search.next_run(index)
        if decide is None or search._level >= cap:
            break
        run = _plain_run(main, decide)
        ran += 1
        search.after(run)
        picks = run.picks
        deviations = [point for point, pick in enumerate(picks) if pick]
        if len(deviations) != cap - 1:
            continue
        reorders = sum(pick > 0 for pick in picks)
        holds = len(deviations) - reorders
        after = deviations[-1] + 1 if deviations else 0
        for point in range(after, len(picks)):
            last += len(_deviations(run.options[point], reorders, holds, bound, delays))
    return ran + last


def _plain_run(main: Callable[[], Awaitable[None]], decide: Decide) -> _Run:
    """One run of the full enumeration's (nothing recorded), which must pass."""

    run = _run_once(main, decide, seed=0, max_steps=1_000_000, shared=SHARED)
    assert run.error is None, run.error
    return run


def _deviations(options: int, reorders: int, holds: int, bound: int, delays: int) -> list[int]:
    """The picks other than the default that the full enumeration offers at
    a choice point of ``options`` after ``reorders`` and ``holds``, where its
    level has room for one more deviation: as _Dfs._following, with no
    reduction (every hold at every point)."""
    allowed = list(range(1, options)) if reorders < bound else []
    if holds < delays:
        allowed += [hold(i) for i in range(options)] + [wait(i) for i in range(options)]
    return allowed


def full_count_at_least(
    bound: int, delays: int, topology: Topology, sample: int, spec: str = RECREATE
) -> tuple[int, int]:
    """``count_at_least`` of a scenario (the recreate one by default)."""
    return count_at_least(spec_main(bundled(spec), topology), bound, delays, sample)


def count_at_least(
    main: Callable[[], Awaitable[None]], bound: int, delays: int, sample: int
) -> tuple[int, int]:
    """A lower bound of the schedules the full enumeration runs, where its
    level before the last is too many to run (``full_count`` runs it all):
    the levels before that one are run, that one is counted from them (both
    exact, as in ``full_count``), and the last level is counted below only
    ``sample`` schedules of the level before it, those whose last deviation
    comes earliest (most choice points after it, so most schedules below).
    Each schedule counted is a distinct one of the enumeration, so the sum is
    at most the full count; with every schedule of that level run, it is
    the full count (checked against ``full_count``, ``--full-count
    --sample``, and against the enumeration itself on a small program:
    tests/bench). Returns the bound and the schedules of that level run.
    Needs two levels at least (``bound + delays >= 2``): with one,
    ``full_count`` runs no more than the default run."""
    from actors.testing._strategies import _Dfs

    cap = bound + delays
    if cap < 2:
        raise ValueError(
            f"a sampled count needs bound + delays >= 2, not {cap}: full_count "
            "runs only the default run to count a search of one level"
        )

    def run(picks: list[int]) -> tuple[int, ...]:
        result = _plain_run(
            main, lambda point, ids, step: picks[point] if point < len(picks) else 0
        )
        assert list(result.picks[: len(picks)]) == picks, "not the schedule asked for"
        return tuple(result.options)

    def picks_at(options: int, reorders: int, holds: int) -> list[int]:
        return _deviations(options, reorders, holds, bound, delays)

    def below(options: tuple[int, ...], after: int, reorders: int, holds: int) -> int:
        return sum(len(picks_at(n, reorders, holds)) for n in options[after:])

    # The levels up to the one before the last, run as the enumeration does
    # (its kept runs give each schedule's options).
    search = _Dfs(bound, delays)
    exact = 0
    for index in range(10**9):
        decide = search.next_run(index)
        if decide is None or search._level >= cap - 1:
            break
        search.after(_plain_run(main, decide))
        exact += 1
    # The schedules of the level before the last, each as its picks, the
    # budgets it used and its parent's options (what it may deviate by).
    parents = [
        (list(known.picks), tuple(known.options))
        for known in search._known.values()
        if sum(pick != 0 for pick in known.picks) == cap - 2
    ]
    candidates: list[tuple[int, list[int], int, int]] = []
    for picks, options in parents:
        reorders = sum(pick > 0 for pick in picks)
        holds = sum(pick < 0 for pick in picks)
        last = max((point for point, pick in enumerate(picks) if pick), default=-1)
        for point in range(last + 1, len(options)):
            for pick in picks_at(options[point], reorders, holds):
                candidates.append(
                    (point, [*picks[:point], pick], reorders + (pick > 0), holds + (pick < 0))
                )
    exact += len(candidates)  # the level before the last, counted
    candidates.sort(key=lambda candidate: candidate[0])
    last_level = 0
    for point, picks, reorders, holds in candidates[:sample]:
        last_level += below(run(picks), point + 1, reorders, holds)
    return exact + last_level, min(sample, len(candidates))


def ablation(bound: int, delays: int, topology: Topology, shown: int = 14) -> None:
    """The recreate scenario's traces with the accesses of each of the
    ``shown`` most dependent things left out in turn (see the module)."""
    from actors.testing import _footprints

    main = spec_main(bundled(RECREATE), topology)
    whole = exhaust(main, bound, delays, count_dependence=True)
    assert whole.complete
    assert whole.failure is None
    assert whole.dependence is not None
    print(f"  all recorded: {whole.runs} runs, {whole.traces} traces")
    kept = _footprints.Recorder._access
    for label, pairs in whole.dependence[:shown]:

        def left_out(
            recorder: _footprints.Recorder, name: int, kind: int = 0, *, label: str = label
        ) -> None:
            labels = recorder.labels
            if labels is None or labels.get(name) != label:
                kept(recorder, name, kind)

        _footprints.Recorder._access = left_out  # type: ignore[method-assign,assignment]
        try:
            without = exhaust(main, bound, delays, count_dependence=True)
        finally:
            _footprints.Recorder._access = kept  # type: ignore[method-assign]
        print(
            f"  without {label} ({pairs} dependent pairs): {without.runs} runs, "
            f"{without.traces} traces"
        )


def _option(name: str, default: int) -> int:
    if name not in sys.argv or sys.argv.index(name) + 1 >= len(sys.argv):
        return default
    following = sys.argv[sys.argv.index(name) + 1]
    return int(following) if following.isdigit() else default


if __name__ == "__main__":
    modes = (
        "--proofs",
        "--found",
        "--reduction",
        "--full-count",
        "--cross",
        "--ablation",
        "--shared",
    )
    if not any(mode in sys.argv for mode in modes) or "--with-race" in sys.argv:
        print("runs until the race is found without the barrier (two_runtime_recreate_race.spec):")
        for topology in (Topology(1, 1, barrier=False), Topology(2, 2, barrier=False)):
            runs_until_found(topology)
    if "--proofs" in sys.argv:
        bound = _option("--proofs", 1)
        delays = _option("--delays", 0)
        print(f"dfs bound {bound} delays {delays} with the barrier, until complete:")
        proofs(
            bound,
            delays,
            topologies=TOPOLOGIES[:1] if "--small" in sys.argv else TOPOLOGIES,
            jobs=_option("--jobs", 1),
        )
    if "--cross" in sys.argv:
        bound, delays = _option("--bound", 1), _option("--delays", 0)
        agreed = cross_check(
            bound, delays, topologies=TOPOLOGIES[:1] if "--small" in sys.argv else TOPOLOGIES
        )
        print("every one complete, no failure, the same traces both ways:", agreed)
    if "--found" in sys.argv:
        print("without the barrier, dfs bound 0 delays 1 until the frozen read:")
        found_with_delays()
    if "--shared" in sys.argv:
        bound, delays = _option("--bound", 1), _option("--delays", 1)
        topology = Topology(1, 1) if "--small" in sys.argv else Topology(2, 2)
        print(
            f"dfs bound {bound} delays {delays}, recreate P={topology.processes} "
            f"W={topology.workers}, in one process and in two (jobs=2):"
        )
        shared(bound, delays, topology)
    if "--ablation" in sys.argv:
        bound, delays = _option("--bound", 0), _option("--delays", 1)
        topology = Topology(1, 1) if "--small" in sys.argv else Topology(2, 2)
        print(
            f"dfs bound {bound} delays {delays}, recreate P={topology.processes} "
            f"W={topology.workers}, each thing's accesses left out in turn (unsound):"
        )
        ablation(bound, delays, topology)
    if "--full-count" in sys.argv:
        bound, delays = _option("--bound", 1), _option("--delays", 1)
        upto = _option("--upto", bound + delays)
        sample = _option("--sample", 0)
        if sample and bound + delays < 2:
            sys.exit("--sample needs --bound and --delays of 2 or more in all")
        for processes, workers in TOPOLOGIES[:1] if "--small" in sys.argv else TOPOLOGIES[::3]:
            start = time.perf_counter()
            if sample:
                least, sampled = full_count_at_least(
                    bound, delays, Topology(processes, workers), sample
                )
                print(
                    f"  {RECREATE} (P={processes} W={workers}) bound {bound} delays {delays}: "
                    f"the full enumeration runs at least {least} schedules (its last level "
                    f"counted below {sampled} schedules of the level before) "
                    f"[{time.perf_counter() - start:.1f}s]",
                    flush=True,
                )
                continue
            count = full_count(bound, delays, Topology(processes, workers), upto=upto)
            which = "" if upto >= bound + delays else f" with at most {upto} non-default picks"
            print(
                f"  {RECREATE} (P={processes} W={workers}) bound {bound} delays {delays}: "
                f"the full enumeration runs {count} schedules{which} (the last level counted) "
                f"[{time.perf_counter() - start:.1f}s]",
                flush=True,
            )
    if "--reduction" in sys.argv:
        seconds = _option("--seconds", 600)
        print(f"the reduction, at most {seconds} s each:")
        for bound, delays, topology in (
            (0, 2, Topology(1, 1)),
            (1, 1, Topology(1, 1)),
            (1, 2, Topology(1, 1)),
            (1, 2, Topology(2, 2)),
        ):
            reduction(bound, delays, topology, seconds)
