"""A second hostile review (session 15) of the registry across nodes
(Node.subscribe, Watch/Listed/Unwatch), SpawnKey and supervised remote spawn:
each test is a repro that failed, for a defect since fixed, on the reviewed
code. Mock clock, memory streams (deterministic)."""

from __future__ import annotations

import struct

import msgspec
import pytest
import trio
import trio.testing

import actors
from actors import ActorRef, Inbox, Listing, OneForOne, ServiceKey
from actors.net import Connection, Role, SpawnKey, open_node
from actors.net._frames import Listed, Watch

from ..messages import SECRET, Add, Total, codec
from .nodes import CounterMessage, Pair, connected, counter
from .test_misbehaving_peers import handshake, pipe_pair

COUNTERS = ServiceKey[CounterMessage]("counters")


def frame(value: object) -> bytes:
    payload = msgspec.msgpack.encode(value)
    return struct.pack(">I", len(payload)) + payload


async def settle() -> None:
    await trio.testing.wait_all_tasks_blocked()


async def keeper_of(
    system: actors.ActorSystem, name: str = "keeper"
) -> tuple[ActorRef[Listing[CounterMessage]], list[Listing[CounterMessage]]]:
    got: list[Listing[CounterMessage]] = []

    async def keeper(inbox: Inbox[Listing[CounterMessage]]) -> None:
        async for envelope in inbox:
            got.append(envelope.message)

    return await system.spawn(keeper, name=name), got


async def second_connection(pair: Pair) -> None:
    stream_a, stream_b = trio.testing.memory_stream_pair()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(pair.node_b.accept, stream_b)
        await pair.node_a.connect(stream_a)


# ---- 1. two connections to one node --------------------------------------


async def test_two_connections_closing_the_first_leaves_the_listing_with_dead_refs() -> None:
    # Documented: "Two nodes that seed each other hold two connections". The
    # far actor is listed once (good), by the reference of whichever
    # connection listed it first. When that connection goes, the actor is
    # still reachable over the second one, but no new listing came (the
    # addresses did not change), so the subscriber was left holding a
    # reference that ended with NodeDown.
    async with connected() as pair:
        await second_connection(pair)
        assert len(pair.node_a.peers) == 2
        far = await pair.system_b.spawn(counter, name="far")
        pair.system_b.register(COUNTERS, far)
        keep, got = await keeper_of(pair.system_a)
        pair.node_a.subscribe(COUNTERS, keep)
        await settle()
        assert [ref.name for ref in got[-1].refs] == ["far@b"]  # once: held up
        # The connection whose reference the listing holds (the one whose
        # Listed came first: scheduling decides which) goes.
        (listed,) = got[-1].refs
        carrier = listed._cell.send_channel._peer  # type: ignore[attr-defined]
        assert carrier in pair.node_a.peers
        await carrier.close("the connection the listing's reference came by goes")
        await settle()
        assert len(pair.node_a.peers) == 1  # b is still connected
        (ref,) = got[-1].refs  # the newest listing the subscriber has
        # What should hold: the newest listing's reference works.
        await ref.tell(Add(1))
        assert await ref.ask(Total, timeout=5) == 1


# ---- 2. a node that closes leaves its watch in the system's registry -----


async def test_a_closed_node_keeps_watching_the_registry_and_sends_listings() -> None:
    # open_node's block ends: the node's watch of the local registry stays
    # (system._registry._watchers keeps the dead node's callback), and its
    # subscribers keep getting listings from a node that is closed. A second
    # node on the same system then doubles every listing.
    async with actors.open_system() as system:
        keep, got = await keeper_of(system)
        async with open_node(system, name="n1", secret=SECRET, codec=codec(), listen=None) as n1:
            n1.subscribe(COUNTERS, keep)
        await settle()
        assert system._the_registry()._watchers == {}, "the closed node still watches"
        got.clear()
        system.register(COUNTERS, await system.spawn(counter, name="c"))
        await settle()
        assert got == [], "a closed node sent a listing"


async def test_a_node_opened_again_on_a_system_doubles_every_listing() -> None:
    async with actors.open_system() as system:
        keep, got = await keeper_of(system)
        async with open_node(system, name="n1", secret=SECRET, codec=codec(), listen=None) as n1:
            n1.subscribe(COUNTERS, keep)
        async with open_node(system, name="n2", secret=SECRET, codec=codec(), listen=None) as n2:
            n2.subscribe(COUNTERS, keep)
            await settle()
            got.clear()
            system.register(COUNTERS, await system.spawn(counter, name="c"))
            await settle()
            assert len(got) == 1, [[r.name for r in listing.refs] for listing in got]


# ---- 3. Listed frames and the cap on remote references -------------------


async def test_listed_frames_bypass_max_remote_refs(monkeypatch: pytest.MonkeyPatch) -> None:
    # A reference in a message is refused past MAX_REMOTE_REFS; one in a
    # Listed frame is not, and each Listed with fresh uids adds cells to
    # peer._remote that nothing ever removes (the next listing replaces the
    # old one in _listings, but _remote keeps every cell): a peer grows it
    # without bound, one frame at a time, for a watch it was asked for.
    import actors.net._peer as peer_module

    monkeypatch.setattr(peer_module, "MAX_REMOTE_REFS", 10)
    async with connected() as pair:
        keep, _ = await keeper_of(pair.system_a)
        pair.node_a.subscribe(COUNTERS, keep)
        await settle()
        (number,) = pair.peer_a._watching.keys
        for uid in range(10_000, 10_100):
            await pair.stream_b.send_all(frame(Listed(number, [(f"ghost{uid}", uid)])))
            await settle()
        assert len(pair.peer_a._watching.listings["counters"]) == 1
        assert len(pair.peer_a._remote) <= 10, len(pair.peer_a._remote)


# ---- 4. listings that do not fit a frame ---------------------------------


async def test_a_listing_over_the_frame_limit_lists_the_peer_as_having_no_actors() -> None:
    # b has 100 actors under the key; their listing is over max_frame, so b
    # sends Listed(request, []) and a's subscriber is told b has none: a
    # silent, wrong listing (no error, no log on a's side), while b exported
    # all 100 actors to a for nothing.
    async with connected(max_frame=2048) as pair:
        for index in range(100):
            ref = await pair.system_b.spawn(counter, name=f"counter-with-a-long-name-{index:03}")
            pair.system_b.register(COUNTERS, ref)
        keep, got = await keeper_of(pair.system_a)
        pair.node_a.subscribe(COUNTERS, keep)
        await settle()
        assert len(got[-1].refs) == 100 or pair.peer_b.statistics().exported <= 1, (
            f"listed {len(got[-1].refs)} of b's 100 actors; b exported "
            f"{pair.peer_b.statistics().exported}"
        )


# ---- 5. the output buffer and listings to a peer that does not read ------


async def test_listings_to_a_peer_that_reads_nothing_grow_the_output_without_bound() -> None:
    # "The output is bounded too": past max_buffer a node stops reading from
    # the peer. Listed frames are written whatever the buffer holds, one full
    # listing per change: a peer that sent one Watch and then reads nothing
    # (and sends nothing: the stall check runs only when the reader loops)
    # makes the node buffer every listing of every change, for ever.
    async with actors.open_system() as system:
        refs = [await system.spawn(counter, name=f"c{index}") for index in range(100)]
        for ref in refs:
            system.register(COUNTERS, ref)
        async with open_node(
            system,
            name="b",
            secret=SECRET,
            codec=codec(),
            listen=None,
            max_frame=4096,
            max_buffer=8192,
            stall_timeout=30,
        ) as b:
            ours, theirs = pipe_pair(capacity=4096)
            mallory = Connection(role=Role.CLIENT, node="mallory", secret=SECRET, codec=codec())

            async def watch_then_go_quiet() -> None:
                await handshake(mallory, ours)
                await ours.send_all(frame(Watch(1, "counters")))
                await trio.sleep_forever()

            async with trio.open_nursery() as nursery:
                nursery.start_soon(watch_then_go_quiet)
                peer = await b.accept(theirs)
                await settle()
                assert len(peer._watching.watched) == 1
                for _ in range(200):  # churn of one actor: 400 changes
                    system.deregister(COUNTERS, refs[0])
                    system.register(COUNTERS, refs[0])
                    await trio.sleep(0.01)
                buffered = peer.statistics().buffered
                nursery.cancel_scope.cancel()
            assert buffered <= 8192 + 4 * 4096, (
                f"{buffered} bytes wait for a peer that reads nothing"
            )


# ---- 6. remote stop of a permanent child of a supervisor -------------------

PERMANENT_KEY = SpawnKey[CounterMessage]("permanent counters")


async def test_remote_stop_of_a_permanent_supervised_actor_returns() -> None:
    # Locally, ref.stop() on a PERMANENT child returns at once (the incarnation
    # ended; the supervisor restarts it, address kept). Remotely it waits for
    # an Ended frame, which comes only when the actor ends for good: never.
    async with (
        connected() as pair,
        pair.system_b.open_supervisor(OneForOne(intensity=10, period=5)) as sup,
    ):
        pair.node_b.allow_spawn(PERMANENT_KEY, counter, supervisor=sup)
        local = await sup.spawn(counter, name="local")
        with trio.fail_after(10):
            await local.stop()  # returns: the child restarted
        ref = await pair.peer_a.spawn(PERMANENT_KEY, name="far")
        with trio.fail_after(10):
            await ref.stop()  # hangs on the reviewed code
        sup_children = [child.name for child in sup.children]
        assert "far" in sup_children


async def test_a_remote_ref_to_a_restarted_permanent_actor_stays_usable() -> None:
    # After the remote stop (given up on here), the actor runs again on b
    # (restarted), but a's reference has closed its mailbox ("stopping") and
    # never learns of the restart: every tell raises ActorStoppedError for
    # an actor that is alive; a local reference keeps working after a restart.
    async with (
        connected() as pair,
        pair.system_b.open_supervisor(OneForOne(intensity=10, period=5)) as sup,
    ):
        pair.node_b.allow_spawn(PERMANENT_KEY, counter, supervisor=sup)
        ref = await pair.peer_a.spawn(PERMANENT_KEY, name="far")
        with trio.move_on_after(10):
            await ref.stop()
        await settle()
        assert pair.system_b.lookup("far") is not None  # alive on b
        await ref.tell(Add(1))  # ActorStoppedError on the reviewed code
        assert await ref.ask(Total, timeout=5) == 1
