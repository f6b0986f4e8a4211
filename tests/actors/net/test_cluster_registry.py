"""The registry across nodes: ``Node.subscribe`` sends listings of a service
key that hold this node's actors and every connected node's, and follow them
as they register and end and as the nodes come and go. Mock clock, memory
streams: deterministic."""

from __future__ import annotations

from typing import Any

import pytest
import trio
import trio.testing

import actors
from actors import ActorRef, Inbox, Listing, ServiceKey
from actors.net import Peer

from ..messages import Add, Total
from .nodes import CounterMessage, Pair, connected, counter

COUNTERS = ServiceKey[CounterMessage]("counters")
OTHERS = ServiceKey[CounterMessage]("others")


async def listings_of(
    system: actors.ActorSystem,
) -> tuple[ActorRef[Listing[CounterMessage]], list[list[str]]]:
    """A subscriber actor, and the names in each listing it got."""
    seen: list[list[str]] = []

    async def subscriber(inbox: Inbox[Listing[CounterMessage]]) -> None:
        async for envelope in inbox:
            seen.append([ref.name for ref in envelope.message.refs])

    return await system.spawn(subscriber, name="subscriber"), seen


async def b_counter(pair: Pair, name: str) -> ActorRef[CounterMessage]:
    return await pair.system_b.spawn(counter, name=name)


async def settle() -> None:
    await trio.testing.wait_all_tasks_blocked()


async def test_a_listing_holds_the_local_actors_then_the_peers_and_follows_them() -> None:
    async with connected() as pair:
        subscriber, seen = await listings_of(pair.system_a)
        local = await pair.system_a.spawn(counter, name="local")
        pair.system_a.register(COUNTERS, local)
        pair.node_a.subscribe(COUNTERS, subscriber)
        await settle()
        assert seen == [["local"]]  # b has nothing under the key
        far = await b_counter(pair, "far")
        pair.system_b.register(COUNTERS, far)
        await settle()
        assert seen[-1] == ["local", "far@b"]
        pair.system_b.register(OTHERS, far)  # another key: no listing
        await settle()
        assert len(seen) == 2
        await far.stop()
        await settle()
        assert seen[-1] == ["local"]
        assert len(seen) == 3


async def test_the_far_refs_in_a_listing_work_and_end_with_their_node() -> None:
    async with connected() as pair:
        subscriber, seen = await listings_of(pair.system_a)
        got: list[Listing[CounterMessage]] = []

        async def keeper(inbox: Inbox[Listing[CounterMessage]]) -> None:
            async for envelope in inbox:
                got.append(envelope.message)

        keep = await pair.system_a.spawn(keeper, name="keeper")
        far = await b_counter(pair, "far")
        pair.system_b.register(COUNTERS, far)
        pair.node_a.subscribe(COUNTERS, keep)
        pair.node_a.subscribe(COUNTERS, subscriber)
        await settle()
        (ref,) = got[-1].refs
        assert ref.address.incarnation == pair.peer_a.incarnation
        await ref.tell(Add(4))
        assert await ref.ask(Total, timeout=5) == 4
        await pair.stream_a.aclose()  # the connection goes
        await settle()
        assert seen[-1] == []  # b's part left with it
        with pytest.raises(actors.ActorStoppedError):
            await ref.tell(Add(1))


async def test_a_node_that_connects_again_is_listed_again() -> None:
    async with connected() as pair:
        subscriber, seen = await listings_of(pair.system_a)
        far = await b_counter(pair, "far")
        pair.system_b.register(COUNTERS, far)
        pair.node_a.subscribe(COUNTERS, subscriber)
        await settle()
        assert seen == [[], ["far@b"]]
        await pair.peer_a.close("for the test")
        await settle()
        assert seen[-1] == []
        peer = await reconnect(pair)
        await settle()
        assert seen[-1] == ["far@b"]
        assert pair.node_a.peers == [peer]


async def reconnect(pair: Pair) -> Peer:
    stream_a, stream_b = trio.testing.memory_stream_pair()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(pair.node_b.accept, stream_b)
        peer = await pair.node_a.connect(stream_a)
    return peer


async def test_unsubscribing_or_ending_stops_the_listings_and_the_peers_watches() -> None:
    async with connected() as pair:
        subscriber, seen = await listings_of(pair.system_a)
        pair.node_a.subscribe(COUNTERS, subscriber)
        await settle()
        assert len(pair.peer_b._watching.watched) == 1
        assert pair.node_a.unsubscribe(COUNTERS, subscriber) is True
        assert pair.node_a.unsubscribe(COUNTERS, subscriber) is False
        await settle()
        assert pair.peer_b._watching.watched == {}
        pair.system_b.register(COUNTERS, await b_counter(pair, "far"))
        await settle()
        assert seen == [[]]
        pair.node_a.subscribe(COUNTERS, subscriber)
        await settle()
        assert seen[-1] == ["far@b"]
        await subscriber.stop()
        await settle()
        assert pair.peer_b._watching.watched == {}
        assert pair.node_a._subscribers == {}


async def test_bad_subscriptions_are_refused_and_change_nothing() -> None:
    async with connected() as pair:
        subscriber, _ = await listings_of(pair.system_a)
        untyped: Any = "counters"
        with pytest.raises(TypeError, match="ServiceKey"):
            pair.node_a.subscribe(untyped, subscriber)
        other_system, _ = await listings_of(pair.system_b)
        with pytest.raises(ValueError, match="not an actor of this system"):
            pair.node_a.subscribe(COUNTERS, other_system)
        await settle()
        assert pair.node_a._subscribers == {}
        assert pair.peer_b._watching.watched == {}


async def test_a_peer_watching_too_many_keys_is_refused_past_the_limit(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import actors.net._watching as watching_module

    monkeypatch.setattr(watching_module, "MAX_WATCHES", 2)
    async with connected() as pair:
        for key in ("one", "two", "three"):
            pair.peer_a._watching.watch(key)
        await settle()
        assert len(pair.peer_b._watching.watched) == 2
        assert pair.peer_b.statistics().refused == 1
        pair.system_b.register(ServiceKey[CounterMessage]("two"), await b_counter(pair, "c"))
        await settle()
        assert [ref.name for ref in pair.peer_a._watching.listings["two"]] == ["c@b"]
        assert "three" not in pair.peer_a._watching.listings
