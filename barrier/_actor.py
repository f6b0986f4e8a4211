"""The barrier as an actor: workers arrive by asking it, and a parked waiter's
ask is answered when the other side arrives far enough."""

from __future__ import annotations

import functools
from typing import final

import attrs
import trio

import actors
from actors import ActorRef, ActorSystem, Inbox, Reply

from ._state import BarrierBrokenError, BarrierState, BarrierStatistics, Side


@attrs.frozen
class Arrive:
    """``side`` arrives at ``position`` and waits; the reply is the other
    side's latest arrival when the waiter passed."""

    side: Side
    position: int
    reply: Reply[int]


@attrs.frozen
class Inspect:
    reply: Reply[BarrierStatistics]


BarrierMessage = Arrive | Inspect


async def reconcile_barrier(inbox: Inbox[BarrierMessage]) -> None:
    """The barrier's behaviour: keep each side's latest arrival; answer a
    waiter at once if the other side is already there, or when it arrives."""
    state: BarrierState[tuple[Reply[int], Side]] = BarrierState()
    async for envelope in inbox:
        match envelope.message:
            case Arrive(side, position, reply):
                try:
                    woken = state.arrive(side, position)
                except Exception as error:
                    reply.fail(error)
                    continue
                inbox.mark(f"{side} arrived at {position}", envelope.seq)
                if woken is not None:
                    waiter, waiting_side = woken
                    inbox.mark(f"{waiting_side} passes: {side} at {position}", envelope.seq)
                    waiter.send(position)
                if state.passes(side, position):
                    other = state.latest(side.other)
                    assert other is not None
                    inbox.mark(f"{side} passes: {side.other} at {other}", envelope.seq)
                    reply.send(other)
                else:
                    state.park(side, position, (reply, side))
            case Inspect(reply):
                reply.send(state.statistics())


@final
@attrs.define(eq=False)
class ReconcileBarrier:
    """A handle on a running barrier actor, shared by the two workers of one
    (process, local ordinal)."""

    ref: ActorRef[BarrierMessage]

    @classmethod
    async def spawn(
        cls, system: ActorSystem, *, name: str, nursery: trio.Nursery | None = None
    ) -> ReconcileBarrier:
        """Start a barrier actor named ``name`` in ``system``."""
        return cls(await system.spawn(reconcile_barrier, name=name, nursery=nursery))

    async def arrive_and_wait(self, side: Side, position: int) -> int:
        """Arrive at ``position`` and wait until the other side's latest arrival
        is ``position`` or later; return that arrival.

        Parks on the barrier's reply (no polling). A checkpoint. Raises
        :class:`~barrier.BarrierBrokenError` if the barrier stops or fails while
        waiting, and :class:`~barrier.ArrivalRegressionError` (changing nothing)
        for a position below this side's latest. If cancelled, the arrival may
        already be recorded.
        """
        try:
            return await self.ref.ask(functools.partial(Arrive, side, position))
        except (actors.ActorStoppedError, actors.ActorFailedError) as error:
            raise BarrierBrokenError(
                f"reconcile barrier {self.ref.name!r} stopped while {side} waited "
                f"at position {position}"
            ) from error

    async def statistics(self) -> BarrierStatistics:
        return await self.ref.ask(Inspect)
