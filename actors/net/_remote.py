"""References to another node's actors: the mailbox such a reference has
instead of a channel (its outbox writes onto the connection), and how a
remote actor's end and a remote ask's failure read here."""

from __future__ import annotations

from typing import Any, Protocol, final

import attrs
import trio

from .._core._cell import _Cell
from .._core._envelope import Envelope
from .._core._errors import ActorError, ActorFailedError, ActorStoppedError
from .._core._monitors import ExitReason, Failed, Killed, NodeDown, Normal, Stopped
from .._core._reply import Reply
from ._codec import Codec
from ._errors import CodecError, NodeDownError, RemoteError
from ._protocol import _CLOSED, Connection


class Sender(Protocol):
    """What an :class:`Outbox` uses of its :class:`~actors.net.Peer`: its
    connection, codec, credit and reply table (declared here so that this
    module does not import the peer that makes outboxes)."""

    reason: str | None
    _conn: Connection
    _codec: Codec
    _writer_lot: trio.lowlevel.ParkingLot
    _credit_lot: trio.lowlevel.ParkingLot
    _replies: dict[int, Reply[Any]]
    _numbers: int
    _staged: list[int]

    def _commit_exports(self, sent: bool) -> None: ...

    def _flush(self) -> None:
        """Write what the connection queued (unless the writer will)."""


@final
@attrs.frozen
class OutboxStatistics:
    """What ``ActorRef.statistics`` reads of a mailbox: a remote reference
    holds nothing (what it accepted is in the connection's output)."""

    current_buffer_used: int = 0


@final
class Outbox:
    """The mailbox of a reference to a remote actor: the sending half of a
    memory channel as the core uses it (``send_nowait``, ``send``,
    ``close``, ``statistics``), writing onto the connection instead.

    The peer's credit is its capacity: ``send_nowait`` raises
    :class:`trio.WouldBlock` without credit, ``send`` waits for it. An ask
    is written at once (its asker waits for the answer); tells are left to
    the writer, which sends a burst of them in one write. Closing it
    (``ref.stop()``) asks the peer to stop the actor; the reference ends
    when the actor's end comes back (or the connection goes)."""

    __slots__ = ("_cell", "_closed", "_peer", "_uid")

    def __init__(self, peer: Sender, uid: int, cell: _Cell[Any]) -> None:
        self._peer = peer
        self._uid = uid
        self._cell = cell
        self._closed = False

    def _check(self) -> None:
        if self._closed:
            raise trio.ClosedResourceError
        if self._peer.reason is not None or self._peer._conn.closed:
            raise trio.BrokenResourceError

    def send_nowait(self, envelope: Envelope[Any]) -> None:
        """Put ``envelope`` on the connection, taking a credit, or raise
        :class:`trio.WouldBlock` without credit. An ask is written at once
        (its reply waits in the peer's reply table, under a number of its
        own), a tell is left to the writer. Raises
        :class:`~actors.net.CodecError` if the message cannot be encoded:
        nothing is sent then."""
        peer = self._peer
        conn = peer._conn
        if self._closed or peer.reason is not None or conn.state is _CLOSED:
            self._check()
        if conn._credit <= 0:
            raise trio.WouldBlock
        try:
            name, data, reply = peer._codec.encode_message(envelope.message, conn.encode_ref)
            conn._send_encoded(self._uid, name, data, None if reply is None else peer._numbers + 1)
        except CodecError:
            if peer._staged:  # the actors its references exported are not
                peer._commit_exports(sent=False)
            raise
        if peer._staged:
            peer._commit_exports(sent=True)
        cell = self._cell
        cell.delivered += 1
        if reply is None:
            peer._writer_lot.unpark()
            return
        peer._numbers = number = peer._numbers + 1
        if reply._envelope is envelope:
            # An ask of this reference: its number leaves the reply table
            # when the asker returns (see ActorRef.ask).
            reply._taken = True
            reply._envelope = None  # (see Inbox.__anext__)
            reply._table = table = peer._replies
            reply._number = number
            table[number] = reply
        elif not reply.done:
            # A message holding a reply, told (or asked of another actor
            # first): its answer is awaited by whoever holds the reply.
            peer._replies[number] = reply
        peer._flush()

    async def send(self, envelope: Envelope[Any]) -> None:
        """Wait for credit, then as :meth:`send_nowait`. A checkpoint; if
        cancelled, nothing was sent."""
        self._check()
        peer = self._peer
        if peer._conn.credit > 0:
            await trio.lowlevel.checkpoint()
            self._check()
        while peer._conn.credit <= 0:
            await peer._credit_lot.park()
            self._check()
        self.send_nowait(envelope)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        peer = self._peer
        peer._credit_lot.unpark_all()  # senders waiting for credit see it closed
        if self._cell.stop_requested and peer.reason is None:
            peer._conn.send_stop(self._uid)
            peer._flush()

    def kill_remote(self) -> None:
        """``ref.kill()`` of the remote actor: ask its node to cancel its
        behaviour now (nothing if the connection is gone: the reference has
        ended with ``NodeDown`` then)."""
        peer = self._peer
        # Even after a stop (which closed this outbox): a stop that takes
        # too long is what a kill is for.
        if peer.reason is None and not peer._conn.closed:
            peer._conn.send_stop(self._uid, kill=True)
            peer._flush()

    def statistics(self) -> OutboxStatistics:
        return OutboxStatistics()


def remote_error(kind: str, message: str) -> ActorError:
    """The local error for a remote ask's failure of class ``kind``."""
    match kind:
        case "ActorStoppedError":
            return ActorStoppedError(message)
        case "ActorFailedError":
            return ActorFailedError(message)
        case "NodeDownError":
            return NodeDownError(message)
        case _:
            return RemoteError(kind, message)


def exit_reason(node: str, reason: str, detail: str, seq: int | None) -> ExitReason:
    """The local exit reason of a remote actor that ended for ``reason``."""
    match reason:
        case "Normal":
            return Normal()
        case "Stopped":
            return Stopped()
        case "Killed":
            return Killed()
        case "NodeDown":
            return NodeDown(node)
        case _:
            return Failed(RemoteError(reason, detail), seq)
