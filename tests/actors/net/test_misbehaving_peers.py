"""A node against peers that misbehave: floods of requests from a peer that
never reads, frames after what closed the connection, a peer gone in the
middle of a frame, cancelled handshakes, concurrent closes. Over Trio
in-memory streams on the mock clock."""

from __future__ import annotations

import re
import struct
from typing import cast

import msgspec
import pytest
import trio
import trio.testing

import actors
from actors import ActorRef
from actors.net import (
    Authenticated,
    Connection,
    Event,
    HandshakeError,
    NodeDownError,
    Peer,
    Role,
    open_node,
)
from actors.net._frames import Lookup, Send

from ..messages import SECRET, Add, Echo, codec
from .nodes import connected, counter


class _Pipe:
    """One direction of a :class:`PipeStream`: at most ``capacity`` bytes
    written and not read (a socket's buffers, small)."""

    def __init__(self, capacity: int) -> None:
        self.buffer = bytearray()
        self.capacity = capacity
        self.closed = False
        self.changed = trio.lowlevel.ParkingLot()


class PipeStream(trio.abc.Stream):
    """An in-memory stream whose writes wait while the other side has
    ``capacity`` bytes unread: a peer that stops reading blocks its writer."""

    def __init__(self, outgoing: _Pipe, incoming: _Pipe) -> None:
        self.outgoing = outgoing
        self.incoming = incoming
        self.read = 0

    async def send_all(self, data: bytes | bytearray | memoryview) -> None:
        await trio.lowlevel.checkpoint()
        pipe = self.outgoing
        view = memoryview(data)
        while view:
            while len(pipe.buffer) >= pipe.capacity and not pipe.closed:
                await pipe.changed.park()
            if pipe.closed:
                raise trio.BrokenResourceError("the pipe is closed")
            room = pipe.capacity - len(pipe.buffer)
            pipe.buffer += view[:room]
            view = view[room:]
            pipe.changed.unpark_all()

    async def wait_send_all_might_not_block(self) -> None:
        await trio.lowlevel.checkpoint()

    async def receive_some(self, max_bytes: int | None = None) -> bytes:
        pipe = self.incoming
        if pipe.buffer or pipe.closed:
            await trio.lowlevel.checkpoint()
        while not pipe.buffer and not pipe.closed:
            await pipe.changed.park()
        size = len(pipe.buffer) if max_bytes is None else max_bytes
        data = bytes(pipe.buffer[:size])
        del pipe.buffer[:size]
        self.read += len(data)
        pipe.changed.unpark_all()
        return data

    async def aclose(self) -> None:
        for pipe in (self.outgoing, self.incoming):
            pipe.closed = True
            pipe.changed.unpark_all()
        await trio.lowlevel.checkpoint()


def pipe_pair(capacity: int = 4096) -> tuple[PipeStream, PipeStream]:
    one, two = _Pipe(capacity), _Pipe(capacity)
    return PipeStream(one, two), PipeStream(two, one)


async def handshake(conn: Connection, stream: trio.abc.Stream) -> list[Event]:
    """Drive ``conn``'s side of the handshake by hand over ``stream``."""
    while True:
        data = conn.data_to_send()
        if data:
            await stream.send_all(data)
        events = conn.receive_data(await stream.receive_some(65536))
        if any(isinstance(event, Authenticated) for event in events):
            data = conn.data_to_send()
            if data:
                await stream.send_all(data)
            return events


def frame(value: object) -> bytes:
    payload = msgspec.msgpack.encode(value)
    return struct.pack(">I", len(payload)) + payload


@pytest.mark.parametrize("request_kind", ["lookup", "ask"])
async def test_a_peer_flooding_requests_and_never_reading_is_held_to_the_buffer_then_closed(
    request_kind: str,
) -> None:
    async with actors.open_system() as system:
        counter_ref = await system.spawn(counter, name="counter", capacity=1024)
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
            sent = 0
            flooding = trio.Event()

            async def flood() -> None:
                nonlocal sent
                await handshake(mallory, ours)
                flooding.set()
                # Requests that each make an answer, never reading one: as
                # fast as node b takes them.
                uid = counter_ref.address.uid
                try:
                    while True:
                        if request_kind == "lookup":
                            data = frame(Lookup(sent, "counter"))
                        else:  # node b grants credit back as it delivers: it is not spent
                            data = frame(Send(uid, "Echo", msgspec.msgpack.encode(["hi"]), sent))
                        await ours.send_all(data)
                        sent += 1
                except trio.BrokenResourceError:
                    pass  # node b closed the connection

            async with trio.open_nursery() as nursery:
                nursery.start_soon(flood)
                peer = await b.accept(theirs)
                await flooding.wait()
                await peer.closed.wait()
                nursery.cancel_scope.cancel()
            assert peer.reason is not None
            match = re.fullmatch(
                r"node 'mallory' read nothing for 30s while (\d+) bytes waited for it "
                r"\(the limit is 8192\)",
                peer.reason,
            )
            assert match is not None, peer.reason
            # Bounded: the limit, and what one read's requests answered.
            assert int(match.group(1)) <= 8192 + 4096 * 4
            # b stopped reading: mallory's writes were held up, not taken.
            assert sent < 2000


async def test_a_slow_reader_slows_the_flood_and_the_connection_lives() -> None:
    async with actors.open_system() as system:
        await system.spawn(counter, name="counter")
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
            sent = 0
            peak = 0

            async def flood() -> None:
                nonlocal sent
                await handshake(mallory, ours)
                while True:
                    await ours.send_all(frame(Lookup(sent, "counter")))
                    sent += 1

            async def read_slowly() -> None:
                while True:
                    await trio.sleep(1)
                    await ours.receive_some(1024)

            async with trio.open_nursery() as nursery:
                nursery.start_soon(flood)
                peer = await b.accept(theirs)
                nursery.start_soon(read_slowly)
                for _ in range(300):  # five virtual minutes
                    await trio.sleep(1)
                    peak = max(peak, peer.statistics().buffered)
                assert peer.reason is None
                nursery.cancel_scope.cancel()
            assert peak <= 8192 + 4096 * 4
            # The flood went at the reader's pace: about a frame of answers
            # (30 bytes each) per 30 bytes read, not as fast as it could.
            assert sent < 300 * 1024 // 20 + 2000


async def test_requests_before_what_closes_the_connection_end_nothing() -> None:
    # A look-up and two asks, then a message past the credit, in one read:
    # the connection closes, the requests are not answered, the node lives.
    async with actors.open_system() as system:
        await system.spawn(counter, name="counter")
        async with open_node(
            system, name="b", secret=SECRET, codec=codec(), listen=None, window=2
        ) as b:
            ours, theirs = trio.testing.memory_stream_pair()
            mallory = Connection(role=Role.CLIENT, node="mallory", secret=SECRET, codec=codec())
            async with trio.open_nursery() as nursery:
                nursery.start_soon(handshake, mallory, ours)
                peer = await b.accept(theirs)
            ask = frame(Send(999, "Total", msgspec.msgpack.encode([]), 1))
            await ours.send_all(frame(Lookup(1, "counter")) + ask * 3)
            await peer.closed.wait()
            assert peer.reason == "the peer sent past its credit of 2 messages"
            assert b.peers == []
        assert system.lookup("counter") is not None  # the system goes on


async def test_a_peer_gone_in_the_middle_of_a_frame_is_a_lost_connection() -> None:
    async with connected() as pair:
        ref = await pair.counter_ref()
        await trio.testing.wait_all_tasks_blocked()
        await pair.stream_a.send_all(frame(Lookup(7, "counter"))[:5])
        await trio.testing.wait_all_tasks_blocked()
        await pair.stream_a.aclose()
        await pair.peer_b.closed.wait()
        assert pair.peer_b.reason == "the stream ended without a Close frame (5 bytes into a frame)"
        with pytest.raises(actors.ActorStoppedError):
            await ref.tell(Add(1))


async def test_a_cancelled_connect_leaves_no_peer_and_closes_its_stream() -> None:
    async with (
        actors.open_system() as system,
        open_node(system, name="a", secret=SECRET, codec=codec(), listen=None) as a,
    ):
        ours, theirs = trio.testing.memory_stream_pair()
        with trio.move_on_after(1) as scope:
            await a.connect(ours)  # nobody answers on the other end
        assert scope.cancelled_caught
        assert a.peers == []
        # The other end reads a's Hello, then the end of the stream.
        received = b""
        while True:
            data = await theirs.receive_some()
            if not data:
                break
            received += data
        assert received  # the Hello


async def test_a_handshake_that_never_ends_times_out() -> None:
    async with (
        actors.open_system() as system,
        open_node(
            system, name="b", secret=SECRET, codec=codec(), listen=None, handshake_timeout=3
        ) as b,
    ):
        _ours, theirs = trio.testing.memory_stream_pair()
        start = trio.current_time()
        with pytest.raises(HandshakeError, match=r"no proof within 3s"):
            await b.accept(theirs)
        assert trio.current_time() - start == 3


async def test_concurrent_closes_all_return_and_one_reason_stands() -> None:
    async with connected() as pair:
        async with trio.open_nursery() as nursery:
            for reason in ("one", "two", "three"):
                nursery.start_soon(pair.peer_a.close, reason)
            nursery.start_soon(pair.peer_b.close, "four")
        assert pair.peer_a.closed.is_set()
        assert pair.peer_b.closed.is_set()
        # One reason, whichever close ran first (Trio picks the order).
        assert pair.peer_a.reason in {
            "closed here: one",
            "closed here: two",
            "closed here: three",
            "closed by node 'b': four",
        }
        assert pair.node_a.peers == []
        assert pair.node_b.peers == []


async def test_bad_buffer_limits_are_refused_before_anything_starts() -> None:
    async with actors.open_system() as system:
        with pytest.raises(ValueError, match=r"^a node's max_buffer must be a whole number >= "):
            async with open_node(
                system, name="b", secret=SECRET, codec=codec(), max_frame=4096, max_buffer=1024
            ):
                pass
        with pytest.raises(ValueError, match=r"^stall_timeout must be None or a number"):
            async with open_node(system, name="b", secret=SECRET, codec=codec(), stall_timeout=-1):
                pass


async def test_two_nodes_flooding_each_other_with_asks_close_rather_than_hang() -> None:
    # Each node asks the other's echo for answers of 3,000 bytes, 16 at a
    # time, and the streams hold 4 KiB: both outputs pass max_buffer, both
    # stop reading, and neither writes. The stall closes the connection.
    async with actors.open_system() as system_a, actors.open_system() as system_b:
        for system in (system_a, system_b):
            await system.spawn(counter, name="counter", capacity=64)
        nodes = [
            open_node(
                system,
                name=name,
                secret=SECRET,
                codec=codec(),
                listen=None,
                window=16,
                max_frame=4096,
                max_buffer=8192,
                stall_timeout=30,
            )
            for name, system in (("a", system_a), ("b", system_b))
        ]
        async with nodes[0] as a, nodes[1] as b:
            ours, theirs = pipe_pair(capacity=4096)
            peers: list[Peer] = []
            async with trio.open_nursery() as nursery:

                async def accept() -> None:
                    peers.append(await b.accept(theirs))

                nursery.start_soon(accept)
                peer_a = await a.connect(ours)
            (peer_b,) = peers
            failures: list[BaseException] = []

            async def flood(peer: Peer) -> None:
                ref = cast("ActorRef[Echo]", await peer.lookup("counter"))
                try:
                    while True:
                        await ref.ask(Echo, "x" * 3000)
                except (actors.ActorStoppedError, NodeDownError) as error:
                    failures.append(error)

            start = trio.current_time()
            async with trio.open_nursery() as nursery:
                for peer in (peer_a, peer_b):
                    for _ in range(16):
                        nursery.start_soon(flood, peer)
            assert peer_a.closed.is_set()
            assert peer_b.closed.is_set()
            reasons = f"{peer_a.reason} / {peer_b.reason}"
            assert "read nothing for 30s" in reasons
            assert trio.current_time() - start < 120
            assert len(failures) == 32
