"""Links between replica nodes over loopback TCP (one ``trio.run`` on the
real clock): items in order across channels, answers over the dialled
connection, counts for the quiescence test, a failing handler stops the
node."""

from __future__ import annotations

from typing import Any, ClassVar

import attrs
import pytest
import trio

import actors
from actors.net import Codec, open_node
from replica.procs import HandlerFailedError, ItemTooLargeError
from replica.procs._items import Hello, Item
from replica.procs._links import LINK, Hub, Wire
from replica.procs._links import codec as replica_codec

from .helpers import run_real

SECRET = b"a secret of the replica's nodes"


@attrs.frozen
class X(Item):
    channel: ClassVar[str] = "x"
    n: int = 0


@attrs.frozen
class Y(Item):
    channel: ClassVar[str] = "y"
    n: int


@attrs.frozen
class Echo(Item):
    channel: ClassVar[str] = "echo"
    n: int


@attrs.frozen
class Back(Item):
    channel: ClassVar[str] = "back"
    n: int


@attrs.frozen
class Big(Item):
    channel: ClassVar[str] = "big"
    row: str


def codec() -> Codec:
    """The replica nodes' codec, with this module's items registered too."""
    result = replica_codec()
    for item in (X, Y, Echo, Back, Big):
        result.register_value(item, name=item.channel)
    return result


def test_items_arrive_in_order_and_the_dialled_side_answers() -> None:
    async def main() -> None:
        got: list[tuple[str, Any]] = []
        answered = trio.Event()
        async with (
            actors.open_system() as one,
            actors.open_system() as two,
            open_node(one, name="a", secret=SECRET, codec=codec(), listen=None) as node_a,
            open_node(two, name="b", secret=SECRET, codec=codec()) as node_b,
            trio.open_nursery() as nursery,
        ):
            assert node_b.address is not None
            a, b = Hub("a", node_a, nursery), Hub("b", node_b, nursery)
            await a.start()
            await b.start()
            b.on(Hello, lambda source, item: b.inbound(source))
            b.on(X, lambda source, item: got.append(("x", item.n)))
            b.on(Y, lambda source, item: got.append(("y", item.n)))
            b.on(Echo, lambda source, item: b.send(source, Back(item.n)))
            a.on(Back, lambda source, item: answered.set())
            a.dial("b", node_b.address)
            for n in range(500):
                a.send("b", X(n) if n % 3 else Y(n))
            a.send("b", Echo(7))
            await answered.wait()
            assert [n for _, n in got] == list(range(500))
            assert a.sent == 501
            assert b.received == 501
            nursery.cancel_scope.cancel()

    run_real(main, limit=30)


def test_a_handler_that_raises_stops_the_node_with_a_named_error() -> None:
    async def fails() -> None:
        async with (
            actors.open_system() as one,
            actors.open_system() as two,
            open_node(one, name="a", secret=SECRET, codec=codec(), listen=None) as node_a,
            open_node(two, name="b", secret=SECRET, codec=codec()) as node_b,
            trio.open_nursery() as nursery,
        ):
            assert node_b.address is not None
            a, b = Hub("a", node_a, nursery), Hub("b", node_b, nursery)
            await a.start()
            await b.start()

            def broken(source: str, item: Hello) -> None:
                raise KeyError("nope")

            b.on(Hello, broken)
            a.dial("b", node_b.address)
            a.send("b", X(1))
            await trio.sleep_forever()

    async def main() -> None:
        with pytest.raises(ExceptionGroup) as caught:
            await fails()
        assert caught.group_contains(
            HandlerFailedError, match="the handler of 'hello' from a raised KeyError"
        )

    run_real(main, limit=30)


@pytest.mark.parametrize(
    "batch",
    [
        5,
        [()],
        [([1], 2)],
        [(7,)],
        "text",
        [X(1), 3],
        [("x", 1)],
        [X(1), Wire("a", b"")],
        b"\x92\x00" * 700 + b"\x00",
    ],
    ids=[
        "not-a-list",
        "empty-item",
        "unhashable-channel",
        "int-channel",
        "string",
        "int-item",
        "tagged-tuple",
        "not-an-item",
        "nested-too-deeply",
    ],
)
def test_a_malformed_batch_is_refused_and_the_node_goes_on(batch: object) -> None:
    """A batch that decodes but is not a list of items (instances of
    registered item classes; tuples, as items once were, are not) is refused
    as undecodable bytes are: the link actor neither dies
    nor stops the node with a bare TypeError."""

    async def main() -> None:
        got: list[int] = []
        arrived = trio.Event()
        async with (
            actors.open_system() as one,
            actors.open_system() as two,
            open_node(one, name="a", secret=SECRET, codec=codec(), listen=None) as node_a,
            open_node(two, name="b", secret=SECRET, codec=codec()) as node_b,
            trio.open_nursery() as nursery,
        ):
            assert node_b.address is not None
            b = Hub("b", node_b, nursery)
            await b.start()

            def handle(source: str, item: X) -> None:
                got.append(item.n)
                arrived.set()

            b.on(X, handle)
            peer = await node_a.connect(node_b.address)
            (ref,) = await peer.find(LINK)
            values = node_a.codec.values
            values.register(Wire)  # (only to send one where an item belongs)
            payload = batch if isinstance(batch, bytes) else values.encode(batch)
            await ref.tell(Wire("a", payload))
            await ref.tell(Wire("a", values.encode([X(1)])))
            await arrived.wait()
            assert got == [1]
            assert b.received == 1
            nursery.cancel_scope.cancel()

    run_real(main, limit=30)


def test_an_item_over_the_frame_limit_is_a_named_error() -> None:
    """One item no frame can carry (a single row bigger than the limit) ends
    the node with an error that names the link and the channel, not a bare
    CodecError from deep in the node."""

    async def fails() -> None:
        async with (
            actors.open_system() as one,
            actors.open_system() as two,
            open_node(
                one, name="a", secret=SECRET, codec=codec(), listen=None, max_frame=65536
            ) as node_a,
            open_node(two, name="b", secret=SECRET, codec=codec(), max_frame=65536) as node_b,
            trio.open_nursery() as nursery,
        ):
            assert node_b.address is not None
            a, b = Hub("a", node_a, nursery), Hub("b", node_b, nursery)
            await a.start()
            await b.start()
            b.on(Hello, lambda source, item: None)
            b.on(Big, lambda source, item: None)
            a.dial("b", node_b.address)
            a.send("b", Big("x" * 100_000))
            await trio.sleep_forever()

    async def main() -> None:
        with pytest.raises(ExceptionGroup) as caught:
            await fails()
        assert caught.group_contains(
            ItemTooLargeError, match="a: an item on channel 'big' for b is over the frame limit"
        )

    run_real(main, limit=30)


def test_a_dial_that_finds_no_link_leaves_no_connection_open() -> None:
    """A node that accepts connections but has no link (its hub not started
    yet) is dialled again and again until the patience runs out; each
    connection whose look-up found no link is closed, not left open."""

    async def main() -> None:
        async with (
            actors.open_system() as one,
            actors.open_system() as two,
            open_node(one, name="a", secret=SECRET, codec=codec(), listen=None) as node_a,
            open_node(two, name="b", secret=SECRET, codec=codec()) as node_b,
            trio.open_nursery() as nursery,
        ):
            assert node_b.address is not None
            a = Hub("a", node_a, nursery)
            await a.start()
            gave_up = trio.Event()
            a.on_unreachable.append(lambda target, error: gave_up.set())
            a.dial("b", node_b.address, patience=0.2)
            a.send("b", X())
            await gave_up.wait()
            assert node_a.peers == []
            nursery.cancel_scope.cancel()

    run_real(main, limit=30)
