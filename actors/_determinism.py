"""Deterministic runs: one seed for Trio's scheduler and for the library.

Trio shuffles the order in which it runs the tasks that became ready together,
with a module-level ``random.Random``. Its own Hypothesis plugin makes a run
reproducible by switching that shuffle to a deterministic one (sort the batch
by task creation order, then shuffle with the seeded generator) and seeding
the generator. :func:`run` does the same for one ``trio.run``, and restores
Trio's settings afterwards. With Trio's ``MockClock`` (the default here) and
no real I/O, the same seed then gives the same schedule, and so the same trace.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar, TypeVarTuple, Unpack

import trio
import trio._core._run as _trio_run

T = TypeVar("T")
Ts = TypeVarTuple("Ts")

_RUN_SEED: trio.lowlevel.RunVar[int] = trio.lowlevel.RunVar("actors_run_seed", default=0)


def current_seed() -> int:
    """The seed :func:`run` was given for the current Trio run, or 0."""
    return _RUN_SEED.get()


def run(
    async_fn: Callable[[Unpack[Ts]], Awaitable[T]],
    *args: *Ts,
    seed: int = 0,
    clock: trio.abc.Clock | None = None,
) -> T:
    """``trio.run(async_fn, *args)`` with a deterministic, seeded scheduler.

    ``clock`` defaults to ``trio.testing.MockClock(autojump_threshold=0)``:
    virtual time that jumps whenever every task is blocked, so timeouts cost no
    real time. :func:`actors.open_system` inside the run takes ``seed`` as its
    default seed. Not reentrant: one deterministic run at a time per process.
    """
    if clock is None:
        # Imported here: trio.testing loads pytest, which importing actors must not.
        import trio.testing

        clock = trio.testing.MockClock(autojump_threshold=0)
    saved_state = _trio_run._r.getstate()
    saved_flag = _trio_run._ALLOW_DETERMINISTIC_SCHEDULING
    _trio_run._r.seed(seed)
    setattr(_trio_run, "_ALLOW_DETERMINISTIC_SCHEDULING", True)  # noqa: B010 (Final in trio)

    async def seeded() -> T:
        _RUN_SEED.set(seed)
        return await async_fn(*args)

    try:
        return trio.run(seeded, clock=clock)
    finally:
        setattr(_trio_run, "_ALLOW_DETERMINISTIC_SCHEDULING", saved_flag)  # noqa: B010
        _trio_run._r.setstate(saved_state)
