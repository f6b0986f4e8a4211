"""Messages in transit: the message latency of a seeded run.

With latency on (``actors.run(main, latency=...)``, or ``open_system(latency=...)``)
every message between actors takes a virtual delay drawn from the system's
seeded generator: a ``tell``, a ``tell_nowait`` and an ``ask``'s message on the
way to the mailbox, and an ask's answer on the way back to the asker.

The messages of one sender to one receiver travel one :class:`_Route`, a FIFO:
each is due at ``max(sent + delay, due time of the one before it)``, so they
arrive in the order they were sent, as Erlang guarantees between two
processes; and nothing more: two senders' routes to one receiver interleave as
their delays fall. A sender is the actor whose task sends (the tasks an actor
starts count as the actor), or the Trio task itself outside any actor; an
asker receives its answer as a receiver of its own. The system's timer task
(:class:`~actors._core._timekeeper.Timekeeper`) delivers a route's head once it
is due. A head that finds its mailbox full waits there for room, with the rest
of its route behind it (the only route task: ``actors.transit``, in the system's
nursery, until it is through), so a mailbox never holds more than its capacity
and nothing is dropped or reordered for it.

A ``Down`` is the ended actor's last word: it takes that actor's route to the
watcher, with no delay of its own, after every message the actor sent the
watcher that is still on its way. So is the failure of an ask whose message
reached an actor that had stopped. Timers' messages (they are the timer's, not
the actor's), listings and a sequencer's broadcasts take no route and no
delay.

A message that arrives after its actor stopped accepting (its mailbox closed)
is dropped, counted (``ActorStatistics.dropped_in_flight``), traced (a
``dropped`` event with no stamp: it never had one) and logged; an ask whose
message is dropped fails with :class:`~actors.ActorStoppedError`. An answer is
never dropped: when the system ends, what is still on its way is dropped or,
for an answer, handed to its asker at once.
"""

from __future__ import annotations

import collections
import enum
import math
import numbers
import random
from collections.abc import Callable, Hashable
from typing import Any, Protocol, TypeVar, TypeVarTuple, cast, final

import outcome
import trio

from . import _footprint
from ._cell import ActorState, _Cell, logger
from ._envelope import Address, Envelope, current_address
from ._errors import ActorStoppedError
from ._mailbox import _timeout_error
from ._reply import Reply
from ._timekeeper import Timekeeper
from ._trace import EventKind

M = TypeVar("M")
R = TypeVar("R")
Ts = TypeVarTuple("Ts")

Latency = float | tuple[float, float] | None
"""A message latency as :func:`actors.run` takes it: ``None`` (off), a bound
``L`` (each delay uniform in ``[0, L]`` seconds), or a pair ``(low, high)``."""

Bounds = tuple[float, float]

_RUNNING = ActorState.RUNNING


# The longest delay: a virtual year (beyond it the clock's time plus the
# delay loses its precision, or overflows to inf).
MAX_LATENCY = 365 * 24 * 3600.0


def _seconds(value: object, latency: object) -> float:
    """One bound of ``latency``, as a float, or a named error."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(
            "latency must be None, a number of seconds or a pair (low, high) of them, "
            f"not {latency!r:.80}"
        )
    try:
        seconds = float(value)
    except OverflowError:
        seconds = math.inf
    if not (math.isfinite(seconds) and 0 <= seconds <= MAX_LATENCY):
        raise ValueError(
            f"latency must be a number of seconds from 0 to {MAX_LATENCY:g} or a pair "
            f"(low, high) of them, not {latency!r:.80}"
        )
    return abs(seconds)  # -0.0 as 0.0


def check_latency(latency: object) -> Bounds | None:
    """``latency`` as the bounds ``(low, high)`` of each delay, or None (off):
    :class:`TypeError` for what is not a number or a pair of numbers (a
    ``bool`` is not), :class:`ValueError` for a negative, NaN or infinite
    bound, one over :data:`MAX_LATENCY` (a year), or a pair whose low bound
    is above its high one."""
    if latency is None:
        return None
    if isinstance(latency, tuple):
        if len(latency) != 2:
            raise TypeError(f"latency (low, high) must be a pair, not {latency!r:.80}")
        low, high = (_seconds(value, latency) for value in latency)
        if low > high:
            raise ValueError(f"latency (low, high) must have low <= high, not {latency!r}")
        return (low, high)
    return (0.0, _seconds(latency, latency))


def _sender() -> Hashable:
    """Who sends from here: the running actor, else the Trio task."""
    address = current_address.get()
    return address if address is not None else trio.lowlevel.current_task()


class _Parcel(Protocol):
    """What travels a route."""

    # When it is due; set as it is sent.
    due: float

    def deliver(self, transit: Transit) -> bool:
        """It is due: deliver it; False if it must wait for room first."""

    def abandon(self, transit: Transit) -> None:
        """The system ended before it was due: drop it, or hand it over now."""


@final
class _Asking:
    """The asker's side of an ask with latency: where the answer arrives."""

    __slots__ = ("arrived", "asker", "reply", "result", "transit")

    def __init__(self, transit: Transit, asker: Hashable, reply: Reply[Any]) -> None:
        self.transit = transit
        # The asker as a receiver: its answer travels the route to it.
        self.asker = asker
        # Its reply holds this through its _notify until the asker returns.
        self.reply = reply
        self.arrived = trio.Event()
        self.result: outcome.Outcome[Any] | None = None

    def answered(self, result: outcome.Outcome[Any]) -> None:
        """The reply was completed (this is the reply's ``_notify``): the
        answer travels back to the asker from whoever completed it."""
        transit = self.transit
        transit.send(_sender(), self.asker, _Answer(self, result), transit.delay())

    def arrive(self, result: outcome.Outcome[Any]) -> None:
        if self.result is None:
            self.result = result
            self.arrived.set()


@final
class _Answer:
    """An ask's answer on its way back to the asker."""

    __slots__ = ("asking", "due", "result")

    def __init__(self, asking: _Asking, result: outcome.Outcome[Any]) -> None:
        self.asking = asking
        self.result = result
        self.due = 0.0

    def deliver(self, transit: Transit) -> bool:
        self.asking.arrive(self.result)
        return True

    def abandon(self, transit: Transit) -> None:
        self.asking.arrive(self.result)


@final
class _Post:
    """A framework message (a ``Down``) following its sender's route."""

    __slots__ = ("cell", "due", "message")

    def __init__(self, cell: _Cell[Any], message: object) -> None:
        self.cell = cell
        self.message = message
        self.due = 0.0

    def deliver(self, transit: Transit) -> bool:
        self.cell.post(self.message)
        return True

    def abandon(self, transit: Transit) -> None:
        self.cell.post(self.message)


class _Phase(enum.Enum):
    """Where a letter is."""

    FLYING = "on its way"
    WAITING = "at its mailbox, waiting for room"
    ACCEPTED = "in the mailbox"
    WITHDRAWN = "withdrawn by its asker before the mailbox accepted it: never sent"
    DROPPED = "dropped: its actor had stopped accepting"


_FLYING, _WAITING, _ACCEPTED, _WITHDRAWN, _DROPPED = _Phase


@final
class _Letter:
    """A tell's or an ask's message on its way to an actor's mailbox."""

    __slots__ = ("asking", "cell", "due", "envelope", "message", "phase", "room", "sender")

    def __init__(
        self,
        cell: _Cell[Any],
        message: object,
        sender: Address | None,
        asking: _Asking | None,
        envelope: Envelope[Any] | None = None,
    ) -> None:
        self.cell = cell
        self.message = message
        self.sender = sender
        # The ask it is the message of, if any.
        self.asking = asking
        self.due = 0.0
        # Invariant: counted in its transit's in_flight exactly while
        # FLYING or WAITING.
        self.phase = _FLYING
        # Stamped as it reaches the mailbox, unless it came stamped (a
        # sequencer's broadcast: the sequencer's stamp).
        self.envelope: Envelope[Any] | None = envelope
        # While it waits in the mailbox's channel: the scope of that wait
        # (its asker cancels it to withdraw the letter) and the task waiting.
        self.room: tuple[trio.CancelScope, trio.lowlevel.Task] | None = None

    def __repr__(self) -> str:
        return f"<letter to actor {self.cell.address.name!r}: {self.phase.value}>"

    def deliver(self, transit: Transit) -> bool:
        if self.phase is _WITHDRAWN:
            return True
        cell = self.cell
        if cell.state is not _RUNNING:
            transit.drop(self, "stopped before the message in flight reached it")
            return True
        envelope = self.envelope
        if envelope is None:
            # Stamped now: the mailbox's count orders what it accepts.
            seq = cell.next_seq
            cell.next_seq = seq + 1
            envelope = self.envelope = Envelope(self.message, seq, self.sender)
        asking = self.asking
        if asking is not None:
            # The ask's entry in the cell's pending asks, as ActorRef.ask
            # makes it, before the mailbox may hand the envelope on.
            reply = asking.reply
            reply._seq = seq
            reply._envelope = envelope
            pending = cell.pending
            if pending is None:
                pending = cell.pending = {}
            pending[seq] = reply
        try:
            cell.send_channel.send_nowait(envelope)  # open: the actor is running
        except trio.WouldBlock:
            self.phase = _WAITING
            return False
        self.phase = _ACCEPTED
        transit.arrived(cell.address)
        return True

    async def wait_for_room(self, transit: Transit) -> None:
        """Put the stamped envelope in the full mailbox, waiting for room
        (in the route's task): accepted, dropped if the mailbox closes
        first, or withdrawn by its asker (before or during the wait)."""
        envelope = self.envelope
        assert envelope is not None, "a letter at its mailbox is stamped"
        if self.phase is _WAITING:
            with trio.CancelScope() as scope:
                self.room = (scope, trio.lowlevel.current_task())
                try:
                    await self.cell.put(envelope)
                except ActorStoppedError:
                    self.room = None
                    transit.drop(self, "stopped before the message waiting for room reached it")
                    return
                self.room = None
                self.phase = _ACCEPTED
                transit.arrived(self.cell.address)
                return
            self.room = None
        assert self.phase is _WITHDRAWN, "only its asker withdraws a letter"
        self.unask()

    def withdraw(self, transit: Transit) -> bool:
        """Its asker gives up: withdraw the letter if the mailbox has not
        accepted it; whether it did (the message was never sent)."""
        if self.phase is _WAITING:
            room = self.room
            if room is not None:
                scope, task = room
                if task not in self.cell.send_channel._state.send_tasks:
                    return False  # accepted, the route task not told yet
                scope.cancel()  # takes it out of the channel at once
        elif self.phase is not _FLYING:
            return False
        self.phase = _WITHDRAWN
        transit.arrived(self.cell.address)
        return True

    def unask(self) -> bool:
        """Take its ask out of the cell's pending asks, if it is still there
        (stamped, and not failed since); whether it was."""
        envelope = self.envelope
        if self.asking is None or envelope is None:
            return False
        reply = self.asking.reply
        reply._envelope = None
        pending = self.cell.pending
        return pending is not None and pending.pop(envelope.seq, None) is reply

    def abandon(self, transit: Transit) -> None:
        if self.phase is _FLYING or self.phase is _WAITING:
            transit.drop(self, "ended with its system before the message in flight reached it")


@final
class _Route:
    """The messages of one sender to one receiver still on their way, in the
    order sent; in the timekeeper's heap for its head's due time."""

    __slots__ = ("key", "parcels", "scheduled", "transit")

    def __init__(self, transit: Transit, key: tuple[Hashable, Hashable]) -> None:
        self.transit = transit
        self.key = key
        # Invariant: due times never decrease along the deque.
        self.parcels: collections.deque[_Parcel] = collections.deque()
        self.scheduled = False

    def due(self, timekeeper: Timekeeper, when: float) -> None:
        self.scheduled = False
        self.transit.deliver(self)

    def orphaned(self) -> None:
        self.scheduled = False
        self.transit.abandon(self)


@final
class Transit:
    """A system's messages in transit, by route, with their seeded delays."""

    def __init__(
        self,
        nursery: trio.Nursery,
        timekeeper: Timekeeper,
        bounds: Bounds,
        generator: random.Random,
    ) -> None:
        self._nursery = nursery
        self._timekeeper = timekeeper
        self.low, self.high = bounds
        self._random = generator
        # Invariant: every route here holds a parcel, and is either in the
        # timekeeper's heap or its head waits for room (in a route task).
        self._routes: dict[tuple[Hashable, Hashable], _Route] = {}
        # Letters on their way to each actor, and those dropped at it.
        self.in_flight: dict[Address, int] = {}
        self.dropped: dict[Address, int] = {}

    def __repr__(self) -> str:
        return f"<Transit latency=({self.low:g}, {self.high:g}) routes={len(self._routes)}>"

    def delay(self) -> float:
        """The next message's delay."""
        _footprint.touch(self)
        return self._random.uniform(self.low, self.high)

    # ---- sending -----------------------------------------------------------

    def tell_nowait(self, cell: _Cell[M], message: M) -> None:
        _footprint.touch(self)
        if cell.state is not _RUNNING:
            raise cell.stopped_error()
        sender = current_address.get()
        key = sender if sender is not None else trio.lowlevel.current_task()
        self.send(key, cell.address, _Letter(cell, message, sender, None), self.delay())

    async def tell(self, cell: _Cell[M], message: M) -> None:
        _footprint.touch(self)
        await trio.lowlevel.checkpoint_if_cancelled()
        self.tell_nowait(cell, message)
        await trio.lowlevel.cancel_shielded_checkpoint()

    async def ask(
        self,
        cell: _Cell[M],
        build: Callable[[*Ts, Reply[R]], M],
        args: tuple[*Ts],
        deadline: float,
        timeout: float | None,  # noqa: ASYNC109 (only named in the error; the deadline bounds the wait)
    ) -> R:
        """:meth:`actors.ActorRef.ask` with latency, once its thread, timeout
        and cancellation were checked: the message travels to the mailbox,
        the answer back, and ``deadline`` bounds both. An asker that gives up
        (times out, or is cancelled) before the mailbox accepted its message
        withdraws it: it is never sent."""
        sender = current_address.get()
        asker = sender if sender is not None else trio.lowlevel.current_task()
        # Its stamp comes as its message reaches the mailbox (_Letter.deliver).
        reply = cast("Reply[R]", Reply._create(cell.address.name, -1, cell.tracer, cell.token))
        message = build(*args, reply)
        if cell.state is not _RUNNING:
            raise cell.stopped_error()
        asking = _Asking(self, asker, reply)
        reply._notify = asking.answered
        letter = _Letter(cell, message, sender, asking)
        self.send(asker, cell.address, letter, self.delay())
        try:
            with trio.move_on_at(deadline):
                await asking.arrived.wait()
            result = asking.result
            if result is None:
                assert timeout is not None, "only a deadline ends the wait without an answer"
                raise _timeout_error(cell, timeout, accepted=not letter.withdraw(self))
            answer: R = result.unwrap()
            return answer
        finally:
            letter.withdraw(self)
            letter.unask()
            # An answer from now on is kept in the reply and read by no one
            # (and the reply no longer holds the asker's side).
            reply._notify = None
            if reply._completion is None:
                reply._abandoned = True

    def broadcast(self, sender: Address, cell: _Cell[M], envelope: Envelope[M]) -> None:
        """A sequencer's stamped ``envelope`` on its way to the member
        ``cell``: after its delay, behind what the sequencer sent the member
        before (each member receives the stamps in order); dropped, as a
        tell is, if the member stopped meanwhile."""
        _footprint.touch(self)
        letter = _Letter(cell, envelope.message, sender, None, envelope)
        self.send(sender, cell.address, letter, self.delay())

    def post_from(self, sender: Address, cell: _Cell[Any], message: object) -> None:
        _footprint.touch(self)
        route = self._routes.get((sender, cell.address))
        if route is None:
            cell.post(message)
        else:
            self.follow(route, _Post(cell, message))

    def send(self, sender: Hashable, receiver: Hashable, parcel: _Parcel, delay: float) -> None:
        """Send ``parcel`` down the route from ``sender`` to ``receiver``,
        due in ``delay`` seconds or with the one before it, if later."""
        _footprint.touch(self)
        if isinstance(parcel, _Letter):
            address = parcel.cell.address
            self.in_flight[address] = self.in_flight.get(address, 0) + 1
        due = trio.current_time() + delay
        key = (sender, receiver)
        route = self._routes.get(key)
        if route is not None:
            last = route.parcels[-1].due
            parcel.due = due if due > last else last
            route.parcels.append(parcel)
            return
        route = self._routes[key] = _Route(self, key)
        parcel.due = due
        route.parcels.append(parcel)
        if not self._timekeeper.schedule(due, route):
            self.abandon(route)

    def follow(self, route: _Route, parcel: _Parcel) -> None:
        """Append ``parcel``, with no delay of its own, to ``route``."""
        _footprint.touch(self)
        parcel.due = route.parcels[-1].due
        route.parcels.append(parcel)

    # ---- delivering --------------------------------------------------------

    def deliver(self, route: _Route) -> None:
        """Deliver what is due on ``route``, in order, until a parcel that is
        not due yet (the route waits in the timekeeper's heap for it) or a
        letter that finds its mailbox full (the route waits for room)."""
        _footprint.touch(self)
        now = trio.current_time()
        parcels = route.parcels
        while parcels:
            parcel = parcels[0]
            if parcel.due > now:
                if not self._timekeeper.schedule(parcel.due, route):
                    self.abandon(route)
                return
            if not parcel.deliver(self):
                assert isinstance(parcel, _Letter), "only a letter waits for room"
                name = f"actors.transit to {parcel.cell.address.name!r}"
                self._nursery.start_soon(self._wait_for_room, route, parcel, name=name)
                return
            parcels.popleft()
        del self._routes[route.key]

    async def _wait_for_room(self, route: _Route, letter: _Letter) -> None:
        """The route task: ``letter`` waits for room in its mailbox, the rest
        of ``route`` behind it; then the route goes on."""
        _footprint.touch(self)
        current_address.set(None)  # not the actor whose send started it
        _footprint.belong(self)
        try:
            await letter.wait_for_room(self)
        except BaseException:
            self.abandon(route)  # the system was cancelled
            raise
        route.parcels.popleft()
        self.deliver(route)

    def arrived(self, address: Address) -> None:
        """A letter to ``address`` is no longer on its way."""
        _footprint.touch(self)
        left = self.in_flight[address] - 1
        if left:
            self.in_flight[address] = left
        else:
            del self.in_flight[address]

    def drop(self, letter: _Letter, why: str) -> None:
        """``letter`` cannot be delivered (``why``: its actor's state): count,
        trace and log it; an ask of it fails."""
        _footprint.touch(self)
        cell = letter.cell
        name = cell.address.name
        letter.phase = _DROPPED
        self.arrived(cell.address)
        self.dropped[cell.address] = self.dropped.get(cell.address, 0) + 1
        sender = letter.sender
        cell.record(EventKind.DROPPED, None, None if sender is None else sender.name)
        asking = letter.asking
        if asking is None:
            logger.warning(
                "actor %r %s (from %s): dropped",
                name,
                why,
                "a task" if sender is None else f"actor {sender.name!r}",
            )
            return
        if letter.envelope is not None and not letter.unask():
            return  # its ask was failed with the actor's end: that answer is on its way
        error = outcome.Error(ActorStoppedError(f"actor {name!r} {why}"))
        # The actor's last word to the asker: after what it sent it.
        route = self._routes.get((cell.address, asking.asker))
        if route is None:
            asking.arrive(error)
        else:
            self.follow(route, _Answer(asking, error))

    def abandon(self, route: _Route) -> None:
        """The system ended (or was cancelled) with ``route`` still on its
        way: drop its letters, hand its answers and framework messages over."""
        _footprint.touch(self)
        self._routes.pop(route.key, None)
        parcels = route.parcels
        while parcels:
            parcels.popleft().abandon(self)
