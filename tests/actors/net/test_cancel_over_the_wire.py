"""Cancellation crosses the wire: an asker that gives up (a timeout, a
cancel) tells the far node, which takes the ask's message out of the
mailbox if it is still there (so a put that timed out is not applied
later) and marks the reply abandoned (a long handler may stop; no answer
goes back); a connection that goes down abandons the peer's asks alike."""

from __future__ import annotations

import struct
from typing import cast

import attrs
import msgspec
import pytest
import trio
import trio.testing

import actors
from actors import ActorRef, Inbox, Reply

from .nodes import Pair, connected


@attrs.frozen
class Nap:
    seconds: float


@attrs.frozen
class Put:
    key: str
    reply: Reply[bool]


@attrs.frozen
class Long:
    reply: Reply[str]


SLOW = [(Nap, "Nap"), (Put, "Put"), (Long, "Long")]
SlowMessage = Nap | Put | Long


async def slow(inbox: Inbox[SlowMessage], applied: list[str], stopped: list[str]) -> None:
    """Naps when told; applies puts; works on a Long until its asker gives up."""
    async for envelope in inbox:
        match envelope.message:
            case Nap(seconds):
                await trio.sleep(seconds)
            case Put(key, reply):
                applied.append(key)
                reply.send(True)
            case Long(reply):
                for _ in range(1000):
                    await trio.sleep(0.5)  # a step of the work
                    if reply.abandoned:  # nobody reads the answer: stop
                        stopped.append(f"abandoned at {trio.current_time():g}")
                        break


async def slow_ref(pair: Pair, applied: list[str], stopped: list[str]) -> ActorRef[SlowMessage]:
    await pair.system_b.spawn(slow, applied, stopped, name="slow")
    found = await pair.peer_a.lookup("slow")
    assert found is not None
    return cast("ActorRef[SlowMessage]", found)


async def test_an_ask_given_up_on_while_queued_is_never_delivered() -> None:
    applied: list[str] = []
    async with connected(both=SLOW) as pair:
        ref = await slow_ref(pair, applied, [])
        await ref.tell(Nap(10))  # busy: what comes next waits in the mailbox
        with pytest.raises(actors.AskTimeoutError):
            await ref.ask(Put, "timed out", timeout=1)
        assert await ref.ask(Put, "in time", timeout=60)
        assert applied == ["in time"]  # the put that timed out was never applied
        assert pair.peer_a.statistics().late_answers == 0
        assert pair.peer_a.statistics().asks_in_flight == 0


async def test_a_long_handler_sees_its_asker_give_up_and_no_answer_goes_back() -> None:
    stopped: list[str] = []
    async with connected(both=SLOW) as pair:
        ref = await slow_ref(pair, [], stopped)
        with trio.move_on_after(2):  # the asker is cancelled
            await ref.ask(Long)
        await trio.sleep(1)
        assert stopped == ["abandoned at 2.5"]  # its next look after the cancel came
        assert pair.peer_a.statistics().late_answers == 0


async def test_a_connection_that_goes_down_abandons_the_peers_asks() -> None:
    applied: list[str] = []
    stopped: list[str] = []
    async with connected(both=SLOW) as pair:
        ref = await slow_ref(pair, applied, stopped)
        await ref.tell(Nap(10))
        async with trio.open_nursery() as nursery:

            async def ask(message: str) -> None:
                with pytest.raises(actors.ActorError):
                    await ref.ask(Put, message, timeout=60)

            nursery.start_soon(ask, "queued")
            await trio.testing.wait_all_tasks_blocked()
            await pair.peer_b.close("going away")
        await trio.sleep(20)
        assert applied == []  # queued when its asker's node went: dropped


async def test_a_local_reply_is_abandoned_once_its_asker_gives_up() -> None:
    kept: list[Reply[str]] = []

    async def keeper(inbox: Inbox[Long]) -> None:
        async for envelope in inbox:
            kept.append(envelope.message.reply)
            if len(kept) == 2:
                envelope.message.reply.send("answered")

    async with actors.open_system() as system:
        ref = await system.spawn(keeper, name="keeper")
        with pytest.raises(actors.AskTimeoutError):
            await ref.ask(Long, timeout=1)
        assert await ref.ask(Long, timeout=1) == "answered"
        assert [reply.abandoned for reply in kept] == [True, False]


async def test_a_cancel_for_an_ask_it_does_not_know_is_ignored() -> None:
    async with connected(both=SLOW) as pair:
        for number in (0, 10**9, 2**63 - 1):
            payload = msgspec.msgpack.encode([16, number])
            await pair.stream_a.send_all(struct.pack(">I", len(payload)) + payload)
        await trio.testing.wait_all_tasks_blocked()
        assert pair.peer_b.reason is None
        assert pair.peer_b.statistics().refused == 0
