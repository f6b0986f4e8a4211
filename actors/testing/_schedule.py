"""Schedules and one explored run: the schedule strings, the results an
exploration reports, and the chooser that takes the place of Trio's
scheduler random source for a run (see :mod:`actors.testing._explore`)."""

from __future__ import annotations

import collections
import contextlib
import gc
import hashlib
import inspect
import random
import re
import sys
from collections.abc import Awaitable, Callable, MutableSequence, Sequence
from typing import Any, Literal, final

import attrs
import trio
import trio._core._run as _trio_run
from trio.testing import MockClock

from .._core import _footprint
from .._core._errors import ActorError
from .._core._transit import Latency
from .._determinism import run as _run_seeded
from ._footprints import Recorder, recording
from ._heap import collect

StrategyName = Literal["random", "pct", "dfs"]
STRATEGIES: tuple[StrategyName, ...] = ("random", "pct", "dfs")
# Steps shown before a failure in its report.
TRACE_TAIL = 12
# The step limit of a run unless explore is given another.
DEFAULT_MAX_STEPS = 1_000_000
# The most batches a task held back until no other can run waits.
WAIT_LIMIT = 1000
# ASCII digits only (``\d`` would take an Arabic-Indic one), at most this many each: a
# choice point or a pick past it is no run's.
_SCHEDULE = re.compile(r"([12]):((?:[0-9]+=[hw]?[0-9]+)(?:,[0-9]+=[hw]?[0-9]+)*)?")
MAX_SCHEDULE_DIGITS = 18


class ExplorationError(ActorError):
    """Base class of the errors of :mod:`actors.testing`."""


class ScheduleError(ExplorationError, ValueError):
    """A schedule string that is not one, or that does not fit the program
    it is replayed on (a choice point it names has fewer options)."""


class StepLimitError(ExplorationError):
    """A run took more than ``max_steps`` task steps (a livelock, or a limit
    set too low)."""


class NondeterminismError(ExplorationError, RuntimeError):
    """The program ran differently under the same schedule and seed (real
    I/O, threads, an unseeded ``random``, ``time.time()``, ``id()``...): its
    schedules cannot be explored, and a printed replay would not reproduce."""


# A pick: i >= 0 runs the i-th option; hold(i) holds it back for one batch,
# wait(i) until no other task can run (written h{i} and w{i}).
_WAIT = 1 << 40


def hold(index: int) -> int:
    return -1 - index


def wait(index: int) -> int:
    return -_WAIT - index


def unpick(pick: int) -> tuple[str, int]:
    """A pick as ("", index) (run), ("h", index) or ("w", index)."""
    if pick >= 0:
        return "", pick
    if pick > -_WAIT:
        return "h", -1 - pick
    return "w", -_WAIT - pick


def repick(kind: str, index: int) -> int:
    return index if not kind else hold(index) if kind == "h" else wait(index)


# The two kinds of schedule, by the number a schedule string starts with.
BATCHES = 1  # each batch Trio runs is ordered, and tasks of it may be held back
STEPS = 2  # one task runs at a time, any runnable one (pct)


@final
@attrs.frozen
class Schedule:
    """The choices of one run other than the default, by choice point.

    A choice is the index of the task run among the options (``1``...), or
    a task **held back**: for one batch (``h{i}``: it runs in the next one,
    with the tasks the others' steps made runnable, in creation order) or
    until no other task can run
    (``w{i}``: until every other task is blocked or held too), each one
    step of the delay budget (see :func:`hold`, :func:`wait`).
    ``kind`` is :data:`BATCHES` (``"1:"``: a choice point is a pick within a
    batch of Trio's) or :data:`STEPS` (``"2:"``: every step is a pick among
    all runnable tasks; no holds, a task not picked waits)."""

    choices: tuple[tuple[int, int], ...] = ()
    kind: int = BATCHES

    @classmethod
    def parse(cls, text: str) -> Schedule:
        """Read a schedule string (``"1:12=1,40=h0"``; ``"1:"`` is the default
        schedule, whitespace around it is ignored). :class:`ScheduleError` for
        anything else: a text that is not a ``str``, digits other than ASCII
        0-9, a number of more than 18 digits, a hold in a ``"2:"`` schedule."""
        if not isinstance(text, str):
            raise ScheduleError(f"a schedule is a str, not {type(text).__name__}: {text!r:.80}")
        match = _SCHEDULE.fullmatch(text.strip())
        if match is None:
            raise ScheduleError(
                f"not a schedule: {text[:80]!r} (expected '1:' or '2:' then point=choice "
                "pairs, as '1:12=1,40=h0')"
            )
        kind = int(match.group(1))
        pairs = []
        for part in match.group(2).split(",") if match.group(2) else []:
            point_text, choice_text = part.split("=")
            letter = choice_text[0] if choice_text[0] in "hw" else ""
            numbers = (point_text, choice_text.removeprefix(letter))
            if any(len(n.lstrip("0")) > MAX_SCHEDULE_DIGITS for n in numbers):
                raise ScheduleError(
                    f"schedule {text[:80]!r}: a number of more than {MAX_SCHEDULE_DIGITS} digits"
                )
            point, choice = (int(n) for n in numbers)
            if letter and choice >= _WAIT - 1:
                raise ScheduleError(
                    f"schedule {text[:80]!r}: a task held back is at most {letter}{_WAIT - 2}"
                )
            if letter and kind == STEPS:
                raise ScheduleError(
                    f"schedule {text[:80]!r}: a '2:' schedule runs one task at a time and "
                    "holds none back (h, w)"
                )
            if not letter and choice == 0:
                raise ScheduleError(f"schedule {text!r}: a default choice (0) is not written")
            pairs.append((point, repick(letter, choice)))
        points = [point for point, _ in pairs]
        if points != sorted(set(points)):
            raise ScheduleError(f"schedule {text!r}: choice points must increase")
        return cls(tuple(pairs), kind)

    @classmethod
    def from_picks(cls, picks: Sequence[int], kind: int = BATCHES) -> Schedule:
        return cls(tuple((point, pick) for point, pick in enumerate(picks) if pick), kind)

    @property
    def holds(self) -> int:
        """The tasks held back (each hold is one of the delay budget)."""
        return sum(choice < 0 for _, choice in self.choices)

    @property
    def reorders(self) -> int:
        """The choices that run another task than the default one."""
        return sum(choice > 0 for _, choice in self.choices)

    def __str__(self) -> str:
        return f"{self.kind}:" + ",".join(
            "{}={}{}".format(point, *unpick(choice)) for point, choice in self.choices
        )

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
    # dfs only: every schedule within the bounds was run.
    complete: bool
    failure: Failure | None
    # The delay budget of a run (0: no task held back), dfs's bound of
    # reorderings, the message latency of the runs.
    delays: int = 0
    bound: int = 0
    latency: Latency = None
    # The tasks held back over all runs.
    held: int = 0
    # dfs with reduction: the runs below whose states nothing more was run,
    # another node having explored on from the same state.
    merged: int = 0
    # With footprints recorded (dfs with reduction, or count_traces): the
    # distinct traces, the runs' classes up to the order of independent
    # steps (what a reduction must keep); None when not recorded.
    traces: int | None = None
    # dfs with reduction: the schedules not run, their first batch known to
    # reach a state explored on from with as much budget left.
    skipped: int = 0
    # dfs with reduction: the runs of the last level whose footprints were
    # recorded only up to a state explored before (the rest of the run is
    # one run before: see _Dfs.stop_at).
    stopped: int = 0
    # With count_dependence: the dependent pairs of steps run in one batch,
    # by what both touched (a pair that met on several objects counts for
    # each), most first; None when not counted.
    dependence: tuple[tuple[str, int], ...] | None = None

    def summary(self) -> str:
        if not self.complete:
            done = ""
        elif self.delays:
            done = (
                f" (complete: every schedule within {self.bound} reorderings and "
                f"{self.delays} delays)"
            )
        else:
            done = " (complete: every schedule within the bound)"
        found = "no failure" if self.failure is None else f"a failure: {self.failure.error!r}"
        held = f", {self.held} tasks held back" if self.delays and self.strategy != "pct" else ""
        if self.merged:
            held += f", {self.merged} runs merged into states explored before"
        if self.skipped:
            held += f", {self.skipped} equivalent schedules skipped"
        traces = "" if self.traces is None else f" ({self.traces} distinct traces)"
        return (
            f"{self.strategy}: {self.runs} runs{done}, {self.interleavings} distinct "
            f"interleavings{traces}, {self.choice_points} choice points (at most "
            f"{self.max_choice_points} in a run, {self.max_steps} steps){held}; {found}"
        )


class ExplorationFailedError(ExplorationError, AssertionError):
    """An exploration found a failing schedule (raised by :func:`explore`
    unless ``raise_on_failure=False``); ``exploration`` has the details and
    the message the replay string."""

    def __init__(self, message: str, exploration: Exploration) -> None:
        super().__init__(message)
        self.exploration = exploration


# One run ------------------------------------------------------------------------

# How a run keys the states at its batches' starts, if it does: by its
# trace (footprints recorded), or by the steps run so far.
Keying = Literal["traces", "steps"] | None

# stop_at(choice point, state) -> whether to record no more of a run from a
# batch's start: the rest of it was run before (see _Dfs.stop_at).
StopAt = Callable[[int, bytes], bool] | None

# decide(choice point, ids of the options in creation order, step number) ->
# the index of the task to run next, or -1 - i to hold back the i-th option
# (batches only).
Decide = Callable[[int, list[int], int], int]


@attrs.frozen
class Batch:
    """One batch of a run, as the reduction needs it: its first choice
    point, its options in creation order (task ids), the order its steps
    ran in, the pairs (first, second) of its steps that touched a common
    object, in the order they ran, and the tasks whose steps made no task
    runnable (none if Trio's run loop did after them)."""

    point: int
    options: tuple[int, ...]
    ran: tuple[int, ...]
    dependent: frozenset[tuple[int, int]]
    quiet: frozenset[int] = frozenset()


@attrs.frozen
class _Run:
    picks: tuple[int, ...]
    options: tuple[int, ...]
    steps: int
    digest: str
    tail: tuple[str, ...]
    deviations: tuple[str, ...]
    error: BaseException | None
    kind: int = BATCHES
    # With states recorded: at the start of each batch, its first choice
    # point and the state there (see _Chooser.states).
    states: tuple[tuple[int, bytes], ...] = ()
    # With footprints recorded: the run's trace (its Mazurkiewicz trace's
    # key: equal for two runs that differ only in the order of independent
    # steps), and each batch's footprints.
    trace: int | None = None
    footprints: tuple[Batch, ...] = ()
    # The first choice point of each batch that had one (a batch of one task
    # has none), in order.
    firsts: tuple[int, ...] = ()
    # With states recorded: the batches (indices in states) that were one
    # task, with none held until no other can run.
    lone: tuple[int, ...] = ()
    # Whether recording stopped at its last state, the rest of the run one
    # run before (then its trace is that run's: none of its own is kept).
    stopped: bool = False

    @property
    def schedule(self) -> Schedule:
        return Schedule.from_picks(self.picks, self.kind)


class _Chooser(random.Random):
    """Takes ``trio._core._run._r``'s place for one run: orders each batch
    as ``decide`` says (or, for :data:`STEPS`, keeps one task of it and
    hands the others back to the run queue), and records the choices and
    the steps. A task held back goes back to Trio's run queue, which is the
    next batch: it stays runnable and runs after the others' steps."""

    def __init__(
        self,
        decide: Decide,
        max_steps: int,
        kind: int = BATCHES,
        *,
        states: Keying = None,
        stop_at: StopAt = None,
    ) -> None:
        super().__init__(0)
        # Whether the rest of the run from a batch's start (its first choice
        # point, its state) is one run before: then nothing more is recorded.
        self._stop_at = stop_at
        self.stopped = False
        # The state at the start of each batch (when asked for): the steps
        # run so far (a deterministic program in the same state after the
        # same steps) and the tasks held until no other can run.
        self.states: list[tuple[int, bytes]] | None = [] if states is not None else None
        self._keying = states
        self._so_far = hashlib.blake2b(digest_size=16)
        # The footprints of the steps, whose key is the state (with states).
        self.recorder: Recorder | None = None
        # With states, each batch: its first choice point, its options in
        # creation order, the order its steps ran in, and the pairs of those
        # steps whose footprints met (dependent steps, in the order run).
        self.footprints: list[Batch] = []
        self._batch: tuple[int, tuple[int, ...], tuple[Any, ...]] | None = None
        self._decide = decide
        self._max_steps = max_steps
        self._kind = kind
        self._ids: dict[object, int] = {}
        self._names: list[str] = []
        self.picks: list[int] = []
        self.options: list[int] = []
        self.firsts: list[int] = []
        # With states, the batches (their indices in states) of one task
        # and none held until no other can run.
        self.lone: list[int] = []
        self.deviations: list[str] = []
        self.steps: list[int] = []
        self.batches = 0
        self.over_limit = False
        self._cancelled_in = 0  # the batch in which the run was cancelled
        self.misfit: str | None = None
        self.scope: trio.CancelScope | None = None
        # Task id -> (its line in deviations, the choice point of its first
        # hold, the batch it was last held in, batches held in a row): holds
        # in a row make one line.
        self._holding: dict[int, tuple[int, int, int, int]] = {}
        # The tasks held back until no other can run, and the batch that
        # held each.
        self._waiting: dict[Any, int] = {}
        # The last "ran" line: (its index, first and last choice point, the
        # (task, default) pair).
        self._running: tuple[int, int, int, tuple[int, int]] = (-1, -1, -1, (-1, -1))

    def shuffle(self, x: MutableSequence[Any]) -> None:
        # Trio's batch, sorted by creation order; it runs from the end.
        self.batches += 1
        if self._kind == STEPS:
            self._one(x)
        else:
            self._order(x)
        if len(self.steps) > self._max_steps and self.scope is not None:
            if not self.over_limit:
                self.over_limit = True
                self._cancelled_in = self.batches
                self.scope.cancel()
            elif (
                len(self.steps) > 2 * self._max_steps + HARD_STOP
                and self.batches - self._cancelled_in > HARD_STOP
            ):
                # Cancelled and still running, batch after batch (not one
                # wide batch of tasks the cancel has yet to reach): a task
                # swallows Cancelled (or shields itself). Only breaking
                # Trio's run loop ends it.
                raise _HardStopError

    def close_batch(self) -> None:
        """File the footprints of the batch that ran last (with states)."""
        recorder = self.recorder
        if recorder is None:
            return
        if self._batch is not None:
            point, options, ran = self._batch
            ids = tuple(self._id(task) for task in ran)
            pairs = frozenset((ids[i], ids[j]) for i, j in recorder.dependent(ran))
            quiet = frozenset(ids[i] for i in recorder.quiet(ran))
            self.footprints.append(Batch(point, options, ids, pairs, quiet))
            self._batch = None
        recorder.end_batch()

    def _stop_recording(self) -> None:
        """Record no more of this run (its steps and choices aside): the
        footprint recorder leaves the run, which goes on as it would
        without one."""
        self.stopped = True
        recorder = self.recorder
        if recorder is not None:
            self.recorder = None
            _footprint.sink = None
            # (A program that took the recorder out of the run itself, with
            # Trio's private run context, has nothing left to take out.)
            with contextlib.suppress(KeyError):
                trio.lowlevel.remove_instrument(recorder)

    def _state(self, batch: list[Any]) -> bytes:
        """The state at the start of ``batch``: its trace's key
        (``"traces"``), or the steps run so far (``"steps"``), with the
        tasks held until no other can run, unless every task of the batch
        is one of them: then all are let go in it, as if none had been
        held (the same batch, the same run from here on)."""
        waiting = [] if all(task in self._waiting for task in batch) else list(self._waiting)
        if self._keying == "traces":
            assert self.recorder is not None, "traces are keyed by their footprints"
            return self.recorder.key(waiting)
        ids = sorted(self._id(task) for task in waiting)
        state = self._so_far.copy()
        state.update(b"".join(i.to_bytes(4, "little") for i in (0xFFFFFFFF, *ids)))
        return state.digest()

    def _order(self, x: MutableSequence[Any]) -> None:
        self.close_batch()
        remaining = list(x)
        held: list[Any] = []
        if self.states is not None and remaining and not self.stopped:
            if len(remaining) == 1 and not self._waiting:
                self.lone.append(len(self.states))
            point, state = len(self.picks), self._state(remaining)
            self.states.append((point, state))
            # Not while a task waits until no other can run: when it is let
            # go (WAIT_LIMIT batches at most) is not in the state's key.
            if self._stop_at is not None and not self._waiting and self._stop_at(point, state):
                self._stop_recording()
        if self._waiting:
            # Tasks that wait until no other can run: held while another can.
            others = [task for task in remaining if task not in self._waiting]
            # A task waits at most WAIT_LIMIT batches: a held task does not
            # wait for ever behind one that spins on checkpoints.
            if others:
                for task in [t for t in remaining if t in self._waiting]:
                    if self.batches - self._waiting[task] >= WAIT_LIMIT:
                        self._released(task)
                        others.append(task)
                held = [task for task in remaining if task in self._waiting]
                remaining = sorted(others, key=remaining.index)
            else:
                for task in remaining:
                    self._released(task)
        ids = [self._id(task) for task in remaining]
        first, options_in_order = len(self.picks), tuple(ids)
        if len(remaining) > 1:
            self.firsts.append(first)
        order: list[Any] = []
        while len(remaining) > 1:
            point = len(self.picks)
            options = len(remaining)
            pick = self._checked(
                point, self._decide(point, ids, len(self.steps) + len(order)), options
            )
            self.picks.append(pick)
            self.options.append(options)
            kind, index = unpick(pick)
            if kind:
                task = remaining.pop(index)
                self._hold(point, ids.pop(index), kind)
                if kind == "w":
                    self._waiting[task] = self.batches
                held.append(task)
                continue
            if pick:
                self._ran(point, ids[pick], ids[0])
            order.append(remaining.pop(pick))
            ids.pop(pick)
        order += remaining
        ran = [self._id(task) for task in order]
        self.steps += ran
        if self._keying == "steps":
            self._so_far.update(b"".join(i.to_bytes(4, "little") for i in ran))
        if self.recorder is not None and order:
            self._batch = (first, options_in_order, tuple(order))
        x[:] = order[::-1]
        if held:
            _trio_run.GLOBAL_RUN_CONTEXT.runner.runq.extend(held)

    def _one(self, x: MutableSequence[Any]) -> None:
        if len(x) > 1:
            ids = [self._id(task) for task in x]
            point = len(self.picks)
            pick = self._checked(
                point, self._decide(point, ids, len(self.steps)), len(x), holds=False
            )
            self.picks.append(pick)
            self.options.append(len(x))
            if pick:
                self._ran(point, ids[pick], ids[0])
            chosen = x[pick]
            _trio_run.GLOBAL_RUN_CONTEXT.runner.runq.extend(
                task for index, task in enumerate(x) if index != pick
            )
            x[:] = [chosen]
        if x:  # trio shuffles an empty batch too
            self.steps.append(self._id(x[0]))

    def _checked(self, point: int, pick: int, options: int, *, holds: bool = True) -> int:
        kind, index = unpick(pick)
        if index < options and (holds or not kind):
            return pick
        # Raising here would break trio's run loop: the run goes on with the
        # last option, and the error is raised after it.
        if self.misfit is None:
            self.misfit = (
                f"choice point {point} has {options} options; the schedule picks "
                f"{kind}{index}: it does not fit this program"
                + ("" if holds or not kind else " (a '2:' schedule holds no task back)")
            )
        return options - 1

    def _ran(self, point: int, task: int, default: int) -> None:
        # The same pair at the choice points in a row makes one line.
        line, first, last, pair = self._running
        if pair == (task, default) and last == point - 1 and line == len(self.deviations) - 1:
            points = f"{first}-{point}"
            times = f" ({point - first + 1} choice points in a row)"
        else:
            line, first, points, times = len(self.deviations), point, str(point), ""
            self.deviations.append("")
        self.deviations[line] = (
            f"{points}: ran {self._label(task)} before {self._label(default)}{times}"
        )
        self._running = (line, first, point, (task, default))

    def _label(self, task: int) -> str:
        # The function's name without its module and enclosing functions.
        name = self._names[task]
        if not name.startswith("<"):
            name = name.rsplit(".", 1)[-1]
        return f"{name}#{task}"

    def _hold(self, point: int, task: int, kind: str) -> None:
        name = self._label(task)
        if kind == "w":
            self._holding[task] = (len(self.deviations), point, self.batches, 0)
            self.deviations.append(f"{point}: held {name} back until no other task could run")
            return
        line, first, last, count = self._holding.get(task, (-1, point, -2, 0))
        if last == self.batches - 1 and count:
            count += 1
        else:
            line, first, count = len(self.deviations), point, 1
            self.deviations.append("")
        batches = "1 batch" if count == 1 else f"{count} batches in a row"
        self.deviations[line] = f"{first}: held {name} back for {batches} (the others ran first)"
        self._holding[task] = (line, first, self.batches, count)

    def _released(self, task: Any) -> None:
        del self._waiting[task]
        number = self._id(task)
        line, _, start, _ = self._holding.pop(number)
        self.deviations[line] += f" ({self.batches - start} batches)"

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
    main: Callable[[], Awaitable[object]],
    decide: Decide,
    *,
    seed: int,
    max_steps: int,
    kind: int = BATCHES,
    latency: Latency = None,
    states: Keying = None,
    footprints: bool = False,
    shared: tuple[type, ...] = (),
    stop_at: StopAt = None,
    dependence: collections.Counter[str] | None = None,
) -> _Run:
    """Run ``main`` once, ``decide`` choosing at each choice point, with the
    collector paused (see actors/testing/_heap.py): what the run left is
    collected when it is over and Trio's scheduler is restored, before the
    collector runs on its own again (else the first allocation after could
    start a collection, in which an interrupt is lost). Only the youngest
    generation: with the collector paused, all the run made is in it (a
    full collection here scanned the whole process at every run, nine
    times the run's own time where no exploration freezes what it keeps:
    a replay, minimising)."""
    paused = gc.isenabled()
    gc.disable()
    try:
        return _run(
            main,
            decide,
            seed=seed,
            max_steps=max_steps,
            kind=kind,
            latency=latency,
            states=states,
            footprints=footprints,
            shared=shared,
            stop_at=stop_at,
            dependence=dependence,
        )
    finally:
        if paused:
            try:
                collect(0)
            finally:
                gc.enable()


def _run(
    main: Callable[[], Awaitable[object]],
    decide: Decide,
    *,
    seed: int,
    max_steps: int,
    kind: int,
    latency: Latency,
    states: Keying,
    footprints: bool,
    shared: tuple[type, ...],
    stop_at: StopAt,
    dependence: collections.Counter[str] | None,
) -> _Run:
    chooser = _Chooser(decide, max_steps, kind, states=states, stop_at=stop_at)

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
    broken = False
    try:
        with (
            recording(shared)
            if footprints or states == "traces" or dependence is not None
            else contextlib.nullcontext()
        ) as recorder:
            if recorder is not None and dependence is not None:
                recorder.count_dependence(dependence)
            chooser.recorder = recorder
            _run_seeded(
                bounded,
                seed=seed,
                clock=MockClock(autojump_threshold=0),
                latency=latency,
                instruments=() if recorder is None else (recorder,),
                # Not inside trio's bookkeeping or an instrument (which trio
                # would drop, the interrupt with it): at a checkpoint.
                restrict_keyboard_interrupt_to_checkpoints=True,
            )
    except _NotAsyncError as caught:
        raise TypeError(str(caught)) from None
    except trio.TrioInternalError as caught:
        if not isinstance(caught.__cause__, _HardStopError):
            raise
        broken = True
        error = StepLimitError(
            f"the run took more than {max_steps} steps, and went on for {max_steps + HARD_STOP} "
            f"more, over {HARD_STOP} batches, once cancelled (a task that swallows "
            "trio.Cancelled, or shields itself?): broken off"
        )
    except BaseException as caught:
        if _passes_on(caught):
            passed = _passed_on(caught)
            if passed is caught:
                raise
            raise passed from None  # an interrupt, not a group of one
        error = caught  # a failure of the program under test
    finally:
        _trio_run._r = saved
    chooser.close_batch()
    chooser.recorder = None
    if recorder is not None and recorder.error is not None:
        raise RuntimeError(
            "the reduction's footprint recorder failed in this run (a bug of the library: "
            "explore with reduction=False meanwhile)"
        ) from recorder.error
    if broken:
        # The chooser's tasks first: then nothing here holds the run's.
        chooser._ids.clear()
        chooser._waiting.clear()
        chooser.scope = None
        _collect_quietly()
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
        kind,
        () if chooser.states is None else tuple(chooser.states),
        None if recorder is None or chooser.stopped else recorder.total,
        tuple(chooser.footprints),
        tuple(chooser.firsts),
        tuple(chooser.lone),
        chooser.stopped,
    )


# Steps past twice the limit after which a run that was cancelled at the
# limit and goes on is broken off.
HARD_STOP = 1000


class _HardStopError(Exception):
    """Raised into Trio's run loop to end a run that ignores cancellation."""


def _collect_quietly() -> None:
    """Collect what a run broken off left behind (its tasks' coroutines,
    which object to being closed) now, with nothing reported, rather than
    in whatever runs next."""
    saved = sys.unraisablehook
    sys.unraisablehook = lambda unraisable: None
    try:
        collect()
    finally:
        sys.unraisablehook = saved


class _NotAsyncError(Exception):
    """``main()`` returned something that is not awaitable."""


# What ends an exploration rather than fails a run: an interrupt, an exit.
_PASSED_ON = (KeyboardInterrupt, SystemExit, GeneratorExit)


def _passes_on(error: BaseException) -> bool:
    if isinstance(error, BaseExceptionGroup):
        return error.split(_PASSED_ON)[0] is not None
    return isinstance(error, _PASSED_ON)


def _passed_on(error: BaseException) -> BaseException:
    """The interrupt or exit that ends the exploration, from ``error`` (one
    that passes on): itself, or a group's first (what else the group held,
    the run's tasks cancelled by it, is dropped)."""
    if isinstance(error, BaseExceptionGroup):
        for inner in error.exceptions:
            if _passes_on(inner):
                return _passed_on(inner)
    return error


_NONDETERMINISTIC = (
    "the program ran differently under the same schedule and seed (real I/O, threads, "
    "an unseeded random, time.time() or id()?): a replay would not reproduce it"
)


def _following(schedule: Schedule, *, strict: bool) -> Decide:
    wanted = dict(schedule.choices)

    def decide(point: int, ids: list[int], step: int) -> int:
        choice = wanted.get(point, 0)
        if not strict:
            # A choice past a smaller batch's end takes its last option.
            kind, index = unpick(choice)
            if index >= len(ids):
                return repick(kind, len(ids) - 1)
        return choice

    return decide


def _name(main: Callable[..., object]) -> str:
    return str(getattr(main, "__name__", "main"))
