"""Nodes: an actor system made reachable over Trio streams."""

from __future__ import annotations

import logging
import ssl
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import final

import trio

from .._mailbox import _seconds
from .._system import ActorSystem
from .._util import NoPublicConstructor
from ._codec import Codec
from ._errors import HandshakeError
from ._events import Authenticated, ConnectionClosed, Event
from ._peer import Peer
from ._protocol import DEFAULT_MAX_FRAME, DEFAULT_WINDOW, Connection, Role, State

logger = logging.getLogger("actors.net")

MAX_HANDSHAKES = 64
"""Connections a node's listener lets be in their handshake at once: past
it, a new connection is closed at once (logged), so peers that connect and
say nothing cannot pile up tasks and sockets for ``handshake_timeout`` each."""


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
    ) -> None:
        self.system = system
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
        self.peers: list[Peer] = []
        # Connections in their handshake now (dialled, accepted or served).
        self._handshaking = 0

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

    async def _serve(self, stream: trio.abc.Stream) -> None:
        """A listener's handler: serves the connection until it ends (the
        listener closes the stream when this returns); a refused connection
        is logged, not raised."""
        if self._handshaking >= MAX_HANDSHAKES:
            logger.warning(
                "node %r refused a connection: %d others are in their handshake",
                self.name,
                self._handshaking,
            )
            return
        if self._ssl_context is not None:
            stream = trio.SSLStream(stream, self._ssl_context, server_side=True)
        try:
            await self._run_peer(stream, Role.SERVER, task_status=trio.TASK_STATUS_IGNORED)
        except HandshakeError as error:
            logger.warning("node %r refused a connection: %s", self.name, error)
        except (trio.BrokenResourceError, trio.ClosedResourceError) as error:
            logger.warning("node %r lost a connection during its handshake: %s", self.name, error)

    async def _run_peer(
        self, stream: trio.abc.Stream, role: Role, *, task_status: trio.TaskStatus[Peer]
    ) -> None:
        conn = Connection(
            role=role,
            node=self.name,
            secret=self._secret,
            codec=self.codec,
            window=self._window,
            max_frame=self._max_frame,
        )
        try:
            async with stream:
                self._handshaking += 1
                try:
                    peer, early = await self._handshake(stream, conn)
                finally:
                    self._handshaking -= 1
                task_status.started(peer)
                self.peers.append(peer)
                try:
                    async with trio.open_nursery() as nursery:
                        peer._nursery = nursery
                        nursery.start_soon(peer._writer, name=f"write to {peer.node}")
                        nursery.start_soon(peer._delivery, name=f"deliver from {peer.node}")
                        for event in early:
                            peer._handle(event)
                        # In a task of its own: each of its wake-ups resumes
                        # its frames only, not this task's (and, for an
                        # accepted connection, the listener's handler's).
                        nursery.start_soon(peer._reader, name=f"read from {peer.node}")
                finally:
                    self.peers.remove(peer)
                    peer._teardown()
                    logger.info("node %r: peer %r is down: %s", self.name, peer.node, peer.reason)
        except trio.BrokenResourceError as error:
            if conn.state is not State.OPEN:
                why = str(error).strip() or repr(error.__cause__ or error)
                raise HandshakeError(f"the connection broke during the handshake: {why}") from None
            raise

    async def _handshake(
        self, stream: trio.abc.Stream, conn: Connection
    ) -> tuple[Peer, list[Event]]:
        """Exchange ``Hello`` and ``Proof`` over ``stream``; the peer and the
        events that came behind the proof in the same read (a look-up, say),
        or :class:`HandshakeError` (after sending our ``Close``)."""
        with trio.move_on_after(self._handshake_timeout):
            while True:
                data = conn.data_to_send()
                if data:
                    await stream.send_all(data)
                events = conn.receive_data(await stream.receive_some(4096))
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
                            )
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
        conn.close("handshake timed out")
        raise HandshakeError(
            f"handshake with {role_of(conn)}: no proof within {self._handshake_timeout:g}s"
        )


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

    Leaving the block closes every connection (peers read ``node closing``)
    and ends the node's tasks; references to remote actors end with
    :class:`~actors.NodeDown`. Raises :class:`ValueError` for a bad
    ``secret``, ``window``, ``max_frame`` or timeout, before
    anything starts (also for a ``max_buffer`` under ``max_frame``, or a
    bad ``stall_timeout``); :class:`TypeError` for a ``name`` that is not a
    non-empty str or a ``codec`` that is not a :class:`Codec`."""
    if not (isinstance(name, str) and name):
        raise TypeError(f"a node's name must be a non-empty str, not {name!r}")
    if not isinstance(codec, Codec):
        raise TypeError(f"a node's codec must be an actors.net.Codec, not {codec!r}")
    if not isinstance(secret, bytes) or len(secret) < 16:
        raise ValueError("a node's secret must be bytes, at least 16 of them")
    if not (isinstance(window, int) and window >= 2):
        raise ValueError(f"a node's window must be a whole number >= 2, not {window!r}")
    handshake_timeout = _seconds(handshake_timeout, "handshake_timeout")
    close_timeout = _seconds(close_timeout, "close_timeout")
    stall_timeout = _seconds(stall_timeout, "stall_timeout")
    if max_buffer is None:
        max_buffer = 4 * max_frame if isinstance(max_frame, int) else DEFAULT_MAX_FRAME
    if not (isinstance(max_buffer, int) and isinstance(max_frame, int) and max_buffer >= max_frame):
        raise ValueError(
            f"a node's max_buffer must be a whole number >= max_frame ({max_frame!r}), "
            f"not {max_buffer!r}"
        )
    Connection(role=Role.CLIENT, node=name, secret=secret, codec=codec, max_frame=max_frame)
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
        try:
            yield node
        finally:
            with trio.CancelScope(shield=True), trio.move_on_after(close_timeout):
                # All at once: one peer slow to close holds up none of the others.
                for peer in list(node.peers):
                    peer._begin_close("node closing")
                for peer in list(node.peers):
                    await peer.closed.wait()
            nursery.cancel_scope.cancel()
