"""The :class:`Timekeeper`: the one task per system that keeps every
deadline, timers' and asks'.

It holds a heap of ``(deadline, order, item)`` and sleeps until the
earliest; no task per timer, none per actor. An item that is no longer
wanted (a cancelled timer, an ask answered in time) stays in the heap, marked
``scheduled = False``, until its deadline pops it, or until the dead ones
outnumber the live ones and the heap is rebuilt without them.

It knows nothing of actors: what it keeps is any :class:`_Item`. The
:class:`Timer` protocol is what a cell keeps of its timers (they are
:class:`actors._core._timers._Timer`), declared here so that the cell does
not import the timers that post into it.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Hashable
from heapq import heapify, heappop, heappush
from typing import Any, Protocol, final

import trio

from . import _footprint
from ._envelope import Envelope, current_address

_COMPACT_AT = 64
"""The heap is rebuilt once it holds more dead items than this, and more dead
than live ones: so it never holds more than about twice what is wanted."""


class Timer(Protocol):
    """One timer of an actor, as its cell and inbox see it."""

    key: Hashable
    interval: float | None
    # Not cancelled, replaced or ended: its messages are wanted.
    live: bool
    # Its message in the mailbox, posted and not yet taken.
    queued: Envelope[Any] | None

    def cancel(self) -> None:
        """No more messages: the timer was cancelled, replaced or its actor ended."""


class _Item(Protocol):
    # True while its entry is in the heap and still wanted.
    scheduled: bool

    def due(self, timekeeper: Timekeeper, when: float) -> None:
        """Its deadline ``when`` came (``scheduled`` is still True)."""

    def orphaned(self) -> None:
        """The timekeeper ended before its deadline came."""


@final
class Timekeeper:
    """A system's timer task and its heap of deadlines. The task starts with
    the first deadline and ends with the system (:meth:`close`)."""

    def __init__(self, nursery: trio.Nursery) -> None:
        self._nursery = nursery
        # Invariant: a heap; each item with scheduled=True is in it exactly once.
        self._heap: list[tuple[float, int, _Item]] = []
        self._order = itertools.count()
        # Items in the heap with scheduled=False.
        self._dead = 0
        self._started = False
        self._closed = False
        self._scope = trio.CancelScope()
        # The scope of the task's sleep until the earliest deadline, and that
        # deadline (its property is slower to read); None while the task is
        # not sleeping.
        self._sleep: trio.CancelScope | None = None
        self._wake_at = math.inf

    def __repr__(self) -> str:
        return f"<Timekeeper of {len(self._heap) - self._dead} deadlines>"

    def schedule(self, when: float, item: _Item) -> bool:
        """Call ``item.due`` at ``when`` (Trio time) unless ``item.scheduled``
        is False by then; False, and nothing scheduled, once the timekeeper
        ended (the caller keeps its deadline itself)."""
        _footprint.touch(self)
        if self._closed:
            return False
        heappush(self._heap, (when, next(self._order), item))
        item.scheduled = True
        if when < self._wake_at:  # rarely: asks with one timeout come due in turn
            self._wake_by(when)
        return True

    def _wake_by(self, when: float) -> None:
        """Make the task wake by ``when``: start it, or bring its sleep's end
        forward (a task not sleeping looks at the heap before it sleeps)."""
        sleep = self._sleep
        if sleep is not None:
            sleep.deadline = self._wake_at = when
        elif not self._started:
            self._started = True
            self._nursery.start_soon(self._run, name="actors.timekeeper")

    def discard(self, item: _Item) -> None:
        """``item`` (scheduled) is no longer wanted."""
        _footprint.touch(self)
        item.scheduled = False
        heap = self._heap
        if heap and heap[0][2] is item:
            # The earliest: what an ask answered in time usually is. Popped
            # now, with the dead entries under it, so that they do not keep
            # what they hold alive (the garbage collector would pay for it).
            heappop(heap)
            while heap and not heap[0][2].scheduled:
                heappop(heap)
                self._dead -= 1
            return
        self._dead += 1
        if self._dead > _COMPACT_AT and 2 * self._dead > len(heap):
            self._heap = [entry for entry in self._heap if entry[2].scheduled]
            heapify(self._heap)
            self._dead = 0

    def close(self) -> None:
        """End the task: the system ended. Asks still waiting keep their own
        deadlines from here on."""
        _footprint.touch(self)
        self._closed = True
        self._scope.cancel()

    async def _run(self) -> None:
        """Fire what is due, in deadline order (ties in scheduling order),
        then sleep until the next deadline; until :meth:`close`."""
        current_address.set(None)  # not the actor that started it
        _footprint.belong(self)
        try:
            with self._scope:
                while True:
                    heap = self._heap
                    now = trio.current_time()
                    while heap and heap[0][0] <= now:
                        when, _, item = heappop(heap)
                        if item.scheduled:
                            item.due(self, when)
                        else:
                            self._dead -= 1
                        heap = self._heap  # item.due may have rebuilt it
                    self._wake_at = heap[0][0] if heap else math.inf
                    with trio.CancelScope(deadline=self._wake_at) as sleep:
                        self._sleep = sleep
                        await trio.sleep_forever()
                    self._sleep = None
        finally:
            self._closed = True
            self._sleep = None
            heap, self._heap = self._heap, []
            for _, _, item in heap:
                if item.scheduled:
                    item.orphaned()
