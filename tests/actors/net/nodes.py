"""Two actor systems made nodes, connected over a Trio memory stream."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from typing import cast

import attrs
import trio
import trio.testing

import actors
from actors import ActorRef, Down, Inbox
from actors.net import DeadLetters, Node, Peer, open_node

from ..messages import SECRET, Add, Echo, Release, Total, Withheld, codec

CounterMessage = Add | Total | Echo | Withheld | Release


async def counter(inbox: Inbox[CounterMessage]) -> None:
    """Adds what it is told; answers Total and Echo; holds Withheld's replies
    until told Release."""
    total = 0
    held = []
    async for envelope in inbox:
        match envelope.message:
            case Add(amount):
                total += amount
            case Total(reply):
                reply.send(total)
            case Echo(text, reply):
                reply.send(text.upper())
            case Withheld(reply):
                held.append(reply)
            case Release():
                for reply in held:
                    reply.send(total)
                held.clear()


async def watcher(inbox: Inbox[Down], seen: list[Down]) -> None:
    async for envelope in inbox:
        seen.append(envelope.message)


@attrs.define
class Pair:
    """Node ``a`` (the client) connected to node ``b`` (the server)."""

    system_a: actors.ActorSystem
    system_b: actors.ActorSystem
    node_a: Node
    node_b: Node
    peer_a: Peer  # node b, as seen from a
    peer_b: Peer  # node a, as seen from b
    stream_a: trio.abc.Stream
    stream_b: trio.abc.Stream

    async def counter_ref(self) -> ActorRef[CounterMessage]:
        """A reference, on a, to b's counter."""
        ref = await self.peer_a.lookup("counter")
        assert ref is not None
        return cast("ActorRef[CounterMessage]", ref)


@asynccontextmanager
async def connected(
    *,
    stream_pair: Callable[
        [], tuple[trio.abc.Stream, trio.abc.Stream]
    ] = trio.testing.memory_stream_pair,
    counter_capacity: float = 64,
    window: int = 16,
    max_frame: int = 1 << 20,
    only_a: Sequence[tuple[type, str]] = (),
    both: Sequence[tuple[type, str]] = (),
    peer_timeout: float | None = None,
    dead_letters_a: DeadLetters | None = None,
    dead_letters_b: DeadLetters | None = None,
) -> AsyncIterator[Pair]:
    """Nodes ``a`` and ``b`` connected over ``stream_pair``; ``only_a`` are
    message classes (and names) a's codec registers and b's does not, and
    ``both`` more that both register. ``peer_timeout`` turns the failure
    detector on (off by default on the mock clock)."""
    codec_a, codec_b = codec(), codec()
    for cls, name in [*only_a, *both]:
        codec_a.register(cls, name=name)
    for cls, name in both:
        codec_b.register(cls, name=name)
    async with actors.open_system() as system_a, actors.open_system() as system_b:
        await system_b.spawn(counter, name="counter", capacity=counter_capacity)
        async with (
            open_node(
                system_a,
                name="a",
                secret=SECRET,
                codec=codec_a,
                listen=None,
                window=window,
                max_frame=max_frame,
                peer_timeout=peer_timeout,
                dead_letters=dead_letters_a,
            ) as a,
            open_node(
                system_b,
                name="b",
                secret=SECRET,
                codec=codec_b,
                listen=None,
                window=window,
                max_frame=max_frame,
                peer_timeout=peer_timeout,
                dead_letters=dead_letters_b,
            ) as b,
        ):
            stream_a, stream_b = stream_pair()
            accepted: list[Peer] = []

            async def accept() -> None:
                accepted.append(await b.accept(stream_b))

            async with trio.open_nursery() as nursery:
                nursery.start_soon(accept)
                peer_a = await a.connect(stream_a)
            yield Pair(system_a, system_b, a, b, peer_a, accepted[0], stream_a, stream_b)
