"""Mailboxes: the typed reference senders hold (the inbox an actor reads is
in :mod:`._inbox`).

An actor's mailbox is one trio memory channel, bounded by default, so a fast
sender waits for a slow actor (backpressure) instead of growing a queue. The
state both halves share lives in a :class:`_Cell`, which only the framework
builds.
"""

from __future__ import annotations

import enum
import logging
import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Generic, TypeVar, cast, final

import attrs
import trio

from ._envelope import Address, Envelope, current_address
from ._errors import ActorError, ActorFailedError, ActorStoppedError, AskTimeoutError
from ._reply import Reply
from ._trace import EventKind, TraceEvent
from ._util import NoPublicConstructor, foreign_thread_error, in_trio_thread

if TYPE_CHECKING:
    from ._trace import Tracer

logger = logging.getLogger("actors")

M = TypeVar("M")
M_co = TypeVar("M_co", covariant=True)
M_contra = TypeVar("M_contra", contravariant=True)
R = TypeVar("R")

DEFAULT_CAPACITY = 64
"""How many messages a mailbox holds before senders wait, unless told otherwise."""

RECEIVE_BATCH = 64
"""An inbox gives the scheduler a turn at least once per this many receives."""


class ActorState(enum.StrEnum):
    """Where an actor is in its life."""

    RUNNING = "running"
    STOPPING = "stopping"
    """Its mailbox is closed; it still delivers what it accepted."""
    STOPPED = "stopped"


@attrs.frozen
class ActorStatistics:
    """A snapshot of one actor's mailbox, from :meth:`ActorRef.statistics`."""

    address: Address
    state: ActorState
    queued: int
    capacity: float
    delivered: int
    restarts: int
    pending_asks: int


@attrs.define(eq=False, slots=True)
class _Ask:
    """An ask waiting for its reply; ``taken`` once the actor received its message."""

    envelope: Envelope[object]
    reply: Reply[Any]
    taken: bool = False


@attrs.define(eq=False)
class _Cell(Generic[M]):
    """The state of one actor, shared by its reference, its inbox and its task."""

    address: Address
    send_channel: trio.MemorySendChannel[Envelope[M]]
    receive_channel: trio.MemoryReceiveChannel[Envelope[M]]
    capacity: float
    tracer: Tracer | None
    # The token of the Trio run the actor lives in: synchronous entry points
    # refuse every other thread.
    token: trio.lowlevel.TrioToken
    # Invariant: every direct envelope's seq is below next_seq, and the stamps
    # the mailbox accepts are strictly increasing (a sender cancelled while it
    # waited for room leaves a gap: its message was never accepted).
    next_seq: int = 0
    delivered: int = 0
    # Asks whose asker still waits, by the stamp of their message (the asker
    # removes its own when it returns).
    pending: dict[int, _Ask] = attrs.field(factory=dict)
    restarts: int = 0
    state: ActorState = ActorState.RUNNING
    receive_budget: int = RECEIVE_BATCH
    stopped: trio.Event = attrs.field(factory=trio.Event)
    scope: trio.CancelScope = attrs.field(factory=trio.CancelScope)

    @classmethod
    def open(cls, address: Address, capacity: float, tracer: Tracer | None) -> _Cell[M]:
        if not (capacity == math.inf or (isinstance(capacity, int) and capacity >= 0)):
            raise ValueError(f"capacity must be a whole number >= 0 or math.inf, not {capacity!r}")
        send, receive = trio.open_memory_channel[Envelope[M]](capacity)
        return cls(address, send, receive, capacity, tracer, trio.lowlevel.current_trio_token())

    def record(self, kind: EventKind, seq: int | None = None, detail: str | None = None) -> None:
        if self.tracer is not None:
            self.tracer.record(
                TraceEvent(trio.current_time(), self.address.name, kind, seq, detail)
            )

    def stopped_error(self) -> ActorStoppedError:
        return ActorStoppedError(f"actor {self.address.name!r} is stopped")

    async def put(self, envelope: Envelope[M]) -> None:
        """Put ``envelope`` in the mailbox, waiting for room while it is full.

        A checkpoint only when it waits; if cancelled then, the envelope was
        not accepted (and never will be). Raises
        :class:`~actors.ActorStoppedError` if the mailbox is closed, or closes
        before there is room.
        """
        try:
            try:
                self.send_channel.send_nowait(envelope)
            except trio.WouldBlock:
                await self.send_channel.send(envelope)
        except (trio.ClosedResourceError, trio.BrokenResourceError):
            raise self.stopped_error() from None

    def close_mailbox(self) -> None:
        """Accept nothing more; what was accepted is still delivered. Idempotent."""
        if self.state is ActorState.RUNNING:
            self.state = ActorState.STOPPING
            self.send_channel.close()
            self.record(EventKind.STOPPING)

    def fail_taken_asks(self, failure: Exception | None) -> None:
        """The behaviour failed with ``failure``, or was cancelled (``None``):
        the asks it took and did not answer get no answer from it, even where
        it handed their replies on."""
        name = self.address.name
        for seq in [seq for seq, ask in self.pending.items() if ask.taken and not ask.reply.done]:
            error: ActorError
            if failure is None:
                error = ActorStoppedError(
                    f"actor {name!r} was cancelled before replying to message {seq}"
                )
            else:
                error = ActorFailedError(f"actor {name!r} failed before replying to message {seq}")
                error.__cause__ = failure
            self.pending.pop(seq).reply._withdraw(error)

    def terminate(self, returned: bool) -> None:
        """The actor's task is ending: close the mailbox, report what it accepted
        and will never deliver, and fail the asks that will get no reply: those
        it never took and, unless its behaviour ``returned`` (a graceful stop,
        which leaves the replies it took valid), those it took."""
        self.close_mailbox()
        dropped = 0
        while True:
            try:
                envelope = self.receive_channel.receive_nowait()
            except (trio.WouldBlock, trio.EndOfChannel):
                break
            dropped += 1
            self.record(EventKind.DROPPED, envelope.seq)
        if dropped:
            logger.warning(
                "actor %r ended with %d undelivered messages (dropped)", self.address.name, dropped
            )
        self.receive_channel.close()
        if not returned:
            self.fail_taken_asks(None)
        name = self.address.name
        for seq in [seq for seq, ask in self.pending.items() if not (ask.taken or ask.reply.done)]:
            self.pending.pop(seq).reply._withdraw(
                ActorStoppedError(f"actor {name!r} stopped before taking message {seq}")
            )
        self.state = ActorState.STOPPED
        self.record(EventKind.STOPPED)
        self.stopped.set()


def _seconds(timeout: float) -> float:
    """An ask's ``timeout`` as a float >= 0 (``-0.0`` as ``0.0``), or
    :class:`ValueError`."""
    if not timeout >= 0:
        raise ValueError(f"ask timeout must be None or a number of seconds >= 0, not {timeout!r}")
    try:
        return abs(float(timeout))
    except OverflowError:
        raise ValueError(
            "ask timeout must be None or a number of seconds >= 0, not a number too large "
            "for a float (math.inf waits as long as it takes)"
        ) from None


async def stop_last_first(cells: dict[Any, _Cell[Any]]) -> None:
    """Stop the actors of ``cells`` gracefully, last added first, each once the
    one after it stopped; ``cells`` shrinks as each one's task ends."""
    while cells:
        cell = next(reversed(cells.values()))
        cell.close_mailbox()
        await cell.stopped.wait()


@final
class ActorRef(Generic[M_contra], metaclass=NoPublicConstructor):
    """A reference to an actor, typed by the messages it accepts.

    References compare equal when they name the same actor, and stay valid
    across restarts: a restarted actor keeps its mailbox.
    """

    __slots__ = ("_cell",)

    def __init__(self, cell: _Cell[M_contra]) -> None:
        self._cell = cell

    def __repr__(self) -> str:
        return f"<ActorRef {self._cell.address.name!r} ({self._cell.state})>"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ActorRef) and other._cell is self._cell

    def __hash__(self) -> int:
        return hash(self._cell.address)

    @property
    def address(self) -> Address:
        return self._cell.address

    @property
    def name(self) -> str:
        return self._cell.address.name

    def tell_nowait(self, message: M_contra) -> None:
        """Put ``message`` in the mailbox now, or raise :class:`trio.WouldBlock`
        if it is full (nothing is queued then). Raises
        :class:`~actors.ActorStoppedError` if the actor stopped accepting.

        Only from the Trio thread of the actor's system: any other thread gets
        :class:`RuntimeError`, and nothing is queued. From a worker thread,
        call ``trio.from_thread.run_sync(ref.tell_nowait, message)``.
        """
        cell = self._cell
        if not in_trio_thread(cell.token):
            raise foreign_thread_error(
                f"tell_nowait to actor {cell.address.name!r}",
                "trio.from_thread.run_sync(ref.tell_nowait, message)",
            )
        envelope = Envelope(message, cell.next_seq, current_address.get())
        try:
            cell.send_channel.send_nowait(envelope)
        except (trio.ClosedResourceError, trio.BrokenResourceError):
            raise cell.stopped_error() from None
        cell.next_seq += 1

    async def tell(self, message: M_contra) -> None:
        """Put ``message`` in the mailbox, waiting for room while it is full.

        A checkpoint. If cancelled, the message was not accepted (and never
        will be). Raises :class:`~actors.ActorStoppedError` if the actor stops
        accepting before there is room.

        Only from the Trio thread of the actor's system: any other thread, or
        another ``trio.run``, gets :class:`RuntimeError`, and nothing is
        queued. From another thread, call
        ``trio.from_thread.run(ref.tell, message)``.
        """
        cell = self._cell
        if not in_trio_thread(cell.token):
            raise foreign_thread_error(
                f"tell to actor {cell.address.name!r}", "trio.from_thread.run(ref.tell, message)"
            )
        seq = cell.next_seq
        cell.next_seq = seq + 1
        try:
            await cell.send_channel.send(Envelope(message, seq, current_address.get()))
        except (trio.ClosedResourceError, trio.BrokenResourceError):
            raise cell.stopped_error() from None

    async def ask(
        self,
        build: Callable[[Reply[R]], M_contra],
        *,
        timeout: float | None = None,  # noqa: ASYNC109 (its error names the actor)
    ) -> R:
        """Send ``build(reply)`` and wait for the actor to complete ``reply``.

        ``build`` makes the message from the reply handle, so the reply's type
        is checked against the message's: ``await ref.ask(GetCount, timeout=1)``
        where ``GetCount`` holds a ``Reply[int]`` returns an ``int``.

        ``timeout`` bounds the whole ask, the wait for room in a full mailbox
        and the wait for the reply: after ``timeout`` seconds it raises
        :class:`~actors.AskTimeoutError`, saying whether the mailbox had
        accepted the message (if not, it never will). ``None`` or
        ``math.inf``: wait as long as it takes. ``0``: a deadline already
        passed, so nothing is sent and the ask times out at once (as
        ``trio.fail_after(0)`` would; ``-0.0`` is ``0``). A negative or NaN
        timeout, or one too large for a float (``10**400``), raises
        :class:`ValueError` before anything is sent.

        A checkpoint. Raises :class:`~actors.ActorStoppedError` if the actor
        stops before taking the message, or is cancelled while holding it;
        :class:`~actors.ActorFailedError` if it fails while holding it; or the
        error the handler passed to ``reply.fail``. An actor that takes the
        message and stops without completing the reply (or hands the reply to
        an actor that never does) leaves the asker to its timeout: see
        :class:`~actors.Reply`. If cancelled, the message may already have
        been accepted and handled; its reply is discarded.

        Only from the Trio thread of the actor's system (see :meth:`tell`):
        from another thread, call ``trio.from_thread.run(ref.ask, build)``.
        """
        cell = self._cell
        if not in_trio_thread(cell.token):
            raise foreign_thread_error(
                f"ask of actor {cell.address.name!r}", "trio.from_thread.run(ref.ask, build)"
            )
        if timeout is not None:
            timeout = _seconds(timeout)
        await trio.lowlevel.checkpoint_if_cancelled()
        seq = cell.next_seq
        reply = cast("Reply[R]", Reply._create(cell.address.name, seq, cell.tracer, cell.token))
        envelope = Envelope(build(reply), seq, current_address.get())
        cell.next_seq = seq + 1
        cell.pending[seq] = _Ask(envelope, reply)
        accepted = False
        try:
            # One schedule point per ask when the mailbox has room: the wait for
            # the reply. Only a full mailbox adds a wait for room.
            if timeout is None or timeout == math.inf:
                # No deadline, no cancel scope: one would double the cost of an ask.
                await cell.put(envelope)
                return await reply._wait()
            with trio.move_on_after(timeout):
                # A deadline already passed (timeout 0) sends nothing.
                await trio.lowlevel.checkpoint_if_cancelled()
                await cell.put(envelope)
                accepted = True
                return await reply._wait()
        finally:
            cell.pending.pop(seq, None)
        # Here only when the deadline cancelled the ask.
        if accepted:
            raise AskTimeoutError(
                f"ask of actor {cell.address.name!r} got no reply within {timeout:g}s"
            )
        raise AskTimeoutError(
            f"ask of actor {cell.address.name!r} timed out after {timeout:g}s "
            "before its mailbox accepted the message; the message was not sent"
        )

    async def stop(self) -> None:
        """Stop the actor gracefully: it accepts nothing more, delivers what it
        already accepted, and ends when its behaviour returns. Returns once it
        has stopped; stopping a stopped actor returns at once. The replies of
        the messages its behaviour took stay valid (see :class:`~actors.Reply`).

        A checkpoint. If cancelled, the actor still stops; only the wait ends.
        An actor cannot wait for its own stop: it calls ``inbox.close()``.
        Only from the Trio thread of the actor's system (see :meth:`tell`):
        from another thread, call ``trio.from_thread.run(ref.stop)``.
        """
        cell = self._cell
        if not in_trio_thread(cell.token):
            raise foreign_thread_error(
                f"stop of actor {cell.address.name!r}", "trio.from_thread.run(ref.stop)"
            )
        if current_address.get() == cell.address and cell.state is not ActorState.STOPPED:
            raise ActorError(
                f"actor {cell.address.name!r} cannot wait for its own stop; "
                "close its inbox and let its loop drain"
            )
        cell.close_mailbox()
        await cell.stopped.wait()

    async def kill(self) -> None:
        """Cancel the actor now. Messages it accepted and did not take are
        reported as dropped in the trace; the asks it accepted and did not
        answer fail, even those whose reply it handed on (see
        :class:`~actors.Reply`). Returns once it has stopped. A checkpoint.
        Only from the Trio thread of the actor's system (see :meth:`tell`):
        from another thread, call ``trio.from_thread.run(ref.kill)``."""
        cell = self._cell
        if not in_trio_thread(cell.token):
            raise foreign_thread_error(
                f"kill of actor {cell.address.name!r}", "trio.from_thread.run(ref.kill)"
            )
        cell.scope.cancel()
        await cell.stopped.wait()

    def statistics(self) -> ActorStatistics:
        cell = self._cell
        return ActorStatistics(
            address=cell.address,
            state=cell.state,
            queued=cell.send_channel.statistics().current_buffer_used,
            capacity=cell.capacity,
            delivered=cell.delivered,
            restarts=cell.restarts,
            pending_asks=len(cell.pending),
        )
