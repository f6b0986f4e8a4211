"""Supervision: what happens when an actor's behaviour raises.

Two strategies, after Erlang/OTP's supervisors:

* :class:`OneForAll` (the default, and Trio's own way): the failure cancels
  every sibling in the scope and propagates to whoever opened it.
* :class:`OneForOne`: only the failed actor is restarted, on the same mailbox,
  as long as the scope's restart budget allows: at most ``intensity`` restarts
  within any ``period`` seconds (OTP's ``MaxR``/``MaxT``). The restart that would
  exceed it escalates: the scope fails with :class:`~actors.RestartIntensityError`
  (caused by the last failure), which cancels its other children and goes up.
  A supervisor scope opened inside an actor's behaviour is therefore a subtree:
  its escalation is that actor's failure, and the actor's own supervisor decides.

Restarts are immediate, as in OTP, and each one is a checkpoint: a behaviour
that raises before its first checkpoint restarts in a loop that still lets
other tasks run and cancellation in.
"""

from __future__ import annotations

import collections
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, TypeVar, TypeVarTuple, Unpack, final

import attrs
import trio

from ._cell import DEFAULT_CAPACITY, ActorState, _Cell, logger, stop_last_first
from ._envelope import Address
from ._errors import RestartIntensityError
from ._inbox import Inbox
from ._mailbox import ActorRef
from ._trace import EventKind, TraceEvent
from ._util import NoPublicConstructor, foreign_thread_error, in_trio_thread

if TYPE_CHECKING:
    from ._system import ActorSystem

M = TypeVar("M")
Ts = TypeVarTuple("Ts")


@attrs.frozen
class OneForAll:
    """A failure cancels the whole scope and propagates (Trio's default)."""


@attrs.frozen
class OneForOne:
    """Restart only the failed actor: at most ``intensity`` restarts in ``period`` seconds."""

    intensity: int = attrs.field(default=1, validator=attrs.validators.ge(0))
    period: float = attrs.field(default=5.0, validator=attrs.validators.gt(0))


Strategy = OneForAll | OneForOne


@attrs.define(eq=False)
class RestartBudget:
    """OTP's restart intensity as a plain state machine (no Trio needed).

    A restart at time ``now`` is allowed when, counting it, no more than
    ``intensity`` restarts happened in ``[now - period, now]``.
    """

    intensity: int
    period: float
    # Invariant: the times are non-decreasing (Trio's clock never goes back).
    _restarts: collections.deque[float] = attrs.field(factory=collections.deque)

    @classmethod
    def for_strategy(cls, strategy: OneForOne) -> RestartBudget:
        return cls(strategy.intensity, strategy.period)

    def try_restart(self, now: float) -> bool:
        assert not self._restarts or now >= self._restarts[-1], "time went backwards"
        threshold = now - self.period
        while self._restarts and self._restarts[0] < threshold:
            self._restarts.popleft()
        self._restarts.append(now)
        return len(self._restarts) <= self.intensity

    @property
    def recent(self) -> int:
        """How many restarts the window holds (the last one counted included)."""
        return len(self._restarts)


@final
class Supervisor(metaclass=NoPublicConstructor):
    """A scope of actors under one strategy; opened with
    :meth:`ActorSystem.open_supervisor <actors.ActorSystem.open_supervisor>`."""

    def __init__(
        self, system: ActorSystem, nursery: trio.Nursery, address: Address, strategy: Strategy
    ) -> None:
        self._system = system
        self._nursery = nursery
        self.address = address
        self.strategy = strategy
        self._budget = (
            RestartBudget.for_strategy(strategy) if isinstance(strategy, OneForOne) else None
        )
        # The live children, by uid, in spawn order.
        self._children: dict[int, _Cell[Any]] = {}

    def __repr__(self) -> str:
        return f"<Supervisor {self.address.name!r} {self.strategy!r}>"

    async def spawn(
        self,
        behaviour: Callable[[Inbox[M], Unpack[Ts]], Awaitable[None]],
        *args: *Ts,
        name: str | None = None,
        capacity: float = DEFAULT_CAPACITY,
    ) -> ActorRef[M]:
        """Spawn an actor under this supervisor; see :meth:`ActorSystem.spawn`.
        Only from the system's Trio thread, like that one."""
        if not in_trio_thread(self._system._token):
            raise foreign_thread_error(
                f"spawn under supervisor {self.address.name!r}",
                "trio.from_thread.run(supervisor.spawn, behaviour)",
            )
        ref: ActorRef[M] = await self._system._spawn(
            behaviour, args, name=name, capacity=capacity, nursery=self._nursery, supervisor=self
        )
        if ref._cell.state is not ActorState.STOPPED:
            self._children[ref.address.uid] = ref._cell
        return ref

    def _handle_failure(self, cell: _Cell[Any], error: Exception) -> None:
        """Return to restart ``cell``'s behaviour; raise to fail the scope."""
        if self._budget is None:
            raise error
        if self._budget.try_restart(trio.current_time()):
            return
        assert isinstance(self.strategy, OneForOne)
        message = (
            f"supervisor {self.address.name!r}: restarting actor {cell.address.name!r} "
            f"would be restart {self._budget.recent} within {self.strategy.period:g}s, "
            f"over the intensity {self.strategy.intensity}"
        )
        logger.error("%s", message)
        tracer = self._system.tracer
        if tracer is not None:
            tracer.record(
                TraceEvent(
                    trio.current_time(), self.address.name, EventKind.ESCALATED, None, message
                )
            )
        raise RestartIntensityError(message) from error

    async def _stop_children(self) -> None:
        await stop_last_first(self._children)


@asynccontextmanager
async def open_supervisor(
    system: ActorSystem, strategy: Strategy, name: str
) -> AsyncIterator[Supervisor]:
    async with trio.open_nursery() as nursery:
        supervisor = Supervisor._create(system, nursery, system._allocate(name), strategy)
        yield supervisor
        await supervisor._stop_children()
