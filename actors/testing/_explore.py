"""Schedule exploration: run an async function under schedules chosen on purpose.

Trio runs the tasks that became ready together in *batches*. With
deterministic scheduling on (as :func:`actors.run` sets it), its run loop
sorts each batch by task creation order, calls ``_r.shuffle(batch)`` on the
module's ``random.Random``, then runs the batch from its end, one step per
task. Whatever puts the batch in order chooses the interleaving. Here a
:class:`_Chooser` (a ``Random`` whose ``shuffle`` asks a strategy) takes
``_r``'s place for one run, and every pick among two or more tasks of a batch
is a **choice point**: a batch of n tasks is n - 1 of them (pick the first
among n, then the next among n - 1, ...). A choice is the index of the picked
task among the batch's remaining tasks in creation order, so 0 (the default)
runs a batch in creation order.

A **schedule** is the list of choices of a run. Written sparsely (only the
choices other than 0, by choice point) it is a short printable string,
``"1:12=1,40=2"``, and replaying it reproduces the run exactly: on the
autojump ``MockClock`` with no real I/O, the same choices and the same seed
give the same steps, so the same state. The **trace** of a run is the
sequence of task steps it ran (tasks numbered by first appearance); its hash
tells interleavings apart.

Strategies (the shape of shuttle's ``check_random``, ``check_pct`` and
``check_dfs``):

- ``random``: every choice uniform, a fresh seeded generator per run.
- ``pct``: probabilistic concurrency testing (Burckhardt, Kothari, Musuvathi,
  Nagarakatte, ASPLOS 2010). Each task gets a random priority when first
  seen; every choice point runs the highest-priority task of the batch; at
  ``depth - 1`` distinct steps drawn uniformly from the run's length (learnt
  from the runs before; fewer when that is shorter) the running task's
  priority drops below every initial one (at the first choice point at or
  after the step: a step that is no choice point has nothing to reorder).
  For a program of at most n tasks and k steps, one run finds a given bug of
  depth d with probability at least 1 / (n k^(d-1)) *among the schedules
  Trio can produce* (the scheduler here chooses only within batches).
- ``dfs``: depth-first over every choice point, with at most ``bound``
  choices other than the default in a schedule (preemption bounding, in the
  form of CHESS's "delay bounding"): all schedules within the bound, each
  once, by iterative deepening (every schedule of one non-default choice
  before any of two, so the simplest failing schedule is found first);
  ``complete`` says the bound was exhausted. With its reduction (the
  default, docs/actors.md "Reduction"), the steps' footprints key each
  state by its Mazurkiewicz trace: a schedule that reaches a trace explored
  on from with as much budget is cut there, and a reordering whose batch
  runs the same steps, every dependent pair in the same order, is not run.

A failure is any exception out of the function but ``KeyboardInterrupt``,
``SystemExit`` and ``GeneratorExit`` (which end the exploration and pass on;
a ``trio.Cancelled`` that escapes is a failure) (a hang shows as
:class:`~actors.DeadlockError` from :func:`actors.run`; a run longer than
``max_steps`` as :class:`StepLimitError`). Its schedule is **minimised**
(delta debugging, Zeller's ddmin, over the non-default choices: a smaller
set that fails with the same exception type), then replayed once more to
confirm it, before it is reported.

The program must be deterministic for a schedule and a seed; each run is
checked against the runs before (the same picks so far must give the same
options at the next choice point; the same schedule the same steps) and a
difference is :class:`NondeterminismError`, not a silent lie.

This leans on Trio internals, pinned in ``pyproject.toml`` and tested
(``tests/actors/test_explore.py``): ``trio._core._run._r`` and its
``shuffle`` called once per batch, sorted by creation order, run from the end.
A run in which ``shuffle`` was never called raises ``RuntimeError``.
"""

from __future__ import annotations

import collections
import functools
import os
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Literal, Protocol

import attrs
import trio

from .._core._transit import Latency, check_latency
from ._footprints import check_shared
from ._heap import Heap, Memo
from ._schedule import (
    _NONDETERMINISTIC,
    DEFAULT_MAX_STEPS,
    STRATEGIES,
    Decide,
    Exploration,
    ExplorationFailedError,
    Failure,
    Keying,
    NondeterminismError,
    Schedule,
    ScheduleError,
    StepLimitError,
    StrategyName,
    _following,
    _name,
    _Run,
    _run_once,
    repick,
    unpick,
)
from ._split import MAX_JOBS, Split, WorkerError, passed_on
from ._strategies import _ddmin, _Dfs, _Pct, _Random, _Strategy


class _RunOnce(Protocol):
    def __call__(
        self,
        decide: Decide,
        *,
        kind: int,
        states: Keying = None,
        footprints: bool = False,
        dependence: collections.Counter[str] | None = None,
    ) -> _Run: ...


# What dfs's reduction keys states by (docs/actors.md, "Reduction"): True and
# "traces", partial-order reduction over the steps' footprints; "states",
# the steps run so far (any deterministic program); False, none.
Reduction = bool | Literal["traces", "states"]
_KEYING: dict[object, Keying] = {True: "traces", "traces": "traces", "states": "steps", False: None}


# The entry point ----------------------------------------------------------------


def explore(
    main: Callable[[], Awaitable[object]],
    *,
    strategy: StrategyName = "pct",
    budget: int = 1000,
    seed: int = 0,
    bound: int = 2,
    depth: int = 3,
    replay: str | None = None,
    minimise: bool = True,
    max_steps: int = DEFAULT_MAX_STEPS,
    raise_on_failure: bool = True,
    progress: Callable[[int, Exploration], None] | None = None,
    delays: int = 0,
    latency: Latency = None,
    reduction: Reduction = True,
    count_traces: bool = False,
    shared: Sequence[type] = (),
    count_dependence: bool = False,
    jobs: int = 1,
) -> Exploration:
    """Run ``main`` (an async function of no arguments, a fresh program each
    call) under up to ``budget`` schedules chosen by ``strategy``, each with
    :func:`actors.run` (``seed`` its seed) on the autojump ``MockClock``.

    ``strategy`` is ``"random"``, ``"pct"`` (``depth`` the bug depth it
    targets) or ``"dfs"`` (at most ``bound`` non-default choices per
    schedule; ends early when every one was run). ``replay`` runs the one
    schedule of that string instead (strictly: a choice that does not fit is
    :class:`ScheduleError`). The first failing run ends the exploration; its
    schedule is minimised unless ``minimise=False``. Then, with
    ``raise_on_failure`` (the default, for a test), raises
    :class:`ExplorationFailedError` whose message has the replay string;
    otherwise returns the :class:`Exploration` with its ``failure``.

    ``reduction`` (dfs): ``True`` or ``"traces"`` (partial-order reduction
    over the steps' footprints; sound when the state tasks of different
    actors share is recorded or declared: ``shared``, :func:`touch`,
    :func:`share`), ``"states"`` (only schedules that run the same steps
    are merged: needs nothing declared) or ``False`` (every schedule).
    ``shared`` are classes whose instances tasks of different actors share:
    every attribute read or write of one is recorded. ``count_traces``
    records every run's footprints (any strategy) and counts the distinct
    traces in ``exploration.traces``, what a reduction must keep.
    ``count_dependence`` does too, and counts in ``exploration.dependence``
    the pairs of steps run in one batch that the reduction found dependent,
    by what they both touched (the strategy's runs, not minimising's): what
    makes the reduction keep orders apart (none with ``pct``, whose runs
    choose one task at each step, not a batch's order).

    ``jobs`` (dfs, where :func:`os.fork` is): that many processes share
    the search after its default run (docs/actors.md, "Both cores"): the
    process forks the others, each explores every level of its share of
    the subtrees below the first deviations and reports back. An
    exploration with no failure counts the same in every run of it (the
    jobs together may run more schedules than one process: each merges
    only into states it explored); the budget left at the fork is split
    between them; ``progress`` sees this process's runs; with a failure in
    two shares, the one found first is reported.

    ``progress(runs, exploration so far)`` is called after each run of the
    strategy, the failing one too (not the runs minimising takes, nor a
    replay); what it raises ends the exploration and passes on.
    Bad arguments raise ``ValueError`` (``TypeError`` for a ``main`` or a
    ``progress`` that is not callable) before anything runs. Not reentrant:
    one exploration (or :func:`actors.run`) at a time per process.
    """
    if _in_trio_run():
        raise RuntimeError(
            "explore() starts a trio.run of its own for each schedule: call it from "
            "synchronous code (a plain `def test_...`), not inside a Trio run"
        )
    if not callable(main):
        raise TypeError(f"main must be an async function of no arguments, not {main!r}")
    if strategy not in STRATEGIES:
        raise ValueError(f"strategy must be one of {', '.join(STRATEGIES)}, not {strategy!r}")
    if strategy == "pct" and delays and replay is None:
        raise ValueError(
            "pct holds no task back (it runs the highest-priority runnable task at each "
            f"step, so any task can fall behind): delays={delays!r} is for dfs and random"
        )
    least: int | None
    for name, value, least in (
        ("budget", budget, 1),
        ("bound", bound, 0),
        ("depth", depth, 1),
        ("max_steps", max_steps, 1),
        ("delays", delays, 0),
        ("seed", seed, None),
        ("jobs", jobs, 1),
    ):
        if (
            isinstance(value, bool)
            or not isinstance(value, int)
            or (least is not None and value < least)
        ):
            at_least = "" if least is None else f" of at least {least}"
            raise ValueError(f"{name} must be an integer{at_least}, not {value!r}")
    if not isinstance(reduction, (bool, str)) or reduction not in _KEYING:
        raise ValueError(
            f"reduction must be True (or 'traces'), 'states' or False, not {reduction!r}"
        )
    for flag, given in (("count_traces", count_traces), ("count_dependence", count_dependence)):
        if not isinstance(given, bool):
            raise TypeError(f"{flag} must be True or False, not {given!r}")
    dependence: collections.Counter[str] | None = (
        collections.Counter() if count_dependence else None
    )
    if jobs > MAX_JOBS:
        raise ValueError(f"jobs must be at most {MAX_JOBS}, not {jobs!r}")
    if jobs > 1 and (strategy != "dfs" or replay is not None):
        raise ValueError(
            f"jobs={jobs!r} shares a dfs search: for strategy "
            f"'dfs' without replay, not {'a replay' if replay is not None else repr(strategy)}"
        )
    if jobs > 1 and not hasattr(os, "fork"):
        raise ValueError(f"jobs={jobs!r} needs os.fork, which this platform lacks")
    if progress is not None and not callable(progress):
        raise TypeError(f"progress must be a function of (runs, exploration), not {progress!r}")
    # As actors.run checks it (TypeError, ValueError), before anything runs.
    check_latency(latency)
    classes = check_shared(shared)
    run_once = functools.partial(
        _run_once, main, seed=seed, max_steps=max_steps, latency=latency, shared=classes
    )

    def finish(
        runs: _Tally,
        *,
        complete: bool,
        failure: Failure | None,
        merged: int = 0,
        skipped: int = 0,
    ) -> Exploration:
        return _finish(
            strategy,
            seed,
            runs,
            complete=complete,
            failure=failure,
            delays=delays,
            bound=bound,
            latency=latency,
            merged=merged,
            skipped=skipped,
            dependence=dependence,
        )

    if replay is not None:
        schedule = Schedule.parse(replay)
        only = run_once(
            _following(schedule, strict=True), kind=schedule.kind, dependence=dependence
        )
        if schedule.choices and schedule.choices[-1][0] >= len(only.picks):
            raise ScheduleError(
                f"the schedule names choice point {schedule.choices[-1][0]}; the run had "
                f"{len(only.picks)}: it does not fit this program"
            )
        exploration = finish(
            _Tally.of([only]),
            complete=False,
            failure=_failure(only, schedule, schedule, 0, max_steps),
        )
        return _outcome(exploration, main, seed, raise_on_failure)

    chosen: _Strategy
    if strategy == "random":
        chosen = _Random(seed, delays)
    elif strategy == "pct":
        chosen = _Pct(seed, depth)
    else:
        chosen = _Dfs(bound, delays, cache=_KEYING[reduction])
    runs = _Tally()
    seen = _SeenRuns()
    failure: Failure | None = None
    # The runs this process may make (its share of the budget, once split).
    limit = budget
    split = Split(jobs) if jobs > 1 else None
    caller = os.getpid()
    # A worker's counts of merged and skipped schedules at the fork.
    forked = (0, 0)

    def divide() -> tuple[int, int]:
        nonlocal runs, limit, forked
        assert split is not None
        assert isinstance(chosen, _Dfs)
        left = budget - runs.runs
        index, shares = split.fork()
        mine = left // shares + (index < left % shares)
        if split.is_worker:
            # It reports only its own runs.
            runs, limit, forked = _Tally(), mine, (chosen.merged, chosen.skipped)
            if dependence is not None:
                dependence.clear()
        else:
            limit = runs.runs + mine
        return index, shares

    if split is not None and isinstance(chosen, _Dfs):
        chosen.split = divide
    stopped_by = False
    # What was left before the first run and each run's garbage collected, what
    # survives frozen (_heap).
    heap = Heap()
    try:
        heap.start()
        while runs.runs < limit:
            decide = chosen.next_run(runs.runs)
            if decide is None or runs.runs >= limit:  # (a share of none, at the fork)
                break
            try:
                run = run_once(
                    decide,
                    kind=chosen.kind,
                    states=chosen.cache,
                    footprints=count_traces,
                    stop_at=chosen.stop_at(),
                    dependence=dependence,
                )
            except ScheduleError as error:
                # dfs picks only options an earlier run of the same prefix had.
                raise NondeterminismError(f"{_NONDETERMINISTIC}: {error}") from None
            heap.after_run()
            seen.check(run, runs.runs)
            runs.add(run)
            chosen.after(run)
            if split is not None and split.is_worker:
                if run.error is not None:
                    # The first process replays, minimises and confirms it.
                    split.leave(_report(runs, chosen, forked, dependence, failed=run.schedule))
                if split.orphaned():
                    os._exit(1)
            if progress is not None and not (split is not None and split.is_worker):
                progress(
                    runs.runs,
                    finish(
                        runs,
                        complete=False,
                        failure=None,
                        merged=getattr(chosen, "merged", 0),
                        skipped=getattr(chosen, "skipped", 0),
                    ),
                )
            if run.error is not None:
                failure = _reported(run_once, run, run.schedule, minimise, max_steps)
                break
            if split is not None and split.poll():
                stopped_by = True  # a worker's failure (or error) ends this share too
                break
        if isinstance(chosen, _Dfs):
            chosen.split = None  # (a budget spent on the default run: no fork now)
        # A budget spent on the last schedule within the bound is complete too:
        # whether another is left is known without running it.
        complete = (
            isinstance(chosen, _Dfs)
            and failure is None
            and (chosen.exhausted or chosen.next_run(runs.runs) is None)
        )
        if split is not None and split.is_worker:
            split.leave(_report(runs, chosen, forked, dependence, complete=complete))
        reports: list[dict[str, Any]] = []
        if split is not None:
            # A failure here ends the exploration without waiting for the
            # workers; what one has already sent still counts (an error or an
            # exception passed on in it is raised rather than this failure).
            if failure is not None:
                split.poll()
            reports = split.reports(wait=failure is None and not stopped_by)
    except BaseException as error:
        if split is not None and split.is_worker:  # pragma: no cover (in a worker)
            split.fail(error)  # (never returns; if it raised, the finally ends the worker)
        raise
    finally:
        if split is not None and os.getpid() != caller:  # pragma: no cover (in a worker)
            os._exit(1)  # (however it got here: never into the caller's code)
        if split is not None:
            split.close()
        heap.close()
    merged, skipped = getattr(chosen, "merged", 0), getattr(chosen, "skipped", 0)
    if reports:
        added, failing = _absorb(reports, runs, dependence)
        merged, skipped = merged + added[0], skipped + added[1]
        complete = complete and not stopped_by and added[2]
        if failing is not None and failure is None:
            failure = _replayed(run_once, failing, minimise, max_steps)
            complete = False
    exploration = finish(runs, complete=complete, failure=failure, merged=merged, skipped=skipped)
    return _outcome(exploration, main, seed, raise_on_failure)


def _report(
    runs: _Tally,
    chosen: _Strategy,
    forked: tuple[int, int],
    dependence: collections.Counter[str] | None,
    *,
    complete: bool = False,
    failed: Schedule | None = None,
) -> dict[str, object]:
    """What a worker of a shared exploration sends back (see _split)."""
    return {
        "runs": runs,
        "merged": getattr(chosen, "merged", 0) - forked[0],
        "skipped": getattr(chosen, "skipped", 0) - forked[1],
        "complete": complete,
        "dependence": collections.Counter() if dependence is None else dependence,
        "failed": None if failed is None else str(failed),
    }


def _absorb(
    reports: list[dict[str, Any]], runs: _Tally, dependence: collections.Counter[str] | None
) -> tuple[tuple[int, int, bool], Schedule | None]:
    """Add the workers' ``reports`` to ``runs`` (and ``dependence``): the
    merged and skipped schedules they add and whether every share was
    complete, and the first failing schedule found in one, if any. A
    worker's error is raised here (NondeterminismError as itself)."""
    merged = skipped = 0
    complete = True
    found: Schedule | None = None
    for report in reports:
        if "error" in report:
            again = passed_on(report)
            if again is not None:
                raise again
            if report["error"] == "NondeterminismError":
                raise NondeterminismError(report["message"])
            raise WorkerError(
                f"a worker of the exploration failed: {report['error']}: {report['message']}"
                + (f"\n{report['traceback']}" if report["traceback"] else "")
            )
        runs.absorb(report["runs"])
        merged += report["merged"]
        skipped += report["skipped"]
        complete = complete and report["complete"]
        if dependence is not None:
            dependence.update(report["dependence"])
        if report["failed"] is not None and found is None:
            found = Schedule.parse(report["failed"])
    return (merged, skipped, complete), found


def _replayed(run_once: _RunOnce, schedule: Schedule, minimise: bool, max_steps: int) -> Failure:
    """The failure of the schedule a worker found failing, run here (and
    minimised, unless not ``minimise``, and confirmed) as if found here."""
    run = run_once(_following(schedule, strict=False), kind=schedule.kind)
    if run.error is None:
        raise NondeterminismError(
            f"{_NONDETERMINISTIC}: schedule {schedule} failed in a worker process and "
            "passed when replayed"
        )
    return _reported(run_once, run, schedule, minimise, max_steps)


def _reported(
    run_once: _RunOnce, run: _Run, found: Schedule, minimise: bool, max_steps: int
) -> Failure:
    """The failure of ``run`` (of schedule ``found``), minimised unless not
    ``minimise``, and confirmed."""
    # A run past the step limit is not minimised: each try is as long, and
    # ddmin tries about as many as it has choices.
    failure = (
        _minimised(run_once, run, found, max_steps=max_steps)
        if minimise and not isinstance(run.error, StepLimitError)
        else _failure(run, found, found, 0, max_steps)
    )
    assert failure is not None, "a run with an error is a failure"
    _confirm(run_once, failure)
    return failure


# Picks as hashed by _SeenRuns: non-negative, distinct.
_PICKS = 1 << 60


class _SeenRuns:
    """What the runs so far had after each prefix of picks: a deterministic
    program has the same options at the next choice point (or ends) after
    the same picks, and the same steps for the same schedule."""

    def __init__(self) -> None:
        # A hash of a prefix of picks -> the options at the next choice
        # point, 0 where the run ended.
        self._options: Memo[int, int] = Memo()
        self._digests: Memo[tuple[int, ...], str] = Memo()

    def check(self, run: _Run, index: int) -> None:
        key = 0
        for point, options in enumerate((*run.options, 0)):
            before = self._options.setdefault(key, options)
            if before != options:
                raise NondeterminismError(
                    f"{_NONDETERMINISTIC}: after the picks of schedule "
                    f"{Schedule.from_picks(run.picks[:point], run.kind)}, choice point {point} had "
                    f"{_ended(before)} in an earlier run and {_ended(options)} in run {index + 1}"
                )
            if point < len(run.picks):
                # hash(-1) is hash(-2): a hold is kept apart from the others.
                key = hash((key, run.picks[point] % _PICKS))
        if self._digests.setdefault(run.picks, run.digest) != run.digest:
            raise NondeterminismError(
                f"{_NONDETERMINISTIC}: schedule {run.schedule} ran steps "
                f"{self._digests[run.picks][:12]} once and {run.digest[:12]} in run {index + 1}"
            )


def _ended(options: int) -> str:
    return f"{options} options" if options else "none (the run ended)"


def _in_trio_run() -> bool:
    try:
        trio.lowlevel.current_trio_token()
    except RuntimeError:
        return False
    return True


def _leaves(error: BaseException) -> tuple[type[BaseException], ...]:
    """The kinds of the errors ``error`` holds (itself, or those of a group,
    in order): a smaller schedule must fail the same way, not with another
    error that also leaves a nursery as an ExceptionGroup."""
    if isinstance(error, BaseExceptionGroup):
        return tuple(kind for inner in error.exceptions for kind in _leaves(inner))
    return (type(error),)


def _minimised(run_once: _RunOnce, run: _Run, found: Schedule, *, max_steps: int) -> Failure:
    assert run.error is not None
    kind = _leaves(run.error)
    tried = 0
    # The found run is the found schedule's: not run again (a program that
    # fails only sometimes would fail it, and ddmin start from no failure).
    last: dict[tuple[tuple[int, int], ...], _Run] = {found.choices: run}

    def fails(choices: list[tuple[int, int]]) -> bool:
        nonlocal tried
        key = tuple(choices)
        if key not in last:
            tried += 1
            last[key] = run_once(
                _following(Schedule(key, found.kind), strict=False), kind=found.kind
            )
        error = last[key].error
        return error is not None and _leaves(error) == kind

    # Delta debugging removes holds and reorderings alike.
    smallest = _ddmin(list(found.choices), fails)
    # Then each choice as small as it can be: 1 before 2, h0 before h1.
    for index, (point, choice) in enumerate(smallest):
        letter, number = unpick(choice)
        for lower in range(0 if letter else 1, number):
            candidate = [*smallest[:index], (point, repick(letter, lower)), *smallest[index + 1 :]]
            if fails(candidate):
                smallest = candidate
                break
    fails(smallest)
    final = last[tuple(smallest)]
    # What the final run actually picked (a choice past a smaller batch's end
    # was clamped) replays exactly.
    assert final.error is not None, "ddmin keeps a failing set"
    return Failure(
        final.error,
        final.schedule,
        found,
        tried,
        final.tail,
        final.deviations,
        final.digest,
        max_steps,
    )


def _confirm(run_once: _RunOnce, failure: Failure) -> None:
    """Replay the failing schedule once more: the same steps and the same
    exception type, or :class:`NondeterminismError` (no replay to print)."""
    again = run_once(_following(failure.schedule, strict=False), kind=failure.schedule.kind)
    if again.digest != failure.trace_hash or type(again.error) is not type(failure.error):
        raise NondeterminismError(
            f"{_NONDETERMINISTIC}: schedule {failure.schedule} failed with "
            f"{failure.error!r} (steps {failure.trace_hash[:12]}), then replayed "
            f"{'with ' + repr(again.error) if again.error else 'with no failure'} "
            f"(steps {again.digest[:12]})"
        ) from failure.error


def _failure(
    run: _Run, schedule: Schedule, found: Schedule, tried: int, max_steps: int
) -> Failure | None:
    if run.error is None:
        return None
    return Failure(
        run.error, schedule, found, tried, run.tail, run.deviations, run.digest, max_steps
    )


@attrs.define
class _Tally:
    """What an exploration's runs add up to, kept as they come: a report
    after each run (``progress``) costs the same however many ran before,
    and the runs themselves need not be kept."""

    runs: int = 0
    digests: set[str] = attrs.Factory(set)
    # The runs' traces; None once a run had none (footprints not recorded).
    traces: set[int] | None = attrs.Factory(set)
    choice_points: int = 0
    max_choice_points: int = 0
    max_steps: int = 0
    held: int = 0
    stopped: int = 0

    @classmethod
    def of(cls, runs: list[_Run]) -> _Tally:
        tally = cls()
        for run in runs:
            tally.add(run)
        return tally

    def absorb(self, other: _Tally) -> None:
        """Add ``other``'s runs (a worker's, see _split) to these."""
        self.runs += other.runs
        self.digests |= other.digests
        if self.traces is not None and other.traces is not None:
            self.traces |= other.traces
        elif other.runs:
            self.traces = None
        self.choice_points += other.choice_points
        self.max_choice_points = max(self.max_choice_points, other.max_choice_points)
        self.max_steps = max(self.max_steps, other.max_steps)
        self.held += other.held
        self.stopped += other.stopped

    def add(self, run: _Run) -> None:
        self.runs += 1
        self.digests.add(run.digest)
        if self.traces is not None and not run.stopped:
            if run.trace is None:
                self.traces = None
            else:
                self.traces.add(run.trace)
        self.choice_points += len(run.picks)
        self.max_choice_points = max(self.max_choice_points, len(run.picks))
        self.max_steps = max(self.max_steps, run.steps)
        self.held += sum(pick < 0 for pick in run.picks)
        self.stopped += run.stopped


def _finish(
    strategy: StrategyName,
    seed: int,
    runs: _Tally,
    *,
    complete: bool,
    failure: Failure | None,
    delays: int,
    bound: int,
    latency: Latency,
    merged: int = 0,
    skipped: int = 0,
    dependence: collections.Counter[str] | None = None,
) -> Exploration:
    return Exploration(
        strategy=strategy,
        seed=seed,
        runs=runs.runs,
        interleavings=len(runs.digests),
        choice_points=runs.choice_points,
        max_choice_points=runs.max_choice_points,
        max_steps=runs.max_steps,
        complete=complete,
        failure=failure,
        delays=delays,
        bound=bound,
        latency=latency,
        held=runs.held,
        merged=merged,
        skipped=skipped,
        stopped=runs.stopped,
        traces=len(runs.traces) if runs.runs and runs.traces is not None else None,
        dependence=None
        if dependence is None
        else tuple(sorted(dependence.items(), key=lambda item: (-item[1], item[0]))),
    )


def _outcome(
    exploration: Exploration,
    main: Callable[[], Awaitable[object]],
    seed: int,
    raise_on_failure: bool,
) -> Exploration:
    failure = exploration.failure
    if failure is None or not raise_on_failure:
        return exploration
    raise ExplorationFailedError(failure_report(exploration, name=_name(main)), exploration) from (
        failure.error
    )


def failure_report(exploration: Exploration, *, name: str = "main") -> str:
    """The lines that describe an exploration's failure: what failed, the
    schedule and the call that replays it, then the schedule as a person
    reads it ("ran X before Y", "held X back for k batches"), and the last
    steps."""
    failure = exploration.failure
    assert failure is not None, "a report of a failure"
    extra = "" if failure.max_steps == DEFAULT_MAX_STEPS else f", max_steps={failure.max_steps}"
    if exploration.latency is not None:
        extra += f", latency={exploration.latency!r}"
    schedule = failure.schedule
    if schedule.holds:
        counted = (
            f"{len(schedule)} non-default choices: {schedule.reorders} reorderings, "
            f"{schedule.holds} holds"
        )
    else:
        counted = f"{len(schedule)} non-default choices"
    lines = [
        f"{exploration.strategy} exploration found a failing schedule in run "
        f"{exploration.runs}: {failure.error!r}",
        f"schedule: {schedule} ({counted}; minimised from {len(failure.found)} in "
        f"{failure.minimise_runs} runs)",
        f'replay: explore({name}, seed={exploration.seed}, replay="{schedule}"{extra})',
        *(f"choice {deviation}" for deviation in failure.deviations),
        "last steps: " + " > ".join(failure.trace_tail),
    ]
    return "\n".join(lines)
