"""Links between the nodes of a replica on several OS processes.

Every node (the controller's, the shard host's, each replica process's)
registers one actor under :data:`LINK`; what one node sends another travels
as :class:`Wire` messages to that actor, each a batch of *items*
(:mod:`._items`, encoded by the nodes' codec: :mod:`._wire`). An :class:`Outlink` carries a node's
items to one other node over one ``actors.net`` connection, so items reach
it in the order they were put, whatever their channel; its task sends
everything queued in one message (one write). A :class:`Hub` is a node's
outlinks, and the handlers of the items that arrive, one per item class
(:meth:`Hub.on`), which it calls in arrival order.

A node dials the nodes it sends to (:meth:`Hub.dial`); a node that was
dialled answers over the connection it was dialled on (:meth:`Hub.inbound`),
found by the dialler's node name once its first item arrived.

For the replica's quiescence test the hub counts the items it put and the
items it handled (those whose class is not ``counted`` aside): once every node
is idle and the sums agree twice in a row, nothing is in flight.
"""

from __future__ import annotations

import inspect
import logging
import math
import ssl
from collections.abc import Awaitable, Callable
from typing import Any, Final, TypeVar

import attrs
import trio

from actors import ActorRef, ActorStoppedError, ActorSystem, Inbox, ServiceKey
from actors.net import Codec, CodecError, HandshakeError, Node, NodeDownError, Peer, Values

from . import _wire
from ._errors import HandlerFailedError, ItemTooLargeError, LinkLostError, WireError
from ._items import Hello, Item

logger = logging.getLogger("replica.procs")


@attrs.frozen
class Wire:
    """A batch of items from node ``source`` (the codec's values: :mod:`._wire`)."""

    source: str
    payload: bytes


LINK: Final = ServiceKey[Wire]("replica.link")
MAX_FRAME: Final = 256 * 2**20
"""The largest frame a replica node accepts (a shard's snapshot may be big)."""
CHUNK: Final = 16 * 2**20
_ITEMS: Final = 16
HELLO: Final = Hello()

ItemT = TypeVar("ItemT", bound=Item)
Handler = Callable[[str, Any], object]
"""An item's handler: called with the sender's node name and the item;
awaited if it returns an awaitable."""


def codec() -> Codec:
    """The codec of replica nodes: the one message class they exchange
    (:class:`Wire`, a batch of items) and the values its payload carries
    (the replica's classes and the items, :func:`._wire.values`)."""
    result = Codec(values=_wire.values())
    result.register(Wire, name="replica.Wire")
    return result


@attrs.define(eq=False)
class Outlink:
    """Items for one node, sent in order over one connection."""

    hub: Hub
    target: str
    connect: Callable[[], Awaitable[tuple[Peer, ActorRef[Wire]]]]
    queue: list[Item] = attrs.field(factory=list)
    peer: Peer | None = None
    ref: ActorRef[Wire] | None = None
    # Sent first on every new connection (the dialler says who it is).
    greeting: Item | None = None
    _more: trio.Event = attrs.field(factory=trio.Event)

    def refresh(self) -> None:
        """Find the connection again before the next send (the other side
        dialled anew; the old connection may not look lost yet)."""
        self.peer = self.ref = None

    def put(self, item: Item) -> None:
        if item.counted:
            self.hub.sent += 1
        self.queue.append(item)
        self._more.set()

    def discard(self) -> None:
        """Drop what is queued (its target went away); counted as handled."""
        self.hub.dropped += sum(item.counted for item in self.queue)
        self.queue = []

    async def run(self) -> None:
        while True:
            while not self.queue:
                await self._more.wait()
                self._more = trio.Event()
            ref = self.ref
            if ref is None:
                try:
                    self.peer, ref = await self.connect()
                except LinkLostError as error:
                    logger.warning("%s: %s", self.hub.name, error)
                    self.discard()
                    self.hub.unreachable(self.target, error)
                    continue
                self.ref = ref
                self.hub.nursery.start_soon(self._watch, self.peer)
                self.hub.connected(self.target, self.peer)
                if self.greeting is not None:
                    self.queue.insert(0, self.greeting)
            batch, self.queue = self.queue, []
            try:
                for items, payload in _payloads(self.hub.values, batch):
                    await self._tell(ref, items, payload)
            except (ActorStoppedError, NodeDownError, trio.BrokenResourceError):
                self.hub.dropped += sum(item.counted for item in batch)
                self._lost(self.peer)

    async def _tell(self, ref: ActorRef[Wire], items: list[Item], payload: bytes) -> None:
        try:
            await ref.tell(Wire(self.hub.name, payload))
        except CodecError as error:
            # Over the frame limit (nothing was sent): item by item, to name
            # the one no frame can carry.
            if len(items) > 1:
                for item in items:
                    await self._tell(ref, [item], self.hub.values.encode([item]))
                return
            raise ItemTooLargeError(
                f"{self.hub.name}: an item on channel {items[0].channel!r} for {self.target} is "
                f"over the frame limit ({error})"
            ) from None

    async def _watch(self, peer: Peer | None) -> None:
        if peer is None:
            return
        await peer.closed.wait()
        self._lost(peer)

    def _lost(self, peer: Peer | None) -> None:
        if peer is not None and peer is self.peer:
            self.peer = self.ref = None
            logger.info("%s: the link to %s is down", self.hub.name, self.target)
            self.hub.lost(self.target)


def _payloads(values: Values, batch: list[Item]) -> list[tuple[list[Item], bytes]]:
    """``batch`` in messages (their items, and the items' bytes) of at most
    ``_ITEMS`` items and (unless one item is larger) ``CHUNK`` bytes: the
    receiver handles one message a turn, so a long burst is worked on as it
    arrives."""
    if len(batch) > _ITEMS:
        return [
            payload
            for start in range(0, len(batch), _ITEMS)
            for payload in _payloads(values, batch[start : start + _ITEMS])
        ]
    payload = values.encode(batch)
    if len(payload) <= CHUNK or len(batch) == 1:
        return [(batch, payload)]
    half = len(batch) // 2
    return _payloads(values, batch[:half]) + _payloads(values, batch[half:])


def _items(batch: object) -> list[Item]:
    """``batch`` if it is a batch of items (a list of :class:`~._items.Item`);
    a :class:`~replica.procs.WireError` otherwise (a peer that broke the
    protocol: the batch is refused, the link goes on)."""
    if type(batch) is not list or not all(isinstance(item, Item) for item in batch):
        raise WireError("not a batch of items (a list of items, each of a registered class)")
    return batch


@attrs.define(eq=False)
class Hub:
    """A node's outlinks and the handlers of the items it receives."""

    name: str
    node: Node
    nursery: trio.Nursery
    # Wraps the connections this node dials (TLS), if given.
    ssl_context: ssl.SSLContext | None = None
    handlers: dict[type[Item], Handler] = attrs.field(factory=dict)
    outlinks: dict[str, Outlink] = attrs.field(factory=dict)
    # Called with a target's name when its link goes down.
    on_lost: list[Callable[[str], None]] = attrs.field(factory=list)
    # Called with a target's name and the connection when its link connects.
    on_connected: list[Callable[[str, Peer], None]] = attrs.field(factory=list)
    # Called with a target's name and the error when dialling it gave up.
    on_unreachable: list[Callable[[str, LinkLostError], None]] = attrs.field(factory=list)
    sent: int = 0
    received: int = 0
    dropped: int = 0
    # When a message from each node last arrived (trio time), by node name.
    last_heard: dict[str, float] = attrs.field(factory=dict)
    # Set when an item from a node arrives (the inbound links wait for it).
    _heard: dict[str, trio.Event] = attrs.field(factory=dict)
    _failed: trio.Event = attrs.field(factory=trio.Event)
    _failure: str = ""
    _cause: BaseException | None = None

    @property
    def system(self) -> ActorSystem:
        return self.node.system

    @property
    def values(self) -> Values:
        """How this node's batches are encoded (its codec's values)."""
        return self.node.codec.values

    def on(self, kind: type[ItemT], handler: Callable[[str, ItemT], object]) -> None:
        """Handle each item of class ``kind`` with ``handler(source, item)``
        (awaited if it returns an awaitable), in arrival order."""
        self.handlers[kind] = handler

    async def start(self) -> None:
        """Serve this node's link actor (in this hub's nursery: a handler
        that raises ends the nursery with :class:`HandlerFailedError`)."""
        ref = await self.system.spawn(self._serve, name="link", capacity=math.inf)
        self.system.register(LINK, ref)
        self.nursery.start_soon(self._fail_on_error)

    async def _fail_on_error(self) -> None:
        await self._failed.wait()
        raise HandlerFailedError(self._failure) from self._cause

    def send(self, target: str, item: Item) -> None:
        """Put ``item`` on the link to ``target`` (opened with :meth:`dial`
        or :meth:`inbound`). Never blocks."""
        self.outlinks[target].put(item)

    def dial(
        self,
        target: str,
        address: tuple[str, int],
        *,
        patience: float = 30.0,
        greeting: Item | None = HELLO,
    ) -> Outlink:
        """A link to ``target``, dialled at ``address`` when first used (and
        again after it went down), retrying for ``patience`` seconds while the
        address refuses (the node may still be starting)."""

        async def connect() -> tuple[Peer, ActorRef[Wire]]:
            deadline = trio.current_time() + patience
            pause = 0.01
            last: Exception | None = None
            while True:
                peer = None
                if last is not None and trio.current_time() >= deadline:
                    # (Past it during the back-off: the last refusal says why.)
                    raise LinkLostError(f"cannot reach {target} at {address}: {last}")
                # Each attempt within what is left of the patience: one to an
                # address that never answers (its SYNs dropped, or a node
                # frozen after its kernel accepted) would otherwise take the
                # kernel's minutes, or the handshake's timeout, past it.
                with trio.move_on_at(deadline) as attempt:
                    try:
                        peer = await self.node.connect(address, ssl_context=self.ssl_context)
                        (ref,) = await peer.find(LINK)
                    except (OSError, HandshakeError, NodeDownError, ValueError) as error:
                        if peer is not None:
                            # Connected, but no link there (yet): not left open.
                            await peer.close(f"no {LINK.name} found on {target}")
                        if trio.current_time() > deadline:
                            raise LinkLostError(
                                f"cannot reach {target} at {address}: {error}"
                            ) from None
                        last = error
                    else:
                        return peer, ref
                if attempt.cancelled_caught:
                    if peer is not None:
                        await peer.close(f"no answer from {target} within {patience:g}s")
                    raise LinkLostError(
                        f"cannot reach {target} at {address}: no answer within {patience:g}s"
                    )
                # A back-off between dials of a node still starting (not a poll
                # of state: the node is across a socket that refuses).
                await trio.sleep(pause)
                pause = min(pause * 2, 0.25)

        link = self._add(target, connect)
        link.greeting = greeting
        return link

    def inbound(self, target: str, *, patience: float = 30.0) -> Outlink:
        """A link to ``target`` over the connection ``target`` dialled to this
        node (found once an item from it arrived)."""

        async def connect() -> tuple[Peer, ActorRef[Wire]]:
            with trio.move_on_after(patience):
                while True:
                    for peer in reversed(self.node.peers):
                        if peer.node == target and not peer.closed.is_set():
                            try:
                                (ref,) = await peer.find(LINK)
                            except (NodeDownError, ValueError):
                                continue
                            return peer, ref
                    heard = self._heard.setdefault(target, trio.Event())
                    await heard.wait()
                    self._heard.pop(target, None)
            raise LinkLostError(f"{target} did not connect within {patience:g}s")

        return self._add(target, connect)

    def _add(
        self, target: str, connect: Callable[[], Awaitable[tuple[Peer, ActorRef[Wire]]]]
    ) -> Outlink:
        link = self.outlinks.get(target)
        if link is None:
            link = self.outlinks[target] = Outlink(self, target, connect)
            self.nursery.start_soon(link.run, name=f"{self.name} -> {target}")
        else:
            link.connect = connect
        return link

    def uncount(self) -> None:
        """The item being handled belonged to a replica that ended (an epoch
        or a subscription before this node's last reset): not counted as
        handled. Its sender's count of it ended with that replica (every
        node's counts start again at a reset), so counting it here would
        leave the quiescence sums apart for good. Called by its handler."""
        self.received -= 1

    def connected(self, target: str, peer: Peer) -> None:
        for callback in list(self.on_connected):
            callback(target, peer)

    def lost(self, target: str) -> None:
        for callback in list(self.on_lost):
            callback(target)

    def unreachable(self, target: str, error: LinkLostError) -> None:
        for callback in list(self.on_unreachable):
            callback(target, error)

    async def _serve(self, inbox: Inbox[Wire]) -> None:
        async for envelope in inbox:
            wire = envelope.message
            self.last_heard[wire.source] = trio.current_time()
            heard = self._heard.get(wire.source)
            if heard is not None:
                heard.set()
            try:
                items = _items(self.values.decode(wire.payload))
            except CodecError as error:
                logger.warning("%s: refused a batch from %s: %s", self.name, wire.source, error)
                continue
            for item in items:
                handler = self.handlers.get(type(item))
                if item.counted:
                    self.received += 1
                if handler is None:
                    logger.error(
                        "%s: no handler for %r from %s", self.name, item.channel, wire.source
                    )
                    continue
                try:
                    result = handler(wire.source, item)
                    if inspect.isawaitable(result):
                        await result
                except Exception as error:
                    logger.exception(
                        "%s: the handler of %r from %s", self.name, item.channel, wire.source
                    )
                    self._failure = (
                        f"{self.name}: the handler of {item.channel!r} from {wire.source} raised "
                        f"{type(error).__name__}: {error}"
                    )
                    self._cause = error
                    self._failed.set()
                    return
