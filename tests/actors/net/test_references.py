"""References in messages: a field typed ``ActorRef[M]`` travels between two
nodes, as a reference the receiving node can message (a router hands its
caller's reference to a worker on another node, which answers the caller
directly); the two nodes' own actors only."""

from __future__ import annotations

import struct
from typing import cast

import attrs
import msgspec
import pytest
import trio
import trio.testing

import actors
from actors import ActorRef, ActorStoppedError, Inbox, Reply
from actors.net import Codec, CodecError
from actors.net._frames import Send

from ..messages import Add, Total
from .nodes import CounterMessage, Pair, connected


@attrs.frozen
class Result:
    value: int


@attrs.frozen
class Job:
    value: int
    reply_to: ActorRef[Result]


@attrs.frozen
class Maybe:
    ref: ActorRef[CounterMessage] | None


@attrs.frozen
class Where:
    reply: Reply[Maybe]


REFERENCES = [(Result, "Result"), (Job, "Job"), (Maybe, "Maybe"), (Where, "Where")]


async def doubler(inbox: Inbox[Job]) -> None:
    """A worker: answers each job to the reference in it."""
    async for envelope in inbox:
        job = envelope.message
        await job.reply_to.tell(Result(2 * job.value))


async def collector(inbox: Inbox[Result], seen: list[int], done: trio.Event) -> None:
    async for envelope in inbox:
        seen.append(envelope.message.value)
        done.set()


async def holder(inbox: Inbox[Maybe | Where], kept: list[Maybe]) -> None:
    """Keeps what it is told; answers a Where with the last it kept."""
    async for envelope in inbox:
        match envelope.message:
            case Maybe() as maybe:
                kept.append(maybe)
            case Where(reply):
                reply.send(kept[-1] if kept else Maybe(None))


async def a_ref_to(pair: Pair, name: str) -> ActorRef[object]:
    found = await pair.peer_a.lookup(name)
    assert found is not None
    return cast("ActorRef[object]", found)


async def test_a_reference_in_a_message_is_one_the_far_node_can_message() -> None:
    seen: list[int] = []
    done = trio.Event()
    async with connected(both=REFERENCES) as pair:
        await pair.system_b.spawn(doubler, name="doubler")
        caller = await pair.system_a.spawn(collector, seen, done, name="caller")
        worker = cast("ActorRef[Job]", await a_ref_to(pair, "doubler"))
        await worker.tell(Job(21, caller))  # the caller's reference, to node b
        await done.wait()
        assert seen == [42]  # b's worker answered a's caller over the connection
        assert pair.peer_b.statistics().remote_refs == 1  # b holds a's caller


async def test_a_reference_to_the_receivers_own_actor_comes_back_as_its_own() -> None:
    kept: list[Maybe] = []
    async with connected(both=REFERENCES) as pair:
        local = await pair.system_b.spawn(holder, kept, name="holder")
        remote = cast("ActorRef[Maybe | Where]", await a_ref_to(pair, "holder"))
        counter = await pair.counter_ref()  # b's counter, as a holds it
        await remote.tell(Maybe(counter))
        await remote.tell(Maybe(None))
        await trio.testing.wait_all_tasks_blocked()
        assert kept[0].ref is not None
        assert kept[0].ref == pair.system_b.lookup("counter")  # b's own reference
        assert kept[0].ref.address.incarnation == 0  # a local actor of b's
        assert kept[1] == Maybe(None)
        await kept[0].ref.tell(Add(3))
        assert await counter.ask(Total, timeout=5) == 3
        del local


async def test_an_answer_may_carry_a_reference() -> None:
    kept: list[Maybe] = []
    async with connected(both=REFERENCES) as pair:
        await pair.system_b.spawn(holder, kept, name="holder")
        remote = cast("ActorRef[Maybe | Where]", await a_ref_to(pair, "holder"))
        counter = await pair.counter_ref()
        await remote.tell(Maybe(counter))
        answer = await remote.ask(Where, timeout=5)  # b answers with a reference
        assert answer.ref == counter  # b's counter, as a's reference to it
        assert answer.ref is not None
        await answer.ref.tell(Add(4))
        assert await counter.ask(Total, timeout=5) == 4


async def test_a_reference_to_an_actor_that_has_ended_arrives_stopped() -> None:
    kept: list[Maybe] = []
    async with connected(both=REFERENCES) as pair:
        await pair.system_b.spawn(holder, kept, name="holder")
        remote = cast("ActorRef[Maybe | Where]", await a_ref_to(pair, "holder"))
        gone = await pair.system_a.spawn(collector, [], trio.Event(), name="gone")
        await gone.stop()
        await remote.tell(Maybe(cast("ActorRef[CounterMessage]", gone)))
        await trio.testing.wait_all_tasks_blocked()
        (maybe,) = kept
        assert maybe.ref is not None
        assert maybe.ref.address.name == "gone@a"
        assert await maybe.ref.wait_stopped() == actors.Stopped()
        with pytest.raises(ActorStoppedError):
            await maybe.ref.tell(Add(1))


async def test_a_reference_to_an_actor_of_another_system_cannot_travel() -> None:
    async with actors.open_system() as third, connected(both=REFERENCES) as pair:
        stranger = await third.spawn(collector, [], trio.Event(), name="stranger")
        worker = cast("ActorRef[Job]", await a_ref_to(pair, "counter"))
        credit = pair.peer_a.statistics().credit
        with pytest.raises(CodecError, match=r"of another actor system cannot travel to node 'b'"):
            await worker.tell(Job(1, stranger))
        assert pair.peer_a.statistics().credit == credit  # nothing sent


async def test_a_peer_cannot_make_up_a_reference_to_an_actor_it_was_not_given() -> None:
    kept: list[Maybe] = []
    async with connected(both=REFERENCES) as pair:
        holding = await pair.system_b.spawn(holder, kept, name="holder")
        secret = await pair.system_b.spawn(collector, [], trio.Event(), name="secret")
        await a_ref_to(pair, "holder")  # exported to a: its uid may be messaged
        # Hand-made frames: Maybe carrying "your actor" with secret's uid (alive,
        # never given to a), then with a uid of no actor.
        for uid, name in [(secret.address.uid, "secret"), (10**6, "gone")]:
            forged = msgspec.msgpack.encode([[1, uid, name]])
            payload = msgspec.msgpack.encode(Send(holding.address.uid, "Maybe", forged))
            await pair.stream_a.send_all(struct.pack(">I", len(payload)) + payload)
        await trio.testing.wait_all_tasks_blocked()
        assert pair.peer_b.statistics().refused == 1  # the live one: the frame refused
        (maybe,) = kept  # the one of no actor: a stopped reference
        assert maybe.ref is not None
        assert maybe.ref.address.name == "gone"
        assert await maybe.ref.wait_stopped() == actors.Stopped()


async def test_a_reference_of_an_unknown_kind_is_a_refused_frame() -> None:
    kept: list[Maybe] = []
    async with connected(both=REFERENCES) as pair:
        holding = await pair.system_b.spawn(holder, kept, name="holder")
        await a_ref_to(pair, "holder")
        forged = msgspec.msgpack.encode([[7, 0, "x"]])
        payload = msgspec.msgpack.encode(Send(holding.address.uid, "Maybe", forged))
        await pair.stream_a.send_all(struct.pack(">I", len(payload)) + payload)
        await trio.testing.wait_all_tasks_blocked()
        assert kept == []
        assert pair.peer_b.statistics().refused == 1
        assert pair.peer_a.reason is None  # the connection goes on


def test_a_reference_travels_only_over_a_connection() -> None:
    codec = Codec([Result, Job])
    with pytest.raises(CodecError, match=r"^message 'tests\..*Job' carries a reference"):
        codec.encode(Job(1, cast("ActorRef[Result]", object())))
    with pytest.raises(CodecError, match=r"carries a reference to an actor: only a node's"):
        codec.decode(codec.names[1], msgspec.msgpack.encode([1, [0, 0, "x"]]), ask=False)


def test_a_reference_inside_a_container_is_still_refused() -> None:
    @attrs.frozen
    class Many:
        refs: list[ActorRef[Result]]

    with pytest.raises(TypeError, match=r"Many.refs: a value of type ActorRef cannot travel"):
        Codec([Many])


@attrs.frozen
class Double:
    value: int
    reply: Reply[int]


async def remote_doubler(inbox: Inbox[Double]) -> None:
    async for envelope in inbox:
        envelope.message.reply.send(2 * envelope.message.value)


async def router(inbox: Inbox[Double], worker: ActorRef[Double]) -> None:
    """Hands each ask on to the worker of the other node, with its reply: the
    worker answers the asker, and the router is free at once."""
    async for envelope in inbox:
        await worker.tell(envelope.message)


async def test_a_router_hands_an_ask_and_its_reply_on_to_another_node() -> None:
    async with connected(both=[(Double, "Double")]) as pair:
        await pair.system_b.spawn(remote_doubler, name="doubler")
        worker = cast("ActorRef[Double]", await a_ref_to(pair, "doubler"))
        front = await pair.system_a.spawn(router, worker, name="router")
        answers = []
        async with trio.open_nursery() as nursery:
            for value in range(5):

                async def ask(value: int = value) -> None:
                    answers.append(await front.ask(Double, value, timeout=5))

                nursery.start_soon(ask)
        assert sorted(answers) == [0, 2, 4, 6, 8]
        assert pair.peer_a.statistics().asks_in_flight == 0
