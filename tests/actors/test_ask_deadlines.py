"""An ask's deadline is kept by the system's timer task (no cancel scope per
ask): it fires at the exact time, in deadline order, goes away when the reply
comes first, and is kept by the asker itself once the system ended."""

from __future__ import annotations

import pytest
import trio
import trio.testing

import actors
from actors import AskTimeoutError, Inbox

from .messages import Total, counter


async def silent(inbox: Inbox[Total]) -> None:
    async for _ in inbox:
        pass  # takes every ask, answers none


async def test_asks_time_out_in_the_order_of_their_deadlines_at_the_exact_times() -> None:
    ended: list[tuple[str, float]] = []
    async with actors.open_system() as system:
        ref = await system.spawn(silent, name="silent")

        async def ask(label: str, seconds: float) -> None:
            with pytest.raises(
                AskTimeoutError, match=rf"^ask of actor 'silent' got no reply within {seconds:g}s$"
            ):
                await ref.ask(Total, timeout=seconds)
            ended.append((label, trio.current_time()))

        async with trio.open_nursery() as nursery:
            nursery.start_soon(ask, "three", 3.0)
            nursery.start_soon(ask, "one", 1.0)
            nursery.start_soon(ask, "two and a half", 2.5)
            nursery.start_soon(ask, "one again", 1.0)
    # The two 1s asks time out together; trio runs the woken tasks in any order.
    assert sorted(ended[:2]) == [("one", 1.0), ("one again", 1.0)]
    assert ended[2:] == [("two and a half", 2.5), ("three", 3.0)]


async def test_a_reply_before_the_deadline_leaves_no_deadline_behind() -> None:
    async with actors.open_system() as system:
        ref = await system.spawn(counter, name="c")
        for _ in range(500):
            await ref.ask(Total, timeout=5)
        assert len(system._timekeeper._heap) == 0
        start = trio.current_time()
    assert trio.current_time() == start  # nothing left to wait for


async def test_a_cancelled_ask_leaves_no_deadline_behind() -> None:
    async with actors.open_system() as system:
        ref = await system.spawn(silent, name="silent")
        with trio.move_on_after(1):
            await ref.ask(Total, timeout=5)
        assert not any(item.scheduled for _, _, item in system._timekeeper._heap)
        assert ref.statistics().pending_asks == 0


async def test_an_ask_outliving_its_system_still_times_out_at_its_deadline() -> None:
    # The actor takes the ask and stops gracefully without answering, so the
    # reply stays valid (someone may hold it); the system ends at once, and
    # with it its timer task: the asker keeps its deadline itself.
    errors: list[str] = []
    async with trio.open_nursery() as outside:
        async with actors.open_system() as system:
            ref = await system.spawn(silent, name="silent")

            async def ask() -> None:
                try:
                    await ref.ask(Total, timeout=10)
                except AskTimeoutError as error:
                    errors.append(f"{error} at {trio.current_time():g}s")

            outside.start_soon(ask)
            await trio.testing.wait_all_tasks_blocked()
        assert (await ref.wait_stopped(), trio.current_time()) == (actors.Stopped(), 0)
    assert errors == ["ask of actor 'silent' got no reply within 10s at 10s"]


async def test_the_wait_for_room_and_the_wait_for_the_reply_share_one_deadline() -> None:
    # An unbuffered mailbox its actor reads only after 1s: the ask waits 1s
    # for room (in a cancel scope), then 2s for a reply that never comes (on
    # the timer task): 3s in all, and the error says the message was sent.
    async with actors.open_system() as system:

        async def late(inbox: Inbox[Total]) -> None:
            await trio.sleep(1)
            async for _ in inbox:
                pass

        ref = await system.spawn(late, name="late", capacity=0)
        message = r"^ask of actor 'late' got no reply within 3s$"
        with pytest.raises(AskTimeoutError, match=message):
            await ref.ask(Total, timeout=3)
        assert trio.current_time() == 3
