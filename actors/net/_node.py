"""Nodes: an actor system made reachable over Trio streams."""

from __future__ import annotations

import contextlib
import enum
import functools
import logging
import math
import os
import random
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any, Literal, TypeVar, TypeVarTuple, final, overload

import attrs
import trio
from trio._core._mock_clock import MockClock

from .._core._cell import _Cell
from .._core._envelope import Address
from .._core._errors import ActorError
from .._core._inbox import Inbox
from .._core._mailbox import ActorRef, _seconds
from .._core._util import NoPublicConstructor
from .._registry import Listing, ServiceKey, _listing_of
from .._restarts import Backoff, Restart
from .._supervision import Supervisor
from .._system import ActorSystem
from ._admission import Admission, AdmissionStatistics, Admitted, LogBudget, Progress
from ._codec import Codec
from ._errors import HandshakeError
from ._events import Authenticated, ConnectionClosed, Event
from ._peer import DeadLetters, Peer
from ._protocol import (
    DEFAULT_MAX_FRAME,
    DEFAULT_WINDOW,
    Connection,
    Role,
    check_node_name,
    types_frame_size,
)
from ._spawning import Spawnable, SpawnKey

logger = logging.getLogger("actors.net")

M = TypeVar("M")
Ts = TypeVarTuple("Ts")

Dialer = Callable[[], Awaitable[trio.abc.Stream]]
"""Opens a stream to another node (for :meth:`Node.keep` and ``seeds``:
what to dial when it is not a ``(host, port)``)."""
DEFAULT_PEER_TIMEOUT = 10.0
"""The failure detector's timeout when ``open_node`` is given none (on a
real clock)."""
MIN_HEARTBEAT = 0.01
"""The shortest heartbeat ``open_node`` takes (seconds)."""


class Unset(enum.Enum):
    """An argument left out (``open_node``'s ``peer_timeout``)."""

    UNSET = "unset"


DEFAULT_REDIAL = Backoff(minimum=0.1, maximum=10.0)
"""How a kept connection is dialled again: 0.1 s, then doubling up to 10 s
(less a random part of up to a fifth), from 0 again once it stayed up 10 s."""

MAX_HANDSHAKES = 64
"""Connections a node's listener keeps in their handshake at once (by
default: ``open_node(max_handshakes=...)``). One more is always let in, and a
stranger that has shown less is evicted to make room (:mod:`._admission`),
so connections that say nothing can neither pile up tasks and sockets nor
keep an honest peer out."""

LOG_BURST = 10
LOG_INTERVAL = 10.0
"""A node writes at most ``LOG_BURST`` warnings about connections that did
not authenticate per ``LOG_INTERVAL`` seconds; the next one written says how
many were held back (and ``Node.statistics().unlogged`` counts them all)."""


@final
@attrs.frozen
class NodeStatistics:
    """A snapshot of a node: its peers (authenticated connections), the
    accepted connections in their handshake now and the most it keeps, how
    many of those were evicted to make room, how many failed their handshake
    otherwise (refused, lost or timed out: an evicted one counts in
    ``evicted`` only), and how many warnings about them were not logged
    (past the log budget)."""

    peers: int
    handshaking: int
    max_handshakes: int
    evicted: int
    failed: int
    unlogged: int


@final
class Node(metaclass=NoPublicConstructor):
    """An actor system reachable by other nodes: built by :func:`open_node`.

    ``address`` is where it listens (``None`` if it does not);
    :meth:`connect` dials another node, :meth:`accept` serves a stream
    someone else opened; ``peers`` are the connections that are up.
    """

    def __init__(
        self,
        system: ActorSystem,
        nursery: trio.Nursery,
        *,
        name: str,
        secret: bytes,
        codec: Codec,
        window: int,
        max_frame: int,
        handshake_timeout: float,
        close_timeout: float,
        ssl_context: ssl.SSLContext | None,
        max_buffer: int,
        stall_timeout: float,
        max_handshakes: int,
        heartbeat: float = 1.0,
        peer_timeout: float | None = None,
        dead_letters: DeadLetters | None = None,
    ) -> None:
        self.system = system
        self._dead_letters = dead_letters
        self._heartbeat = heartbeat
        self._peer_timeout = peer_timeout
        self.name = name
        self.codec = codec
        self._nursery = nursery
        self._secret = secret
        self._window = window
        self._max_frame = max_frame
        self._handshake_timeout = handshake_timeout
        self._close_timeout = close_timeout
        self._ssl_context = ssl_context
        self._max_buffer = max_buffer
        self._stall_timeout = stall_timeout
        self.address: tuple[str, int] | None = None
        self.incarnation = int.from_bytes(os.urandom(8), "big") >> 1 or 1
        """This life of the node: a random number, drawn as it opens (its
        actors' addresses on other nodes carry it: ``Address.incarnation``)."""
        self.peers: list[Peer] = []
        # The listener's connections in their handshake, and how to end each.
        self._admission = Admission(max_handshakes)
        self._evict: dict[Admitted, trio.CancelScope] = {}
        self._log_budget = LogBudget(LOG_BURST, LOG_INTERVAL)
        # The behaviours peers may spawn here, by key (allow_spawn).
        self._spawnable: dict[str, Spawnable] = {}
        # The registry across nodes (subscribe): the subscribers of each key,
        # what the local registry calls on its changes, the addresses last
        # listed to them, and the subscribers' cells whose end is watched.
        self._subscribers: dict[ServiceKey[Any], dict[_Cell[Any], None]] = {}
        self._on_change: dict[ServiceKey[Any], Callable[[], None]] = {}
        self._listed: dict[ServiceKey[Any], tuple[_Cell[Any], ...]] = {}
        self._watched_cells: set[_Cell[Any]] = set()
        # Parked on by wait_peer: woken whenever a peer comes up or goes.
        self._peers_changed = trio.lowlevel.ParkingLot()
        # The re-dial jitter: a generator of the node's own (not the system's
        # seeded one, whose draws a seeded program counts on).
        self._redial_random = random.Random(self.incarnation)

    def __repr__(self) -> str:
        return f"<Node {self.name!r} at {self.address} with {len(self.peers)} peers>"

    async def connect(
        self,
        target: tuple[str, int] | trio.abc.Stream,
        *,
        ssl_context: ssl.SSLContext | None = None,
        server_hostname: str | None = None,
    ) -> Peer:
        """Dial the node at ``target`` (a ``(host, port)``, or a stream
        already open to it), complete the handshake as the client, and
        return the peer. With ``ssl_context`` the stream is wrapped in
        :class:`trio.SSLStream` first (``server_hostname`` defaults to the
        host).

        A checkpoint. Raises :class:`~actors.net.HandshakeError` if the
        handshake fails or takes longer than the handshake timeout (the
        stream is closed), :class:`OSError` if the address cannot be
        reached. If cancelled, the stream is closed and no peer is left."""
        hostname: str | None
        if isinstance(target, tuple):
            host, port = target
            stream: trio.abc.Stream = await trio.open_tcp_stream(host, port)
            hostname = host if server_hostname is None else server_hostname
        else:
            stream = target
            hostname = server_hostname
        if ssl_context is not None:
            stream = trio.SSLStream(stream, ssl_context, server_hostname=hostname)
        peer: Peer = await self._nursery.start(self._run_peer, stream, Role.CLIENT)
        return peer

    async def accept(self, stream: trio.abc.Stream) -> Peer:
        """Serve ``stream``, opened by another node, as the server side of
        the handshake, and return the peer (as :meth:`connect`; the node's
        ``ssl_context``, if any, wraps the stream). The listener calls it
        for each connection; tests call it on one end of a memory stream."""
        if self._ssl_context is not None:
            stream = trio.SSLStream(stream, self._ssl_context, server_side=True)
        peer: Peer = await self._nursery.start(self._run_peer, stream, Role.SERVER)
        return peer

    def keep(
        self,
        target: tuple[str, int] | Dialer,
        *,
        redial: Backoff = DEFAULT_REDIAL,
        ssl_context: ssl.SSLContext | None = None,
        server_hostname: str | None = None,
    ) -> None:
        """Keep a connection to the node at ``target`` (a ``(host, port)``, or
        a function that opens a stream to it) up for the node's whole life:
        dial it now, in the background, and again, after ``redial``'s
        back-off, whenever the dial fails or the connection goes down. Each
        connection is a new :class:`Peer` (references to the old one's actors
        ended with it: look them up again, on :meth:`wait_peer`'s answer).
        Failures (``OSError``, a failed handshake) are logged (WARNING,
        within the node's log budget), not raised; a dialer should raise
        ``OSError`` when it cannot connect (anything else ends the node).
        ``seeds`` of :func:`open_node` are kept so."""
        if not isinstance(redial, Backoff):
            raise TypeError(f"redial must be an actors.Backoff, not {redial!r}")
        self._nursery.start_soon(
            self._keep, target, redial, ssl_context, server_hostname, name=f"keep {target!r}"
        )

    async def _keep(
        self,
        target: tuple[str, int] | Dialer,
        redial: Backoff,
        ssl_context: ssl.SSLContext | None,
        server_hostname: str | None,
    ) -> None:
        streak = 0
        while True:
            try:
                stream = target if isinstance(target, tuple) else await target()
                peer = await self.connect(
                    stream, ssl_context=ssl_context, server_hostname=server_hostname
                )
            except (OSError, HandshakeError, trio.BrokenResourceError) as error:
                self._warn("node %r could not reach a node it keeps: %s", f"{target!r}: {error}")
            else:
                up_since = trio.current_time()
                logger.info("node %r: connected to %r at %r", self.name, peer.node, target)
                await peer.closed.wait()
                if trio.current_time() - up_since >= redial.reset_after:
                    streak = 0
                logger.info(
                    "node %r: lost %r (%s): dialling again", self.name, peer.node, peer.reason
                )
            await trio.sleep(redial.delay(streak, self._redial_random))
            streak = min(streak + 1, 64)  # (the delay is at its maximum long before)

    @overload
    def allow_spawn(
        self,
        key: SpawnKey[M, *Ts],
        behaviour: Callable[[Inbox[M], *Ts], Awaitable[None]],
        *,
        supervisor: Supervisor | None = None,
        restart: Restart = Restart.PERMANENT,
    ) -> None: ...

    @overload
    def allow_spawn(
        self,
        key: ServiceKey[M],
        behaviour: Callable[[Inbox[M], *Ts], Awaitable[None]],
        *,
        supervisor: Supervisor | None = None,
        restart: Restart = Restart.PERMANENT,
    ) -> None: ...

    def allow_spawn(
        self,
        key: SpawnKey[M, *Ts] | ServiceKey[M],
        behaviour: Callable[[Inbox[M], *Ts], Awaitable[None]],
        *,
        supervisor: Supervisor | None = None,
        restart: Restart = Restart.PERMANENT,
    ) -> None:
        """Let peers spawn actors running ``behaviour`` here, under ``key``
        (:meth:`Peer.spawn <actors.net.Peer.spawn>`: its arguments come from
        the peer, as values the codec carries). A
        :class:`~actors.net.SpawnKey` types both ends: mypy checks
        ``behaviour`` against the key here, and the peer's arguments there; a
        :class:`~actors.ServiceKey` types the reference only.

        Each actor is one of this node's system, as if spawned here: by
        default directly in the system (if it fails, its error escalates as
        any actor's); with ``supervisor`` (a supervisor of this node's
        system, :meth:`ActorSystem.open_supervisor
        <actors.ActorSystem.open_supervisor>`), as its child, restarted by its
        strategy as ``restart`` says, and stopped with its scope (a spawn
        after the scope ended is refused). The peer may monitor it, stop or
        kill it through its reference. Raises :class:`ValueError` if ``key``
        is taken or ``supervisor`` is another system's, :class:`TypeError`
        for a ``key`` that is neither key, a ``behaviour`` that is not
        callable, a ``supervisor`` that is not one, or a bad ``restart``.
        Each error changes nothing."""
        if not isinstance(key, SpawnKey | ServiceKey):
            raise TypeError(f"allow_spawn takes a SpawnKey or a ServiceKey, not {key!r}")
        if not callable(behaviour):
            raise TypeError(f"allow_spawn takes an async function, not {behaviour!r}")
        if supervisor is not None:
            if not isinstance(supervisor, Supervisor):
                raise TypeError(f"allow_spawn takes an actors.Supervisor, not {supervisor!r}")
            if supervisor._system is not self.system:
                raise ValueError(f"{supervisor!r} is not a supervisor of node {self.name!r}")
        if restart not in tuple(Restart):
            raise TypeError(f"restart must be an actors.Restart, not {restart!r}")
        if key.name in self._spawnable:
            raise ValueError(f"node {self.name!r} allows a spawn under {key.name!r} already")
        self._spawnable[key.name] = Spawnable(behaviour, supervisor, Restart(restart))

    async def wait_peer(self, node: str) -> Peer:
        """The peer that is the node named ``node``, once a connection to it
        is up (at once if one is). A checkpoint."""
        await trio.lowlevel.checkpoint()
        while True:
            for peer in self.peers:
                if peer.node == node and peer.reason is None:
                    return peer
            await self._peers_changed.park()

    async def find(
        self,
        key: ServiceKey[M],
        *,
        timeout: float = 5.0,  # noqa: ASYNC109 (each peer's, not the call's)
    ) -> tuple[ActorRef[M], ...]:
        """Every actor registered under ``key`` on this node's system and on
        each node it is connected to (:meth:`Peer.find`, asked of all at
        once), each once: the typed registry across the nodes. A peer that
        goes down meanwhile, refuses, or does not answer within ``timeout``
        seconds is left out. A checkpoint."""
        if not isinstance(key, ServiceKey):
            raise TypeError(f"find takes a ServiceKey, not {key!r}")
        timeout = _seconds(timeout, "find timeout")
        peers = list(self.peers)
        answers: list[tuple[ActorRef[M], ...]] = [() for _ in peers]

        async def ask(index: int, peer: Peer) -> None:
            with trio.move_on_after(timeout), contextlib.suppress(ActorError):  # down, refused
                answers[index] = await peer.find(key)

        async with trio.open_nursery() as nursery:
            for index, peer in enumerate(peers):
                nursery.start_soon(ask, index, peer)
        found: dict[Any, ActorRef[M]] = {ref.address: ref for ref in self.system.find(key)}
        for refs in answers:
            for ref in refs:
                found.setdefault(ref.address, ref)
        await trio.lowlevel.checkpoint()
        return tuple(found.values())

    def subscribe(self, key: ServiceKey[M], subscriber: ActorRef[Listing[M]]) -> None:
        """Send ``subscriber`` (an actor of this node's system) a
        :class:`~actors.Listing` of ``key`` across the nodes now, and another
        after each change, until it ends or :meth:`unsubscribe`: the
        receptionist across nodes. A listing holds the actors registered
        under ``key`` on this node's system (registration order), then those
        of each connected node (in the order they connected), each once. It
        changes as actors register and end, here or there, and as nodes
        connect (their part comes once they have listed it) and go (their
        part leaves with them). Each peer is watched for ``key`` while the
        key has a subscriber here. Listings are framework messages, as
        :meth:`ActorSystem.subscribe <actors.ActorSystem.subscribe>`'s are:
        beyond a full mailbox, one per key waiting at most. Subscribing again
        sends the current listing. Raises as ``ActorSystem.subscribe``."""
        registry = self.system._registry_for("subscribe", "key, subscriber", key, subscriber)
        subscribers = self._subscribers.get(key)
        if subscribers is None:
            subscribers = self._subscribers[key] = {}
            changed = self._on_change[key] = functools.partial(self._changed, key)
            registry.watch(key, changed)
            for peer in self.peers:
                peer._watching.watch(key.name)
        cell = subscriber._cell
        subscribers[cell] = None
        if cell not in self._watched_cells:
            self._watched_cells.add(cell)
            cell.linked().on_end.append(functools.partial(self._subscriber_ended, cell))
        refs = self._listing(key)
        self._listed[key] = tuple(ref._cell for ref in refs)
        cell.post_latest(Listing(key, refs), functools.partial(_listing_of, key))

    def unsubscribe(self, key: ServiceKey[M], subscriber: ActorRef[Listing[M]]) -> bool:
        """Stop sending listings of ``key`` to ``subscriber``; False if it was
        not subscribed (:meth:`subscribe`)."""
        self.system._registry_for("unsubscribe", "key, subscriber", key)
        if not isinstance(subscriber, ActorRef):
            raise TypeError(f"unsubscribe takes an ActorRef, not {subscriber!r}")
        subscribers = self._subscribers.get(key)
        if subscribers is None or subscriber._cell not in subscribers:
            return False
        del subscribers[subscriber._cell]
        if not subscribers:
            self._drop(key)
        return True

    def _subscriber_ended(self, cell: _Cell[Any], reason: object) -> None:
        self._watched_cells.discard(cell)
        for key in [key for key, cells in self._subscribers.items() if cell in cells]:
            del self._subscribers[key][cell]
            if not self._subscribers[key]:
                self._drop(key)

    def _drop(self, key: ServiceKey[Any]) -> None:
        """``key`` has no subscriber left: watch it no more."""
        del self._subscribers[key]
        self._listed.pop(key, None)
        self.system._the_registry().unwatch(key, self._on_change.pop(key))
        for peer in self.peers:
            peer._watching.unwatch(key.name)

    def _end_subscriptions(self) -> None:
        """The node closes: its subscribers get no more listings, and the
        system's registry is watched no more (a node opened again on the
        system starts afresh)."""
        for key in list(self._subscribers):
            self._drop(key)
        self._watched_cells.clear()

    def _listing(self, key: ServiceKey[M]) -> tuple[ActorRef[M], ...]:
        found: dict[Address, ActorRef[M]] = {ref.address: ref for ref in self.system.find(key)}
        for peer in self.peers:
            if peer.reason is None:
                for ref in peer._watching.listings.get(key.name, ()):
                    found.setdefault(ref.address, ref)
        return tuple(found.values())

    def _changed(self, key: ServiceKey[Any]) -> None:
        """Something ``key``'s listing is made of changed: a new listing for
        its subscribers, if the actors in it are not those last listed."""
        subscribers = self._subscribers.get(key)
        if not subscribers:
            return
        refs = self._listing(key)
        # By reference, not by address: the same actor listed by another
        # connection (two to one node) is another reference, and the one that
        # ended with its connection must not stay in the newest listing.
        cells = tuple(ref._cell for ref in refs)
        if self._listed.get(key) == cells:
            return
        self._listed[key] = cells
        listing = Listing(key, refs)
        supersedes = functools.partial(_listing_of, key)
        for cell in subscribers:
            cell.post_latest(listing, supersedes)

    def _peer_listed(self, key: str) -> None:
        self._changed(ServiceKey[Any](key))

    def statistics(self) -> NodeStatistics:
        """A snapshot of the node (:class:`NodeStatistics`)."""
        admission: AdmissionStatistics = self._admission.statistics()
        return NodeStatistics(
            peers=len(self.peers),
            handshaking=admission.handshaking,
            max_handshakes=admission.limit,
            evicted=admission.evicted,
            failed=admission.failed,
            unlogged=self._log_budget.total_held_back,
        )

    async def _serve(self, stream: trio.abc.Stream) -> None:
        """A listener's handler: serves the connection until it ends (the
        listener closes the stream when this returns). The connection is
        admitted at once, evicting a stranger if the listener is full
        (:mod:`._admission`); a failed handshake is logged (within the
        log budget), not raised."""
        admitted, evicted = self._admission.admit(_source_of(stream))
        if evicted is not None:
            self._evict.pop(evicted).cancel()
        if self._ssl_context is not None:
            stream = trio.SSLStream(
                _Watched(stream, self._admission, admitted), self._ssl_context, server_side=True
            )
        try:
            await self._run_peer(
                stream, Role.SERVER, task_status=trio.TASK_STATUS_IGNORED, admitted=admitted
            )
        except HandshakeError as error:
            self._warn("node %r refused a connection: %s", error)
        except (trio.BrokenResourceError, trio.ClosedResourceError) as error:
            self._warn("node %r lost a connection during its handshake: %s", error)

    def _warn(self, message: str, error: object) -> None:
        held_back = self._log_budget.take(trio.current_time())
        if held_back is None:
            return
        if held_back:
            message += f" ({held_back} more warnings like it were not logged)"
        logger.warning(message, self.name, error)

    async def _run_peer(
        self,
        stream: trio.abc.Stream,
        role: Role,
        *,
        task_status: trio.TaskStatus[Peer],
        admitted: Admitted | None = None,
    ) -> None:
        conn = Connection(
            role=role,
            node=self.name,
            secret=self._secret,
            codec=self.codec,
            window=self._window,
            max_frame=self._max_frame,
            incarnation=self.incarnation,
        )
        peer: Peer | None = None
        try:
            async with stream:
                peer, early = await self._handshake(stream, conn, admitted)
                task_status.started(peer)
                self.peers.append(peer)
                self._peers_changed.unpark_all()
                try:
                    async with trio.open_nursery() as nursery:
                        peer._nursery = nursery
                        nursery.start_soon(peer._writer, name=f"write to {peer.node}")
                        nursery.start_soon(peer._delivery, name=f"deliver from {peer.node}")
                        if self._peer_timeout is not None:
                            nursery.start_soon(peer._heartbeat, name=f"heartbeat {peer.node}")
                        peer._watching.on_listing = self._peer_listed
                        for key in self._subscribers:
                            peer._watching.watch(key.name)
                        for event in early:
                            peer._handle(event)
                        # In a task of its own: each of its wake-ups resumes
                        # its frames only, not this task's (and, for an
                        # accepted connection, the listener's handler's).
                        nursery.start_soon(peer._reader, name=f"read from {peer.node}")
                finally:
                    self.peers.remove(peer)
                    self._peers_changed.unpark_all()
                    peer._teardown()
                    for key in list(self._subscribers):
                        self._changed(key)
                    logger.info("node %r: peer %r is down: %s", self.name, peer.node, peer.reason)
        except trio.BrokenResourceError as error:
            if peer is None:
                why = str(error).strip() or repr(error.__cause__ or error)
                raise HandshakeError(f"the connection broke during the handshake: {why}") from None
            # Closing the stream of a peer that is down already (a stream
            # whose close writes, such as TLS's or a memory stream's, to a
            # far end that is gone): nothing is left to tell anyone.
            logger.debug("node %r: closing the stream of %r: %s", self.name, peer.node, error)

    async def _handshake(
        self, stream: trio.abc.Stream, conn: Connection, admitted: Admitted | None
    ) -> tuple[Peer, list[Event]]:
        """Exchange ``Hello`` and ``Proof`` over ``stream``; the peer and the
        events that came behind the proof in the same read (a look-up, say),
        or :class:`HandshakeError` (after sending our ``Close``). An
        ``admitted`` connection reports its progress to the listener's
        admission, may be evicted (a :class:`HandshakeError`), and leaves
        it when this returns or raises."""
        evicted = trio.CancelScope()
        if admitted is not None:
            self._evict[admitted] = evicted
        failed = True
        # An accepted connection is read before anything is sent to it: its
        # peer's Hello, already there when an honest peer connects, is taken
        # in the step that admitted it, so it is never seen as silent (and
        # evicted as such) while our Hello is being sent.
        read_first = admitted is not None
        try:
            with trio.move_on_after(self._handshake_timeout), evicted:
                while True:
                    data = b"" if read_first else conn.data_to_send()
                    if data:
                        await stream.send_all(data)
                    read_first = False
                    received = await stream.receive_some(4096)
                    events = conn.receive_data(received)
                    if admitted is not None and received:
                        self._admission.advance(
                            admitted,
                            Progress.SPOKE if conn.peer is None else Progress.GREETED,
                        )
                    for index, event in enumerate(events):
                        match event:
                            case Authenticated():
                                await stream.send_all(conn.data_to_send())
                                peer = Peer._create(
                                    self.system,
                                    conn,
                                    stream,
                                    self.codec,
                                    self._close_timeout,
                                    self._max_buffer,
                                    self._stall_timeout,
                                    self._heartbeat,
                                    self._peer_timeout,
                                    self._spawnable,
                                    self._dead_letters,
                                )
                                failed = False
                                return peer, events[index + 1 :]
                            case ConnectionClosed(reason=reason, by_peer=by_peer):
                                data = conn.data_to_send()
                                if data:
                                    with trio.move_on_after(self._close_timeout):
                                        await stream.send_all(data)
                                who = f"node {conn.peer or '?'} closed it: " if by_peer else ""
                                why = reason.removeprefix("handshake: ")
                                raise HandshakeError(f"handshake with {role_of(conn)}: {who}{why}")
                            case _:  # pragma: no cover (nothing else comes before Authenticated)
                                pass
        finally:
            if admitted is not None:
                self._evict.pop(admitted, None)
                self._admission.release(admitted, failed=failed)
        if evicted.cancelled_caught:
            conn.close("handshake: evicted to make room for a newer connection")
            raise HandshakeError(
                f"handshake with {role_of(conn)}: evicted to make room for a newer connection "
                f"(the listener keeps {self._admission.limit} in their handshake)"
            )
        conn.close("handshake timed out")
        raise HandshakeError(
            f"handshake with {role_of(conn)}: no proof within {self._handshake_timeout:g}s"
        )


def _source_of(stream: trio.abc.Stream) -> str | None:
    """The host a listener's connection came from (``None`` if not a socket)."""
    if isinstance(stream, trio.SocketStream):
        try:
            host: str = stream.socket.getpeername()[0]
        except (OSError, IndexError, TypeError):
            return None
        return host
    return None


class _Watched(trio.abc.Stream):
    """The raw stream under an accepted TLS connection: tells the admission
    when its first bytes arrive (TLS hides them from the handshake loop until
    its own handshake is done), then only passes calls through."""

    def __init__(self, stream: trio.abc.Stream, admission: Admission, admitted: Admitted) -> None:
        self.stream = stream
        self._admission = admission
        self._admitted: Admitted | None = admitted

    async def receive_some(self, max_bytes: int | None = None) -> bytes | bytearray:
        data = await self.stream.receive_some(max_bytes)
        if data and self._admitted is not None:
            self._admission.advance(self._admitted, Progress.SPOKE)
            self._admitted = None
        return data

    async def send_all(self, data: bytes | bytearray | memoryview) -> None:
        await self.stream.send_all(data)

    async def wait_send_all_might_not_block(self) -> None:
        await self.stream.wait_send_all_might_not_block()

    async def aclose(self) -> None:
        await self.stream.aclose()


def role_of(conn: Connection) -> str:
    """The peer, for an error message."""
    peer = "an unnamed node" if conn.peer is None else f"node {conn.peer!r}"
    return f"{peer} (as {conn.role.value})"


@asynccontextmanager
async def open_node(
    system: ActorSystem,
    *,
    name: str,
    secret: bytes,
    codec: Codec,
    listen: tuple[str, int] | trio.abc.Listener[trio.abc.Stream] | None = ("127.0.0.1", 0),
    ssl_context: ssl.SSLContext | None = None,
    window: int = DEFAULT_WINDOW,
    max_frame: int = DEFAULT_MAX_FRAME,
    handshake_timeout: float = 10.0,
    close_timeout: float = 5.0,
    max_buffer: int | None = None,
    stall_timeout: float = 30.0,
    max_handshakes: int = MAX_HANDSHAKES,
    heartbeat: float = 1.0,
    peer_timeout: float | Literal[Unset.UNSET] | None = Unset.UNSET,
    seeds: Sequence[tuple[str, int] | Dialer] = (),
    dead_letters: DeadLetters | None = None,
) -> AsyncIterator[Node]:
    """Make ``system`` reachable as the node ``name``.

    ``listen`` is a ``(host, port)`` to listen on over TCP (loopback, any
    free port, by default; ``node.address`` is where), a listener, or
    ``None`` (the node only dials, or accepts streams given to
    :meth:`Node.accept`). ``secret`` (bytes, at least 16) is shared by the
    nodes that may talk: a peer that cannot prove it holds it is refused.
    ``codec`` lists the message classes this node accepts and sends.
    ``ssl_context`` (a server context) wraps every accepted stream in TLS.

    ``window`` is how many messages a peer may send before this node
    grants more (credit); ``max_frame`` the largest frame accepted (bytes;
    a larger one closes the connection). A reference to a remote actor has
    no mailbox of its own: the peer's credit is its capacity.

    ``max_buffer`` (bytes; default four frames of ``max_frame``) bounds
    what waits to be written to one peer: past it, the node reads nothing
    more from that peer (its look-ups and asks, whose answers pile up, wait
    in its own writes) until the output drains; a peer that reads nothing
    for ``stall_timeout`` seconds meanwhile is disconnected with a reason.

    ``seeds`` are nodes to stay connected to: each is kept with
    :meth:`Node.keep` (dialled at once, in the background, and again after
    a back-off whenever the connection goes); :meth:`Node.wait_peer` waits
    for one by name, and :meth:`Node.find` looks a service up on every
    connected node.

    ``dead_letters`` is called with each message lost between this node and
    a peer (a :class:`~actors.net.DeadLetter`): a tell of this node's the
    peer refused or dropped (its actor stopped), a frame of the peer's this
    node refused, a tell of the peer's for an actor stopped here (the peer is
    told, and its hook called), or one still undelivered when the connection
    went. An ask is never one: its asker gets the error. The peer's
    statistics count them all (``refused``, ``refused_by_peer``,
    ``dropped``), hook or not.

    **Failure detection.** Every ``heartbeat`` seconds a node sends a
    heartbeat to each peer it has sent nothing to since the last; a peer from
    which nothing came for ``peer_timeout`` seconds (a crashed or frozen
    process, a partition) is taken for down: the connection is closed with
    the reason (``node 'b' sent nothing for 10s (the peer timeout is
    10s)``), found within ``peer_timeout + heartbeat``, and everything it
    carried ends with :class:`~actors.NodeDown` as for a lost connection.
    ``peer_timeout=None`` turns the detector off (a connection then lasts as
    long as its stream). Left out, it is 10 s, but off on trio's
    ``MockClock`` (an ``actors.run`` or a test on the autojump clock): there
    heartbeats would keep virtual time running for ever and hide a
    deadlock; pass it to test the detector on the mock clock. Both sides
    should use the same values: a peer whose ``heartbeat`` is over this
    node's ``peer_timeout`` is taken for down while idle. A node whose own
    run loop is held up (a long computation) does not blame its peers for
    the silence: a beat that comes late starts the count again.

    ``max_handshakes`` bounds the listener's connections that have not yet
    authenticated: one more is always let in, and the stranger that has shown
    least (said nothing, then no ``Hello``), from the host holding the most,
    oldest first, is evicted to make room (:mod:`actors.net._admission`).
    Warnings about such connections are rate-limited (``LOG_BURST`` per
    ``LOG_INTERVAL`` seconds; :meth:`Node.statistics` counts them all).

    Leaving the block closes every connection (peers read ``node closing``)
    and ends the node's tasks; references to remote actors end with
    :class:`~actors.NodeDown`. Raises :class:`ValueError` for a bad
    ``secret``, ``window``, ``max_frame`` or timeout, before
    anything starts (also for a ``max_buffer`` under ``max_frame``, or a
    bad ``stall_timeout``, ``max_handshakes``, ``heartbeat`` or
    ``peer_timeout``, which must be over ``heartbeat``, and for a ``name``
    that is not UTF-8 of at most 256 bytes); :class:`TypeError` for a
    ``name`` that is not a non-empty str or a ``codec`` that is not a
    :class:`Codec`."""
    check_node_name(name)
    if not isinstance(codec, Codec):
        raise TypeError(f"a node's codec must be an actors.net.Codec, not {codec!r}")
    if dead_letters is not None and not callable(dead_letters):
        raise TypeError(f"a node's dead_letters hook must be callable, not {dead_letters!r}")
    if not isinstance(secret, bytes) or len(secret) < 16:
        raise ValueError("a node's secret must be bytes, at least 16 of them")
    if not (isinstance(window, int) and window >= 2):
        raise ValueError(f"a node's window must be a whole number >= 2, not {window!r}")
    handshake_timeout = _seconds(handshake_timeout, "handshake_timeout")
    close_timeout = _seconds(close_timeout, "close_timeout")
    stall_timeout = _seconds(stall_timeout, "stall_timeout")
    if isinstance(heartbeat, bool) or isinstance(peer_timeout, bool):
        raise TypeError("a node's heartbeat and peer_timeout are numbers of seconds, not bools")
    heartbeat = _seconds(heartbeat, "heartbeat")
    if not MIN_HEARTBEAT <= heartbeat < math.inf:
        raise ValueError(
            f"a node's heartbeat must be a finite number of seconds >= {MIN_HEARTBEAT:g}: "
            f"{heartbeat}"
        )
    if peer_timeout is Unset.UNSET:
        on_mock_clock = isinstance(trio.lowlevel.current_clock(), MockClock)
        peer_timeout = None if on_mock_clock else DEFAULT_PEER_TIMEOUT
    if peer_timeout is not None:
        peer_timeout = _seconds(peer_timeout, "peer_timeout")
        if not peer_timeout > heartbeat:
            raise ValueError(
                f"a node's peer_timeout ({peer_timeout:g}s) must be over its heartbeat "
                f"({heartbeat:g}s)"
            )
    if max_buffer is None:
        max_buffer = 4 * max_frame if isinstance(max_frame, int) else DEFAULT_MAX_FRAME
    if not (isinstance(max_buffer, int) and isinstance(max_frame, int) and max_buffer >= max_frame):
        raise ValueError(
            f"a node's max_buffer must be a whole number >= max_frame ({max_frame!r}), "
            f"not {max_buffer!r}"
        )
    Connection(role=Role.CLIENT, node=name, secret=secret, codec=codec, max_frame=max_frame)
    Admission(max_handshakes)
    size = types_frame_size(codec)
    if size > max_frame:
        raise ValueError(
            f"the names of the codec's {len(codec.names)} message types take a frame of "
            f"{size} bytes, over max_frame ({max_frame}): shorter names, or a larger max_frame"
        )
    codec._in_use = True  # peers learn its types as they connect: it takes no more
    async with trio.open_nursery() as nursery:
        node = Node._create(
            system,
            nursery,
            name=name,
            secret=secret,
            codec=codec,
            window=window,
            max_frame=max_frame,
            handshake_timeout=handshake_timeout,
            close_timeout=close_timeout,
            ssl_context=ssl_context,
            max_buffer=max_buffer,
            stall_timeout=stall_timeout,
            max_handshakes=max_handshakes,
            heartbeat=heartbeat,
            peer_timeout=peer_timeout,
            dead_letters=dead_letters,
        )
        listeners: list[trio.abc.Listener[trio.abc.Stream]] = []
        if isinstance(listen, tuple):
            host, port = listen
            sockets = await trio.open_tcp_listeners(port, host=host)
            node.address = sockets[0].socket.getsockname()[:2]
            listeners.extend(sockets)
        elif listen is not None:
            listeners.append(listen)
        if listeners:
            nursery.start_soon(trio.serve_listeners, node._serve, listeners)
        for seed in seeds:
            node.keep(seed)
        try:
            yield node
        finally:
            node._end_subscriptions()
            with trio.CancelScope(shield=True), trio.move_on_after(close_timeout):
                # All at once: one peer slow to close holds up none of the others.
                for peer in list(node.peers):
                    peer._begin_close("node closing")
                for peer in list(node.peers):
                    await peer.closed.wait()
            nursery.cancel_scope.cancel()
