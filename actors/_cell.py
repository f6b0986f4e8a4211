"""An actor's cell: the state its reference, its inbox and its task share.

An actor's mailbox is one trio memory channel, bounded by default, so a fast
sender waits for a slow actor (backpressure) instead of growing a queue. The
cell holds both ends of it, the asks waiting on it and where the actor is in
its life; only the framework builds one.
"""

from __future__ import annotations

import enum
import logging
import math
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import attrs
import trio

from ._envelope import Address, Envelope
from ._errors import ActorError, ActorFailedError, ActorStoppedError
from ._reply import Reply
from ._trace import EventKind, TraceEvent

if TYPE_CHECKING:
    from ._trace import Tracer

logger = logging.getLogger("actors")

M = TypeVar("M")

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


async def stop_last_first(cells: dict[Any, _Cell[Any]]) -> None:
    """Stop the actors of ``cells`` gracefully, last added first, each once the
    one after it stopped; ``cells`` shrinks as each one's task ends."""
    while cells:
        cell = next(reversed(cells.values()))
        cell.close_mailbox()
        await cell.stopped.wait()
