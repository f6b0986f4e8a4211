"""One connection's part of the registry across nodes (:meth:`Node.subscribe
<actors.net.Node.subscribe>`): the peer's watches of this node's registry,
answered with listings, and this node's watches of the peer's, whose
listings it keeps. The peer (:mod:`._peer`) owns one :class:`Watches` and
hands it the frames of the registry; the node (:mod:`._node`) merges the
listings of every peer.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import Any, Final, Protocol

import trio

from .._core._cell import _Cell
from .._core._mailbox import ActorRef
from .._registry import ServiceKey
from .._system import ActorSystem
from ._errors import CodecError
from ._events import ListingReceived, WatchRequested
from ._protocol import Connection, State


class Peer(Protocol):
    """What :class:`Watches` uses of its :class:`~actors.net.Peer` (declared
    here so that this module does not import the peer that owns it)."""

    @property
    def node(self) -> str: ...

    _conn: Connection
    _system: ActorSystem
    _refused: int
    _refused_by_peer: int
    _max_buffer: int
    _writer_lot: trio.lowlevel.ParkingLot
    _remote: dict[int, _Cell[Any]]

    def _unsent(self) -> int: ...

    def _number(self) -> int: ...

    def _export(self, cell: _Cell[Any]) -> tuple[str, int]: ...

    def _reference(self, name: str, uid: int) -> ActorRef[Any]: ...


logger = logging.getLogger("actors.net")

MAX_WATCHES: Final = 1024
"""The most service keys one peer may watch on a node at once
(:meth:`Node.subscribe` on the peer): more are refused, counted and logged."""


class Watches:
    """The registry across nodes, on one connection."""

    __slots__ = ("dirty", "keys", "listings", "numbers", "on_listing", "peer", "watched")

    def __init__(self, peer: Peer) -> None:
        self.peer = peer
        # The peer's watches of this node's registry, by its number: the key,
        # and what the registry calls after each change.
        self.watched: dict[int, tuple[ServiceKey[Any], Callable[[], None]]] = {}
        # The peer's watches whose listing waits for the output to drain.
        self.dirty: dict[int, ServiceKey[Any]] = {}
        # Our watches of the peer's registry: their numbers by key name, the
        # key names by number, and the peer's actors under each key as it
        # last listed them. ``on_listing`` (the node's) is called with the
        # key's name when a listing comes.
        self.numbers: dict[str, int] = {}
        self.keys: dict[int, str] = {}
        self.listings: dict[str, tuple[ActorRef[Any], ...]] = {}
        self.on_listing: Callable[[str], None] | None = None

    # ---- the peer's watches of this node ----------------------------------

    def watch_requested(self, event: WatchRequested) -> None:
        """The peer watches a key here: list its actors now and after each
        change (at most ``MAX_WATCHES`` keys at once; more are refused)."""
        peer = self.peer
        if peer._conn.closed or event.request in self.watched:
            return
        if len(self.watched) >= MAX_WATCHES:
            peer._refused += 1
            logger.warning(
                "node %r watches more than %d service keys here: %r refused",
                peer.node,
                MAX_WATCHES,
                event.key,
            )
            return
        key = ServiceKey[Any](event.key)
        changed = functools.partial(self.send_listing, event.request, key)
        self.watched[event.request] = (key, changed)
        peer._system._the_registry().watch(key, changed)
        changed()

    def unwatch_requested(self, request: int) -> None:
        watched = self.watched.pop(request, None)
        if watched is not None:
            self.peer._system._the_registry().unwatch(*watched)

    def send_listing(self, request: int, key: ServiceKey[Any]) -> None:
        """The key of the peer's watch ``request`` changed: list it now, or,
        while more than ``max_buffer`` bytes wait for the peer, once they
        drained (the writer sends it then: one listing per watch waits, the
        newest, however many changes came meanwhile)."""
        peer = self.peer
        conn = peer._conn
        if conn.state is not State.OPEN:
            return
        if peer._unsent() > peer._max_buffer:
            self.dirty[request] = key
            return
        self.dirty.pop(request, None)
        refs = peer._system.find(key)
        actors = [(ref._cell.address.name, ref._cell.address.uid) for ref in refs]
        try:
            conn.send_listed(request, actors)
        except CodecError as error:  # over the frame limit: refused, visibly
            peer._refused += 1
            logger.warning("node %r: cannot list %r for it: %s", peer.node, key.name, error)
            conn.send_refusal(request, "CodecError", f"the listing of {key.name!r}: {error}")
        else:
            for ref in refs:
                peer._export(ref._cell)
        peer._writer_lot.unpark()

    def send_dirty(self) -> None:
        """Send the listings held back while the output was full."""
        dirty, self.dirty = self.dirty, {}
        for request, key in dirty.items():
            if request in self.watched:
                self.send_listing(request, key)

    # ---- this node's watches of the peer -----------------------------------

    def watch(self, key: str) -> None:
        """Watch the peer's actors under ``key`` (see :meth:`Node.subscribe`)."""
        peer = self.peer
        if key in self.numbers or peer._conn.state is not State.OPEN:
            return
        number = peer._number()
        try:
            peer._conn.send_watch(number, key)
        except CodecError as error:  # a key's name over the frame limit
            logger.warning("node %r: cannot watch %r there: %s", peer._conn.node, key, error)
            return
        self.numbers[key] = number
        self.keys[number] = key
        peer._writer_lot.unpark()

    def unwatch(self, key: str) -> None:
        number = self.numbers.pop(key, None)
        if number is None:
            return
        del self.keys[number]
        self.listings.pop(key, None)
        peer = self.peer
        if peer._conn.state is State.OPEN:
            peer._conn.send_unwatch(number)
            peer._writer_lot.unpark()

    def listing_received(self, event: ListingReceived, max_refs: int) -> None:
        """The peer's listing for our watch: kept (within ``max_refs``
        references to the peer's actors; past it, refused), and the node
        told."""
        key = self.keys.get(event.request)
        if key is None:
            return
        peer = self.peer
        fresh = {uid for _, uid in event.actors if uid not in peer._remote}
        if len(peer._remote) + len(fresh) > max_refs:
            peer._refused += 1
            logger.warning(
                "node %r listed more than %d references to its actors: refused",
                peer.node,
                max_refs,
            )
            return
        self.listings[key] = tuple(peer._reference(name, uid) for name, uid in event.actors)
        if self.on_listing is not None:
            self.on_listing(key)

    def refused(self, request: int, error: str, message: str) -> bool:
        """A refusal of the peer's, if it is of our watch ``request``: a
        listing it could not send (over the frame limit); the last one
        stands, and this says so. Whether it was."""
        key = self.keys.get(request)
        if key is None:
            return False
        peer = self.peer
        peer._refused_by_peer += 1
        logger.warning("node %r could not list %r: %s: %s", peer.node, key, error, message)
        return True

    def teardown(self) -> None:
        """The connection ended: the peer's watches end, and its listings."""
        self.dirty.clear()
        watched, self.watched = self.watched, {}
        registry = self.peer._system._the_registry()
        for key, changed in watched.values():
            registry.unwatch(key, changed)
        self.listings.clear()
