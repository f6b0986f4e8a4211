"""Synchronous entry points refuse a thread other than their system's Trio thread.

The tests call them from a real worker thread. While the scheduler waits for
that thread it looks idle, and the autojump clock would jump to the test's
virtual deadline, so the clock is held still for the thread's run.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import TypeVar

import pytest
import trio
import trio.testing

import actors
from actors import Inbox, Reply

from .messages import Total, recorder

T = TypeVar("T")


async def in_thread(clock: trio.testing.MockClock, fn: Callable[[], T]) -> T:
    """``fn()`` in a worker thread, on a clock held still until it returns."""
    clock.autojump_threshold = math.inf
    try:
        return await trio.to_thread.run_sync(fn)
    finally:
        clock.autojump_threshold = 0


async def test_tell_nowait_from_a_foreign_thread_raises_and_queues_nothing(
    autojump_clock: trio.testing.MockClock,
) -> None:
    seen: list[object] = []
    async with actors.open_system() as system:
        ref = await system.spawn(recorder, seen, name="r")
        await trio.testing.wait_all_tasks_blocked()  # parked in receive
        with pytest.raises(
            RuntimeError,
            match=(
                r"^tell_nowait to actor 'r' was called from a thread other than its actor "
                r"system's trio thread; from another thread, call "
                r"trio\.from_thread\.run_sync\(ref\.tell_nowait, message\)$"
            ),
        ):
            await in_thread(autojump_clock, functools.partial(ref.tell_nowait, 1))
        assert ref.statistics().queued == 0
    assert seen == []


async def test_tell_nowait_through_trio_from_thread_reaches_the_actor(
    autojump_clock: trio.testing.MockClock,
) -> None:
    seen: list[object] = []
    async with actors.open_system() as system:
        ref = await system.spawn(recorder, seen)
        await trio.testing.wait_all_tasks_blocked()
        await in_thread(
            autojump_clock, functools.partial(trio.from_thread.run_sync, ref.tell_nowait, 2)
        )
    assert seen == [2]


async def test_a_reply_sent_from_a_foreign_thread_raises_and_stays_pending(
    autojump_clock: trio.testing.MockClock,
) -> None:
    kept: list[Reply[int]] = []

    async def keeps(inbox: Inbox[Total]) -> None:
        async for envelope in inbox:
            kept.append(envelope.message.reply)

    async with actors.open_system() as system:
        ref = await system.spawn(keeps, name="keeper")
        async with trio.open_nursery() as nursery:
            answers: list[int] = []

            async def ask_keeper() -> None:
                answers.append(await ref.ask(Total))

            nursery.start_soon(ask_keeper)
            await trio.testing.wait_all_tasks_blocked()
            (reply,) = kept
            with pytest.raises(
                RuntimeError,
                match=(
                    r"^send on reply to message 0 of actor 'keeper' was called from a thread "
                    r"other than its actor system's trio thread; from another thread, call "
                    r"trio\.from_thread\.run_sync\(reply\.send, value\)$"
                ),
            ):
                await in_thread(autojump_clock, functools.partial(reply.send, 1))
            assert not reply.done
            await in_thread(
                autojump_clock, functools.partial(trio.from_thread.run_sync, reply.send, 2)
            )
        assert answers == [2]


async def test_closing_an_inbox_from_a_foreign_thread_raises_and_leaves_it_open(
    autojump_clock: trio.testing.MockClock,
) -> None:
    inboxes: list[Inbox[object]] = []

    async def hands_out_its_inbox(inbox: Inbox[object]) -> None:
        inboxes.append(inbox)
        async for _ in inbox:
            pass

    async with actors.open_system() as system:
        ref = await system.spawn(hands_out_its_inbox, name="open")
        (inbox,) = inboxes
        with pytest.raises(
            RuntimeError,
            match=(
                r"^close of the inbox of actor 'open' was called from a thread other than its "
                r"actor system's trio thread; from another thread, call "
                r"trio\.from_thread\.run_sync\(inbox\.close\)$"
            ),
        ):
            await in_thread(autojump_clock, inbox.close)
        assert ref.statistics().state is actors.ActorState.RUNNING


async def test_cancelling_a_system_from_a_foreign_thread_raises_and_cancels_nothing(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with actors.open_system() as system:
        ref = await system.spawn(recorder, [])
        with pytest.raises(
            RuntimeError,
            match=(
                r"^cancel of an actor system was called from a thread other than its actor "
                r"system's trio thread; from another thread, call "
                r"trio\.from_thread\.run_sync\(system\.cancel\)$"
            ),
        ):
            await in_thread(autojump_clock, system.cancel)
        assert ref.statistics().state is actors.ActorState.RUNNING
