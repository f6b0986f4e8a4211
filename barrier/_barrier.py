"""The barrier actor: the owner of one (process, local ordinal)'s barrier state."""

from __future__ import annotations

import logging
from typing import final

import attrs
import trio

from actors import ActorRef, ActorSystem, Inbox, Reply

from ._state import BarrierBrokenError, BarrierState, BarrierStatistics, Side

logger = logging.getLogger("barrier")


@attrs.frozen
class Inspect:
    """Ask the barrier for a snapshot of its state."""

    reply: Reply[BarrierStatistics]


@final
class ReconcileBarrier:
    """The barrier two workers of one (process, local ordinal) meet at.

    The barrier is an actor: its task owns the state and gives it a lifetime
    in a nursery the replica can see; it answers :class:`Inspect`, and it
    records arrivals and passes in the trace. Arrivals themselves are plain
    calls on that state from the arriving worker's task: Trio runs one task at
    a time, so an arrival, which does not checkpoint, is atomic, and a round
    costs no message hop. Each side parks on an event of its own generation,
    which the other side's arrival (or the barrier's end) sets; the woken
    waiter rechecks the other side's *latest* arrival, so it passes on a later
    one too. When the actor ends, for whatever reason, every waiter wakes and
    gets :class:`BarrierBrokenError`, and later arrivals are refused the same way.
    """

    def __init__(self, name: str) -> None:
        self.name = name
        self._state = BarrierState()
        # Invariant: a side's event is unset while its waiter may park on it; an
        # arrival replaces (and sets) the other side's event only when that
        # side is in _waiting, which a waiter joins before it parks.
        self._generation = {side: trio.Event() for side in Side}
        self._waiting: set[Side] = set()
        self._broken = False
        self._inbox: Inbox[Inspect] | None = None
        self._tracing = False
        self._ref: ActorRef[Inspect] | None = None

    def __repr__(self) -> str:
        return f"<ReconcileBarrier {self.name!r}>"

    @classmethod
    async def spawn(
        cls, system: ActorSystem, *, name: str, nursery: trio.Nursery | None = None
    ) -> ReconcileBarrier:
        """Start a barrier actor named ``name`` in ``system``; return once it runs."""
        barrier = cls(name)
        barrier._ref = await system.spawn(barrier._run, name=name, nursery=nursery)
        return barrier

    @property
    def ref(self) -> ActorRef[Inspect]:
        assert self._ref is not None, "spawned barriers have a reference"
        return self._ref

    async def _run(self, inbox: Inbox[Inspect]) -> None:
        self._inbox = inbox
        self._tracing = inbox.tracing
        try:
            async for envelope in inbox:
                envelope.message.reply.send(self.statistics())
        finally:
            if self._waiting:
                logger.warning(
                    "reconcile barrier %r ended while %s waited",
                    self.name,
                    " and ".join(sorted(self._waiting)),
                )
            self._broken = True
            for side in Side:
                self._wake(side)

    def _wake(self, side: Side) -> None:
        event = self._generation[side]
        self._generation[side] = trio.Event()
        event.set()

    def _check(self, side: Side, position: int) -> None:
        if self._broken:
            raise BarrierBrokenError(
                f"reconcile barrier {self.name!r} stopped while {side} waited "
                f"at position {position}"
            )

    async def arrive_and_wait(self, side: Side, position: int) -> int:
        """Arrive at ``position`` (overwriting this side's older arrival), wake
        the other side's waiter, and wait until the other side's latest arrival
        is ``position`` or later; return that arrival.

        A checkpoint; parks on an event, never polls. Raises
        :class:`~barrier.BarrierBrokenError` if the barrier actor has ended or
        ends while waiting, and :class:`~barrier.ArrivalRegressionError`
        (changing nothing) for a position below this side's latest. If
        cancelled while waiting, the arrival stays recorded.
        """
        self._check(side, position)
        self._state.arrive(side, position)
        if self._tracing:
            self._trace(f"{side} arrived at {position}")
        if side.other in self._waiting:
            self._wake(side.other)
        if self._state.passes(side, position):
            await trio.lowlevel.checkpoint()
        else:
            self._waiting.add(side)
            try:
                while not self._state.passes(side, position):
                    await self._generation[side].wait()
                    self._check(side, position)
            finally:
                self._waiting.discard(side)
        other = self._state.latest(side.other)
        assert other is not None, "a side passes only after the other arrived"
        assert other >= position, "a side passes only on the same or a later arrival"
        if self._tracing:
            self._trace(f"{side} passes at {position}: {side.other} at {other}")
        return other

    def _trace(self, detail: str) -> None:
        assert self._inbox is not None
        self._inbox.mark(detail)

    def statistics(self) -> BarrierStatistics:
        """Each side's latest arrival, and which sides are waiting."""
        return self._state.statistics(tuple(side for side in Side if side in self._waiting))
