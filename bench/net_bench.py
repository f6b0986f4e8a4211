"""Benchmarks of ``actors.net``, as rows beside ``../shared/bench/baseline.py``.

Loaded by the baseline with ``--extra bench/net_bench.py`` (``bench/run.py``
does that). Every row runs both of its ends in one plain :func:`trio.run`
over loopback TCP (``trio.open_tcp_listeners`` on port 0), on the real clock,
and times only its hot loop.

Rows:

* ``net ask (loopback tcp)``: ``await ref.ask(Echo, PAYLOAD)`` round trips
  from node a to an echo actor on node b, through a remote reference: one op
  is one round trip.
* ``tcp ping-pong raw``: the same bytes without the nodes: a client task
  writes the very frame the ask sends (its length prefix and MessagePack),
  a server task reads it whole and writes back the very frame of the
  answer, which the client reads whole. The goal of issue 14: the ask row
  at least 0.7x of this one.
* ``tcp ping-pong 4 hops``: the same bytes over the same hops as the ask,
  by bare trio tasks: a reader task per end waits on its socket
  (``wait_readable``, then ``os.read``), the far reader hands each frame to
  an "actor" task through a memory channel, which writes the answer with
  ``os.write``; the near reader wakes the asker. Four scheduler passes per
  round trip, as the ask takes, against the ping-pong's two: what the hops
  alone cost (for scale; POSIX only).
* ``net tell (loopback tcp)``: tells of ``Add(i)`` in bursts (``tell_nowait``
  until the peer's credit is spent, then one ``await tell``) from node a to a
  counting actor on node b, timed until it has taken all of them: one op is
  one message. The node's writer sends each burst in one write.
* ``tcp frames raw``: the same frames (the ``Send`` frame of each ``Add(i)``)
  written with one ``send_all`` each to a server task that reads and splits
  them, timed until it has all of them. The goal: the tell row at least 0.5x
  of this one.
* ``tcp frames raw batched``: the same, the frames written in batches of
  :data:`RAW_BATCH` per ``send_all``: what batching alone gives, for scale.
"""

from __future__ import annotations

import os
import struct
import time
from typing import Any, cast

import attrs
import trio

import actors
from actors import ActorRef, Inbox, Reply
from actors.net import Codec, Connection, Role, open_node

ASK_N = 20_000
TELL_N = 200_000
QUICK = 10
PAYLOAD = "x" * 32
RAW_BATCH = 64
SECRET = b"the benchmark's shared secret!!!"
_LENGTH = struct.Struct(">I")


@attrs.frozen
class Echo:
    text: str
    reply: Reply[str]


@attrs.frozen
class Add:
    amount: int


def _codec() -> Codec:
    codec = Codec()
    codec.register(Echo, name="Echo")
    codec.register(Add, name="Add")
    return codec


async def echo(inbox: Inbox[Echo]) -> None:
    async for envelope in inbox:
        message = envelope.message
        message.reply.send(message.text)


async def count_to(inbox: Inbox[Add], n: int, done: trio.Event) -> None:
    seen = 0
    async for _ in inbox:
        seen += 1
        if seen == n:
            done.set()


def _frames() -> tuple[bytes, bytes, bytes]:
    """The bytes of one ask's ``Send`` frame, of its ``Answer``, and of the
    ``Send`` frame of ``Add(123456)``, as the protocol writes them."""
    client = Connection(role=Role.CLIENT, node="a", secret=SECRET, codec=_codec())
    server = Connection(role=Role.SERVER, node="b", secret=SECRET, codec=_codec())
    while client.credit == 0:  # the handshake; an empty read would be the end
        to_server, to_client = client.data_to_send(), server.data_to_send()
        if to_server:
            server.receive_data(to_server)
        if to_client:
            client.receive_data(to_client)
    reply = cast("Reply[str]", Reply._create("echo", 0, None, None))
    client.send_message(1, Echo(PAYLOAD, reply), 1)
    ask = client.data_to_send()
    server.send_answer(1, PAYLOAD)
    answer = server.data_to_send()
    client.send_message(1, Add(123456))
    tell = client.data_to_send()
    return ask, answer, tell


async def _receive_exactly(stream: trio.abc.Stream, buffer: bytearray, size: int) -> None:
    """Read into ``buffer`` until it holds ``size`` bytes, then drop them."""
    while len(buffer) < size:
        data = await stream.receive_some(65536)
        if not data:
            raise trio.BrokenResourceError("the stream ended")
        buffer += data
    del buffer[:size]


async def _tcp_pair() -> tuple[trio.SocketStream, trio.SocketStream, trio.SocketListener]:
    (listener,) = await trio.open_tcp_listeners(0, host="127.0.0.1")
    port = listener.socket.getsockname()[1]
    client = await trio.open_tcp_stream("127.0.0.1", port)
    server = await listener.accept()
    return client, server, listener


def raw_ping_pong(n: int) -> tuple[int, float]:
    ask, answer, _ = _frames()

    async def main() -> float:
        client, server, listener = await _tcp_pair()

        async def serve() -> None:
            buffer = bytearray()
            for _ in range(n + 1):
                await _receive_exactly(server, buffer, len(ask))
                await server.send_all(answer)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(serve)
            buffer = bytearray()
            await client.send_all(ask)
            await _receive_exactly(client, buffer, len(answer))
            t0 = time.perf_counter()
            for _ in range(n):
                await client.send_all(ask)
                await _receive_exactly(client, buffer, len(answer))
            elapsed = time.perf_counter() - t0
        for resource in (client, server, listener):
            await resource.aclose()
        return elapsed

    return n, trio.run(main)


def ping_pong_4_hops(n: int) -> tuple[int, float]:
    ask, answer, _ = _frames()

    async def main() -> float:
        client, server, listener = await _tcp_pair()
        near, far = client.socket.fileno(), server.socket.fileno()
        to_actor, actor_inbox = trio.open_memory_channel[bytes](64)
        asker: list[trio.lowlevel.Task] = []

        async def far_reader() -> None:
            while True:
                await trio.lowlevel.wait_readable(far)
                to_actor.send_nowait(os.read(far, 65536))

        async def actor() -> None:
            async for _ in actor_inbox:
                os.write(far, answer)

        async def near_reader() -> None:
            while True:
                await trio.lowlevel.wait_readable(near)
                os.read(near, 65536)
                trio.lowlevel.reschedule(asker.pop())

        def abort(_: Any) -> trio.lowlevel.Abort:
            return trio.lowlevel.Abort.SUCCEEDED

        async def round_trip() -> None:
            os.write(near, ask)
            asker.append(trio.lowlevel.current_task())
            await trio.lowlevel.wait_task_rescheduled(abort)

        async with trio.open_nursery() as nursery:
            for task in (far_reader, actor, near_reader):
                nursery.start_soon(task)
            await round_trip()
            t0 = time.perf_counter()
            for _ in range(n):
                await round_trip()
            elapsed = time.perf_counter() - t0
            nursery.cancel_scope.cancel()
        for resource in (client, server, listener):
            await resource.aclose()
        return elapsed

    return n, trio.run(main)


def _raw_frames(batch: int) -> Any:
    def bench(n: int) -> tuple[int, float]:
        _, _, tell = _frames()
        chunk = tell * batch

        async def main() -> float:
            client, server, listener = await _tcp_pair()
            done = trio.Event()

            async def serve() -> None:
                # Split the stream into frames, as a receiver must.
                buffer = bytearray()
                seen = 0
                while seen < n:
                    data = await server.receive_some(65536)
                    buffer += data
                    start = 0
                    while len(buffer) - start >= 4:
                        (length,) = _LENGTH.unpack_from(buffer, start)
                        if len(buffer) - start - 4 < length:
                            break
                        start += 4 + length
                        seen += 1
                    del buffer[:start]
                done.set()

            async with trio.open_nursery() as nursery:
                nursery.start_soon(serve)
                t0 = time.perf_counter()
                if batch == 1:
                    for _ in range(n):
                        await client.send_all(tell)
                else:
                    for _ in range(n // batch):
                        await client.send_all(chunk)
                    for _ in range(n % batch):
                        await client.send_all(tell)
                await done.wait()
                elapsed = time.perf_counter() - t0
            for resource in (client, server, listener):
                await resource.aclose()
            return elapsed

        return n, trio.run(main)

    return bench


def net_ask(n: int) -> tuple[int, float]:
    async def main() -> float:
        async with actors.open_system() as system_a, actors.open_system() as system_b:
            await system_b.spawn(echo, name="echo")
            async with (
                open_node(system_a, name="a", secret=SECRET, codec=_codec(), listen=None) as a,
                open_node(system_b, name="b", secret=SECRET, codec=_codec()) as b,
            ):
                assert b.address is not None
                peer = await a.connect(b.address)
                ref = cast("ActorRef[Echo]", await peer.lookup("echo"))
                last = await ref.ask(Echo, PAYLOAD)
                t0 = time.perf_counter()
                for _ in range(n):
                    last = await ref.ask(Echo, PAYLOAD)
                elapsed = time.perf_counter() - t0
                assert last == PAYLOAD
                await peer.close()
        return elapsed

    return n, trio.run(main)


def net_tell(n: int) -> tuple[int, float]:
    async def main() -> float:
        async with actors.open_system() as system_a, actors.open_system() as system_b:
            done = trio.Event()
            await system_b.spawn(count_to, n, done, name="counter", capacity=1024)
            async with (
                open_node(system_a, name="a", secret=SECRET, codec=_codec(), listen=None) as a,
                open_node(system_b, name="b", secret=SECRET, codec=_codec()) as b,
            ):
                assert b.address is not None
                peer = await a.connect(b.address)
                ref = cast("ActorRef[Add]", await peer.lookup("counter"))
                t0 = time.perf_counter()
                for i in range(n):
                    try:
                        ref.tell_nowait(Add(i))
                    except trio.WouldBlock:
                        await ref.tell(Add(i))
                await done.wait()
                elapsed = time.perf_counter() - t0
                await peer.close()
        return elapsed

    return n, trio.run(main)


def net_benchmarks() -> list[Any]:
    from baseline import Bench

    return [
        Bench("net ask (loopback tcp)", net_ask, ASK_N, ASK_N // QUICK, "round trip"),
        Bench("tcp ping-pong raw", raw_ping_pong, ASK_N, ASK_N // QUICK, "round trip"),
        Bench("tcp ping-pong 4 hops", ping_pong_4_hops, ASK_N, ASK_N // QUICK, "round trip"),
        Bench("net tell (loopback tcp)", net_tell, TELL_N, TELL_N // QUICK, "message"),
        Bench("tcp frames raw", _raw_frames(1), TELL_N, TELL_N // QUICK, "message"),
        Bench("tcp frames raw batched", _raw_frames(RAW_BATCH), TELL_N, TELL_N // QUICK, "message"),
    ]


def __getattr__(name: str) -> Any:
    """``BENCHMARKS``, made when the baseline asks for it."""
    if name == "BENCHMARKS":
        return net_benchmarks()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
