"""The inbox: the receiving half of an actor's mailbox (:mod:`._mailbox`),
handed to its behaviour."""

from __future__ import annotations

from typing import Generic, Self, TypeVar, final

import trio

from ._cell import RECEIVE_BATCH, _Cell
from ._envelope import Address, Envelope
from ._trace import EventKind
from ._util import NoPublicConstructor, foreign_thread_error, in_trio_thread

M_co = TypeVar("M_co", covariant=True)


@final
class Inbox(Generic[M_co], metaclass=NoPublicConstructor):
    """The receiving end of an actor's mailbox, handed to its behaviour.

    Iterating yields :class:`~actors.Envelope` objects in the order the mailbox
    accepted them and ends once the mailbox is closed and drained (a graceful
    stop). Every receive is a cancel point; it is a schedule point when the
    mailbox is empty and at least once per ``RECEIVE_BATCH`` messages, so a
    busy actor takes a batch per turn instead of one message per turn.
    """

    __slots__ = ("_cell",)

    def __init__(self, cell: _Cell[M_co]) -> None:
        self._cell = cell

    def __repr__(self) -> str:
        return f"<Inbox of actor {self._cell.address.name!r}>"

    @property
    def address(self) -> Address:
        return self._cell.address

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> Envelope[M_co]:
        try:
            return await self.receive()
        except trio.EndOfChannel:
            raise StopAsyncIteration from None

    async def receive(self) -> Envelope[M_co]:
        """Take the next envelope, waiting for one. Raises
        :class:`trio.EndOfChannel` once the mailbox is closed and drained.
        If cancelled, nothing was taken. Only from the Trio thread of the
        actor's system (see :meth:`ActorRef.tell`)."""
        cell = self._cell
        if not in_trio_thread(cell.token):
            raise foreign_thread_error(
                f"receive on the inbox of actor {cell.address.name!r}",
                "trio.from_thread.run(inbox.receive)",
            )
        if cell.receive_budget > 0:
            await trio.lowlevel.checkpoint_if_cancelled()
            try:
                envelope = cell.receive_channel.receive_nowait()
            except trio.WouldBlock:
                envelope = await cell.receive_channel.receive()
                cell.receive_budget = RECEIVE_BATCH
            else:
                cell.receive_budget -= 1
        else:
            envelope = await cell.receive_channel.receive()
            cell.receive_budget = RECEIVE_BATCH
        self._took(envelope)
        return envelope

    def receive_nowait(self) -> Envelope[M_co]:
        """Take the next envelope now, or raise :class:`trio.WouldBlock` (empty)
        or :class:`trio.EndOfChannel` (closed and drained). Only from the Trio
        thread of the actor's system (see :meth:`ActorRef.tell_nowait`)."""
        cell = self._cell
        if not in_trio_thread(cell.token):
            raise foreign_thread_error(
                f"receive_nowait on the inbox of actor {cell.address.name!r}",
                "trio.from_thread.run_sync(inbox.receive_nowait)",
            )
        envelope = cell.receive_channel.receive_nowait()
        self._took(envelope)
        return envelope

    def close(self) -> None:
        """Accept nothing more; the loop still receives what was accepted, then
        ends. How an actor stops itself gracefully. Only from the Trio thread
        of the actor's system (see :meth:`ActorRef.tell_nowait`)."""
        cell = self._cell
        if not in_trio_thread(cell.token):
            raise foreign_thread_error(
                f"close of the inbox of actor {cell.address.name!r}",
                "trio.from_thread.run_sync(inbox.close)",
            )
        cell.close_mailbox()

    @property
    def tracing(self) -> bool:
        """Whether the system records a trace (so a caller can skip building
        the detail of a mark nobody will read)."""
        return self._cell.tracer is not None

    def mark(self, detail: str, seq: int | None = None) -> None:
        """Record an application event for this actor in the system's trace
        (a ``mark`` event; nothing happens without a tracer). Only from the
        Trio thread of the actor's system (see :meth:`ActorRef.tell_nowait`)."""
        cell = self._cell
        if not in_trio_thread(cell.token):
            raise foreign_thread_error(
                f"mark on the inbox of actor {cell.address.name!r}",
                "trio.from_thread.run_sync(inbox.mark, detail)",
            )
        if cell.tracer is not None:
            cell.record(EventKind.MARK, seq, detail)

    def _took(self, envelope: Envelope[M_co]) -> None:
        cell = self._cell
        cell.delivered += 1
        if cell.pending:
            ask = cell.pending.get(envelope.seq)
            if ask is not None and ask.envelope is envelope:
                ask.taken = True
        if cell.tracer is not None:
            sender = envelope.sender
            cell.record(EventKind.DELIVERED, envelope.seq, None if sender is None else sender.name)
