"""The inbox: the receiving half of an actor's mailbox (:mod:`._mailbox`),
handed to its behaviour."""

from __future__ import annotations

from typing import Any, Generic, Never, Protocol, Self, TypeVar, cast, final

import trio

from ._cell import RECEIVE_BATCH, _Cell
from ._envelope import Address, Envelope
from ._mailbox import ActorRef
from ._monitors import Down, Monitor
from ._trace import EventKind
from ._util import NoPublicConstructor, foreign_thread_error, in_trio_thread

M = TypeVar("M")


class _Watcher(Protocol):
    """An inbox whose actor accepts :class:`~actors.Down`: the type
    :meth:`Inbox.monitor` asks of its inbox, so that mypy refuses a monitor
    whose ``Down`` the watcher could not take. (``ActorRef`` is contravariant:
    an ``ActorRef[Add | Down]`` is an ``ActorRef[Down]``, an ``ActorRef[Add]``
    is not.)"""

    @property
    def ref(self) -> ActorRef[Down]: ...


@final
class Inbox(Generic[M], metaclass=NoPublicConstructor):
    """The receiving end of an actor's mailbox, handed to its behaviour.

    Iterating yields :class:`~actors.Envelope` objects in the order the mailbox
    accepted them and ends once the mailbox is closed and drained (a graceful
    stop). Every receive is a cancel point; it is a schedule point when the
    mailbox is empty and at least once per ``RECEIVE_BATCH`` messages, so a
    busy actor takes a batch per turn instead of one message per turn.
    """

    __slots__ = ("_cell",)

    def __init__(self, cell: _Cell[M]) -> None:
        self._cell = cell

    def __repr__(self) -> str:
        return f"<Inbox of actor {self._cell.address.name!r}>"

    @property
    def address(self) -> Address:
        return self._cell.address

    @property
    def ref(self) -> ActorRef[M]:
        """This actor's own reference: what it hands to others to be told,
        asked or monitored. Valid across restarts, like every reference."""
        return cast("ActorRef[M]", ActorRef._create(self._cell))

    def monitor(self: _Watcher, target: ActorRef[Never]) -> Monitor:
        """Ask for a :class:`~actors.Down` message when ``target`` ends.

        The ``Down`` comes exactly once per call (each call makes a new
        :class:`~actors.Monitor`), into this actor's mailbox; at once if
        ``target`` already ended, with the reason it ended for. It is a
        framework message: it never waits for room, and if the mailbox is full
        it goes beyond the capacity, still after every message the mailbox
        accepted before it. A restart of ``target`` is not an end (it keeps its
        address and mailbox), so it sends no ``Down``.

        The actor's message type must include ``Down`` (``Inbox[Add | Down]``):
        mypy refuses the call otherwise; nothing checks it at run time.

        The monitors an incarnation makes are its own: when this actor ends,
        or a supervisor restarts it, they are removed (as OTP's die with their
        process), and the restarted behaviour makes its own again. An actor
        cannot monitor itself (:class:`ValueError`). Never blocks. Only from
        the Trio thread of the actor's system.
        """
        cell = cast("Inbox[Any]", self)._cell
        if not in_trio_thread(cell.token):
            raise foreign_thread_error(
                f"monitor by actor {cell.address.name!r}",
                "trio.from_thread.run_sync(inbox.monitor, ref)",
            )
        if target._cell is cell:
            raise ValueError(f"actor {cell.address.name!r} cannot monitor itself")
        return cell.monitor(target._cell)

    def demonitor(self, monitor: Monitor) -> bool:
        """Remove ``monitor``. Returns True if no ``Down`` was sent for it, so
        none will come; False if its ``Down`` was already sent (it is, or was,
        in the mailbox: ignore it), or the monitor is not this incarnation's.
        Never blocks. Only from the Trio thread of the actor's system."""
        cell = self._cell
        if not in_trio_thread(cell.token):
            raise foreign_thread_error(
                f"demonitor by actor {cell.address.name!r}",
                "trio.from_thread.run_sync(inbox.demonitor, monitor)",
            )
        return cell.demonitor(monitor)

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> Envelope[M]:
        try:
            return await self.receive()
        except trio.EndOfChannel:
            raise StopAsyncIteration from None

    async def receive(self) -> Envelope[M]:
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
        if cell.system_queue:
            return await self._receive_system()
        try:
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
        except trio.EndOfChannel:
            if not cell.system_queue:
                raise
            return await self._receive_system()
        self._took(envelope)
        return envelope

    async def _receive_system(self) -> Envelope[M]:
        """:meth:`receive` while framework messages wait beyond the capacity."""
        await trio.lowlevel.checkpoint()
        try:
            return self.receive_nowait()
        except trio.WouldBlock:
            return await self.receive()

    def receive_nowait(self) -> Envelope[M]:
        """Take the next envelope now, or raise :class:`trio.WouldBlock` (empty)
        or :class:`trio.EndOfChannel` (closed and drained). Only from the Trio
        thread of the actor's system (see :meth:`ActorRef.tell_nowait`)."""
        cell = self._cell
        if not in_trio_thread(cell.token):
            raise foreign_thread_error(
                f"receive_nowait on the inbox of actor {cell.address.name!r}",
                "trio.from_thread.run_sync(inbox.receive_nowait)",
            )
        if cell.system_queue:
            system = cell.take_system(closed=False)
            if system is not None:
                self._took(system)
                return system
        try:
            envelope = cell.receive_channel.receive_nowait()
        except trio.EndOfChannel:
            system = cell.take_system(closed=True)
            if system is None:
                raise
            envelope = system
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

    def _took(self, envelope: Envelope[M]) -> None:
        cell = self._cell
        cell.delivered += 1
        cell.handling = envelope.seq
        if cell.pending:
            ask = cell.pending.get(envelope.seq)
            if ask is not None and ask.envelope is envelope:
                ask.taken = True
        if cell.tracer is not None:
            sender = envelope.sender
            cell.record(EventKind.DELIVERED, envelope.seq, None if sender is None else sender.name)
