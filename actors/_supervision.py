"""Supervisors: scopes of actors that decide, when a child ends, whether it
starts again (the strategies and their rules are in :mod:`._restarts`).

A restarted child keeps its address, its mailbox (a closed one is reopened)
and every reference to it; only its behaviour's state is new. Each child runs
its own restart loop in its own task (see ``Spawner._run_actor`` in :mod:`._spawning`); when
one of its behaviour calls ends, the loop asks :meth:`Supervisor._after_end`
what to do. A one-for-all or rest-for-one restart is a *round*: the child that
ended cancels the others of the group, last started first, waiting for each;
then the group starts again in start order, each child starting the next as
it calls its behaviour (so each behaviour runs to its first checkpoint before
the next one starts). One round at a time: a child that ends during a round
joins it if it is a member, and otherwise waits for it to finish.

A supervisor scope opened inside an actor's behaviour is a subtree: its
escalation is that actor's failure, and the actor's own supervisor decides.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any, Never, TypeVar, TypeVarTuple, Unpack, cast, final

import attrs
import trio

from ._core._cell import DEFAULT_CAPACITY, ActorState, _Cell, logger, stop_last_first
from ._core._envelope import Address, current_address
from ._core._errors import ActorError, RestartIntensityError
from ._core._inbox import Inbox
from ._core._mailbox import ActorRef, _seconds
from ._core._monitors import ExitReason, Failed, Stopped
from ._core._trace import EventKind, TraceEvent
from ._core._util import NoPublicConstructor, foreign_thread_error, in_trio_thread
from ._restarts import (
    Escalate,
    OneForAll,
    OneForOne,
    Restart,
    RestartBudget,
    Strategy,
)
from ._spawning import Spawner

M = TypeVar("M")
Ts = TypeVarTuple("Ts")


@attrs.define(eq=False)
class _Child:
    """A supervisor's record of one child (OTP's child spec and state)."""

    cell: _Cell[Any]
    restart: Restart
    supervisor: Supervisor
    # Restarts in a row, for the back-off.
    streak: int = 0
    # When its current behaviour call started, on Trio's clock.
    started_at: float = 0.0
    # The round it belongs to, until it takes its turn.
    round: _Round | None = None
    # Why it restarts next: the RESTARTED trace event's detail.
    why: str = ""
    # The round whose next member it starts once its behaviour is called.
    releasing: _Round | None = None
    # terminate_child stopped it for good: it is not restarted, whatever its end.
    terminated: bool = False
    # The scope of its wait for a round (to begin, or to give it its turn):
    # terminate_child cancels it.
    waiting: trio.CancelScope | None = None

    # What its task tells the supervisor (the Supervised protocol).

    def adopted(self) -> None:
        self.supervisor._adopt(self)

    def started(self) -> None:
        self.supervisor._started(self)

    async def ended(self, reason: ExitReason) -> ExitReason | None:
        return await self.supervisor._after_end(self, reason)

    def forget(self) -> None:
        self.supervisor._forget(self)


@attrs.define(eq=False)
class _Round:
    """One one-for-all or rest-for-one restart of ``members`` (in start order)."""

    members: list[_Child]
    cause: str
    # Set when a member's behaviour call has ended and it waits for its turn.
    parked: dict[_Child, trio.Event]
    # Set when a member may start again.
    turns: dict[_Child, trio.Event]
    # Members that will not start again (temporary, or stopped for good).
    withdrawn: set[_Child] = attrs.field(factory=set)
    done: bool = False

    @classmethod
    def of(cls, members: list[_Child], cause: str) -> _Round:
        return cls(
            members,
            cause,
            {member: trio.Event() for member in members},
            {member: trio.Event() for member in members},
        )

    def release_after(self, index: int) -> None:
        """Give the turn to the first member from ``index`` on that still
        starts again; with none left, the round is done."""
        for member in self.members[index:]:
            if member not in self.withdrawn:
                self.turns[member].set()
                return
        self.done = True


def _reopen(child: _Child) -> None:
    """``child`` is to be restarted: a mailbox its behaviour call closed (a
    ``stop()``) opens again now, so it accepts messages while the restart
    waits. Called as the call ends, before any wait: a ``stop()`` during the
    wait closes the new mailbox, for the next call to drain (reopened later,
    it would have been undone, and the stopper left waiting for good). One
    its scope or ``terminate_child`` closed stays closed."""
    cell = child.cell
    if cell.state is ActorState.STOPPING and not (cell.final or child.terminated):
        cell.stop_requested = False
        cell.reopen_mailbox()


def _joined(child: _Child) -> bool:
    """Whether a round took ``child`` in (it may have while ``child`` waited)."""
    return child.round is not None


def _terminated(child: _Child) -> bool:
    """Whether ``terminate_child`` ended ``child`` (it may have while it waited)."""
    return child.terminated


@final
class Supervisor(metaclass=NoPublicConstructor):
    """A scope of actors under one strategy; opened with
    :meth:`ActorSystem.open_supervisor <actors.ActorSystem.open_supervisor>`."""

    def __init__(
        self, system: Spawner, nursery: trio.Nursery, address: Address, strategy: Strategy
    ) -> None:
        self._system = system
        self._nursery = nursery
        self.address = address
        self.strategy = strategy
        self._budget = (
            None if isinstance(strategy, Escalate) else RestartBudget.for_strategy(strategy)
        )
        # The live children, by uid, in start order.
        self._children: dict[int, _Child] = {}
        # The round in progress, if any; children waiting for it to end park here.
        self._round: _Round | None = None
        self._round_ended = trio.lowlevel.ParkingLot()
        # Its scope has ended: it spawns no more.
        self._ended = False

    def __repr__(self) -> str:
        return f"<Supervisor {self.address.name!r} {self.strategy!r}>"

    @property
    def children(self) -> tuple[ActorRef[Never], ...]:
        """The live children, in start order (OTP's ``which_children``)."""
        return tuple(
            cast("ActorRef[Never]", ActorRef._create(child.cell))
            for child in self._children.values()
        )

    async def spawn(
        self,
        behaviour: Callable[[Inbox[M], Unpack[Ts]], Awaitable[None]],
        *args: *Ts,
        name: str | None = None,
        capacity: float = DEFAULT_CAPACITY,
        restart: Restart = Restart.PERMANENT,
    ) -> ActorRef[M]:
        """Spawn an actor under this supervisor; see :meth:`ActorSystem.spawn`.
        ``restart`` is when it is restarted after it ends (OTP's restart type,
        permanent by default; see :class:`~actors.Restart`); under
        :class:`~actors.Escalate` nothing is. Only from the system's Trio
        thread, like that one."""
        if not in_trio_thread(self._system._token):
            raise foreign_thread_error(
                f"spawn under supervisor {self.address.name!r}",
                "trio.from_thread.run(supervisor.spawn, behaviour)",
            )
        if restart not in tuple(Restart):
            raise ValueError(
                f"restart must be one of {', '.join(repr(r.value) for r in Restart)}, "
                f"not {restart!r}"
            )
        restart = Restart(restart)
        if self._ended:
            raise RuntimeError(f"supervisor {self.address.name!r} has ended: it spawns no more")
        return await self._system._spawn(
            behaviour,
            args,
            name=name,
            capacity=capacity,
            nursery=self._nursery,
            child=lambda cell: _Child(cell, restart, self),
        )

    async def terminate_child(
        self,
        ref: ActorRef[Never],
        *,
        timeout: float | None = None,  # noqa: ASYNC109 (it is a shutdown, then a kill)
    ) -> None:
        """Stop the child ``ref`` for good, whatever its restart type (OTP's
        ``terminate_child``): its mailbox closes, it delivers what it accepted,
        and no restart follows (a :class:`~actors.Stopped` end). If it waits to
        be restarted, it stops waiting. With ``timeout``, a child still running
        after ``timeout`` seconds is killed (OTP's shutdown time, then
        ``brutal_kill``). Returns once it has stopped; at once if it had.

        Raises :class:`ValueError` if ``ref`` is not a child of this
        supervisor, or for a negative or NaN ``timeout``, and
        :class:`~actors.ActorError` if the child calls it on itself (it would
        wait for its own end); each before changing anything. A checkpoint.
        If cancelled, the child still stops; only the wait ends.
        Only from the system's Trio thread.
        """
        if not in_trio_thread(self._system._token):
            raise foreign_thread_error(
                f"terminate_child of supervisor {self.address.name!r}",
                "trio.from_thread.run(supervisor.terminate_child, ref)",
            )
        if timeout is not None:
            timeout = _seconds(timeout, "terminate_child timeout")
        cell = ref._cell
        child = self._children.get(cell.address.uid)
        if child is None or child.cell is not cell:
            if cell.state is ActorState.STOPPED:
                await trio.lowlevel.checkpoint()
                return
            raise ValueError(
                f"actor {cell.address.name!r} is not a child of supervisor {self.address.name!r}"
            )
        if current_address.get() == cell.address:
            raise ActorError(
                f"actor {cell.address.name!r} cannot wait for its own termination; "
                "close its inbox, or have another task call terminate_child"
            )
        child.terminated = True
        # Even on a cell waiting to be restarted: its end is a stop.
        cell.stop_requested = True
        cell.close_mailbox()
        if not cell.running:
            cell.scope.cancel()
            if child.waiting is not None:
                child.waiting.cancel()
        if timeout is not None:
            with trio.move_on_after(timeout):
                await cell.wait_ended()
            if cell.running:
                cell.scope.cancel()
        await cell.wait_ended()

    def _adopt(self, child: _Child) -> None:
        """``child`` is about to call its behaviour for the first time."""
        self._children[child.cell.address.uid] = child

    def _forget(self, child: _Child) -> None:
        """``child`` ended for good."""
        self._children.pop(child.cell.address.uid, None)

    async def _after_end(self, child: _Child, reason: ExitReason) -> ExitReason | None:
        """A behaviour call of ``child`` ended for ``reason``: return None to
        call the behaviour again (after any wait the strategy asks), or the
        reason it ends for good with; raise to escalate.

        Once the scope ends (its block, or the system's), a child is restarted
        only after a failure, to deliver the rest of its closed mailbox; after
        ``terminate_child``, never. A child that ``terminate_child`` ends while
        it waits to be restarted ends as :class:`~actors.Stopped`."""
        cell = child.cell
        if child.round is not None:
            if child.restart is not Restart.TEMPORARY:
                _reopen(child)
            return await self._take_turn(child, reason)
        if isinstance(self.strategy, Escalate):
            if isinstance(reason, Failed):
                raise reason.error
            return reason
        if child.terminated or not child.restart.wants(reason):
            return reason
        if cell.final and not isinstance(reason, Failed):
            return reason
        _reopen(child)
        if not isinstance(self.strategy, OneForOne):
            while self._round is not None:
                with self._waiting(child):
                    await self._round_ended.park()
                if _joined(child):
                    return await self._take_turn(child, reason)
                if _terminated(child):
                    return Stopped()
        self._count_restart(child, reason)
        delay = self._backoff(child)
        if isinstance(self.strategy, OneForOne):
            child.why = str(reason)
            if not await self._wait(child, delay):
                return Stopped()
            return None
        return await self._restart_group(child, reason, delay)

    def _waiting(self, child: _Child) -> trio.CancelScope:
        """The scope of ``child``'s wait for a round: ``terminate_child``
        cancels it (``kill`` does not: nothing runs)."""
        scope = child.waiting = trio.CancelScope()
        if child.terminated:
            scope.cancel()
        return scope

    def _count_restart(self, child: _Child, reason: ExitReason) -> None:
        budget = self._budget
        assert budget is not None
        assert not isinstance(self.strategy, Escalate)
        if budget.try_restart(trio.current_time()):
            return
        message = (
            f"supervisor {self.address.name!r}: restarting actor {child.cell.address.name!r} "
            f"would be restart {budget.recent} within {self.strategy.period:g}s, "
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
        raise RestartIntensityError(message) from (
            reason.error if isinstance(reason, Failed) else None
        )

    def _backoff(self, child: _Child) -> float:
        """The wait before ``child``'s restart, by the strategy's back-off."""
        assert not isinstance(self.strategy, Escalate)
        backoff = self.strategy.backoff
        if backoff is None:
            return 0.0
        if trio.current_time() - child.started_at >= backoff.reset_after:
            child.streak = 0
        delay = backoff.delay(child.streak, self._system.random)
        child.streak += 1
        return delay

    async def _wait(self, child: _Child, delay: float) -> bool:
        """Wait ``delay`` seconds before ``child`` restarts (less if its scope
        ends or ``terminate_child`` ends it meanwhile); False if
        ``terminate_child`` did."""
        cell = child.cell
        if delay > 0:
            cell.scope = trio.CancelScope()
            if cell.final or child.terminated:
                cell.scope.cancel()
            with cell.scope:
                await trio.sleep(delay)
        return not child.terminated

    async def _restart_group(
        self, child: _Child, reason: ExitReason, delay: float
    ) -> ExitReason | None:
        """Restart ``child`` and the rest of its group, as a round."""
        assert not isinstance(self.strategy, Escalate)
        children = list(self._children.values())
        start = 0 if isinstance(self.strategy, OneForAll) else children.index(child)
        cause = f"{self.strategy.kind} after {child.cell.address.name!r} {reason}"
        round_ = _Round.of(children[start:], cause)
        for member in round_.members:
            member.round = round_
        self._round = round_
        self._round_ended.unpark_all()
        for member in reversed(round_.members):
            if member is not child:
                if member.cell.running:
                    member.cell.scope.cancel()
                await round_.parked[member].wait()
        if not await self._wait(child, delay):
            round_.withdrawn.add(child)
        round_.release_after(0)
        self._end_round_if_done(round_)
        return await self._take_turn(child, reason)

    async def _take_turn(self, child: _Child, reason: ExitReason) -> ExitReason | None:
        """``child``'s behaviour call ended inside a round: wait for its turn
        to start again (it hands the turn on as it calls its behaviour, see
        :meth:`_started`)."""
        round_ = child.round
        assert round_ is not None
        round_.parked[child].set()
        if child.restart is Restart.TEMPORARY:
            child.round = None
            self._withdraw(round_, child)
            return reason
        if child not in round_.withdrawn:
            with self._waiting(child):
                await round_.turns[child].wait()
        child.round = None
        if child.terminated:
            self._withdraw(round_, child)
            return Stopped()
        child.why = round_.cause
        child.releasing = round_
        return None

    def _started(self, child: _Child) -> None:
        """``child`` calls its behaviour again (or its restart ended before it
        could): hand its round's turn to the next member. Idempotent."""
        round_ = child.releasing
        if round_ is not None:
            child.releasing = None
            round_.release_after(round_.members.index(child) + 1)
            self._end_round_if_done(round_)

    def _withdraw(self, round_: _Round, child: _Child) -> None:
        """``child`` will not start again in ``round_``: skip it, handing the
        turn on if it had it."""
        round_.withdrawn.add(child)
        if round_.turns[child].is_set():
            round_.release_after(round_.members.index(child) + 1)
            self._end_round_if_done(round_)

    def _end_round_if_done(self, round_: _Round) -> None:
        if round_.done and self._round is round_:
            self._round = None
            self._round_ended.unpark_all()

    async def _stop_children(self) -> None:
        await stop_last_first(self._children, lambda child: child.cell)


@asynccontextmanager
async def open_supervisor(
    system: Spawner, strategy: Strategy, name: str
) -> AsyncIterator[Supervisor]:
    async with trio.open_nursery() as nursery:
        supervisor = Supervisor._create(system, nursery, system._allocate(name), strategy)
        try:
            yield supervisor
            await supervisor._stop_children()
        finally:
            supervisor._ended = True
