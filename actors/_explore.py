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
  ``complete`` says the bound was exhausted.
  No state caching: two different schedules are two different step
  sequences, and without a hash of the program's state (which a generic
  explorer does not have) nothing sound can be skipped.

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

import hashlib
import inspect
import math
import random
import re
from collections.abc import Awaitable, Callable, MutableSequence, Sequence
from typing import Any, Literal, final

import attrs
import trio
import trio._core._run as _trio_run
from trio.testing import MockClock

from ._determinism import run as _run_seeded

StrategyName = Literal["random", "pct", "dfs"]
STRATEGIES: tuple[StrategyName, ...] = ("random", "pct", "dfs")
# Steps shown before a failure in its report.
TRACE_TAIL = 12
# The step limit of a run unless explore is given another.
DEFAULT_MAX_STEPS = 1_000_000
# ASCII digits only (``\d`` would take an Arabic-Indic one), at most this many each: a
# choice point or a pick past it is no run's.
_SCHEDULE = re.compile(r"1:((?:[0-9]+=[0-9]+)(?:,[0-9]+=[0-9]+)*)?")
MAX_SCHEDULE_DIGITS = 18


class ScheduleError(ValueError):
    """A schedule string that is not one, or that does not fit the program
    it is replayed on (a choice point it names has fewer options)."""


class StepLimitError(Exception):
    """A run took more than ``max_steps`` task steps (a livelock, or a limit
    set too low)."""


class NondeterminismError(RuntimeError):
    """The program ran differently under the same schedule and seed (real
    I/O, threads, an unseeded ``random``, ``time.time()``, ``id()``...): its
    schedules cannot be explored, and a printed replay would not reproduce."""


@final
@attrs.frozen
class Schedule:
    """The choices of one run other than the default, by choice point."""

    choices: tuple[tuple[int, int], ...] = ()

    @classmethod
    def parse(cls, text: str) -> Schedule:
        """Read a schedule string (``"1:12=1,40=2"``; ``"1:"`` is the default
        schedule, whitespace around it is ignored). :class:`ScheduleError` for
        anything else: a text that is not a ``str``, digits other than ASCII
        0-9, a number of more than 18 digits."""
        if not isinstance(text, str):
            raise ScheduleError(f"a schedule is a str, not {type(text).__name__}: {text!r:.80}")
        match = _SCHEDULE.fullmatch(text.strip())
        if match is None:
            raise ScheduleError(
                f"not a schedule: {text[:80]!r} (expected '1:' then point=choice pairs, "
                "as '1:12=1,40=2')"
            )
        pairs = []
        for part in match.group(1).split(",") if match.group(1) else []:
            if any(len(n.lstrip("0")) > MAX_SCHEDULE_DIGITS for n in part.split("=")):
                raise ScheduleError(
                    f"schedule {text[:80]!r}: a number of more than {MAX_SCHEDULE_DIGITS} digits"
                )
            point, choice = (int(n) for n in part.split("="))
            pairs.append((point, choice))
        points = [point for point, _ in pairs]
        if points != sorted(set(points)):
            raise ScheduleError(f"schedule {text!r}: choice points must increase")
        if any(choice == 0 for _, choice in pairs):
            raise ScheduleError(f"schedule {text!r}: a default choice (0) is not written")
        return cls(tuple(pairs))

    @classmethod
    def from_picks(cls, picks: Sequence[int]) -> Schedule:
        return cls(tuple((point, pick) for point, pick in enumerate(picks) if pick))

    def __str__(self) -> str:
        return "1:" + ",".join(f"{point}={choice}" for point, choice in self.choices)

    def __len__(self) -> int:
        return len(self.choices)


@final
@attrs.frozen
class Failure:
    """The first failing run an exploration found, minimised."""

    error: BaseException
    schedule: Schedule
    # The schedule as found, before minimising, and the runs minimising took.
    found: Schedule
    minimise_runs: int
    # The names of the last task steps before the failure, oldest first.
    trace_tail: tuple[str, ...]
    # Each non-default choice of ``schedule``: "36: ran B#7 before A#5" (the
    # task it ran, and the task the default would have run; tasks numbered
    # in the order the run first saw them).
    deviations: tuple[str, ...]
    # The hash of the failing run's steps: a replay has the same.
    trace_hash: str
    # The step limit of its runs: a replay needs the same.
    max_steps: int = DEFAULT_MAX_STEPS

    @property
    def replay(self) -> str:
        return str(self.schedule)


@final
@attrs.frozen
class Exploration:
    """What an exploration ran and found."""

    strategy: StrategyName
    seed: int
    runs: int
    # Distinct interleavings: distinct hashes of the runs' step sequences.
    interleavings: int
    # Choice points over all runs, and the most in one run.
    choice_points: int
    max_choice_points: int
    max_steps: int
    # dfs only: every schedule within the bound was run.
    complete: bool
    failure: Failure | None

    def summary(self) -> str:
        done = " (complete: every schedule within the bound)" if self.complete else ""
        found = "no failure" if self.failure is None else f"a failure: {self.failure.error!r}"
        return (
            f"{self.strategy}: {self.runs} runs{done}, {self.interleavings} distinct "
            f"interleavings, {self.choice_points} choice points (at most "
            f"{self.max_choice_points} in a run, {self.max_steps} steps); {found}"
        )


class ExplorationFailure(AssertionError):
    """An exploration found a failing schedule (raised by :func:`explore`
    unless ``raise_on_failure=False``); ``exploration`` has the details and
    the message the replay string."""

    def __init__(self, message: str, exploration: Exploration) -> None:
        super().__init__(message)
        self.exploration = exploration


# One run ------------------------------------------------------------------------

# decide(choice point, ids of the batch's remaining tasks in creation order,
# step number) -> the index of the task to run next.
Decide = Callable[[int, list[int], int], int]


@attrs.frozen
class _Run:
    picks: tuple[int, ...]
    options: tuple[int, ...]
    steps: int
    digest: str
    tail: tuple[str, ...]
    deviations: tuple[str, ...]
    error: BaseException | None


class _Chooser(random.Random):
    """Takes ``trio._core._run._r``'s place for one run: orders each batch
    as ``decide`` says and records the choices and the steps."""

    def __init__(self, decide: Decide, max_steps: int) -> None:
        super().__init__(0)
        self._decide = decide
        self._max_steps = max_steps
        self._ids: dict[object, int] = {}
        self._names: list[str] = []
        self.picks: list[int] = []
        self.options: list[int] = []
        self.deviations: list[str] = []
        self.steps: list[int] = []
        self.batches = 0
        self.over_limit = False
        self.misfit: str | None = None
        self.scope: trio.CancelScope | None = None

    def shuffle(self, x: MutableSequence[Any]) -> None:
        # Trio's batch, sorted by creation order; it runs from the end.
        self.batches += 1
        remaining = list(x)
        ids = [self._id(task) for task in remaining]
        order: list[Any] = []
        while len(remaining) > 1:
            pick = self._decide(len(self.picks), ids, len(self.steps) + len(order))
            if not 0 <= pick < len(remaining):
                # Raising here would break trio's run loop: the run goes on
                # with the last option, and the error is raised after it.
                if self.misfit is None:
                    self.misfit = (
                        f"choice point {len(self.picks)} has {len(remaining)} options; "
                        f"the schedule picks {pick}: it does not fit this program"
                    )
                pick = len(remaining) - 1
            if pick:
                self.deviations.append(
                    f"{len(self.picks)}: ran {self._names[ids[pick]]}#{ids[pick]} before "
                    f"{self._names[ids[0]]}#{ids[0]}"
                )
            self.picks.append(pick)
            self.options.append(len(remaining))
            order.append(remaining.pop(pick))
            ids.pop(pick)
        order += remaining
        self.steps += [self._id(task) for task in order]
        x[:] = order[::-1]
        if len(self.steps) > self._max_steps and not self.over_limit and self.scope is not None:
            self.over_limit = True
            self.scope.cancel()

    def _id(self, task: Any) -> int:
        known = self._ids.get(task)
        if known is None:
            known = self._ids[task] = len(self._names)
            self._names.append(str(getattr(task, "name", "?")))
        return known

    def tail(self) -> tuple[str, ...]:
        return tuple(self._names[i] for i in self.steps[-TRACE_TAIL:])

    def digest(self) -> str:
        data = b"".join(i.to_bytes(4, "little") for i in self.steps)
        return hashlib.blake2b(data, digest_size=16).hexdigest()


def _run_once(
    main: Callable[[], Awaitable[object]], decide: Decide, *, seed: int, max_steps: int
) -> _Run:
    chooser = _Chooser(decide, max_steps)

    async def bounded() -> None:
        with trio.CancelScope() as scope:
            chooser.scope = scope
            awaitable = main()
            if not inspect.isawaitable(awaitable):
                raise _NotAsyncError(
                    f"main must be an async function of no arguments; {_name(main)}() "
                    f"returned {awaitable!r:.80}, not an awaitable"
                )
            await awaitable

    bounded.__qualname__ = bounded.__name__ = _name(main)
    bounded.__module__ = getattr(main, "__module__", bounded.__module__)

    saved = _trio_run._r
    if isinstance(saved, _Chooser):
        raise RuntimeError(  # noqa: TRY004 (a state: a run in progress)
            "another exploration's run is in progress in this process (a thread of its "
            "program?): explore is not reentrant, one run at a time"
        )
    _trio_run._r = chooser
    error: BaseException | None = None
    try:
        _run_seeded(bounded, seed=seed, clock=MockClock(autojump_threshold=0))
    except _NotAsyncError as caught:
        raise TypeError(str(caught)) from None
    except BaseException as caught:
        if _passes_on(caught):
            raise
        error = caught  # a failure of the program under test
    finally:
        _trio_run._r = saved
    if chooser.misfit is not None:
        raise ScheduleError(chooser.misfit)
    if chooser.batches == 0:
        raise RuntimeError(
            f"trio {trio.__version__}'s scheduler never called _r.shuffle: schedule "
            "exploration cannot control it (see the trio range in pyproject.toml)"
        )
    if chooser.over_limit and error is None:
        error = StepLimitError(f"the run took more than {max_steps} steps")
    return _Run(
        tuple(chooser.picks),
        tuple(chooser.options),
        len(chooser.steps),
        chooser.digest(),
        chooser.tail(),
        tuple(chooser.deviations),
        error,
    )


class _NotAsyncError(Exception):
    """``main()`` returned something that is not awaitable."""


# What ends an exploration rather than fails a run: an interrupt, an exit.
_PASSED_ON = (KeyboardInterrupt, SystemExit, GeneratorExit)


def _passes_on(error: BaseException) -> bool:
    if isinstance(error, BaseExceptionGroup):
        return error.split(_PASSED_ON)[0] is not None
    return isinstance(error, _PASSED_ON)


_NONDETERMINISTIC = (
    "the program ran differently under the same schedule and seed (real I/O, threads, "
    "an unseeded random, time.time() or id()?): a replay would not reproduce it"
)


def _following(schedule: Schedule, *, strict: bool) -> Decide:
    wanted = dict(schedule.choices)

    def decide(point: int, ids: list[int], step: int) -> int:
        choice = wanted.get(point, 0)
        if choice >= len(ids) and not strict:
            return len(ids) - 1
        return choice

    return decide


# Strategies ---------------------------------------------------------------------


class _Strategy:
    def next_run(self, index: int) -> Decide | None:
        raise NotImplementedError

    def after(self, run: _Run) -> None:
        return None


class _Random(_Strategy):
    def __init__(self, seed: int) -> None:
        self._seed = seed

    def next_run(self, index: int) -> Decide:
        rng = random.Random(f"random/{self._seed}/{index}")
        return lambda point, ids, step: rng.randrange(len(ids))


class _Pct(_Strategy):
    def __init__(self, seed: int, depth: int) -> None:
        self._seed = seed
        self._depth = depth
        self._steps = 1

    def next_run(self, index: int) -> Decide:
        rng = random.Random(f"pct/{self._seed}/{index}")
        depth = self._depth
        changes = self.change_points(rng)
        priority: dict[int, float] = {}

        def decide(point: int, ids: list[int], step: int) -> int:
            for task in ids:
                if task not in priority:
                    priority[task] = depth + rng.random()
            best = max(range(len(ids)), key=lambda i: priority[ids[i]])
            # A change point on a step without a choice (a batch of one)
            # applies at the next choice point.
            while changes and changes[-1][0] <= step:
                _, lowered = changes.pop()
                priority[ids[best]] = lowered + rng.random() / 2
                best = max(range(len(ids)), key=lambda i: priority[ids[i]])
            return best

        return decide

    def change_points(self, rng: random.Random) -> list[tuple[int, int]]:
        """(step, lowered priority) of one run, latest step first: distinct
        steps (a repeated draw would lose a change point), at most one per
        step of the longest run so far; the i-th drawn lowers to
        ``depth - 1 - i``."""
        drawn = rng.sample(range(1, self._steps + 1), min(self._depth - 1, self._steps))
        return sorted(((step, self._depth - 1 - i) for i, step in enumerate(drawn)), reverse=True)

    def after(self, run: _Run) -> None:
        self._steps = max(self._steps, run.steps)


class _Dfs(_Strategy):
    """Every schedule with at most ``bound`` non-default choices, by
    iterative deepening: all with none, then all with exactly one, and so on
    (as CHESS's iterative context bounding), each level depth-first in
    lexicographic order. A deeper level walks the tree through the runs of
    the levels before, kept (the same schedule is the same run), and runs
    only the schedules it adds. A level that adds none ends it whatever the
    bound: a schedule of one more non-default choice extends one of this
    level's."""

    def __init__(self, bound: int) -> None:
        self._bound = bound
        self._level = 0
        self._prefix: list[int] | None = []
        self._known: dict[tuple[tuple[int, int], ...], _Run] = {}
        # Whether this level ran a schedule (level 0 runs the default one).
        self._added = True

    @property
    def exhausted(self) -> bool:
        return self._prefix is None and self._level >= self._bound

    def next_run(self, index: int) -> Decide | None:
        while True:
            prefix = self._prefix
            if prefix is None:
                if not self._added:
                    self._bound = self._level
                if self._level >= self._bound:
                    return None
                self._level += 1
                self._prefix = []
                self._added = False
                continue
            known = self._known.get(Schedule.from_picks(prefix).choices)
            if known is None:
                self._added = True
                return lambda point, ids, step: prefix[point] if point < len(prefix) else 0
            self._advance(known)

    def after(self, run: _Run) -> None:
        if sum(pick != 0 for pick in run.picks) < self._bound:
            self._known[Schedule.from_picks(run.picks).choices] = run
        self._advance(run)

    def _advance(self, run: _Run) -> None:
        picks = run.picks
        used = [0]
        for pick in picks:
            used.append(used[-1] + (pick != 0))
        for point in reversed(range(len(picks))):
            if picks[point] + 1 < run.options[point] and used[point] + 1 <= self._level:
                self._prefix = [*picks[:point], picks[point] + 1]
                return
        self._prefix = None


# Minimising ---------------------------------------------------------------------


def _ddmin(
    choices: list[tuple[int, int]], fails: Callable[[list[tuple[int, int]]], bool]
) -> list[tuple[int, int]]:
    """Zeller and Hildebrandt's ddmin: a 1-minimal subset of ``choices`` for
    which ``fails`` holds (it holds for ``choices``)."""
    n = 2
    while len(choices) >= 2:
        size = math.ceil(len(choices) / n)
        chunks = [choices[i : i + size] for i in range(0, len(choices), size)]
        for chunk in chunks:
            if fails(chunk):
                choices, n = chunk, 2
                break
        else:
            for i in range(len(chunks)):
                rest = [c for j, part in enumerate(chunks) if j != i for c in part]
                if fails(rest):
                    choices, n = rest, max(n - 1, 2)
                    break
            else:
                if n >= len(choices):
                    break
                n = min(len(choices), 2 * n)
    if len(choices) == 1 and fails([]):
        return []
    return choices


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
    :class:`ExplorationFailure` whose message has the replay string;
    otherwise returns the :class:`Exploration` with its ``failure``.

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
    least: int | None
    for name, value, least in (
        ("budget", budget, 1),
        ("bound", bound, 0),
        ("depth", depth, 1),
        ("max_steps", max_steps, 1),
        ("seed", seed, None),
    ):
        if (
            isinstance(value, bool)
            or not isinstance(value, int)
            or (least is not None and value < least)
        ):
            at_least = "" if least is None else f" of at least {least}"
            raise ValueError(f"{name} must be an integer{at_least}, not {value!r}")
    if progress is not None and not callable(progress):
        raise TypeError(f"progress must be a function of (runs, exploration), not {progress!r}")
    if replay is not None:
        schedule = Schedule.parse(replay)
        only = _run_once(main, _following(schedule, strict=True), seed=seed, max_steps=max_steps)
        if schedule.choices and schedule.choices[-1][0] >= len(only.picks):
            raise ScheduleError(
                f"the schedule names choice point {schedule.choices[-1][0]}; the run had "
                f"{len(only.picks)}: it does not fit this program"
            )
        exploration = _finish(
            strategy,
            seed,
            [only],
            complete=False,
            failure=_failure(only, schedule, schedule, 0, max_steps),
        )
        return _outcome(exploration, main, seed, raise_on_failure)

    chosen: _Strategy
    if strategy == "random":
        chosen = _Random(seed)
    elif strategy == "pct":
        chosen = _Pct(seed, depth)
    else:
        chosen = _Dfs(bound)
    runs: list[_Run] = []
    seen = _SeenRuns()
    failure: Failure | None = None
    for index in range(budget):
        decide = chosen.next_run(index)
        if decide is None:
            break
        try:
            run = _run_once(main, decide, seed=seed, max_steps=max_steps)
        except ScheduleError as error:
            # dfs picks only options an earlier run of the same prefix had.
            raise NondeterminismError(f"{_NONDETERMINISTIC}: {error}") from None
        seen.check(run, index)
        runs.append(run)
        chosen.after(run)
        if progress is not None:
            progress(len(runs), _finish(strategy, seed, runs, complete=False, failure=None))
        if run.error is not None:
            found = Schedule.from_picks(run.picks)
            failure = (
                _minimised(main, run, found, seed=seed, max_steps=max_steps)
                if minimise
                else _failure(run, found, found, 0, max_steps)
            )
            assert failure is not None, "a run with an error is a failure"
            _confirm(main, failure, seed=seed, max_steps=max_steps)
            break
    # A budget spent on the last schedule within the bound is complete too:
    # whether another is left is known without running it.
    complete = (
        isinstance(chosen, _Dfs)
        and failure is None
        and (chosen.exhausted or chosen.next_run(len(runs)) is None)
    )
    exploration = _finish(strategy, seed, runs, complete=complete, failure=failure)
    return _outcome(exploration, main, seed, raise_on_failure)


class _SeenRuns:
    """What the runs so far had after each prefix of picks: a deterministic
    program has the same options at the next choice point (or ends) after
    the same picks, and the same steps for the same schedule."""

    def __init__(self) -> None:
        # A hash of a prefix of picks -> the options at the next choice
        # point, 0 where the run ended.
        self._options: dict[int, int] = {}
        self._digests: dict[tuple[int, ...], str] = {}

    def check(self, run: _Run, index: int) -> None:
        key = 0
        for point, options in enumerate((*run.options, 0)):
            before = self._options.setdefault(key, options)
            if before != options:
                raise NondeterminismError(
                    f"{_NONDETERMINISTIC}: after the picks of schedule "
                    f"{Schedule.from_picks(run.picks[:point])}, choice point {point} had "
                    f"{_ended(before)} in an earlier run and {_ended(options)} in run {index + 1}"
                )
            if point < len(run.picks):
                key = hash((key, run.picks[point]))
        if self._digests.setdefault(run.picks, run.digest) != run.digest:
            raise NondeterminismError(
                f"{_NONDETERMINISTIC}: schedule {Schedule.from_picks(run.picks)} ran steps "
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


def _minimised(
    main: Callable[[], Awaitable[object]], run: _Run, found: Schedule, *, seed: int, max_steps: int
) -> Failure:
    assert run.error is not None
    kind = type(run.error)
    tried = 0
    # The found run is the found schedule's: not run again (a program that
    # fails only sometimes would fail it, and ddmin start from no failure).
    last: dict[tuple[tuple[int, int], ...], _Run] = {found.choices: run}

    def fails(choices: list[tuple[int, int]]) -> bool:
        nonlocal tried
        key = tuple(choices)
        if key not in last:
            tried += 1
            last[key] = _run_once(
                main, _following(Schedule(key), strict=False), seed=seed, max_steps=max_steps
            )
        error = last[key].error
        return error is not None and type(error) is kind

    smallest = _ddmin(list(found.choices), fails)
    # Then each choice as small as it can be: 1 before 2.
    for index, (point, choice) in enumerate(smallest):
        for lower in range(1, choice):
            candidate = [*smallest[:index], (point, lower), *smallest[index + 1 :]]
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
        Schedule.from_picks(final.picks),
        found,
        tried,
        final.tail,
        final.deviations,
        final.digest,
        max_steps,
    )


def _confirm(
    main: Callable[[], Awaitable[object]], failure: Failure, *, seed: int, max_steps: int
) -> None:
    """Replay the failing schedule once more: the same steps and the same
    exception type, or :class:`NondeterminismError` (no replay to print)."""
    again = _run_once(
        main, _following(failure.schedule, strict=False), seed=seed, max_steps=max_steps
    )
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


def _finish(
    strategy: StrategyName, seed: int, runs: list[_Run], *, complete: bool, failure: Failure | None
) -> Exploration:
    return Exploration(
        strategy=strategy,
        seed=seed,
        runs=len(runs),
        interleavings=len({run.digest for run in runs}),
        choice_points=sum(len(run.picks) for run in runs),
        max_choice_points=max((len(run.picks) for run in runs), default=0),
        max_steps=max((run.steps for run in runs), default=0),
        complete=complete,
        failure=failure,
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
    raise ExplorationFailure(failure_report(exploration, name=_name(main)), exploration) from (
        failure.error
    )


def failure_report(exploration: Exploration, *, name: str = "main") -> str:
    """The lines that describe an exploration's failure."""
    failure = exploration.failure
    assert failure is not None, "a report of a failure"
    limit = "" if failure.max_steps == DEFAULT_MAX_STEPS else f", max_steps={failure.max_steps}"
    lines = [
        f"{exploration.strategy} exploration found a failing schedule in run "
        f"{exploration.runs}: {failure.error!r}",
        f"schedule: {failure.schedule} ({len(failure.schedule)} non-default choices; "
        f"minimised from {len(failure.found)} in {failure.minimise_runs} runs)",
        f'replay: explore({name}, seed={exploration.seed}, replay="{failure.schedule}"{limit})',
        *(f"choice {deviation}" for deviation in failure.deviations),
        "last steps: " + " > ".join(failure.trace_tail),
    ]
    return "\n".join(lines)


def _name(main: Callable[..., object]) -> str:
    return str(getattr(main, "__name__", "main"))
