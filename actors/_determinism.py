"""Deterministic runs: one seed for Trio's scheduler and for the library.

Trio shuffles the order in which it runs the tasks that became ready together,
with a module-level ``random.Random``. Its own Hypothesis plugin makes a run
reproducible by switching that shuffle to a deterministic one (sort the batch
by task creation order, then shuffle with the seeded generator) and seeding
the generator. :func:`run` does the same for one ``trio.run``, and restores
Trio's settings afterwards. With Trio's ``MockClock`` (the default here) and
no real I/O, the same seed then gives the same schedule, and so the same trace.
With message latency on (``run(main, latency=...)``), the delays of messages
are drawn from a generator of their own, seeded from the same seed.
"""

from __future__ import annotations

import functools
import math
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import TypeVar, TypeVarTuple, Unpack, final

import trio
import trio._core._run as _trio_run
from trio._core._mock_clock import MockClock

from ._core._errors import DeadlockError, TimeLimitError
from ._core._transit import Bounds, Latency, check_latency
from ._deadlock import DeadlockWatch

T = TypeVar("T")
Ts = TypeVarTuple("Ts")

_RUN_SEED: trio.lowlevel.RunVar[int] = trio.lowlevel.RunVar("actors_run_seed", default=0)
_RUN_LATENCY: trio.lowlevel.RunVar[Bounds | None] = trio.lowlevel.RunVar(
    "actors_run_latency", default=None
)


def current_seed() -> int:
    """The seed :func:`run` was given for the current Trio run, or 0."""
    return _RUN_SEED.get()


def current_latency() -> Bounds | None:
    """The bounds ``(low, high)`` of the message latency :func:`run` was
    given for the current Trio run, or None (off)."""
    return _RUN_LATENCY.get()


@final
class RealClock(trio.abc.Clock):
    """Real time, as Trio's default clock: for :func:`run` in an application
    that does I/O or waits for threads (``actors.run(main, clock=RealClock())``).
    On the autojump ``MockClock`` such waits look idle, so every timeout fires at
    once. Deadlock detection needs the mock clock; it is off with this one."""

    def start_clock(self) -> None:
        return None

    def current_time(self) -> float:
        return time.perf_counter()

    def deadline_to_sleep_time(self, deadline: float) -> float:
        return deadline - time.perf_counter()


def run(
    async_fn: Callable[[Unpack[Ts]], Awaitable[T]],
    *args: *Ts,
    seed: int = 0,
    clock: trio.abc.Clock | None = None,
    latency: Latency = None,
    time_limit: float | None = None,
    instruments: Sequence[trio.abc.Instrument] = (),
    restrict_keyboard_interrupt_to_checkpoints: bool = False,
) -> T:
    """``trio.run(async_fn, *args)`` with a deterministic, seeded scheduler.

    ``clock`` defaults to ``trio.testing.MockClock(autojump_threshold=0)``:
    virtual time that jumps whenever every task is blocked, so timeouts cost no
    real time. An application that does I/O or waits for threads passes
    ``clock=RealClock()`` (on the mock clock, time would jump past its
    timeouts while it waits). :func:`actors.open_system` inside the run takes
    ``seed`` as its default seed. Not reentrant: one deterministic run at a
    time per process.

    On a ``MockClock``, a deadlock (every task blocked, no deadline pending,
    and nothing outside the run that could wake a task: no I/O, worker thread,
    subprocess or signal wait) would hang in real time: instead the run is
    cancelled and :class:`~actors.DeadlockError` names each waiting actor and
    task and what it waits on. A wake-up that only another thread could give
    (``trio.from_thread`` from a thread the run did not start) is not seen:
    use ``RealClock`` there.

    ``latency`` (default None: off) delays every message between actors by
    a virtual time drawn from a generator seeded with ``seed``: ``L`` draws
    each delay uniformly in ``[0, L]`` seconds, ``(low, high)`` in
    ``[low, high]``. Each message's sender and receiver keep their order (as
    Erlang's processes do); messages of different senders to one receiver
    arrive as their delays fall, so seeds reorder them. Each
    :func:`actors.open_system` in the run takes it as its default; see
    "Latency" in ``docs/actors.md``. A ``latency`` that is not None, a
    finite number of seconds >= 0 or a pair ``(low, high)`` of them with
    ``low <= high`` raises :class:`TypeError` (not a number: a ``bool`` is
    not one) or :class:`ValueError`, before anything runs.

    ``time_limit`` (default None: none) ends a run on the mock clock once
    every task waits and the next deadline is more than ``time_limit``
    virtual seconds from the start (whatever they wait on: a socket or a
    thread too, which the mock clock would jump past): the run is cancelled and
    :class:`~actors.TimeLimitError` names what each actor and task waits on,
    as a deadlock's report does. A run that is stuck but kept going by a
    timer (``send_every``, a retry loop with ``trio.sleep``), which no deadlock
    check can tell from one that is working, ends so. A ``time_limit`` that
    is not a number of seconds >= 0 raises :class:`TypeError` or
    :class:`ValueError`, and one with a clock other than ``MockClock``
    :class:`ValueError` (it is virtual time), before anything runs.

    ``instruments`` and ``restrict_keyboard_interrupt_to_checkpoints`` are
    passed to ``trio.run``. Restricted, a Ctrl-C is raised in the main task at
    its next checkpoint, never in the middle of trio's own bookkeeping: by
    default it lands wherever the running task is, and one that lands inside
    ``start_soon`` (between making a task's coroutine and registering it)
    leaves trio's task sets broken (a ``TrioInternalError``), a coroutine
    never awaited, or the interrupt swallowed by an instrument. A run that
    checkpoints (every run on the mock clock does, each time it blocks)
    loses nothing by it; a loop that never checkpoints cannot be
    interrupted then.
    """
    bounds = check_latency(latency)
    if time_limit is not None:
        _check_time_limit(time_limit, clock)
    if clock is None:
        clock = MockClock(autojump_threshold=0)
    saved_state = _trio_run._r.getstate()
    saved_flag = _trio_run._ALLOW_DETERMINISTIC_SCHEDULING
    _trio_run._r.seed(seed)
    setattr(_trio_run, "_ALLOW_DETERMINISTIC_SCHEDULING", True)  # noqa: B010 (Final in trio)

    @functools.wraps(async_fn)
    async def seeded() -> T:
        _RUN_SEED.set(seed)
        _RUN_LATENCY.set(bounds)
        if not isinstance(clock, MockClock):
            return await async_fn(*args)
        with trio.CancelScope() as scope:
            watch = DeadlockWatch(clock, scope, time_limit)
            try:
                return await async_fn(*args)
            finally:
                watch.remove()
        assert watch.report is not None, "only the deadlock watch cancels the run's scope"
        raise (TimeLimitError if watch.timed_out else DeadlockError)(watch.report)

    try:
        return trio.run(
            seeded,
            clock=clock,
            instruments=instruments,
            restrict_keyboard_interrupt_to_checkpoints=restrict_keyboard_interrupt_to_checkpoints,
        )
    finally:
        setattr(_trio_run, "_ALLOW_DETERMINISTIC_SCHEDULING", saved_flag)  # noqa: B010
        _trio_run._r.setstate(saved_state)


def _check_time_limit(time_limit: object, clock: trio.abc.Clock | None) -> None:
    if isinstance(time_limit, bool) or not isinstance(time_limit, int | float):
        raise TypeError(f"time_limit must be a number of seconds, not {type(time_limit).__name__}")
    if not 0 <= time_limit < math.inf:
        raise ValueError(f"time_limit must be a finite number of seconds >= 0: {time_limit!r}")
    if clock is not None and not isinstance(clock, MockClock):
        raise ValueError(
            f"time_limit is virtual time: it needs trio's MockClock, not {type(clock).__name__}"
        )
