"""What spawning an actor takes, below the system and its supervisors.

:class:`Spawner` is the part of an :class:`~actors.ActorSystem` that makes
cells and runs each actor's task; supervisors and pools spawn through it,
and :class:`Supervised` is what an actor's task tells the supervisor of a
supervised actor (its start, restart and end). So the system builds on
supervision and pools, and they on this module, with no circle.
"""

from __future__ import annotations

import inspect
import itertools
import random
from collections.abc import Awaitable, Callable
from typing import Any, Protocol, TypeVar, TypeVarTuple, Unpack, cast

import trio

from ._core import _footprint
from ._core._cell import _Cell, logger
from ._core._envelope import Address, current_address
from ._core._errors import ActorNameError
from ._core._inbox import Inbox
from ._core._mailbox import ActorRef
from ._core._monitors import KILLED, ExitReason, Failed, Normal, Stopped
from ._core._timekeeper import Timekeeper
from ._core._trace import EventKind, Tracer
from ._core._transit import Bounds, Transit
from ._core._util import NoPublicConstructor

M = TypeVar("M")
Ts = TypeVarTuple("Ts")


class Supervised(Protocol):
    """A supervised actor, as its task reports to its supervisor."""

    # When its current behaviour call started, on Trio's clock.
    started_at: float
    # Why it restarts next: the RESTARTED trace event's detail.
    why: str

    def adopted(self) -> None:
        """Its first behaviour call is about to start."""

    def started(self) -> None:
        """A behaviour call started, or the actor ended: the next may go."""

    async def ended(self, reason: ExitReason) -> ExitReason | None:
        """Its behaviour call ended for ``reason``: ``None`` to restart it,
        else the reason it ends with (after any back-off)."""

    def forget(self) -> None:
        """The actor's task ends: its supervisor lets go of it."""


class Spawner(metaclass=NoPublicConstructor):
    """Cells and actor tasks: the base of :class:`~actors.ActorSystem`."""

    def __init__(
        self, nursery: trio.Nursery, seed: int, tracer: Tracer | None, latency: Bounds | None
    ) -> None:
        self._nursery = nursery
        self._token = trio.lowlevel.current_trio_token()
        self.seed = seed
        self.random = random.Random(seed)
        self.tracer = tracer
        self._uids = itertools.count()
        # Every live actor of the system, by name, in spawn order.
        # (A table whose uses the explorer records entry by entry.)
        self._live: _footprint.Table[str, _Cell[Any]] = _footprint.Table()
        # The system's one timer task (started with the first deadline).
        self._timekeeper = Timekeeper(nursery)
        # With message latency on, what carries its actors' messages, with
        # delays drawn from a generator of their own (the seed's, not
        # system.random's nor Trio's scheduler's draws).
        self._transit = (
            None
            if latency is None
            else Transit(nursery, self._timekeeper, latency, random.Random(f"latency/{seed}"))
        )

    def _allocate(self, name: str) -> Address:
        return Address(name, next(self._uids))

    async def _spawn(
        self,
        behaviour: Callable[[Inbox[M], Unpack[Ts]], Awaitable[None]],
        args: tuple[*Ts],
        *,
        name: str | None,
        capacity: float,
        nursery: trio.Nursery,
        child: Callable[[_Cell[M]], Supervised] | None = None,
    ) -> ActorRef[M]:
        given: object = behaviour  # the types do not stop every caller: checked here
        if inspect.iscoroutine(given):
            given.close()  # never to run: no "never awaited" warning
            raise TypeError(
                "spawn takes the behaviour, not a coroutine: spawn(worker, arg), not "
                f"spawn(worker(arg)) (got {given!r})"
            )
        if not callable(given):
            raise TypeError(f"spawn takes an async function, not {type(given).__name__}")
        uid = next(self._uids)
        if name is None:
            name = f"{getattr(behaviour, '__name__', 'actor')}-{uid}"
        if name in self._live:
            raise ActorNameError(f"an actor named {name!r} is already running")
        cell: _Cell[M] = _Cell.open(
            Address(name, uid), capacity, self.tracer, self._timekeeper, self._transit
        )
        inbox = cast("Inbox[M]", Inbox._create(cell))
        try:
            # Called here, before anything runs, as trio's start_soon does: a
            # plain def is refused at once, and leaves no trace of an actor.
            running = _behaviour_call(behaviour, inbox, args)
        except BaseException:
            cell.send_channel.close()
            cell.receive_channel.close()
            raise
        self._live[name] = cell
        try:
            # The task is named as the actor (the name is already held: trio
            # would otherwise make a string for each task).
            ref: ActorRef[M] = await nursery.start(
                self._run_actor,
                cell,
                inbox,
                running,
                behaviour,
                args,
                None if child is None else child(cell),
                name=name,
            )
        except BaseException:
            self._live.pop(name, None)
            if inspect.iscoroutine(running) and (
                inspect.getcoroutinestate(running) == inspect.CORO_CREATED
            ):
                running.close()  # its task never ran: no "never awaited" warning
            raise
        return ref

    async def _run_actor(
        self,
        cell: _Cell[M],
        inbox: Inbox[M],
        first: Awaitable[None],
        behaviour: Callable[[Inbox[M], Unpack[Ts]], Awaitable[None]],
        args: tuple[*Ts],
        child: Supervised | None,
        *,
        task_status: trio.TaskStatus[ActorRef[M]],
    ) -> None:
        """The actor's task: call its behaviour, and again each time its
        supervisor restarts it; then end it (see :mod:`._supervision`)."""
        current_address.set(cell.address)
        _footprint.touch_actor(cell.address)
        reason: ExitReason = KILLED
        restarting = False
        running: Awaitable[None] | None = first
        try:
            while True:
                # Killed unless the behaviour call ends otherwise: a cancel
                # scope swallows the cancellation it was cancelled with.
                reason = KILLED
                with cell.scope:
                    cell.running = True
                    if child is not None:
                        child.started_at = trio.current_time()
                    if restarting:
                        cell.restarts += 1
                        logger.info("actor %r restarted (%d)", cell.address.name, cell.restarts)
                        assert child is not None
                        cell.record(
                            EventKind.RESTARTED, detail=f"restart {cell.restarts}: {child.why}"
                        )
                        # A behaviour that raises before its first checkpoint
                        # must not restart in a loop that never yields.
                        await trio.lowlevel.checkpoint()
                        child.started()
                    else:
                        task_status.started(cast("ActorRef[M]", ActorRef._create(cell)))
                        # Held by this frame, it would keep trio's start-up
                        # nursery (its cancel status and sets) alive for the
                        # actor's whole life: over a kilobyte an idle actor.
                        del task_status
                        cell.record(EventKind.SPAWNED)
                        if child is not None:
                            child.adopted()
                    try:
                        if running is None:
                            running = behaviour(inbox, *args)
                        await running
                    except Exception as error:
                        reason = self._failed(cell, error)
                    else:
                        reason = Stopped() if cell.stop_requested else Normal()
                    finally:
                        running = None
                cell.end_incarnation(reason)
                if child is None:
                    if isinstance(reason, Failed):
                        raise reason.error
                    return
                child.started()
                try:
                    ended = await child.ended(reason)
                except trio.Cancelled:
                    reason = KILLED  # cancelled while it waited to restart
                    raise
                if ended is not None:
                    reason = ended
                    return
                restarting = True
                cell.scope = trio.CancelScope()
                cell.handling = None
        finally:
            if child is not None:
                child.started()
                child.forget()
            cell.terminate(reason)
            if self._live.get(cell.address.name) is cell:
                del self._live[cell.address.name]

    @staticmethod
    def _failed(cell: _Cell[Any], error: Exception) -> Failed:
        """The behaviour of ``cell`` raised ``error``: log, trace and name it."""
        seq = cell.handling
        logger.warning("actor %r failed: %r", cell.address.name, error)
        cell.record(EventKind.FAILED, seq, repr(error))
        handling = "" if seq is None else f" while handling message {seq}"
        error.add_note(f"raised by actor {cell.address.name!r}{handling}")
        return Failed(error, seq)


def _behaviour_call(
    behaviour: Callable[[Inbox[M], Unpack[Ts]], Awaitable[None]], inbox: Inbox[M], args: tuple[*Ts]
) -> Awaitable[None]:
    """``behaviour(inbox, *args)``, which must give something to await (an
    ``async def`` gives a coroutine and runs nothing yet); :class:`TypeError`
    otherwise, as trio's ``start_soon`` refuses a plain function."""
    running: object = behaviour(inbox, *args)
    name = getattr(behaviour, "__qualname__", None) or repr(behaviour)
    if inspect.isasyncgen(running):
        raise TypeError(
            f"an actor's behaviour must be an async function that does not yield, but {name} "
            "is an async generator function"
        )
    if not inspect.isawaitable(running):
        raise TypeError(
            f"an actor's behaviour must be an async function (async def), but {name} "
            f"returned {type(running).__name__}, not something to await: is it async?"
        )
    return running
