"""Schedules and one explored run: the schedule strings, the results an
exploration reports, and the chooser that takes the place of Trio's
scheduler random source for a run (see :mod:`actors.testing._explore`)."""

from __future__ import annotations

import hashlib
import inspect
import random
import re
from collections.abc import Awaitable, Callable, MutableSequence, Sequence
from typing import Any, Literal, final

import attrs
import trio
import trio._core._run as _trio_run
from trio.testing import MockClock

from .._core._errors import ActorError
from .._determinism import run as _run_seeded

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


class ExplorationFailedError(ExplorationError, AssertionError):
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


def _name(main: Callable[..., object]) -> str:
    return str(getattr(main, "__name__", "main"))
