"""A peer: one authenticated connection to another node, and the Trio tasks
that move its bytes and messages (the protocol itself is :mod:`._protocol`).

Per peer, in one nursery: a reader (bytes in, events out), a writer (what
the connection queued goes out in one ``send_all`` per burst), and a
delivery task for messages that found their target's mailbox full. A
remote reference is a cell with no behaviour whose mailbox is an
:class:`~._remote.Outbox`: ``tell``, ``ask`` and ``stop`` on it are the
ordinary ``ActorRef`` calls, and the outbox puts what it accepts onto the
connection as the peer's credit allows, so a slow remote mailbox holds up
its senders, as a full local one would.
"""

from __future__ import annotations

import collections
import functools
import logging
import os
from collections.abc import Callable
from typing import Any, Never, TypeVar, TypeVarTuple, cast, final, overload

import attrs
import outcome
import trio
from trio._core._run import GLOBAL_RUN_CONTEXT

from .._core._cell import ActorState, _Cell
from .._core._envelope import Address, Envelope
from .._core._errors import ActorError, ActorStoppedError
from .._core._mailbox import ActorRef
from .._core._monitors import ExitReason, Failed, NodeDown, Stopped
from .._core._reply import Reply
from .._core._trace import EventKind
from .._core._util import NoPublicConstructor
from .._registry import ServiceKey
from .._system import ActorSystem
from ._codec import Codec, WireRef
from ._errors import CodecError, NodeDownError, RemoteError
from ._events import (
    AnswerReceived,
    AskCancelled,
    Authenticated,
    ConnectionClosed,
    CreditGranted,
    EndedReceived,
    Event,
    FailureReceived,
    FindRequested,
    FoundReceived,
    FrameRefused,
    ListingReceived,
    LookupRequested,
    MessageReceived,
    PeerRefused,
    RequestRefused,
    RestartedReceived,
    SpawnRequested,
    StopRequested,
    UnwatchRequested,
    WatchRequested,
)
from ._protocol import _CLOSED, _OPEN, Connection, State
from ._remote import Outbox, exit_reason, remote_error
from ._spawning import Spawnable, SpawnKey, Spawns
from ._watching import Watches

logger = logging.getLogger("actors.net")


M = TypeVar("M")
Ts = TypeVarTuple("Ts")

_RUNNING = ActorState.RUNNING  # (a global: an enum member's lookup costs more)

MAX_REMOTE_REFS = 1_000_000
"""References to a peer's actors a node holds at most: one more that comes
in a message is refused (the frame), so a peer cannot grow them for ever."""

"""Spawns of one peer's under way at once; more are refused (a flood of
``Spawn`` frames starts no more tasks)."""

# The kinds of a reference in a message, from the sender's side.
_SENDERS = 0
"""One of the sending node's actors."""
_RECEIVERS = 1
"""One of the receiving node's actors (which it gave the sender)."""
_ENDED = 2
"""One of the sending node's actors that had ended when it was sent."""

RECEIVE_SIZE = 65536
WRITE_CHUNK = 256 * 1024
"""The most the writer hands the stream at once: a peer reading slowly still
shows progress chunk by chunk (see ``stall_timeout``)."""


@final
@attrs.frozen
class PeerStatistics:
    """A snapshot of one peer: the remote references held, the local actors
    the peer looked up, asks of ours in flight, messages received and not
    yet delivered (waiting for room in a full mailbox), and the credit left."""

    node: str
    remote_refs: int
    exported: int
    asks_in_flight: int
    waiting_delivery: int
    credit: int
    buffered: int = 0
    """Bytes queued for the peer and not yet written (at most about
    ``max_buffer``: past it, this node stops reading from the peer)."""
    late_answers: int = 0
    """Answers that came for asks whose asker had given up (timed out or
    cancelled): dropped."""
    refused: int = 0
    """Frames of the peer's this node refused (undecodable, or a message type
    its codec lacks), each answered with an error and logged (WARNING)."""
    refused_by_peer: int = 0
    """Messages of this node's the peer refused or dropped (its actor was
    stopped or unknown), each logged (WARNING) and handed to the node's
    dead-letters hook; an ask's asker gets an error instead. A message of a
    type the peer's codec lacks is refused at the sender (``CodecError``)
    and is not counted here."""
    dropped: int = 0
    """Tells of the peer's dropped here: for an actor that is stopped or
    unknown (the peer is told, and counts it in its ``refused_by_peer``), or
    still waiting for delivery when the connection went. Each is handed to
    the node's dead-letters hook. An ask is not counted: its asker gets the
    error (``ActorStoppedError``, ``NodeDownError``)."""


@final
@attrs.frozen
class DeadLetter:
    """A message lost between two nodes, as the node's ``dead_letters`` hook
    (:func:`~actors.net.open_node`) is told of it.

    ``peer`` is the other node. ``outgoing`` is True for a message this node
    sent that the peer refused or dropped (``message`` is then None: only the
    peer's ``reason`` comes back), False for one of the peer's that this node
    refused (an undecodable frame: ``message`` None) or dropped (its actor
    was stopped or unknown, or the connection went before it was delivered:
    ``message`` is the message). An ask is never a dead letter: its asker
    gets the error."""

    peer: str
    outgoing: bool
    reason: str
    message: object | None = None


DeadLetters = Callable[[DeadLetter], None]
"""A node's dead-letters hook: called in the node's task, at once; what it
raises is logged and ignored."""


@attrs.define(eq=False)
class _Export:
    """A local actor the peer looked up: it may message it, and learns of its end."""

    cell: _Cell[Any]
    ref: ActorRef[Any]
    on_end: Callable[[ExitReason], None]
    on_incarnation_end: Callable[[ExitReason], None]

    def unwatch(self) -> None:
        """Stop learning of the actor's end (it is exported no more)."""
        links = self.cell.links
        if links is not None:
            if self.on_end in links.on_end:
                links.on_end.remove(self.on_end)
            if self.on_incarnation_end in links.on_incarnation_end:
                links.on_incarnation_end.remove(self.on_incarnation_end)


@attrs.define(eq=False)
class _Request:
    """A look-up in flight: its answer, or the error that ended it."""

    done: trio.Event = attrs.field(factory=trio.Event)
    actors: tuple[tuple[str, int], ...] = ()
    error: ActorError | None = None


@final
class Peer(metaclass=NoPublicConstructor):
    """Another node, reached over one authenticated connection: made by
    :meth:`Node.connect <actors.net.Node.connect>` and
    :meth:`Node.accept <actors.net.Node.accept>`.

    :meth:`lookup` and :meth:`find` return references to its actors, typed
    and used as local ones. When the connection is lost, every reference to
    its actors ends with :class:`~actors.NodeDown` (monitors get their
    ``Down``, exactly once), and every ask in flight fails with
    :class:`~actors.net.NodeDownError`.
    """

    def __init__(
        self,
        system: ActorSystem,
        connection: Connection,
        stream: trio.abc.Stream,
        codec: Codec,
        close_timeout: float,
        max_buffer: int,
        stall_timeout: float,
        heartbeat: float = 1.0,
        peer_timeout: float | None = None,
        spawnable: dict[str, Spawnable] | None = None,
        dead_letters: DeadLetters | None = None,
    ) -> None:
        self._system = system
        self._dead_letters = dead_letters
        self._dropped = 0
        # The behaviours the peer may spawn here, by key (Node.allow_spawn).
        # Remote spawns, both ways (._spawning).
        self._spawns = Spawns(self, {} if spawnable is None else spawnable)
        self._heartbeat_interval = heartbeat
        self._peer_timeout = peer_timeout
        self._conn = connection
        self._stream = stream
        self._codec = codec
        # The reply field of each message class that has one, by class.
        self._reply_fields = codec._reply_fields
        self._close_timeout = close_timeout
        self._max_buffer = max_buffer
        self._stall_timeout = stall_timeout
        self._nursery: trio.Nursery | None = None
        self._writer_lot = trio.lowlevel.ParkingLot()
        self._credit_lot = trio.lowlevel.ParkingLot()
        self._delivery_lot = trio.lowlevel.ParkingLot()
        # The reader waits here while the output is over max_buffer.
        self._drained_lot = trio.lowlevel.ParkingLot()
        self._drain_waiting = False  # exactly while the reader parks there
        # Bytes written so far (progress, for the stall check).
        self._written = 0
        self._late_answers = 0
        self._refused = 0
        self._refused_by_peer = 0
        # References to the peer's actors, by their uid there.
        self._remote: dict[int, _Cell[Any]] = {}
        # Local actors the peer looked up, by uid: all it may message.
        self._exported: dict[int, _Export] = {}
        # Our asks in flight, by reply number.
        self._replies: dict[int, Reply[Any]] = _Replies(self)
        # The peer's asks delivered here and not answered, by its number:
        # what its Cancel frames, and the connection's end, abandon.
        self._asked: dict[int, tuple[_Cell[Any], Reply[Any]]] = {}
        # The actors exported for the references of the frame being encoded.
        self._staged: list[int] = []
        # The registry across nodes, on this connection (._watching).
        self._watching = Watches(self)
        # The ask the delivery task waits to put, and the scope that ends it.
        self._delivering: tuple[int | None, trio.CancelScope] | None = None
        self._requests: dict[int, _Request] = {}
        # Messages received whose target's mailbox was full (or that came
        # behind one that was), in order. Invariant: at most the window.
        self._inbound: collections.deque[MessageReceived] = collections.deque()
        self._numbers = 0
        # Invariant: True exactly while the writer's send_all is under way;
        # then nothing else writes (what is queued waits for the writer).
        self._sending = False
        # The writer's send_all under way, if any: when the connection goes
        # down, it gets the close timeout to finish (a peer that stopped
        # reading cannot hold the close up for ever).
        self._send_scope: trio.CancelScope | None = None
        # When the writer gives up flushing, once the connection went down.
        self._close_by = float("inf")
        # Bytes taken from the connection and not written yet (what a
        # non-blocking write left over, the rest of the writer's chunks):
        # the writer sends them first.
        self._leftover = memoryview(b"")
        # The socket's descriptor, for non-blocking writes from any task
        # (see _flush); None for other streams (TLS, memory).
        self._fd: int | None = None
        if os.name == "posix" and isinstance(stream, trio.SocketStream):
            self._fd = stream.socket.fileno()
        connection.on_answer = self._answer
        connection.on_message = self._message
        connection.encode_ref = self._ref_out
        connection.decode_ref = self._ref_in
        self.closed = trio.Event()
        self.reason: str | None = None
        """Why the connection ended, once it did."""

    def __repr__(self) -> str:
        return f"<Peer {self.node!r} of node {self._conn.node!r}: {self._conn.state.value}>"

    @property
    def node(self) -> str:
        """The peer node's name (as it said in the handshake)."""
        assert self._conn.peer is not None, "a peer is made after the handshake"
        return self._conn.peer

    @property
    def incarnation(self) -> int:
        """The peer node's incarnation (its ``Node.incarnation``): the same
        node name with another incarnation is the node after a restart."""
        return self._conn.peer_incarnation

    def statistics(self) -> PeerStatistics:
        return PeerStatistics(
            self.node,
            len(self._remote),
            len(self._exported),
            len(self._replies),
            len(self._inbound),
            self._conn.credit,
            self._unsent(),
            self._late_answers,
            self._refused,
            self._refused_by_peer,
            self._dropped,
        )

    def _dead_letter(self, outgoing: bool, reason: str, message: object | None = None) -> None:
        """Hand a lost message to the node's dead-letters hook, if any."""
        hook = self._dead_letters
        if hook is None:
            return
        try:
            hook(DeadLetter(self.node, outgoing, reason, message))
        except Exception:  # the hook's failure must not end the connection
            logger.exception("node %r: the dead-letters hook failed", self._conn.node)

    def _unsent(self) -> int:
        return len(self._leftover) + self._conn.buffered

    def _number(self) -> int:
        self._numbers += 1
        return self._numbers

    # ---- look-ups ---------------------------------------------------------

    @overload
    async def lookup(self, name: str) -> ActorRef[Never] | None: ...

    @overload
    async def lookup(self, name: str, key: ServiceKey[M]) -> ActorRef[M] | None: ...

    async def lookup(self, name: str, key: ServiceKey[M] | None = None) -> ActorRef[Any] | None:
        """The peer's live actor named ``name``, or None: a reference like
        ``system.lookup``'s, an ``ActorRef[Never]`` (what an actor accepts is
        not known from a name). With ``key``, the actor of that name among
        those registered under ``key`` there, typed by the key's messages
        (``ActorRef[M]``: no cast), or None if it is not registered so.
        Looking up the same actor again gives an equal reference.

        A checkpoint; waits for the peer's answer. Raises
        :class:`~actors.net.NodeDownError` if the connection is lost first,
        :class:`TypeError` if ``name`` is not a str or ``key`` not a
        ``ServiceKey``. If cancelled, the answer is ignored when it comes."""
        if not isinstance(name, str):
            raise TypeError(f"lookup takes an actor's name (a str), not {name!r}")
        if key is not None:
            remote = f"{name}@{self.node}"
            return next((ref for ref in await self.find(key) if ref.name == remote), None)
        actors = await self._request(lambda number: self._conn.send_lookup(number, name))
        if not actors:
            return None
        actor_name, uid = actors[0]  # one at most (a peer sending more is not heeded)
        return cast("ActorRef[Never]", self._reference(actor_name, uid))

    async def find(self, key: ServiceKey[M]) -> tuple[ActorRef[M], ...]:
        """The peer's actors registered under ``key`` now, in registration
        order, as typed references (``system.find`` on the peer). Raises
        :class:`TypeError` if ``key`` is not a ``ServiceKey``; otherwise as
        :meth:`lookup`."""
        if not isinstance(key, ServiceKey):
            raise TypeError(f"find takes a ServiceKey, not {key!r}")
        actors = await self._request(lambda number: self._conn.send_find(number, key.name))
        return tuple(self._reference(name, uid) for name, uid in actors)

    @overload
    async def spawn(
        self, key: SpawnKey[M, *Ts], *args: *Ts, name: str | None = None
    ) -> ActorRef[M]: ...

    @overload
    async def spawn(
        self, key: ServiceKey[M], *args: object, name: str | None = None
    ) -> ActorRef[M]: ...

    async def spawn(
        self, key: SpawnKey[M, *Ts] | ServiceKey[M], *args: object, name: str | None = None
    ) -> ActorRef[M]:
        """Spawn an actor on the peer: the behaviour it allows under ``key``
        (:meth:`Node.allow_spawn <actors.net.Node.allow_spawn>`), called
        with ``args`` (values its codec carries: MessagePack's builtins and
        registered values), named ``name`` there (default: the behaviour's
        name and a number). With a :class:`~actors.net.SpawnKey`, mypy checks
        ``args`` against the key, as a local ``spawn`` checks them against the
        behaviour. Returns a typed reference once the actor's mailbox
        accepts messages (monitor it as any reference); the actor lives in
        the peer's system, as any actor spawned there, under the supervisor
        the peer allowed it with, if any (it does not end with this
        connection).

        A checkpoint. Raises :class:`~actors.net.RemoteError` if the peer
        refuses (``LookupError``: no behaviour under ``key``;
        ``ActorNameError``, ``TypeError``: what its ``spawn`` raised;
        ``CodecError``: arguments it cannot decode), :class:`CodecError` if
        ``args`` cannot be encoded (nothing is sent),
        :class:`~actors.net.NodeDownError` if the connection is lost first,
        :class:`TypeError` for a ``key`` that is neither key or a
        ``name`` that is not a str."""
        if not isinstance(key, SpawnKey | ServiceKey):
            raise TypeError(f"spawn takes a SpawnKey or a ServiceKey, not {key!r}")
        if name is not None and not isinstance(name, str):
            raise TypeError(f"an actor's name must be a str, not {name!r}")
        ref = await self._spawns.spawn(key.name, args, name)
        return cast("ActorRef[M]", ref)

    async def _request(self, send: Callable[[int], None]) -> tuple[tuple[str, int], ...]:
        if self.reason is not None:
            await trio.lowlevel.checkpoint()
            raise NodeDownError(f"node {self.node!r} is down: {self.reason}")
        number = self._number()
        request = self._requests[number] = _Request()
        try:
            send(number)
            self._writer_lot.unpark()
            await request.done.wait()
        finally:
            self._requests.pop(number, None)
        if request.error is not None:
            raise request.error
        return request.actors

    def _reference(self, name: str, uid: int) -> ActorRef[Any]:
        cell = self._remote.get(uid)
        if cell is None:
            system = self._system
            cell = _Cell.open(
                Address(f"{name}@{self.node}", uid, self._conn.peer_incarnation),
                0,
                system.tracer,
                system._timekeeper,
            )
            # The reference's mailbox is the connection: what it accepts is
            # on its way (see Outbox). Its own channel stays empty.
            cell.send_channel.close()
            cell.send_channel = cast(
                "trio.MemorySendChannel[Envelope[Any]]", Outbox(self, uid, cell)
            )
            self._remote[uid] = cell
        return cast("ActorRef[Any]", ActorRef._create(cell))

    # ---- closing ----------------------------------------------------------

    async def close(self, reason: str = "closed") -> None:
        """Close the connection politely (the peer reads ``reason``) and wait
        until it is down: the references to the peer's actors end with
        :class:`~actors.NodeDown`, as for a lost connection. What is queued
        gets the close timeout to go out, even to a peer that stopped
        reading. Idempotent. A checkpoint; if cancelled, the connection
        still closes."""
        self._begin_close(reason)
        await self.closed.wait()

    def _begin_close(self, reason: str) -> None:
        """Queue the ``Close`` and let the writer end the peer; never blocks."""
        if self._conn.close(reason) is not None:
            self._down(f"closed here: {reason}")
        self._writer_lot.unpark()

    def _down(self, reason: str) -> None:
        """The connection is over: remember why, and stop reading (the
        writer flushes what is queued, such as a ``Close``, and ends, within
        the close timeout even if a write was under way)."""
        if self.reason is None:
            self.reason = reason
            self._close_by = trio.current_time() + self._close_timeout
        scope = self._send_scope
        if scope is not None:
            scope.deadline = self._close_by
        self._writer_lot.unpark()

    def _remote_restarted(self, uid: int) -> None:
        """A behaviour call of the peer's actor ``uid`` ended: a ``stop()``
        waiting for it returns, and a reference closed by that stop takes
        messages again (as a local one does once its actor is restarted; if
        the actor ended for good, the ``Ended`` that follows ends it)."""
        cell = self._remote.get(uid)
        if cell is None or cell.state is ActorState.STOPPED:
            return
        outbox: object = cell.send_channel  # a remote reference's is an Outbox
        if cell.state is ActorState.STOPPING and isinstance(outbox, Outbox):
            outbox._closed = False
            cell.stop_requested = False
            cell.state = ActorState.RUNNING
        if cell.incarnation_ended is not None:
            cell.incarnation_ended.unpark_all()

    def _teardown(self) -> None:
        """Everything the connection carried ends, at once and for good:
        asks in flight fail with NodeDownError, references end NodeDown
        (their monitors get Down once), look-ups fail, the peer stops
        watching the actors it looked up. Synchronous: runs even when the
        peer's tasks were cancelled."""
        if self.reason is None:
            self.reason = "the connection was lost"
        reason = self.reason
        node = self.node
        error = NodeDownError(
            f"the connection to node {node!r} was lost before the reply came: {reason}"
        )
        # Emptied in place: each remote ask's reply holds this dict.
        replies = list(self._replies.values())
        self._replies.clear()
        for reply in replies:
            if not reply.done:
                reply._withdraw(error)
        remote, self._remote = self._remote, {}
        for cell in remote.values():
            for reply in list((cell.pending or {}).values()):
                if not reply.done:
                    reply._withdraw(error)
            if cell.state is not ActorState.STOPPED:
                cell.terminate(NodeDown(node))
        asked, self._asked = self._asked, {}
        for cell, reply in asked.values():  # nobody reads their answers now
            _abandon(cell, reply)
        self._watching.teardown()
        exported, self._exported = self._exported, {}
        for export in exported.values():
            export.unwatch()
        for request in self._requests.values():
            request.error = NodeDownError(f"node {node!r} went down: {reason}")
            request.done.set()
        if self._inbound:
            logger.warning(
                "node %r went down with %d messages undelivered (dropped)", node, len(self._inbound)
            )
            undelivered = list(self._inbound)
            self._inbound.clear()
            for event in undelivered:
                if event.reply is None:  # (an ask's asker has its NodeDownError)
                    self._dropped += 1
                    self._dead_letter(
                        False, f"node {node!r} went down before it was delivered", event.message
                    )
        self.closed.set()

    # ---- tasks ------------------------------------------------------------

    async def _writer(self) -> None:
        """Send what the connection queued, a burst per ``send_all`` (in
        chunks of at most :data:`WRITE_CHUNK`); after the connection closed,
        flush the rest (within the close timeout) and end the peer. A write
        under way when the connection goes down gets the close timeout to
        finish; cut short, it leaves the stream mid-frame, and nothing more
        is written."""
        stream = self._stream
        conn = self._conn
        try:
            while self.reason is None:
                if self._watching.dirty and self._unsent() <= self._max_buffer:
                    self._watching.send_dirty()
                if not self._leftover:
                    if not conn.buffered:
                        await self._writer_lot.park()
                        continue
                    self._leftover = memoryview(conn.data_to_send())
                chunk = self._leftover[:WRITE_CHUNK]
                self._sending = True
                try:
                    with trio.CancelScope() as scope:
                        self._send_scope = scope
                        await stream.send_all(chunk)
                finally:
                    self._sending = False
                    self._send_scope = None
                if scope.cancelled_caught:
                    break
                self._leftover = self._leftover[len(chunk) :]
                self._progress(len(chunk))
            else:
                with trio.move_on_at(self._close_by):
                    while self._leftover or conn.buffered:
                        data = self._leftover or memoryview(conn.data_to_send())
                        self._leftover = memoryview(b"")
                        await stream.send_all(data)
        except (trio.BrokenResourceError, trio.ClosedResourceError) as error:
            self._down(f"the connection broke: {error or type(error).__name__}")
        assert self._nursery is not None
        self._nursery.cancel_scope.cancel()

    def _progress(self, written: int) -> None:
        self._written += written
        if self._drain_waiting:
            self._drained_lot.unpark_all()

    def _flush(self) -> None:
        """Write what the connection queued now, from the calling task,
        when that cannot block: on a plain socket whose writes are not under
        way, one non-blocking ``send`` (what the kernel takes leaves at once,
        saving the writer's wake-up; the rest is the writer's). Otherwise
        wake the writer. Never blocks, never checkpoints."""
        fd = self._fd
        if fd is None or self._sending or self._leftover or self.reason is not None:
            self._writer_lot.unpark()
            return
        out = self._conn._out
        if not out:
            return
        try:
            sent = os.write(fd, out)
        except OSError:  # full (EAGAIN), or broken: the writer finds out which
            sent = 0
        if sent:
            del out[:sent]
            self._written += sent
            if self._drain_waiting:
                self._drained_lot.unpark_all()
        if out:
            self._writer_lot.unpark()

    async def _reader(self) -> None:
        """Bytes in, events out, until the connection closes. While more
        than ``max_buffer`` bytes wait to be written to the peer, nothing is
        read from it (what it asks for piles up no further, and its writes
        wait); if it then reads nothing for ``stall_timeout``, the
        connection is closed with a reason."""
        conn = self._conn
        stream = self._stream
        fd = self._fd
        out = conn._out
        # trio.lowlevel.wait_readable without its wrapper's frame (a frame
        # fewer to suspend and resume on every wake-up).
        wait_readable = GLOBAL_RUN_CONTEXT.runner.io_manager.wait_readable
        while conn.state is not _CLOSED:
            if (out or self._leftover) and len(out) + len(self._leftover) > self._max_buffer:
                if not await self._wait_drained():
                    return
                continue
            try:
                if fd is not None:
                    # The socket itself: one wait and one read per batch.
                    await wait_readable(fd)
                    try:
                        data: bytes | bytearray = os.read(fd, RECEIVE_SIZE)
                    except BlockingIOError:
                        continue
                else:
                    data = await stream.receive_some(RECEIVE_SIZE)
            except (trio.BrokenResourceError, trio.ClosedResourceError, OSError) as error:
                self._lost(f"the connection broke: {error or type(error).__name__}")
                return
            # Most messages and answers come through the connection's
            # on_message and on_answer (the hot path), without an event.
            for event in conn.receive_data(data):
                self._handle(event)
            if out:
                self._flush()

    async def _wait_drained(self) -> bool:
        """Wait, reading nothing, until the writer brings the output under
        ``max_buffer``; False (and the connection closed) if the peer read
        nothing for ``stall_timeout``."""
        while self._unsent() > self._max_buffer and self.reason is None:
            written = self._written
            with trio.move_on_after(self._stall_timeout):
                while self._written == written and self.reason is None:
                    self._drain_waiting = True
                    try:
                        await self._drained_lot.park()
                    finally:
                        self._drain_waiting = False
            if self._written == written and self.reason is None:
                self._lost(
                    f"node {self.node!r} read nothing for {self._stall_timeout:g}s while "
                    f"{self._unsent()} bytes waited for it (the limit is {self._max_buffer})"
                )
                return False
        return self.reason is None

    async def _heartbeat(self) -> None:
        """The failure detector: every ``heartbeat`` seconds, a ``Ping`` if
        nothing was sent since the last beat; the connection is lost once
        nothing came from the peer for ``peer_timeout`` seconds (so it is
        found within ``peer_timeout + heartbeat``). While this node reads
        nothing from the peer (its output is over ``max_buffer``), silence
        is not the peer's: ``stall_timeout`` judges that instead. Nor is it
        when this node itself was stalled (its run loop held up: a long
        computation, a pause): a beat that comes more than two intervals
        late starts the count again, and before a verdict the reader gets a
        turn to read what came meanwhile."""
        conn = self._conn
        interval = self._heartbeat_interval
        timeout = self._peer_timeout
        assert timeout is not None, "started only with a peer timeout"
        heard = conn._received
        heard_at = last_beat = trio.current_time()
        sent = conn._sent
        while self.reason is None:
            await trio.sleep(interval)
            now = trio.current_time()
            stalled = now - last_beat > 2 * interval
            last_beat = now
            if conn._received != heard or self._drain_waiting or stalled:
                heard, heard_at = conn._received, now
            elif now - heard_at >= timeout:
                # The reader may be due in this very batch with what came
                # while this task slept: let it run first.
                await trio.lowlevel.cancel_shielded_checkpoint()
                await trio.lowlevel.cancel_shielded_checkpoint()
                if conn._received != heard or self.reason is not None:
                    heard, heard_at = conn._received, trio.current_time()
                    continue
                self._lost(
                    f"node {self.node!r} sent nothing for {now - heard_at:g}s "
                    f"(the peer timeout is {timeout:g}s)"
                )
                return
            if conn._sent == sent and conn.state is _OPEN:
                conn.send_ping()
                self._flush()
            sent = conn._sent

    def _lost(self, reason: str) -> None:
        self._conn.close(reason)
        self._down(reason)

    async def _delivery(self) -> None:
        """Deliver, in order, the messages that found their target full."""
        inbound = self._inbound
        while True:
            while not inbound:
                await self._delivery_lot.park()
            with trio.CancelScope() as scope:
                # An ask given up on while it waits for room is let go.
                self._delivering = (inbound[0].reply, scope)
                try:
                    await self._deliver(inbound[0])
                finally:
                    self._delivering = None
            inbound.popleft()
            self._conn.delivered(1)
            # Those behind it that fit now go in without waiting.
            while inbound:
                event = inbound[0]
                if not self._deliver_now(event.target, event.message, event.reply):
                    break
                inbound.popleft()
            self._flush()

    # ---- events -----------------------------------------------------------

    def _handle(self, event: Event) -> None:
        kind = type(event)
        if kind is MessageReceived:
            assert isinstance(event, MessageReceived)
            if self._conn.state is State.CLOSED:
                return  # it came before what closed the connection: not delivered
            self._message(event.target, event.message, event.reply)
            return
        if kind is AnswerReceived:
            assert isinstance(event, AnswerReceived)
            self._answer(event.reply, event.value)
            return
        match event:
            case FailureReceived():
                self._fail_reply(event.reply, remote_error(event.error, event.message))
            case CreditGranted():
                self._credit_lot.unpark(count=event.messages)
            case LookupRequested():
                if not self._conn.closed:
                    ref = self._system.lookup(event.name)
                    found = [] if ref is None else [self._export(ref._cell)]
                    self._conn.send_found(event.request, found)
            case FindRequested():
                if not self._conn.closed:
                    refs = self._system.find(ServiceKey[Any](event.key))
                    self._conn.send_found(event.request, [self._export(ref._cell) for ref in refs])
            case FoundReceived():
                request = self._requests.get(event.request)
                if request is not None:
                    request.actors = event.actors
                    request.done.set()
            case RequestRefused():
                request = self._requests.get(event.request)
                if request is not None:
                    request.error = remote_error(event.error, event.message)
                    request.done.set()
                else:
                    self._watching.refused(event.request, event.error, event.message)
            case WatchRequested():
                self._watching.watch_requested(event)
            case UnwatchRequested():
                self._watching.unwatch_requested(event.request)
            case ListingReceived():
                self._watching.listing_received(event, MAX_REMOTE_REFS)
            case SpawnRequested():
                self._spawns.requested(event)
            case AskCancelled():
                asked = self._asked.get(event.reply)
                if asked is not None:
                    if _abandon(*asked):
                        del self._asked[event.reply]
                    else:
                        # Taken (its answer, when it comes, stays here), or
                        # still waiting for room in the delivery task's put.
                        delivering = self._delivering
                        if delivering is not None and delivering[0] == event.reply:
                            delivering[1].cancel()
                else:
                    # Still waiting here for room in its mailbox: dropped
                    # (but the first, which the delivery task may hold).
                    for index in range(1, len(self._inbound)):
                        if self._inbound[index].reply == event.reply:
                            del self._inbound[index]
                            self._conn.delivered(1)
                            break
            case StopRequested():
                # What ``ref.stop()`` does before it waits: no task, so a
                # flood of Stop frames costs nothing (the end goes back as
                # an Ended frame when it comes).
                export = self._exported.get(event.target)
                if export is not None and not self._conn.closed:
                    target = export.cell
                    if not event.kill:
                        target.request_stop()
                    elif target.running:  # what ref.kill() does, without its wait
                        target.scope.cancel()
            case RestartedReceived():
                self._remote_restarted(event.target)
            case EndedReceived():
                cell = self._remote.pop(event.target, None)
                if cell is not None and cell.state is not ActorState.STOPPED:
                    cell.terminate(exit_reason(self.node, event.reason, event.detail, event.seq))
            case FrameRefused():
                self._refused += 1
                logger.warning("refused a frame from node %r: %s", self.node, event.reason)
                if event.reply is None:
                    self._dead_letter(False, event.reason)
            case PeerRefused():
                self._refused_by_peer += 1
                logger.warning("node %r refused a message: %s", self.node, event.reason)
                if event.reply is not None:
                    self._fail_reply(event.reply, RemoteError("CodecError", event.reason))
                else:
                    self._dead_letter(True, event.reason)
            case ConnectionClosed():
                self._down(
                    f"closed by node {self.node!r}: {event.reason}"
                    if event.by_peer
                    else event.reason
                )
            case Authenticated():  # pragma: no cover (handled by the node before)
                pass

    def _answer(self, number: int, value: object) -> None:
        """The answer to our ask ``number``: to its asker, or counted late.
        The connection calls this for an answer no event comes before; the
        others come as :class:`AnswerReceived`, handled here too."""
        reply = self._replies.pop(number, None)
        if reply is None or reply._completion is not None:
            self._late(number)
        else:
            reply._answer(value)

    def _fail_reply(self, number: int, error: BaseException) -> None:
        reply = self._replies.pop(number, None)
        if reply is None or reply.done:
            self._late(number)
        else:
            reply.fail(error)

    def _late(self, number: int) -> None:
        """An answer for an ask nobody waits for any more (its asker timed
        out or was cancelled): dropped, and counted."""
        self._late_answers += 1
        logger.debug("node %r: a late answer to ask %d (dropped)", self.node, number)

    # ---- references in messages ------------------------------------------

    def _ref_out(self, ref: ActorRef[Any]) -> WireRef:
        """A reference in a message or an answer for the peer: to one of this
        node's actors (exported to the peer, as a look-up does: the peer may
        message it and learns of its end), or to one of the peer's. A
        reference to a third node's actor cannot travel (:class:`CodecError`)."""
        cell = ref._cell
        outbox: object = cell.send_channel  # a remote reference's is an Outbox
        if isinstance(outbox, Outbox):
            if outbox._peer is not cast("object", self):
                raise CodecError(
                    f"a reference to actor {cell.address.name!r} of another node cannot "
                    f"travel to node {self.node!r}: only references to actors of the two "
                    "nodes of a connection travel"
                )
            return (_RECEIVERS, outbox._uid, cell.address.name.removesuffix(f"@{self.node}"))
        if cell.timekeeper is not self._system._timekeeper:
            raise CodecError(
                f"a reference to actor {cell.address.name!r} of another actor system cannot "
                f"travel to node {self.node!r}: only this node's actors and the peer's travel"
            )
        if cell.state is ActorState.STOPPED:
            return (_ENDED, cell.address.uid, cell.address.name)
        uid = cell.address.uid
        if uid not in self._exported:
            self._staged.append(uid)  # exported for good once the frame is written
        name, uid = self._export(cell)
        return (_SENDERS, uid, name)

    def _commit_exports(self, sent: bool) -> None:
        """The frame whose references were just encoded was written (``sent``),
        or not: the actors exported for it stay exported, or are no more."""
        staged, self._staged = self._staged, []
        if not sent:
            for uid in staged:
                export = self._exported.pop(uid, None)
                if export is not None:
                    export.unwatch()

    def _ref_in(self, wire: WireRef) -> ActorRef[Any]:
        """The reference a message or an answer of the peer's carries: to one
        of the peer's actors (a remote reference, as a look-up gives), or to
        one of this node's that it was given. One to an actor of this node
        the peer was not given (or that has ended), or to an actor that had
        ended when it was sent, is a reference to an actor that has stopped."""
        kind, uid, name = wire
        if kind == _SENDERS:
            if uid not in self._remote and len(self._remote) >= MAX_REMOTE_REFS:
                raise CodecError(
                    f"node {self.node!r} gave more than {MAX_REMOTE_REFS} references to its actors"
                )
            return self._reference(name, uid)
        if kind == _RECEIVERS:
            export = self._exported.get(uid)
            if export is not None:
                return export.ref
            if self._system.lookup(Address(name, uid)) is not None:
                raise CodecError(
                    f"a reference to actor {name!r} of this node, which node {self.node!r} "
                    "was not given"
                )
            return self._stopped_reference(Address(name, uid))
        if kind == _ENDED:
            return self._stopped_reference(
                Address(f"{name}@{self.node}", uid, self._conn.peer_incarnation)
            )
        raise CodecError(f"a reference of an unknown kind {kind}")

    def _stopped_reference(self, address: Address) -> ActorRef[Any]:
        system = self._system
        cell: _Cell[Any] = _Cell.open(address, 0, system.tracer, system._timekeeper)
        cell.terminate(Stopped())
        return cast("ActorRef[Any]", ActorRef._create(cell))

    def _export(self, cell: _Cell[Any]) -> tuple[str, int]:
        uid = cell.address.uid
        if uid not in self._exported:
            on_end = functools.partial(self._exported_ended, uid)
            restarted = functools.partial(self._exported_restarted, uid)
            self._exported[uid] = _Export(cell, ActorRef._create(cell), on_end, restarted)
            links = cell.linked()
            links.on_end.append(on_end)
            links.on_incarnation_end.append(restarted)
        return cell.address.name, uid

    def _exported_restarted(self, uid: int, reason: ExitReason) -> None:
        """A behaviour call of the exported actor ``uid`` ended: the peer's
        stop of it returns, and (unless ``Ended`` follows) its references
        take messages again once it is restarted."""
        if self._conn.state is State.OPEN:
            self._conn.send_restarted(uid)
            self._writer_lot.unpark()

    def _exported_ended(self, uid: int, reason: ExitReason) -> None:
        self._exported.pop(uid, None)
        if self._conn.state is State.OPEN:
            seq = reason.seq if isinstance(reason, Failed) else None
            self._conn.send_ended(uid, type(reason).__name__, str(reason), seq)
            self._writer_lot.unpark()

    def _message(self, target: int, message: object, reply: int | None) -> None:
        """A message of the peer's for the local actor ``target``: delivered
        now if its mailbox has room and none waits before it, else queued
        for the delivery task (the connection's ``on_message``)."""
        if self._inbound or not self._deliver_now(target, message, reply):
            self._inbound.append(MessageReceived(target, message, reply))
            self._delivery_lot.unpark()

    def _deliver_now(self, target: int, message: object, number: int | None) -> bool:
        """Deliver the peer's ``message`` (an ask if its reply ``number`` is
        given) if its target's mailbox has room (or it cannot be delivered
        at all); False if it must wait for room."""
        export = self._exported.get(target)
        if export is None or export.cell.state is not _RUNNING:
            self._undeliverable(target, message, number)
            self._conn.delivered(1)
            return True
        if number is None:
            try:
                # Without a seeded run's latency: the network is its latency,
                # and a peer's tells keep their order with its asks, which go
                # into the mailbox directly.
                export.cell.tell_directly_nowait(message)
            except trio.WouldBlock:
                return False
            except ActorStoppedError:
                self._undeliverable(target, message, number)
            self._conn.delivered(1)
            return True
        # An ask of the peer, as a local ask of the actor: _ask_envelope
        # inline (the hot path of every remote ask).
        cell = export.cell
        seq = cell.next_seq
        reply: Reply[Any] = type.__call__(Reply, cell.address.name, seq, cell.tracer, cell.token)
        reply._notify = functools.partial(self._answered, cell, seq, number)
        object.__setattr__(message, self._reply_fields[type(message)], reply)
        envelope = reply._envelope = Envelope(message, seq, None)
        try:
            cell.send_channel.send_nowait(envelope)
        except trio.WouldBlock:
            reply._notify = None
            return False
        except (trio.ClosedResourceError, trio.BrokenResourceError):
            reply._notify = None
            self._undeliverable(target, message, number)
        else:
            cell.next_seq = seq + 1
            pending = cell.pending
            if pending is None:
                pending = cell.pending = {}
            pending[seq] = reply
            self._asked[number] = (cell, reply)
        # self._conn.delivered(1), inline (every remote ask).
        conn = self._conn
        if conn.state is _OPEN:
            conn._undelivered -= 1
            to_grant = conn._to_grant = conn._to_grant + 1
            if to_grant >= conn._grant_batch:
                conn.delivered(0, flush=True)
        return True

    async def _deliver(self, event: MessageReceived) -> None:
        """Deliver ``event``, waiting for room in its target's mailbox."""
        export = self._exported.get(event.target)
        if export is None or export.cell.state is not _RUNNING:
            self._undeliverable(event.target, event.message, event.reply)
            return
        try:
            if event.reply is None:
                await export.cell.tell_directly(event.message)
                return
            envelope = self._ask_envelope(export.cell, event)
            try:
                await export.cell.put(envelope)
            except BaseException:
                self._unask(export.cell, envelope)
                self._asked.pop(event.reply, None)
                raise
        except ActorStoppedError:
            self._undeliverable(event.target, event.message, event.reply)

    def _ask_envelope(self, cell: _Cell[Any], event: MessageReceived) -> Envelope[Any]:
        """An ask of the peer, as a local ask of ``cell``: a reply whose answer
        goes back over the connection, registered with the actor's asks so
        that its failure or end fails it as it would a local asker's (the
        waiting path; :meth:`_deliver_now` does the same inline)."""
        assert event.reply is not None
        seq = cell.next_seq
        cell.next_seq = seq + 1
        reply: Reply[Any] = type.__call__(Reply, cell.address.name, seq, cell.tracer, cell.token)
        reply._notify = functools.partial(self._answered, cell, seq, event.reply)
        message = event.message
        object.__setattr__(message, self._reply_fields[type(message)], reply)
        envelope = reply._envelope = Envelope(message, seq, None)
        pending = cell.pending
        if pending is None:
            pending = cell.pending = {}
        pending[seq] = reply
        self._asked[event.reply] = (cell, reply)
        return envelope

    @staticmethod
    def _unask(cell: _Cell[Any], envelope: Envelope[Any]) -> None:
        """The ask's envelope was not accepted: forget it (a gap in the stamps,
        as a cancelled ``tell`` leaves)."""
        if cell.pending is not None:
            reply = cell.pending.pop(envelope.seq, None)
            if reply is not None:
                reply._notify = None

    def _answered(
        self, cell: _Cell[Any], seq: int, number: int, result: outcome.Outcome[Any]
    ) -> None:
        """An ask of the peer was completed here: its answer goes back
        (unless the asker gave up: it would be dropped there)."""
        if cell.pending is not None:
            cell.pending.pop(seq, None)
        asked = self._asked.pop(number, None)
        if self._conn.state is not _OPEN or (asked is not None and asked[1]._abandoned):
            return
        if type(result) is outcome.Value:
            sent = self._conn.send_answer(number, result.value)
            if self._staged:
                self._commit_exports(sent)
        else:
            assert isinstance(result, outcome.Error)
            error = result.error
            self._conn.send_failure(number, type(error).__name__, str(error))
        self._flush()

    def _undeliverable(self, target: int, message: object, number: int | None) -> None:
        """``message``'s target is not an actor the peer looked up, or it
        stopped: an ask (``number`` given) fails (ActorStoppedError), a tell
        is dropped (logged)."""
        if self._conn.closed:
            return
        export = self._exported.get(target)
        name = f"uid {target}" if export is None else repr(export.cell.address.name)
        if number is not None:
            self._conn.send_failure(
                number,
                "ActorStoppedError",
                f"actor {name} of node {self._conn.node!r} is stopped",
            )
        else:
            reason = (
                f"a {type(message).__name__} for actor {name} of node {self._conn.node!r} "
                "was dropped: it is stopped or unknown"
            )
            logger.warning(
                "a %s from node %r for actor %s was dropped: it is stopped or unknown",
                type(message).__name__,
                self.node,
                name,
            )
            self._dropped += 1
            self._conn.send_error(reason)
            self._writer_lot.unpark()
            self._dead_letter(False, reason, message)


class _Replies(dict[int, Reply[Any]]):
    """The reply table of a peer's asks in flight (by number): when an asker
    gives up, ``ActorRef.ask`` takes its entry out and calls :meth:`abandon`,
    which tells the far node."""

    __slots__ = ("_peer",)

    def __init__(self, peer: Peer) -> None:
        super().__init__()
        self._peer = peer

    def abandon(self, number: int) -> None:
        peer = self._peer
        if peer.reason is None and peer._conn.state is _OPEN:
            peer._conn.send_cancel(number)
            peer._flush()


def _abandon(cell: _Cell[Any], reply: Reply[Any]) -> bool:
    """The peer's asker of ``reply`` gave up: the reply is abandoned, and its
    message, if still in the mailbox, is taken out (dropped: never
    delivered, traced as such; True)."""
    reply._abandoned = True
    envelope = reply._envelope
    if envelope is not None and not reply._taken and cell.unqueue(envelope):
        reply._envelope = None
        reply._notify = None
        if cell.pending is not None:
            cell.pending.pop(envelope.seq, None)
        cell.record(EventKind.DROPPED, envelope.seq)
        return True
    return False
