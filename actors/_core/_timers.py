"""Timers: messages an actor sends itself later, or every so often, under a
key (Akka's ``TimerScheduler``; OTP's ``erlang:send_after`` and
``timer:send_interval``), kept by the system's timekeeper
(:mod:`._timekeeper`). A due timer's message goes through
:meth:`_Cell.post <actors._core._cell._Cell.post>`: it never waits for room,
and never overtakes what the mailbox accepted before it.

A timer belongs to the incarnation that set it, as a monitor does: a restart
or the end of the actor cancels it, and a closed mailbox makes it end without
a message. A message of a timer cancelled (or replaced) after it was posted is
discarded when the inbox takes it, so it is never received.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Hashable
from typing import Any, Generic, TypeVar, final

import trio

from ._cell import ActorState, _Cell, _Links
from ._envelope import Envelope
from ._timekeeper import Timekeeper, Timer
from ._util import NoPublicConstructor, foreign_thread_error, in_trio_thread

M = TypeVar("M")


class _Timer:
    """One timer of an actor: ``message`` after a delay, and every
    ``interval`` seconds after that if it is periodic."""

    __slots__ = ("cell", "interval", "key", "live", "message", "queued", "scheduled")

    def __init__(
        self, cell: _Cell[Any], key: Hashable, message: object, interval: float | None
    ) -> None:
        self.cell = cell
        self.key = key
        self.message = message
        self.interval = interval
        # Not cancelled, replaced or ended: its messages are wanted.
        self.live = True
        self.scheduled = False
        # Its message in the mailbox, posted and not yet taken.
        self.queued: Envelope[Any] | None = None

    def cancel(self) -> None:
        self.live = False
        if self.scheduled:
            self.cell.timekeeper.discard(self)

    def due(self, timekeeper: Timekeeper, when: float) -> None:
        self.scheduled = False
        cell = self.cell
        links = cell.links
        assert links is not None, "a timer's actor has links"
        assert links.timers is not None, "a timer's actor has timers"
        if cell.state is not ActorState.RUNNING:
            # A closed mailbox accepts no message, a timer's neither.
            self.live = False
            if links.timers.get(self.key) is self:
                del links.timers[self.key]
            return
        if self.queued is None:
            envelope = cell.post(self.message)
            assert envelope is not None, "a running actor takes posts"
            self.queued = envelope
            if links.timed is None:
                links.timed = {}
            links.timed[envelope.seq] = self
        # else: a periodic timer whose last message was not taken yet skips
        # this one, so a slow actor never piles up ticks.
        interval = self.interval
        if interval is not None:
            now = trio.current_time()
            later = when + interval * (math.floor((now - when) / interval) + 1)
            if later <= now:  # rounding
                later += interval
            if later <= now:
                # An interval below the clock's resolution at ``now`` (1e-20
                # at 1000 s) adds nothing: the next beat is the clock's next
                # value, or the task would fire this timer again and again
                # without ever sleeping, and the run would hang.
                later = math.nextafter(now, math.inf)
            timekeeper.schedule(later, self)

    def orphaned(self) -> None:
        self.scheduled = False


def timer_message_taken(links: _Links, envelope: Envelope[Any]) -> bool:
    """The inbox took ``envelope``: False if it is the message of a timer
    cancelled since (to be discarded, not received). A one-off timer whose
    message is received is done."""
    timed = links.timed
    assert timed is not None
    timer = timed.get(envelope.seq)
    if timer is None or timer.queued is not envelope:
        return True  # not a timer's message (a sequencer's stamp, say)
    del timed[envelope.seq]
    timer.queued = None
    if not timer.live:
        return False
    if timer.interval is None:
        timer.live = False
        timers = links.timers
        if timers is not None and timers.get(timer.key) is timer:
            del timers[timer.key]
    return True


def _seconds(value: float, what: str, *, zero: bool) -> float:
    """``value`` as a finite float, >= 0 (``zero``) or > 0; else ValueError
    (TypeError if it is not a number: ``float`` would take ``"5"``)."""
    given: object = value  # typed float, checked as anything a caller passes
    if not isinstance(given, numbers.Real):
        raise TypeError(f"a timer's {what} must be a number of seconds, not {value!r}")
    try:
        seconds = float(value)
    except OverflowError:
        seconds = math.nan
    if not (math.isfinite(seconds) and (seconds >= 0 if zero else seconds > 0)):
        bound = ">= 0" if zero else "> 0"
        raise ValueError(
            f"a timer's {what} must be a finite number of seconds {bound}, not {value!r}"
        )
    return abs(seconds)


@final
class Timers(Generic[M], metaclass=NoPublicConstructor):
    """An actor's timers: messages it sends itself later, or every so often,
    each under a key. From ``inbox.timers``; typed by the actor's messages,
    so a timer's message must be one the actor accepts.

    * A key names one timer: starting a timer under a key that has one
      replaces it (the old one's message is never received, even if it is
      already in the mailbox). The key defaults to the message itself, so
      ``timers.send_every(1, Tick())`` twice keeps one ticker.
    * A due timer's message is posted as ``Down`` is: it never waits for
      room, it goes after everything the mailbox accepted before, stamped
      from the mailbox's count, with ``sender`` None. Timers due at the same
      time post in the order of their deadlines, then in the order they were
      set.
    * :meth:`cancel` guarantees the timer's message is not received, even
      one already in the mailbox (it is discarded as it is taken).
    * Timers belong to the incarnation that set them: a restart cancels them
      (the new incarnation never receives their messages), and so does the
      actor's end; setting one once the incarnation is over (the actor
      ended, or waits to be restarted) raises
      :class:`~actors.ActorStoppedError`. Once the mailbox is closed (``ref.stop()``,
      ``inbox.close()``), timers deliver nothing more; a message already
      posted is delivered with the rest.

    Every method never blocks, and refuses other threads than the system's
    Trio thread (``RuntimeError``), like the inbox's.
    """

    __slots__ = ("_cell",)

    def __init__(self, cell: _Cell[M]) -> None:
        self._cell = cell

    def __repr__(self) -> str:
        timers = self._cell.links.timers if self._cell.links is not None else None
        return f"<Timers of actor {self._cell.address.name!r}: {len(timers or ())} active>"

    def send_after(self, delay: float, message: M, *, key: Hashable | None = None) -> None:
        """Send this actor ``message`` once, in ``delay`` seconds (>= 0), under
        ``key`` (default: the message). The timer is active until its message
        is received, or it is cancelled or replaced (OTP's
        ``erlang:send_after``, Akka's ``startSingleTimer``). Raises
        :class:`ValueError` for a negative, NaN or infinite delay."""
        self._start("send_after", message, key, _seconds(delay, "delay", zero=True), None)

    def send_every(
        self,
        interval: float,
        message: M,
        *,
        key: Hashable | None = None,
        delay: float | None = None,
    ) -> None:
        """Send this actor ``message`` every ``interval`` seconds (> 0), the
        first time after ``delay`` (default: ``interval``), under ``key``
        (default: the message), until cancelled or replaced. The beat is
        fixed: the n-th message is due at ``delay + n * interval``, however
        late the ones before were taken. A message that comes due while the
        timer's previous one is still in the mailbox is skipped, so a slow
        actor never piles them up (Go's ``Ticker`` does the same). Raises
        :class:`ValueError` for a bad interval or delay."""
        every = _seconds(interval, "interval", zero=False)
        first = every if delay is None else _seconds(delay, "delay", zero=True)
        self._start("send_every", message, key, first, every)

    def cancel(self, key: Hashable) -> bool:
        """Cancel the timer under ``key``: its message is never received,
        even one already in the mailbox. True if there was one active."""
        timers = self._timers("cancel", "key")
        timer = None if timers is None else timers.pop(key, None)
        if timer is None:
            return False
        timer.cancel()
        return True

    def cancel_all(self) -> None:
        """Cancel every timer of this actor (as :meth:`cancel`)."""
        timers = self._timers("cancel_all", "")
        if timers:
            for timer in timers.values():
                timer.cancel()
            timers.clear()

    def is_active(self, key: Hashable) -> bool:
        """Whether a timer is active under ``key``: a periodic one until it is
        cancelled or replaced, a one-off one until its message is received."""
        timers = self._timers("is_active", "key")
        return timers is not None and key in timers

    def _timers(self, call: str, args: str) -> dict[Hashable, Timer] | None:
        """The actor's timers (None if it never set one), once the caller's
        thread is checked."""
        cell = self._cell
        if not in_trio_thread(cell.token):
            raise foreign_thread_error(
                f"timers.{call} of actor {cell.address.name!r}",
                f"trio.from_thread.run_sync(inbox.timers.{call}{', ' if args else ''}{args})",
            )
        links = cell.links
        return None if links is None else links.timers

    def _start(
        self, call: str, message: M, key: Hashable | None, delay: float, interval: float | None
    ) -> None:
        self._timers(call, "delay, message")
        cell = self._cell
        if not cell.running:
            raise cell.not_running_error(f"timers.{call}")
        try:
            hash(message if key is None else key)
        except TypeError:
            # Not hashable, or an instance of a hashable class holding one
            # that is not (a frozen attrs message with a list field).
            if key is None:
                raise TypeError(
                    f"timers.{call}: a message of type {type(message).__name__!r} is not "
                    "hashable, so it cannot be its own key; pass key="
                ) from None
            raise TypeError(
                f"timers.{call}: a key of type {type(key).__name__!r} is not hashable"
            ) from None
        if key is None:
            key = message
        links = cell.linked()
        timers = links.timers
        if timers is None:
            timers = links.timers = {}
        replaced = timers.pop(key, None)
        if replaced is not None:
            replaced.cancel()
        timer = _Timer(cell, key, message, interval)
        timers[key] = timer
        if not cell.timekeeper.schedule(trio.current_time() + delay, timer):
            timer.live = False  # the system ended: nothing runs any more
            del timers[key]
