"""Pools: a fixed number of actors running one behaviour, behind one
reference-like object that routes each message to one of them.

A pool is an actor (its *host*, named as the pool) whose behaviour opens a
one-for-one supervisor over the members and waits; the members are that
supervisor's children. So the pool lives in the system's nursery like any
actor, stopping it stops the members gracefully (last first), and a member's
failure restarts that member, on its own mailbox, within the strategy's budget
(escalating past it fails the pool, and so the system). Routing happens in the
sender's task: a ``tell`` goes straight into the chosen member's mailbox, with
that mailbox's backpressure.

A member that fails while handling a message loses that message (it is not
retried elsewhere: an ask gets :class:`~actors.ActorFailedError`, as from any
actor); the messages queued behind it stay in its mailbox and are handled by
its restarted behaviour.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Awaitable, Callable
from typing import Any, Generic, Never, TypeVar, TypeVarTuple, Unpack, cast, final

import attrs
import trio

from ._core._cell import ActorState, ActorStatistics, _Cell
from ._core._envelope import Address
from ._core._errors import ActorStoppedError
from ._core._inbox import Inbox
from ._core._mailbox import ActorRef
from ._core._monitors import ExitReason
from ._core._reply import Reply
from ._core._util import NoPublicConstructor, foreign_thread_error, in_trio_thread
from ._restarts import OneForOne
from ._spawning import Spawner
from ._supervision import Supervisor, open_supervisor

M = TypeVar("M")
M_contra = TypeVar("M_contra", contravariant=True)
R = TypeVar("R")
Ts = TypeVarTuple("Ts")


class Routing(enum.StrEnum):
    """How a pool picks the member a message goes to."""

    ROUND_ROBIN = "round-robin"
    """Each member in turn, whatever it holds; a full one makes ``tell`` wait."""
    LEAST_LOADED = "least-loaded"
    """The member with the fewest messages queued, counting one more for a
    member busy with a message (not waiting in its receive); ties go to the
    next in turn. A member waiting out its restart back-off is picked only
    when every member is. ``tell`` waits only if that member is full: so all
    are, or every running one."""


@attrs.frozen
class PoolStatistics:
    """A snapshot of a pool, from :meth:`Pool.statistics`."""

    address: Address
    routing: Routing
    members: tuple[ActorStatistics, ...]


@attrs.define(eq=False)
class _Host:
    """What the host's behaviour hands back to :func:`open_pool`."""

    ready: trio.Event = attrs.field(factory=trio.Event)
    supervisor: Supervisor | None = None


async def _supervise_members(
    inbox: Inbox[Never], system: Spawner, strategy: OneForOne, host: _Host
) -> None:
    """The pool's own behaviour: supervise the members until stopped."""
    async with open_supervisor(system, strategy, inbox.address.name) as supervisor:
        host.supervisor = supervisor
        host.ready.set()
        async for _ in inbox:
            pass


@final
class Pool(Generic[M_contra], metaclass=NoPublicConstructor):
    """``size`` actors behind one object, typed like an
    :class:`~actors.ActorRef` for ``tell``, ``tell_nowait`` and ``ask``.
    Built by :meth:`ActorSystem.pool <actors.ActorSystem.pool>`."""

    __slots__ = ("_host", "_members", "_next", "_routing")

    def __init__(
        self, host: ActorRef[Never], members: list[ActorRef[M_contra]], routing: Routing
    ) -> None:
        self._host = host
        self._members = members
        self._routing = routing
        # The member after the last one chosen.
        self._next = 0

    def __repr__(self) -> str:
        return f"<Pool {self.name!r} of {len(self._members)} ({self._routing})>"

    @property
    def address(self) -> Address:
        """The pool's own address (its host actor's)."""
        return self._host.address

    @property
    def name(self) -> str:
        return self._host.name

    @property
    def members(self) -> tuple[ActorRef[M_contra], ...]:
        """The members, in order (each keeps its reference across restarts)."""
        return tuple(self._members)

    def _route(self, call: str, instead: str) -> ActorRef[M_contra]:
        host = self._host._cell
        if not in_trio_thread(host.token):
            raise foreign_thread_error(f"{call} of pool {self.name!r}", instead)
        if host.state is not ActorState.RUNNING:
            raise ActorStoppedError(f"pool {self.name!r} is stopped")
        members = self._members
        count = len(members)
        chosen = self._next % count
        if self._routing is Routing.LEAST_LOADED:
            least = math.inf
            for step in range(count):
                index = (self._next + step) % count
                load = _load(members[index]._cell)
                if load < least:
                    chosen, least = index, load
                    if load == 0:
                        break
        self._next = chosen + 1
        return members[chosen]

    async def tell(self, message: M_contra) -> None:
        """Put ``message`` in the mailbox of the member routing picks, waiting
        for room while it is full (see :meth:`ActorRef.tell`). Raises
        :class:`~actors.ActorStoppedError` once the pool is stopping."""
        await self._route("tell", "trio.from_thread.run(pool.tell, message)").tell(message)

    def tell_nowait(self, message: M_contra) -> None:
        """Put ``message`` in the mailbox of the member routing picks, or raise
        :class:`trio.WouldBlock` if that one is full (see
        :meth:`ActorRef.tell_nowait`)."""
        call, instead = "tell_nowait", "trio.from_thread.run_sync(pool.tell_nowait, message)"
        self._route(call, instead).tell_nowait(message)

    async def ask(
        self,
        build: Callable[[*Ts, Reply[R]], M_contra],
        /,
        *args: *Ts,
        timeout: float | None = None,  # noqa: ASYNC109 (as ActorRef.ask)
    ) -> R:
        """Ask the member routing picks: send it ``build(*args, reply)`` (see
        :meth:`ActorRef.ask`)."""
        member = self._route("ask", "trio.from_thread.run(pool.ask, build)")
        return await member.ask(build, *args, timeout=timeout)

    async def stop(self) -> None:
        """Stop the pool: its members stop gracefully, last first, each
        delivering what it accepted. Returns once all have stopped."""
        await self._host.stop()

    async def kill(self) -> None:
        """Cancel the pool and its members now (see :meth:`ActorRef.kill`)."""
        await self._host.kill()

    async def wait_stopped(self) -> ExitReason:
        """Wait until the pool ended, and return why (see
        :meth:`ActorRef.wait_stopped`)."""
        return await self._host.wait_stopped()

    def statistics(self) -> PoolStatistics:
        return PoolStatistics(
            self.address, self._routing, tuple(member.statistics() for member in self._members)
        )


def _load(cell: _Cell[Any]) -> int:
    """How busy a member is: its queued messages, plus one unless it waits in
    its receive; a member between incarnations (waiting out its restart
    back-off) ranks after every running one, by its queue."""
    channel = cell.send_channel.statistics()
    load = channel.current_buffer_used + (0 if channel.tasks_waiting_receive else 1)
    return load if cell.running else _RESTARTING + load


_RESTARTING = 1 << 62
"""Added to the load of a member that is not running: more than any queue."""


async def open_pool(
    system: Spawner,
    behaviour: Callable[[Inbox[M], Unpack[Ts]], Awaitable[None]],
    args: tuple[*Ts],
    *,
    size: int,
    routing: Routing,
    name: str,
    capacity: float,
    strategy: OneForOne,
    nursery: trio.Nursery,
) -> Pool[M]:
    """Spawn the host, then the members under its supervisor (see
    :meth:`ActorSystem.pool <actors.ActorSystem.pool>`)."""
    host = _Host()
    host_ref = await system._spawn(
        _supervise_members, (system, strategy, host), name=name, capacity=0, nursery=nursery
    )
    try:
        await host.ready.wait()
        supervisor = host.supervisor
        assert supervisor is not None, "the host is ready once its supervisor is"
        members = [
            await supervisor.spawn(behaviour, *args, name=f"{name}/{index}", capacity=capacity)
            for index in range(size)
        ]
    except BaseException:
        # A member's spawn failed (its name is taken, its behaviour raised at
        # once), or the caller was cancelled: nothing of the pool stays.
        with trio.CancelScope(shield=True):
            await host_ref.kill()
        raise
    return cast("Pool[M]", Pool._create(host_ref, members, routing))
