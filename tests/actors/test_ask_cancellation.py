"""Hostile asks: cancelled at every point, replies answered twice or late,
actors stopped or killed mid-ask, a bounded mailbox under many asks, and an
idle actor parked on its mailbox woken by everything that wakes receive()."""

from __future__ import annotations

import math
from typing import Any

import pytest
import trio
import trio.testing

import actors
from actors import ActorStoppedError, AlreadyRepliedError, AskTimeoutError, Inbox, Reply

from .messages import Hold, Total, counter


async def holder(inbox: Inbox[Total], held: list[Reply[int]]) -> None:
    async for envelope in inbox:
        held.append(envelope.message.reply)


async def test_an_ask_cancelled_before_delivery_after_taking_and_after_the_reply() -> None:
    held: list[Reply[int]] = []
    async with actors.open_system() as system:
        ref = await system.spawn(holder, held, capacity=1)
        # Cancelled while its message waits for room (mailbox full).
        gate = trio.Event()
        blocker = await system.spawn(counter, capacity=1)
        await blocker.tell(Hold(gate))
        await trio.testing.wait_all_tasks_blocked()
        await blocker.tell(Hold(gate))  # fills the mailbox
        with trio.move_on_after(1):
            await blocker.ask(Total)
        assert blocker.statistics().pending_asks == 0
        gate.set()
        assert await blocker.ask(Total) == 0
        # Cancelled after the actor took it: the reply is read by no one.
        with trio.move_on_after(1):
            await ref.ask(Total)
        assert len(held) == 1
        assert ref.statistics().pending_asks == 0
        assert held[0].send(5) is True
        with pytest.raises(AlreadyRepliedError):
            held[0].send(6)
        # Cancelled in the same tick the reply is sent: the asker gets one
        # or the other, never both, and nothing is left behind.
        async with trio.open_nursery() as nursery:
            got: list[int] = []

            async def asker() -> None:
                got.append(await ref.ask(Total))

            nursery.start_soon(asker)
            await trio.testing.wait_all_tasks_blocked()
            held[-1].send(7)
            nursery.cancel_scope.cancel()
        assert got in ([], [7])
        assert ref.statistics().pending_asks == 0


async def test_a_reply_racing_its_timeout_in_the_same_tick() -> None:
    held: list[Reply[int]] = []
    async with actors.open_system() as system:
        ref = await system.spawn(holder, held)
        results: list[int | str] = []

        async def asker() -> None:
            try:
                value: int = await ref.ask(Total, timeout=1)
                results.append(value)
            except AskTimeoutError:
                results.append("timeout")

        async with trio.open_nursery() as nursery:
            nursery.start_soon(asker)
            await trio.sleep(1)  # wakes at the deadline, as the timer task does
            held[0].send(3)
        assert results in (["timeout"], [3])
        assert ref.statistics().pending_asks == 0


@pytest.mark.parametrize("limit", [0, 0.0, -0.0, 1e-300])
async def test_a_zero_timeout_sends_nothing(limit: float) -> None:
    held: list[Reply[int]] = []
    async with actors.open_system() as system:
        ref = await system.spawn(holder, held)
        with pytest.raises(AskTimeoutError):
            await ref.ask(Total, timeout=limit)
        await trio.testing.wait_all_tasks_blocked()
        assert held == [] or limit == 1e-300
        assert ref.statistics().pending_asks == 0


@pytest.mark.parametrize("limit", [-1, -math.inf, math.nan, 10**400])
async def test_a_bad_timeout_raises_before_anything_is_sent(limit: float) -> None:
    held: list[Reply[int]] = []
    async with actors.open_system() as system:
        ref = await system.spawn(holder, held)
        with pytest.raises(ValueError, match=r"^ask timeout must be None or a number"):
            await ref.ask(Total, timeout=limit)
        await trio.testing.wait_all_tasks_blocked()
        assert held == []
        assert ref.statistics().pending_asks == 0


async def test_an_infinite_timeout_waits_as_long_as_it_takes() -> None:
    held: list[Reply[int]] = []
    async with actors.open_system() as system:
        ref = await system.spawn(holder, held)
        async with trio.open_nursery() as nursery:
            results: list[int] = []

            async def asker() -> None:
                results.append(await ref.ask(Total, timeout=math.inf))

            nursery.start_soon(asker)
            await trio.sleep(100)
            held[0].send(1)
        assert results == [1]


async def test_many_asks_of_a_bounded_mailbox_with_timeouts_leave_nothing() -> None:
    gate = trio.Event()
    async with actors.open_system() as system:
        ref = await system.spawn(counter, capacity=2)
        await ref.tell(Hold(gate))
        outcomes: list[str] = []

        async def asker(limit: float) -> None:
            try:
                await ref.ask(Total, timeout=limit)
                outcomes.append("ok")
            except AskTimeoutError as error:
                outcomes.append("refused" if "not sent" in str(error) else "accepted")

        async with trio.open_nursery() as nursery:
            for index in range(20):
                nursery.start_soon(asker, 1 + index % 3)
            await trio.sleep(10)
            gate.set()
        assert len(outcomes) == 20
        assert ref.statistics().pending_asks == 0
        assert await ref.ask(Total, timeout=1) == 0
        assert ref.statistics().pending_asks == 0


async def test_asks_pending_when_the_system_is_cancelled_fail_and_leave_nothing() -> None:
    held: list[Reply[int]] = []
    errors: list[BaseException] = []

    async def asker(ref: actors.ActorRef[Total]) -> None:
        try:
            await ref.ask(Total)
        except ActorStoppedError as error:
            errors.append(error)

    async with trio.open_nursery() as outer:
        async with actors.open_system() as system:
            taker = await system.spawn(holder, held)
            gate = trio.Event()
            queued = await system.spawn(counter, capacity=4)
            await queued.tell(Hold(gate))
            outer.start_soon(asker, queued)  # its message queued, never taken
            outer.start_soon(asker, taker)  # its message taken, held
            await trio.testing.wait_all_tasks_blocked()
            system.cancel()
        await trio.testing.wait_all_tasks_blocked()
    assert len(errors) == 2
    assert queued.statistics().pending_asks == 0
    assert taker.statistics().pending_asks == 0


async def watcher(inbox: Inbox[object], target: actors.ActorRef[Any], seen: list[object]) -> None:
    inbox.monitor(target)
    async for envelope in inbox:
        seen.append(envelope.message)
        if isinstance(envelope.message, Total):
            envelope.message.reply.send(len(seen))


async def test_a_parked_actor_wakes_for_a_down_a_stop_a_kill_and_a_close() -> None:
    seen: list[object] = []
    async with actors.open_system() as system:
        target = await system.spawn(counter)
        watching = await system.spawn(watcher, target, seen, capacity=1)
        await trio.testing.wait_all_tasks_blocked()
        await target.stop()
        await trio.testing.wait_all_tasks_blocked()
        assert [type(m).__name__ for m in seen] == ["Down"]
        assert await watching.ask(Total, timeout=1) == 2
        await trio.testing.wait_all_tasks_blocked()
        await watching.stop()  # parked: the close ends its loop
        assert type(await watching.wait_stopped()).__name__ == "Stopped"
        idle = await system.spawn(counter)
        await trio.testing.wait_all_tasks_blocked()
        await idle.kill()  # parked: cancelled
        assert type(await idle.wait_stopped()).__name__ == "Killed"
        closer_seen: list[object] = []

        async def closer(inbox: Inbox[object]) -> None:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(trio.sleep, 1)
                async for envelope in inbox:
                    closer_seen.append(envelope.message)

        closing = await system.spawn(closer)
        await trio.testing.wait_all_tasks_blocked()
        closing.tell_nowait("x")
        await trio.testing.wait_all_tasks_blocked()
        assert closer_seen == ["x"]


async def test_a_restart_mid_ask_fails_the_taken_ask_and_answers_the_queued_ones() -> None:
    async def flaky(inbox: Inbox[object]) -> None:
        async for envelope in inbox:
            message = envelope.message
            if isinstance(message, Total):
                if message.reply._seq == 0:  # the first ask: fail holding it
                    await trio.sleep(1)
                    raise ValueError("boom")
                message.reply.send(message.reply._seq)

    async with (
        actors.open_system() as system,
        system.open_supervisor(actors.OneForOne(intensity=5), name="sup") as supervisor,
    ):
        ref = await supervisor.spawn(flaky, name="flaky", capacity=4)
        results: dict[int, object] = {}

        async def asker(index: int, limit: float | None) -> None:
            try:
                value: int = await ref.ask(Total, timeout=limit)
                results[index] = value
            except actors.ActorError as error:
                results[index] = type(error).__name__

        async with trio.open_nursery() as nursery:
            for index, limit in enumerate((None, None, 5.0, None)):
                nursery.start_soon(asker, index, limit)
                await trio.testing.wait_all_tasks_blocked()
        # (The askers wake in Trio's order, not the replies'.)
        assert results == {0: "ActorFailedError", 1: 1, 2: 2, 3: 3}
        assert ref.statistics().restarts == 1
        assert ref.statistics().pending_asks == 0


async def test_a_receive_cancelled_while_parked_leaves_the_mailbox_usable() -> None:
    log: list[object] = []

    async def impatient(inbox: Inbox[object]) -> None:
        for _ in range(3):
            with trio.move_on_after(1):
                log.append((await inbox.receive()).message)
            with trio.move_on_after(1):
                async for envelope in inbox:
                    log.append(envelope.message)
                    break
        async for envelope in inbox:
            log.append(envelope.message)

    async with actors.open_system() as system:
        ref = await system.spawn(impatient, capacity=1)
        await trio.sleep(10)  # every receive above gave up, parked
        for message in ("a", "b", "c"):
            await ref.tell(message)
            await trio.testing.wait_all_tasks_blocked()
        assert log == ["a", "b", "c"]


async def test_a_reply_handed_on_and_answered_after_the_asker_left() -> None:
    held: list[Reply[int]] = []

    async def front(inbox: Inbox[Total], back: actors.ActorRef[Total]) -> None:
        async for envelope in inbox:
            await back.tell(envelope.message)

    async with actors.open_system() as system:
        back = await system.spawn(holder, held)
        ref = await system.spawn(front, back)
        with pytest.raises(AskTimeoutError):
            await ref.ask(Total, timeout=1)
        assert ref.statistics().pending_asks == 0
        assert back.statistics().pending_asks == 0
        assert held[0].send(1) is True  # nobody reads it, nothing breaks
        await ref.stop()
        assert held[0].done
        # An ask answered through another actor that then stops: still valid.
        async with trio.open_nursery() as nursery:
            got: list[int] = []

            async def asker() -> None:
                got.append(await ref2.ask(Total))

            ref2 = await system.spawn(front, back)
            nursery.start_soon(asker)
            await trio.testing.wait_all_tasks_blocked()
            await ref2.stop()
            held[1].send(9)
        assert got == [9]


async def test_an_ask_leaves_no_reference_cycle_behind() -> None:
    # With the cycle collector off (as latency-minded programs run), an ask
    # answered, timed out or cancelled frees its message, reply and
    # envelope at once: nothing of it refers to itself.
    import gc
    import weakref

    held: list[Reply[int]] = []
    made: list[weakref.ref[Total]] = []

    def build(reply: Reply[int]) -> Total:
        message = Total(reply)
        made.append(weakref.ref(message))
        return message

    async with actors.open_system() as system:
        ref = await system.spawn(counter)
        holding = await system.spawn(holder, held)
        gc.collect()
        gc.disable()
        try:
            assert await ref.ask(build) == 0
            assert await ref.ask(build, timeout=1) == 0
            with pytest.raises(AskTimeoutError):
                await holding.ask(build, timeout=1)
            with trio.move_on_after(1):
                await holding.ask(build)
            held.clear()
            # The actors' frames let go of the last message they took.
            await ref.stop()
            await holding.stop()
            await trio.testing.wait_all_tasks_blocked()
            assert [alive() is None for alive in made] == [True] * 4
        finally:
            gc.enable()


async def test_a_parked_actor_ends_when_its_own_helper_closes_its_inbox() -> None:
    ended: list[str] = []

    async def self_closing(inbox: Inbox[object]) -> None:
        async with trio.open_nursery() as nursery:

            async def close_later() -> None:
                await trio.sleep(1)
                inbox.close()

            nursery.start_soon(close_later)
            async for _ in inbox:
                pass  # parked until the close
            ended.append("loop")

    async with actors.open_system() as system:
        ref = await system.spawn(self_closing)
        await trio.sleep(2)
        assert ended == ["loop"]
        assert type(await ref.wait_stopped()).__name__ == "Normal"  # it returned
        with pytest.raises(ActorStoppedError):
            await ref.ask(Total, timeout=1)
