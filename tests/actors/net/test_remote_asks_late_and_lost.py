"""Hostile remote asks: answers late, unknown, repeated, or in one read
with other events; the node closing or going down mid-ask."""

from __future__ import annotations

from typing import cast

import pytest
import trio
import trio.testing

import actors
from actors import ActorRef, Inbox, Reply
from actors.net import NodeDownError

from ..messages import Add, Echo, Release, Total, Withheld
from .nodes import connected


async def test_an_answer_for_an_unknown_or_already_answered_number_is_late() -> None:
    async with connected() as pair:
        ref = await pair.counter_ref()
        assert await ref.ask(Total, timeout=1) == 0
        conn_b = pair.peer_b._conn
        conn_b.send_answer(1, 5)  # the number just answered, again
        conn_b.send_answer(999, 5)  # a number never used
        pair.peer_b._flush()
        await trio.testing.wait_all_tasks_blocked()
        stats = pair.peer_a.statistics()
        assert (stats.asks_in_flight, stats.late_answers) == (0, 2)
        assert await ref.ask(Total, timeout=1) == 0
        assert pair.peer_a.statistics().asks_in_flight == 0


async def test_the_node_closing_mid_ask_fails_it_and_leaves_nothing() -> None:
    async with connected() as pair:
        ref = await pair.counter_ref()
        errors: list[BaseException] = []

        async def asker(limit: float | None) -> None:
            try:
                await ref.ask(Withheld, timeout=limit)
            except NodeDownError as error:
                errors.append(error)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(asker, None)
            nursery.start_soon(asker, 10.0)
            await trio.testing.wait_all_tasks_blocked()
            assert pair.peer_a.statistics().asks_in_flight == 2
            await pair.peer_a.close("bye")
        assert len(errors) == 2
        assert pair.peer_a.statistics().asks_in_flight == 0
        assert ref.statistics().pending_asks == 0


async def test_an_answer_and_the_actors_end_in_one_read_keep_their_order() -> None:
    async with connected() as pair:
        ref = await pair.counter_ref()
        got: list[object] = []

        async def asker() -> None:
            try:
                value: int = await ref.ask(Withheld, timeout=10)
                got.append(value)
            except actors.ActorError as error:
                got.append(type(error).__name__)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(asker)
            await trio.testing.wait_all_tasks_blocked()
            # The answer, then the actor's end, written in one burst.
            counter = pair.system_b.lookup("counter")
            assert counter is not None
            counter.tell_nowait(Release())  # type: ignore[arg-type]
            counter.stop_nowait()
            await trio.testing.wait_all_tasks_blocked()
        assert got == [0]
        assert pair.peer_a.statistics().asks_in_flight == 0


async def test_a_reply_relayed_back_over_the_same_connection() -> None:
    # b's actor hands a's ask on to a's actor over the same connection; a's
    # actor answers, and the answer goes back to b and on to a's asker.
    async def holder(inbox: Inbox[Withheld], held: list[Reply[int]]) -> None:
        async for envelope in inbox:
            held.append(envelope.message.reply)

    async def relay(inbox: Inbox[Withheld], target: list[ActorRef[Withheld]]) -> None:
        async for envelope in inbox:
            await target[0].tell(envelope.message)

    async with connected() as pair:
        held: list[Reply[int]] = []
        await pair.system_a.spawn(holder, held, name="holder")
        target: list[ActorRef[Withheld]] = []
        await pair.system_b.spawn(relay, target, name="relay")
        back = await pair.peer_b.lookup("holder")
        assert back is not None
        target.append(back)  # type: ignore[arg-type]
        ref = await pair.peer_a.lookup("relay")
        assert ref is not None
        got: list[int] = []

        async def asker() -> None:
            got.append(await ref.ask(Withheld, timeout=10))  # type: ignore[arg-type]

        async with trio.open_nursery() as nursery:
            nursery.start_soon(asker)
            await trio.testing.wait_all_tasks_blocked()
            assert len(held) == 1
            held[0].send(41)
        assert got == [41]
        assert pair.peer_a.statistics().asks_in_flight == 0
        assert pair.peer_b.statistics().asks_in_flight == 0
        # Relayed again, and the first asker gives up: told so, the relay's
        # node sends no answer (none is late).
        with pytest.raises(actors.AskTimeoutError):
            await ref.ask(Withheld, timeout=1)  # type: ignore[arg-type]
        held[1].send(1)
        await trio.testing.wait_all_tasks_blocked()
        assert pair.peer_a.statistics().asks_in_flight == 0
        assert pair.peer_b.statistics().asks_in_flight == 0
        assert pair.peer_a.statistics().late_answers == 0


async def test_an_ask_of_the_peer_leaves_no_reference_cycle_behind() -> None:
    # With the cycle collector off, the message an ask from the peer came
    # in, and its reply, are freed once answered.
    import gc
    import weakref

    seen: list[weakref.ref[Total]] = []

    async def answering(inbox: Inbox[Total]) -> None:
        async for envelope in inbox:
            seen.append(weakref.ref(envelope.message))
            envelope.message.reply.send(len(seen))

    async with connected() as pair:
        local = await pair.system_b.spawn(answering, name="answering")
        ref = await pair.peer_a.lookup("answering")
        assert ref is not None
        gc.collect()
        gc.disable()
        try:
            for expected in (1, 2):
                assert await ref.ask(Total, timeout=5) == expected  # type: ignore[arg-type]
            await local.stop()
            # b's reader lets go of the last event it read.
            assert await pair.peer_a.lookup("nobody") is None
            await trio.testing.wait_all_tasks_blocked()
            assert [alive() is None for alive in seen] == [True, True]
        finally:
            gc.enable()


async def test_an_ask_and_a_tell_of_an_actor_the_peer_never_looked_up_are_refused(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async with connected() as pair:
        # A reference to a uid node b never exported (as a forged frame would name).
        ghost = cast("ActorRef[Add | Echo]", pair.peer_a._reference("ghost", 999))
        await ghost.tell(Add(1))
        with pytest.raises(
            actors.ActorStoppedError, match=r"^actor uid 999 of node 'b' is stopped$"
        ):
            await ghost.ask(Echo, "hi", timeout=1)
        assert "a Add from node 'a' for actor uid 999 was dropped" in caplog.text
        # Both count as delivered: the connection and its credit go on.
        assert pair.peer_b._conn.statistics().undelivered == 0
        ref = await pair.counter_ref()
        assert await ref.ask(Echo, "hi", timeout=1) == "HI"
