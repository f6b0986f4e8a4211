"""The inbox: the receiving half of an actor's mailbox (:mod:`._mailbox`),
handed to its behaviour."""

from __future__ import annotations

import functools
from typing import Any, Generic, Never, Protocol, Self, TypeVar, cast, final

import trio
from trio._core._run import GLOBAL_RUN_CONTEXT

from ._cell import RECEIVE_BATCH, RECEIVING, _Cell
from ._envelope import Address, Envelope
from ._mailbox import ActorRef
from ._monitors import Down, Monitor
from ._timers import Timers, timer_message_taken
from ._trace import EventKind
from ._util import NoPublicConstructor, foreign_thread_error, has_queued, in_trio_thread

M = TypeVar("M")


def _abort_receive(
    channel: trio.MemoryReceiveChannel[Any], task: trio.lowlevel.Task, _: object
) -> trio.lowlevel.Abort:
    """A receiver parked by :meth:`Inbox.__anext__` gives up (cancelled),
    as ``MemoryReceiveChannel.receive``'s own abort does."""
    channel._tasks.remove(task)
    del channel._state.receive_tasks[task]
    return trio.lowlevel.Abort.SUCCEEDED


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

    @property
    def timers(self) -> Timers[M]:
        """This actor's timers: messages it sends itself later, or every so
        often (see :class:`~actors.Timers`)."""
        return cast("Timers[M]", Timers._create(self._cell))

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
        process), and the restarted behaviour makes its own again; so once
        this inbox's incarnation is over (the actor ended, or waits to be
        restarted) it raises :class:`~actors.ActorStoppedError`. An actor
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
        if not cell.running:
            raise cell.not_running_error("monitor")
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
        """:meth:`receive`, ending the iteration where that raises
        :class:`trio.EndOfChannel` (one coroutine fewer per message and per
        idle actor than calling it)."""
        cell = self._cell
        try:  # in_trio_thread, inline (once per message)
            here = GLOBAL_RUN_CONTEXT.runner.trio_token is cell.token
        except AttributeError:
            here = False
        if not here:
            raise foreign_thread_error(
                f"receive on the inbox of actor {cell.address.name!r}",
                "trio.from_thread.run(inbox.receive)",
            )
        while True:
            envelope: Envelope[M] | None
            if cell.system_queue:
                envelope = await self._receive_system()
            else:
                channel = cell.receive_channel
                state = channel._state  # has_queued, inline
                try:
                    if cell.receive_budget > 0 and (state.data or state.send_tasks):
                        # A batch: no schedule point, until the budget is spent.
                        await trio.lowlevel.checkpoint_if_cancelled()
                        envelope = channel.receive_nowait()
                        cell.receive_budget -= 1
                    elif state.open_send_channels and not (
                        channel._closed or state.data or state.send_tasks
                    ):
                        # An empty mailbox: park for the next envelope as
                        # ``channel.receive()`` does, without its first try
                        # (a WouldBlock raised and caught) and its frame.
                        task = GLOBAL_RUN_CONTEXT.task
                        channel._tasks.add(task)
                        state.receive_tasks[task] = None
                        task.custom_sleep_data = channel
                        cell.receive_budget = RECEIVING
                        cell.receiver = task
                        envelope = await trio.lowlevel.wait_task_rescheduled(
                            functools.partial(_abort_receive, channel, task)
                        )
                        cell.receive_budget = RECEIVE_BATCH
                    else:
                        cell.receive_budget = RECEIVING
                        cell.receiver = GLOBAL_RUN_CONTEXT.task
                        envelope = await channel.receive()
                        cell.receive_budget = RECEIVE_BATCH
                except trio.EndOfChannel:
                    cell.receive_budget = RECEIVE_BATCH
                    if not cell.system_queue:
                        raise StopAsyncIteration from None
                    envelope = await self._receive_system()
                except BaseException:
                    cell.receive_budget = RECEIVE_BATCH  # cancelled: nothing taken
                    raise
            if envelope is None:
                raise StopAsyncIteration
            # _took, inline (once per message)
            cell.delivered += 1
            links = cell.links
            if links is not None and links.timed and not timer_message_taken(links, envelope):
                continue
            cell.handling = envelope.seq
            pending = cell.pending
            if pending:
                reply = pending.get(envelope.seq)
                if reply is not None and reply._envelope is envelope:
                    reply._taken = True
                    # Taken: the envelope is needed no more (and, kept, it
                    # would close a cycle: reply, envelope, message, reply).
                    reply._envelope = None
            if cell.tracer is not None:
                sender = envelope.sender
                cell.record(
                    EventKind.DELIVERED, envelope.seq, None if sender is None else sender.name
                )
            return envelope

    async def receive(self) -> Envelope[M]:
        """Take the next envelope, waiting for one. Raises
        :class:`trio.EndOfChannel` once the mailbox is closed and drained.
        If cancelled, nothing was taken. Only from the Trio thread of the
        actor's system (see :meth:`ActorRef.tell`)."""
        try:
            return await self.__anext__()
        except StopAsyncIteration:
            raise trio.EndOfChannel from None

    async def _receive_system(self) -> Envelope[M] | None:
        """The next envelope while framework messages wait beyond the
        capacity, or None once the mailbox is closed and drained. Batched as
        the mailbox is: a schedule point once per ``RECEIVE_BATCH``."""
        cell = self._cell
        if cell.receive_budget > 0:
            await trio.lowlevel.checkpoint_if_cancelled()
            cell.receive_budget -= 1
        else:
            await trio.lowlevel.checkpoint()
            cell.receive_budget = RECEIVE_BATCH
        envelope = cell.take_system(closed=False)
        if envelope is not None:
            return envelope
        # Its turn has not come: the mailbox holds what came before it.
        channel = cell.receive_channel
        try:
            if has_queued(channel):
                return channel.receive_nowait()
            cell.receive_budget = RECEIVING
            cell.receiver = GLOBAL_RUN_CONTEXT.task
            envelope = await channel.receive()
        except trio.EndOfChannel:
            return cell.take_system(closed=True)
        finally:
            if cell.receive_budget == RECEIVING:
                cell.receive_budget = RECEIVE_BATCH
        return envelope

    async def receive_batch(self, limit: int | None = None) -> list[Envelope[M]]:
        """Take every envelope the mailbox holds (at most ``limit``, when
        given), in the order :meth:`receive` would, waiting while it is
        empty; the list is never empty. Raises :class:`trio.EndOfChannel`
        once the mailbox is closed and drained.

        A checkpoint, once per call however many envelopes it takes: it
        waits (a schedule point) or, when the mailbox already holds
        something, checkpoints first and takes what is there after. For an
        actor that handles a burst of messages in one go (one scheduling turn
        instead of one per message). The actor has taken them all at once:
        if it fails before handling them, the ones it did not handle are
        lost, and its failure names the last one taken. If cancelled,
        nothing was taken.

        Raises :class:`ValueError` for a ``limit`` below 1, :class:`TypeError`
        for one that is not an int. Only from the Trio thread of the actor's
        system (see :meth:`ActorRef.tell`).
        """
        cell = self._cell
        if limit is not None:
            if not isinstance(limit, int) or isinstance(limit, bool):
                raise TypeError(
                    f"receive_batch on the inbox of actor {cell.address.name!r}: "
                    f"limit must be an int, not {type(limit).__name__}"
                )
            if limit < 1:
                raise ValueError(
                    f"receive_batch on the inbox of actor {cell.address.name!r}: "
                    f"limit must be at least 1, not {limit}"
                )
        if not in_trio_thread(cell.token):
            raise foreign_thread_error(
                f"receive_batch on the inbox of actor {cell.address.name!r}",
                "trio.from_thread.run(inbox.receive_batch)",
            )
        while True:
            if cell.system_queue or has_queued(cell.receive_channel):
                await trio.lowlevel.checkpoint()
                batch: list[Envelope[M]] = []
            else:
                # Empty: this waits (a schedule point), or raises EndOfChannel.
                batch = [await self.receive()]
            cell.receive_budget = RECEIVE_BATCH
            self._take_queued(batch, limit)
            if batch:
                return batch
            # Everything there was the message of a timer cancelled since.

    def _take_queued(self, batch: list[Envelope[M]], limit: int | None) -> None:
        """Append to ``batch`` what the mailbox holds, in order, until it holds
        nothing more or ``batch`` has ``limit`` envelopes. Never blocks."""
        cell = self._cell
        channel = cell.receive_channel
        state = channel._state
        data = state.data
        links = cell.links
        if (
            data
            and not state.send_tasks
            and not cell.system_queue
            and not cell.pending
            and cell.tracer is None
            and (links is None or not links.timed)
        ):
            # The usual case, in bulk: no framework message to fit in, no
            # asker, timer or trace to tell about any of them, and no sender
            # waiting for room (taken one by one, each envelope taken lets
            # the next waiting sender in, as receive does; clearing the
            # buffer under them would leave them parked beside free room).
            room = len(data) if limit is None else min(len(data), limit - len(batch))
            if room == len(data):
                batch.extend(data)
                data.clear()
            else:
                batch.extend([data.popleft() for _ in range(room)])
            cell.delivered += room
            if room:
                cell.handling = batch[-1].seq
        # One by one: what is left (framework messages, senders waiting for
        # room, timers' messages) or all of it when someone is to be told.
        while (limit is None or len(batch) < limit) and (cell.system_queue or has_queued(channel)):
            try:
                envelope = self._receive_nowait()
            except (trio.WouldBlock, trio.EndOfChannel):
                return
            batch.append(envelope)

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
        return self._receive_nowait()

    def _receive_nowait(self) -> Envelope[M]:
        cell = self._cell
        while True:
            envelope = cell.take_system(closed=False) if cell.system_queue else None
            if envelope is None:
                try:
                    envelope = cell.receive_channel.receive_nowait()
                except trio.EndOfChannel:
                    envelope = cell.take_system(closed=True)
                    if envelope is None:
                        raise
            if self._took(envelope):
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

    def _took(self, envelope: Envelope[M]) -> bool:
        """Account for ``envelope``, just taken from the mailbox; False if it
        is not to be delivered (the message of a timer cancelled since)."""
        cell = self._cell
        cell.delivered += 1
        links = cell.links
        if links is not None and links.timed and not timer_message_taken(links, envelope):
            return False
        cell.handling = envelope.seq
        if cell.pending:
            reply = cell.pending.get(envelope.seq)
            if reply is not None and reply._envelope is envelope:
                reply._taken = True
                reply._envelope = None  # (see __anext__)
        if cell.tracer is not None:
            sender = envelope.sender
            cell.record(EventKind.DELIVERED, envelope.seq, None if sender is None else sender.name)
        return True
