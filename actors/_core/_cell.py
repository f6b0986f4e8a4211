"""An actor's cell: the state its reference, its inbox and its task share.

An actor's mailbox is one trio memory channel, bounded by default, so a fast
sender waits for a slow actor (backpressure) instead of growing a queue. The
cell holds both ends of it, the asks waiting on it and where the actor is in
its life; only the framework builds one.
"""

from __future__ import annotations

import collections
import enum
import logging
import math
from collections.abc import Awaitable, Callable, Hashable
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar, TypeVarTuple, cast

import attrs
import outcome
import trio

from . import _footprint
from ._envelope import Address, Envelope, current_address
from ._errors import ActorError, ActorFailedError, ActorStoppedError
from ._monitors import Down, ExitReason, Failed, Killed, Monitor
from ._reply import Reply
from ._trace import EventKind, TraceEvent
from ._util import buffered, has_queued

if TYPE_CHECKING:
    from ._timekeeper import Timekeeper, Timer
    from ._trace import Tracer

logger = logging.getLogger("actors")

M = TypeVar("M")
T = TypeVar("T")
R = TypeVar("R")
Ts = TypeVarTuple("Ts")

DEFAULT_CAPACITY = 64
"""How many messages a mailbox holds before senders wait, unless told otherwise."""

RECEIVE_BATCH = 64
"""An inbox gives the scheduler a turn at least once per this many receives."""

RECEIVING = -1
"""A cell's ``receive_budget`` while its inbox waits in a receive."""


class ActorState(enum.StrEnum):
    """Where an actor is in its life: ``RUNNING`` -> ``STOPPING`` -> ``STOPPED``,
    and back from ``STOPPING`` to ``RUNNING`` when a supervisor restarts an
    actor whose mailbox was closed (on a new mailbox, see :class:`~actors.Restart`)."""

    RUNNING = "running"
    STOPPING = "stopping"
    """Its mailbox is closed; it still delivers what it accepted."""
    STOPPED = "stopped"


def check_capacity(capacity: float) -> None:
    """Raise :class:`ValueError` unless ``capacity`` is a mailbox's."""
    if not (capacity == math.inf or (isinstance(capacity, int) and capacity >= 0)):
        raise ValueError(f"capacity must be a whole number >= 0 or math.inf, not {capacity!r}")


@attrs.frozen
class ActorStatistics:
    """A snapshot of one actor's mailbox, from :meth:`ActorRef.statistics`.
    ``queued`` counts the framework's messages (``Down``, ``Listing``) waiting
    beyond the capacity too. With message latency on (``actors.run(main,
    latency=...)``), ``in_flight`` counts the messages on their way to the
    actor, and ``dropped_in_flight`` those that arrived after it had stopped
    accepting (both 0 with latency off)."""

    address: Address
    state: ActorState
    queued: int
    capacity: float
    delivered: int
    restarts: int
    pending_asks: int
    in_flight: int = 0
    dropped_in_flight: int = 0


class Carrier(Protocol):
    """What carries messages to an actor with latency on: the system's
    :class:`actors._core._transit.Transit`, as a cell and its references
    see it (declared here so that the cell does not import the transit that
    delivers into it)."""

    # Messages on their way to each actor, and those that arrived after it
    # had stopped accepting; by address, absent for none.
    in_flight: dict[Address, int]
    dropped: dict[Address, int]

    def tell_nowait(self, cell: _Cell[M], message: M) -> None:
        """``ref.tell_nowait(message)``, with latency."""

    def tell(self, cell: _Cell[M], message: M) -> Awaitable[None]:
        """``ref.tell(message)``, with latency."""

    def broadcast(self, sender: Address, cell: _Cell[M], envelope: Envelope[M]) -> None:
        """A sequencer's stamped ``envelope`` for its member ``cell``, with
        latency: on the route from ``sender`` (the sequencer) to it."""

    def ask(
        self,
        cell: _Cell[M],
        build: Callable[[*Ts, Reply[R]], M],
        args: tuple[*Ts],
        deadline: float,
        timeout: float | None,
    ) -> Awaitable[R]:
        """``ref.ask(build, *args)``, with latency, until ``deadline``."""

    def post_from(self, sender: Address, cell: _Cell[Any], message: object) -> None:
        """:meth:`_Cell.post` ``message`` (a ``Down`` of ``sender``) after
        what ``sender`` sent ``cell`` and is still on its way."""


@attrs.define(eq=False)
class _Links:
    """What only some actors have: monitors, end callbacks, timers. Made on
    first use, so an actor that uses none pays nothing for them."""

    # Monitors on this actor: the watcher of each.
    watchers: dict[Monitor, _Cell[Any]] = attrs.field(factory=dict)
    # Monitors this actor's current incarnation made: the target of each.
    # Invariant: m in a.watching[m] is b  <=>  m in b.watchers and b.watchers[m] is a.
    watching: dict[Monitor, _Cell[Any]] = attrs.field(factory=dict)
    monitors_made: int = 0
    # Called with the exit reason when the actor ends for good (the registry's
    # entries and subscriptions leave this way).
    on_end: list[Callable[[ExitReason], None]] = attrs.field(factory=list)
    # Called with the reason whenever a behaviour call ends, restarted or
    # not (the nodes' exports tell their peers this way: actors.net).
    on_incarnation_end: list[Callable[[ExitReason], None]] = attrs.field(factory=list)
    # The current incarnation's timers, by key (see ._timers).
    timers: dict[Hashable, Timer] | None = None
    # The messages of timers posted and not yet taken, by stamp: a message
    # whose timer was cancelled since is discarded as it is taken.
    timed: dict[int, Timer] | None = None


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
    # The system's timer task: timers and the deadlines of asks.
    timekeeper: Timekeeper
    # With message latency on, what carries tells, asks and their answers
    # (see ._transit); None with latency off, and for a remote reference.
    transit: Carrier | None = None
    # Invariant: every direct envelope's seq is below next_seq, and the stamps
    # the mailbox accepts are strictly increasing (a sender cancelled while it
    # waited for room leaves a gap: its message was never accepted).
    next_seq: int = 0
    # Envelopes taken, from the channel and from the system queue.
    delivered: int = 0
    # Asks whose asker still waits, by the stamp of their message (the asker
    # removes its own when it returns): each one's reply, which holds the
    # ask's envelope and whether the actor took it. None until the first ask.
    pending: dict[int, Reply[Any]] | None = None
    restarts: int = 0
    state: ActorState = ActorState.RUNNING
    # Receives left in the inbox's batch; RECEIVING exactly while the inbox
    # waits in a receive, which may hand it an envelope it has not counted
    # in ``delivered`` yet (see post).
    receive_budget: int = RECEIVE_BATCH
    # The inbox's task while RECEIVING: how it will resume says whether it
    # was handed an envelope or its wait was cancelled.
    receiver: Any = None
    # The current incarnation's scope (kill cancels it), or between
    # incarnations the scope of the wait for the next one (a back-off).
    scope: trio.CancelScope = attrs.field(factory=trio.CancelScope)
    # Invariant: True exactly while a behaviour call is in progress.
    running: bool = False
    # The mailbox was closed from outside (ref.stop, a scope's end): a return
    # is then a Stopped end, not a Normal one.
    stop_requested: bool = False
    # The next end is for good: no supervisor restarts the actor.
    final: bool = False
    # The stamp of the envelope the current incarnation took last.
    handling: int | None = None
    # Set once, when the actor ended for good (state STOPPED).
    exit_reason: ExitReason | None = None
    # Framework messages (Down, Listing) that found the mailbox full, each with
    # the number of envelopes that must be taken before it (what the mailbox
    # held when it came). None until first needed.
    system_queue: collections.deque[tuple[int, Envelope[M]]] | None = None
    links: _Links | None = None
    # Tasks in ref.stop(), ref.kill() or ref.wait_stopped(), woken when an
    # incarnation ends. None until the first such wait (apart from the
    # links: a stop needs none of them).
    incarnation_ended: trio.lowlevel.ParkingLot | None = None

    @classmethod
    def open(
        cls,
        address: Address,
        capacity: float,
        tracer: Tracer | None,
        timekeeper: Timekeeper,
        transit: Carrier | None = None,
    ) -> _Cell[M]:
        check_capacity(capacity)
        send, receive = trio.open_memory_channel[Envelope[M]](capacity)
        token = trio.lowlevel.current_trio_token()
        return cls(address, send, receive, capacity, tracer, token, timekeeper, transit)

    def linked(self) -> _Links:
        _footprint.touch_actor(self.address)
        links = self.links
        if links is None:
            links = self.links = _Links()
        return links

    def record(self, kind: EventKind, seq: int | None = None, detail: str | None = None) -> None:
        if self.tracer is not None:
            self.tracer.record(
                TraceEvent(trio.current_time(), self.address.name, kind, seq, detail)
            )

    def stopped_error(self) -> ActorStoppedError:
        return ActorStoppedError(f"actor {self.address.name!r} is stopped")

    def not_running_error(self, call: str) -> ActorStoppedError:
        """The error of ``call``, which belongs to an incarnation (a timer, a
        monitor), made while none runs: the actor ended, or waits to be
        restarted (the next incarnation makes its own)."""
        why = "is stopped" if self.state is ActorState.STOPPED else "waits to be restarted"
        return ActorStoppedError(
            f"{call} of actor {self.address.name!r}: the actor {why}, "
            "and timers and monitors belong to a running incarnation"
        )

    def tell_directly_nowait(self, message: M) -> None:
        """A tell of ``message`` into the mailbox now, stamped from its count
        and sent by the current actor, with no latency: raises
        :class:`trio.WouldBlock` if the mailbox is full (nothing is queued
        then), :class:`~actors.ActorStoppedError` if it is closed."""
        envelope = Envelope(message, self.next_seq, current_address.get())
        try:
            self.send_channel.send_nowait(envelope)
        except (trio.ClosedResourceError, trio.BrokenResourceError):
            raise self.stopped_error() from None
        self.next_seq += 1

    async def tell_directly(self, message: M) -> None:
        """A tell of ``message`` into the mailbox, waiting for room while it
        is full, with no latency (as :meth:`tell_directly_nowait`). The stamp
        is taken before it waits: a cancelled tell leaves a gap in them."""
        seq = self.next_seq
        self.next_seq = seq + 1
        try:
            await self.send_channel.send(Envelope(message, seq, current_address.get()))
        except (trio.ClosedResourceError, trio.BrokenResourceError):
            raise self.stopped_error() from None

    async def put(self, envelope: Envelope[M]) -> None:
        """Put ``envelope`` in the mailbox, waiting for room while it is full.

        A checkpoint only when it waits; if cancelled then, the envelope was
        not accepted (and never will be). Raises
        :class:`~actors.ActorStoppedError` if the mailbox is closed, or closes
        before there is room.
        """
        _footprint.touch_actor(self.address)
        try:
            try:
                self.send_channel.send_nowait(envelope)
            except trio.WouldBlock:
                await self.send_channel.send(envelope)
        except (trio.ClosedResourceError, trio.BrokenResourceError):
            raise self.stopped_error() from None

    def post(self, message: object) -> Envelope[M] | None:
        """Deliver a framework message (``Down``, ``Listing``, a timer's) now,
        whatever the mailbox holds: into the mailbox if it has room, else into
        the system queue, from which the inbox takes it once it has taken
        everything the mailbox accepted before it. So it neither waits nor
        overtakes. Stamped from the mailbox's count, sender ``None``; returns
        the envelope. Nothing happens (None) once the actor stopped."""
        _footprint.touch_actor(self.address)
        if self.state is ActorState.STOPPED:
            return None
        envelope = cast("Envelope[M]", Envelope(message, self.next_seq, None))
        self.next_seq += 1
        queue = self.system_queue
        if not queue:
            try:
                self.send_channel.send_nowait(envelope)
            except (trio.WouldBlock, trio.ClosedResourceError, trio.BrokenResourceError):
                pass
            else:
                return envelope
            if queue is None:
                queue = self.system_queue = collections.deque()
        ahead = buffered(self.receive_channel) + len(queue)
        if (
            self.receive_budget == RECEIVING
            and not self.receive_channel._state.receive_tasks
            and not isinstance(getattr(self.receiver, "_next_send", None), outcome.Error)
        ):
            # The inbox was handed an envelope (the mailbox accepted it) and
            # has not run since to count it as delivered: it comes first too.
            # (Not when its wait was cancelled: it resumes with the error, and
            # took nothing.)
            ahead += 1
        queue.append((self.delivered + ahead, envelope))
        return envelope

    def unqueue(self, envelope: Envelope[M]) -> bool:
        """Take ``envelope`` out of the mailbox if it waits there (True): the
        first sender waiting for room takes its place, as a receive lets it
        in; else the framework messages queued beyond it move up one turn."""
        state = self.receive_channel._state
        data = state.data
        index = next((i for i, queued in enumerate(data) if queued is envelope), None)
        if index is None:
            return False
        del data[index]
        if state.send_tasks:
            task, waiting = state.send_tasks.popitem(last=False)
            task.custom_sleep_data._tasks.remove(task)
            trio.lowlevel.reschedule(task)
            data.append(waiting)
        elif self.system_queue:
            after = self.delivered + index
            self.system_queue = collections.deque(
                (turn - 1 if turn > after else turn, queued) for turn, queued in self.system_queue
            )
        return True

    def post_from(self, sender: Address, message: object) -> None:
        """:meth:`post` ``message`` on behalf of the actor at ``sender`` (a
        ``Down`` of it): with latency on, after the messages ``sender`` sent
        this actor that are still on their way, so it never overtakes them."""
        if self.transit is None:
            self.post(message)
        else:
            self.transit.post_from(sender, self, message)

    def post_latest(self, message: object, supersedes: Callable[[object], bool]) -> None:
        """:meth:`post` ``message``, first withdrawing the framework message
        waiting beyond the capacity that it ``supersedes`` (a listing of the
        same key), if any: what waits there for an actor that does not keep
        up then holds one of each, however many changes come. Those after
        it move up one turn; one already in the mailbox is left there."""
        _footprint.touch_actor(self.address)
        queue = self.system_queue
        if queue:
            for index, (_, envelope) in enumerate(queue):
                if supersedes(envelope.message):
                    del queue[index]
                    for later in range(index, len(queue)):
                        turn, waiting = queue[later]
                        queue[later] = (turn - 1, waiting)
                    break
        self.post(message)

    def take_system(self, closed: bool) -> Envelope[M] | None:
        """The system queue's first envelope if its turn came (or the mailbox is
        ``closed`` and drained), else None."""
        queue = self.system_queue
        if queue and (closed or self.delivered >= queue[0][0]):
            return queue.popleft()[1]
        return None

    def request_stop(self) -> None:
        """A graceful stop, the part that does not wait: the end is a
        ``Stopped`` one, and the mailbox accepts nothing more. Idempotent."""
        if self.state is not ActorState.STOPPED:
            self.stop_requested = True
            self.close_mailbox()

    def close_mailbox(self) -> None:
        """Accept nothing more; what was accepted is still delivered. Idempotent."""
        if self.state is ActorState.RUNNING:
            self.state = ActorState.STOPPING
            self.send_channel.close()
            if self.tracer is not None:
                self.record(EventKind.STOPPING)

    def reopen_mailbox(self) -> None:
        """A supervisor restarts the actor after its mailbox was closed: a new
        mailbox of the same capacity takes over what the old one still held."""
        assert self.state is ActorState.STOPPING, "only a closed mailbox is reopened"
        send, receive = trio.open_memory_channel[Envelope[M]](self.capacity)
        while True:
            try:
                send.send_nowait(self.receive_channel.receive_nowait())
            except (trio.WouldBlock, trio.EndOfChannel):
                break
        self.receive_channel.close()
        self.send_channel, self.receive_channel = send, receive
        self.state = ActorState.RUNNING

    def monitor(self, target: _Cell[Any]) -> Monitor:
        """This actor asks for a ``Down`` when ``target`` ends (at once if it has)."""
        links = self.linked()
        monitor = Monitor(self.address, target.address, links.monitors_made)
        links.monitors_made += 1
        if target.exit_reason is not None:
            self.post_from(target.address, Down(target.address, target.exit_reason, monitor))
        else:
            target.linked().watchers[monitor] = self
            links.watching[monitor] = target
        return monitor

    def demonitor(self, monitor: Monitor) -> bool:
        """Remove ``monitor``: True if no ``Down`` was sent for it, so none will
        come; False if one was (or it is not this actor's)."""
        links = self.links
        target = None if links is None else links.watching.pop(monitor, None)
        if target is None:
            return False
        assert target.links is not None, "a watched actor has links"
        del target.links.watchers[monitor]
        return True

    async def wait_incarnation_end(self) -> None:
        """Wait until the running incarnation ends (at once if the actor stopped)."""
        if self.state is ActorState.STOPPED:
            await trio.lowlevel.checkpoint()
            return
        lot = self.incarnation_ended
        if lot is None:
            lot = self.incarnation_ended = trio.lowlevel.ParkingLot()
        await lot.park()

    async def wait_ended(self) -> ExitReason:
        """Wait until the actor ended for good (through its restarts), and
        return why. A checkpoint; if cancelled, nothing changes."""
        await self.wait_incarnation_end()
        while self.exit_reason is None:
            await self.wait_incarnation_end()
        return self.exit_reason

    def fail_taken_asks(self, failure: Exception | None) -> None:
        """The behaviour failed with ``failure``, or was cancelled (``None``):
        the asks it took and did not answer get no answer from it, even where
        it handed their replies on."""
        name = self.address.name
        pending = self.pending or {}
        for seq in [seq for seq, reply in pending.items() if reply._taken and not reply.done]:
            error: ActorError
            if failure is None:
                error = ActorStoppedError(
                    f"actor {name!r} was cancelled before replying to message {seq}"
                )
            else:
                error = ActorFailedError(f"actor {name!r} failed before replying to message {seq}")
                error.__cause__ = failure
            pending.pop(seq)._withdraw(error)

    def end_incarnation(self, reason: ExitReason) -> None:
        """The running behaviour call ended for ``reason``: fail the asks it
        took if it failed or was cancelled, drop the monitors it made and
        cancel its timers, wake whoever waits for the end of this
        incarnation."""
        self.running = False
        if self.pending:
            if isinstance(reason, Failed):
                self.fail_taken_asks(reason.error)
            elif isinstance(reason, Killed):
                self.fail_taken_asks(None)
        links = self.links
        if links is not None:
            for monitor, target in links.watching.items():
                assert target.links is not None, "a watched actor has links"
                del target.links.watchers[monitor]
            links.watching.clear()
            if links.timers:
                for timer in links.timers.values():
                    timer.cancel()
                links.timers.clear()
            for ended in list(links.on_incarnation_end):
                ended(reason)
        if self.incarnation_ended is not None:
            self.incarnation_ended.unpark_all()

    def terminate(self, reason: ExitReason) -> None:
        """The actor's task is ending for ``reason``: close the mailbox, report
        what it accepted and will never deliver, fail the asks that will get no
        reply (those it never took; those it took were settled when its last
        incarnation ended), and tell its watchers. What no actor of the end
        needs (no message left, no ask, no tracer, no links) costs a test."""
        if self.running:
            self.end_incarnation(reason)
        self.close_mailbox()
        receive = self.receive_channel
        if self.system_queue is not None or has_queued(receive):
            self._drop_undelivered()
        receive.close()
        if self.pending:
            self._withdraw_untaken()
        self.state = ActorState.STOPPED
        self.exit_reason = reason
        if self.tracer is not None:
            self.record(EventKind.STOPPED, detail=type(reason).__name__.lower())
        links = self.links
        if links is not None:
            links.timed = None
            if links.watchers:
                address = self.address
                for monitor, watcher in links.watchers.items():
                    assert watcher.links is not None, "a watcher has links"
                    del watcher.links.watching[monitor]
                    watcher.post_from(address, Down(address, reason, monitor))
                links.watchers.clear()
            if links.on_end:
                for callback in links.on_end:
                    callback(reason)
                links.on_end.clear()
        if self.incarnation_ended is not None:
            self.incarnation_ended.unpark_all()

    def _drop_undelivered(self) -> None:
        """Report what the closed mailbox accepted and will never deliver
        (the system queue's framework messages too), and empty it."""
        dropped = 0
        while has_queued(self.receive_channel):
            envelope = self.receive_channel.receive_nowait()
            dropped += 1
            self.record(EventKind.DROPPED, envelope.seq)
        for _, envelope in self.system_queue or ():
            dropped += 1
            self.record(EventKind.DROPPED, envelope.seq)
        self.system_queue = None
        if dropped:
            logger.warning(
                "actor %r ended with %d undelivered messages (dropped)", self.address.name, dropped
            )

    def _withdraw_untaken(self) -> None:
        """Fail the pending asks whose message the actor never took."""
        name = self.address.name
        pending = self.pending or {}
        for seq in [seq for seq, reply in pending.items() if not (reply._taken or reply.done)]:
            pending.pop(seq)._withdraw(
                ActorStoppedError(f"actor {name!r} stopped before taking message {seq}")
            )


async def stop_last_first(entries: dict[Any, T], cell_of: Callable[[T], _Cell[Any]]) -> None:
    """Stop the actors of ``entries`` for good, gracefully, last added first,
    each once the one after it stopped; ``entries`` shrinks as each one's task
    ends. None of them is restarted from here on, and those waiting to be
    restarted stop waiting."""
    for entry in entries.values():
        _make_final(cell_of(entry))
    while entries:
        cell = cell_of(next(reversed(entries.values())))
        # Again: an actor started while the others stop (spawned by one
        # that drains its mailbox) was not there above.
        _make_final(cell)
        cell.stop_requested = True
        cell.close_mailbox()
        await cell.wait_ended()


def _make_final(cell: _Cell[Any]) -> None:
    """``cell``'s next end is for good; a wait to be restarted ends now."""
    cell.final = True
    if not cell.running:
        cell.scope.cancel()
