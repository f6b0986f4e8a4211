"""The actor system: the nursery scope actors live in."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any, Never, TypeVar, TypeVarTuple, Unpack, cast, final

import trio

from ._core._cell import (
    DEFAULT_CAPACITY,
    ActorState,
    _Cell,
    check_capacity,
    stop_last_first,
)
from ._core._envelope import Address
from ._core._inbox import Inbox
from ._core._mailbox import ActorRef
from ._core._trace import Tracer
from ._core._transit import Bounds, Latency, check_latency
from ._core._util import foreign_thread_error, in_trio_thread
from ._determinism import current_latency, current_seed
from ._pool import Pool, Routing, open_pool
from ._registry import Listing, ServiceKey, _Registry
from ._restarts import Escalate, OneForAll, OneForOne, RestForOne, Strategy
from ._sequencer import Sequencer
from ._spawning import Spawner
from ._supervision import Supervisor, open_supervisor

M = TypeVar("M")
Ts = TypeVarTuple("Ts")


@final
class ActorSystem(Spawner):
    """The scope of a group of actors: built by :func:`open_system`.

    ``seed`` drives every random choice the library makes in this system, through
    ``random``; ``tracer`` (if any) receives every delivery and lifecycle event.
    """

    def __init__(
        self, nursery: trio.Nursery, seed: int, tracer: Tracer | None, latency: Bounds | None
    ) -> None:
        super().__init__(nursery, seed, tracer, latency)
        self._registry: _Registry | None = None

    def __repr__(self) -> str:
        latency = "" if self._transit is None else f" latency={self.latency}"
        return f"<ActorSystem seed={self.seed}{latency} actors={len(self._live)}>"

    @property
    def latency(self) -> tuple[float, float] | None:
        """The bounds ``(low, high)`` of each message's delay, or None: latency
        is off (see :func:`open_system`)."""
        transit = self._transit
        return None if transit is None else (transit.low, transit.high)

    async def spawn(
        self,
        behaviour: Callable[[Inbox[M], Unpack[Ts]], Awaitable[None]],
        *args: *Ts,
        name: str | None = None,
        capacity: float = DEFAULT_CAPACITY,
        nursery: trio.Nursery | None = None,
    ) -> ActorRef[M]:
        """Start an actor running ``behaviour(inbox, *args)``; return its reference
        once its mailbox accepts messages.

        ``name`` must not be held by a live actor of this system (default: the
        behaviour's name and a number). ``capacity`` bounds the mailbox
        (``math.inf`` for unbounded). The actor lives in the system's nursery, or
        in ``nursery`` if given (stop it before that nursery's block ends, or it
        keeps the block open). If the behaviour raises, the error cancels the
        scope it lives in and propagates (:class:`~actors.Escalate`); use
        :meth:`open_supervisor` with a restarting strategy for restarts.

        ``behaviour`` is called before ``spawn`` returns (an ``async def``
        runs nothing until the actor's task awaits it): a plain function, or
        anything whose call gives nothing to await, is refused with
        :class:`TypeError`, as is a coroutine object (``spawn(worker(x))``),
        and nothing is spawned.

        Only from the system's Trio thread: any other thread, or another
        ``trio.run``, gets :class:`RuntimeError`, and nothing is spawned.
        """
        if not in_trio_thread(self._token):
            raise foreign_thread_error(
                "spawn in an actor system", "trio.from_thread.run(system.spawn, behaviour)"
            )
        return await self._spawn(
            behaviour,
            args,
            name=name,
            capacity=capacity,
            nursery=self._nursery if nursery is None else nursery,
        )

    def open_supervisor(
        self, strategy: Strategy | None = None, *, name: str = "supervisor"
    ) -> AbstractAsyncContextManager[Supervisor]:
        """A scope of actors under ``strategy`` (default :class:`~actors.Escalate`).

        ``async with system.open_supervisor(OneForOne(intensity=3, period=5)) as sup:``
        spawns with ``sup.spawn``. When the block ends, the scope stops its live
        children gracefully, last spawned first, and returns once they stopped.
        """
        return open_supervisor(self, Escalate() if strategy is None else _strategy(strategy), name)

    def lookup(self, key: str | Address) -> ActorRef[Never] | None:
        """The live actor named ``key``, or at ``key`` (an address: the same
        name and uid, so a later actor that took the name is not it); None if
        there is none. What an actor accepts is not known from a name, so the
        reference is an ``ActorRef[Never]``: it stops, kills, waits and is
        monitored as any other; to tell or ask, say what it accepts with
        ``typing.cast`` (or find it through a typed :class:`~actors.ServiceKey`).
        Sequencers are not actors: their addresses look up None. Only from the
        system's Trio thread."""
        if not in_trio_thread(self._token):
            raise foreign_thread_error(
                "lookup in an actor system", "trio.from_thread.run_sync(system.lookup, key)"
            )
        if isinstance(key, str):
            name = key
        elif isinstance(key, Address):
            name = key.name
        else:
            raise TypeError(f"lookup takes a name or an Address, not {key!r}")
        cell = self._live.get(name)
        if cell is None or (isinstance(key, Address) and cell.address != key):
            return None
        return cast("ActorRef[Never]", ActorRef._create(cell))

    def _registry_for(
        self, call: str, args: str, key: ServiceKey[Any], *refs: ActorRef[Any]
    ) -> _Registry:
        """The registry, for ``call(args)`` with ``key``; on ``refs`` (the
        actor the call offers or subscribes, if it does), a live actor of
        this system."""
        if not in_trio_thread(self._token):
            raise foreign_thread_error(
                f"{call} in an actor system", f"trio.from_thread.run_sync(system.{call}, {args})"
            )
        if not isinstance(key, ServiceKey):
            raise TypeError(f"{call} takes a ServiceKey, not {key!r}")
        for ref in refs:
            if not isinstance(ref, ActorRef):
                raise TypeError(f"{call} takes an ActorRef, not {ref!r}")
            if self._live.get(ref.name) is not ref._cell:
                if ref._cell.state is ActorState.STOPPED:
                    raise ref._cell.stopped_error()
                raise ValueError(f"actor {ref.name!r} is not an actor of this system")
        if self._registry is None:
            self._registry = _Registry()
        return self._registry

    def _the_registry(self) -> _Registry:
        """The registry, made now if this is its first use (for the nodes:
        ``actors.net``, in the system's Trio thread)."""
        if self._registry is None:
            self._registry = _Registry()
        return self._registry

    def register(self, key: ServiceKey[M], ref: ActorRef[M]) -> None:
        """Offer ``ref`` under ``key`` (again: nothing changes). The entry
        leaves when the actor ends for good, or with :meth:`deregister`; each
        change sends the key's subscribers a new :class:`~actors.Listing`.
        Raises :class:`~actors.ActorStoppedError` for a stopped actor and
        :class:`ValueError` for another system's. Only from the system's
        Trio thread."""
        self._registry_for("register", "key, ref", key, ref).register(key, ref._cell)

    def deregister(self, key: ServiceKey[M], ref: ActorRef[M]) -> bool:
        """Withdraw ``ref`` from ``key``; False if it was not there."""
        return self._registry_for("deregister", "key, ref", key).deregister(key, ref._cell)

    def find(self, key: ServiceKey[M]) -> tuple[ActorRef[M], ...]:
        """The actors registered under ``key`` now, in registration order.
        Only from the system's Trio thread."""
        return self._registry_for("find", "key", key).find(key)

    def subscribe(self, key: ServiceKey[M], subscriber: ActorRef[Listing[M]]) -> None:
        """Send ``subscriber`` a :class:`~actors.Listing` of ``key`` now, and
        another after each change of its actors, until it ends or
        :meth:`unsubscribe`. Subscribing again sends the current listing and
        changes nothing else. Listings are framework messages: like ``Down``
        they go beyond a full mailbox, after what it held, and never wait;
        one waiting there is replaced by the next listing of ``key`` (a
        subscriber that does not keep up gets the newest, and holds one per
        key, not one per change). The subscriber's message type must include
        ``Listing[M]`` (mypy checks it). Raises as :meth:`register`."""
        self._registry_for("subscribe", "key, subscriber", key, subscriber).subscribe(
            key, subscriber._cell
        )

    def unsubscribe(self, key: ServiceKey[M], subscriber: ActorRef[Listing[M]]) -> bool:
        """Stop sending listings of ``key`` to ``subscriber``; False if it was
        not subscribed."""
        return self._registry_for("unsubscribe", "key, subscriber", key).unsubscribe(
            key, subscriber._cell
        )

    async def pool(
        self,
        behaviour: Callable[[Inbox[M], Unpack[Ts]], Awaitable[None]],
        *args: *Ts,
        size: int,
        routing: Routing = Routing.ROUND_ROBIN,
        name: str | None = None,
        capacity: float = DEFAULT_CAPACITY,
        strategy: OneForOne | None = None,
    ) -> Pool[M]:
        """Start ``size`` actors running ``behaviour(inbox, *args)`` behind one
        :class:`~actors.Pool`, which routes each ``tell`` or ``ask`` to one of
        them (``routing``). Returns once every member accepts messages.

        The pool is an actor named ``name`` (default: the behaviour's name,
        ``-pool`` and a number) whose members, ``name/0`` .. ``name/size-1``,
        each with a mailbox of ``capacity``, live under a ``strategy``
        supervisor (default ``OneForOne(intensity=size, period=5)``): a member
        that fails is restarted on its own mailbox; the message it was handling
        is lost (an ask of it fails with :class:`~actors.ActorFailedError`).
        Stopping the pool (or the system) stops the members gracefully.
        Raises :class:`ValueError` if ``size`` is below 1, for a bad
        ``capacity`` or ``routing``, and whatever a member's spawn raised (its
        name is taken, say) or a cancellation, having ended what it had
        started: a pool that is not returned leaves no actor. Only from the
        system's Trio thread."""
        if not in_trio_thread(self._token):
            raise foreign_thread_error(
                "pool in an actor system", "trio.from_thread.run(system.pool, behaviour)"
            )
        if not (isinstance(size, int) and size >= 1):
            raise ValueError(f"a pool's size must be a whole number >= 1, not {size!r}")
        check_capacity(capacity)
        if strategy is not None:
            _strategy(strategy)
        if routing not in tuple(Routing):
            raise ValueError(
                f"a pool's routing must be one of {', '.join(repr(r.value) for r in Routing)}, "
                f"not {routing!r}"
            )
        if name is None:
            name = f"{getattr(behaviour, '__name__', 'actor')}-pool-{next(self._uids)}"
        return await open_pool(
            self,
            behaviour,
            args,
            size=size,
            routing=Routing(routing),
            name=name,
            capacity=capacity,
            strategy=OneForOne(intensity=size, period=5) if strategy is None else strategy,
            nursery=self._nursery,
        )

    def sequencer(self, members: Sequence[ActorRef[M]] = (), *, name: str) -> Sequencer[M]:
        """A sequencer that stamps messages and broadcasts them to ``members``,
        and to the actors that :meth:`~actors.Sequencer.join` it later (a
        group that starts empty says what it carries:
        ``room: Sequencer[Said] = system.sequencer(name="room")``).

        Raises :class:`ValueError`, and builds nothing, if an actor is listed
        twice (it would receive every message twice), and
        :class:`~actors.ActorStoppedError` if one's mailbox is closed (as
        :meth:`~actors.Sequencer.join` does). Only from the system's
        Trio thread, like :meth:`spawn`.
        """
        if not in_trio_thread(self._token):
            raise foreign_thread_error(
                f"sequencer {name!r} of an actor system",
                "trio.from_thread.run_sync(system.sequencer, members, name)",
            )
        cells = [ref._cell for ref in members]
        listed: set[_Cell[M]] = set()
        for cell in cells:
            if cell in listed:
                raise ValueError(
                    f"sequencer {name!r}: actor {cell.address.name!r} is listed twice as a member"
                )
            if cell.state is not ActorState.RUNNING:
                raise cell.stopped_error()  # as sequencer.join refuses it
            listed.add(cell)
        sequencer = Sequencer._create(
            self._allocate(name), cells, self.tracer, self._token, self._transit
        )
        return cast("Sequencer[M]", sequencer)

    def cancel(self) -> None:
        """Cancel every actor of the system now, without a graceful stop, those
        spawned into another ``nursery`` too: when the ``open_system`` block
        ends, it ends at once. Messages still queued
        are reported as dropped. Idempotent. Only from the system's Trio
        thread (from another: ``trio.from_thread.run_sync(system.cancel)``).

        The ``open_system`` block is cancelled too (its body runs in the
        system's nursery, as a nursery's body does): from its next checkpoint
        on, the rest of the block does not run, and the block ends without an
        error, as if it had finished. So keep what the block computes in a
        variable and return it after the block.

        .. not run: a pattern; tests/actors/test_system.py runs the cancel it guards against

        ::

            async def total() -> int:
                result = None
                async with actors.open_system() as system:
                    ...
                    result = await ref.ask(Total)
                    system.cancel()
                if result is None:
                    raise RuntimeError("cancelled before the total came")
                return result

        A type checker is told: the block's exit is typed to return ``bool``
        (it may swallow the cancellation), as a trio nursery's is, so mypy
        reports ``Missing return statement`` for a function that returns only
        inside the block."""
        if not in_trio_thread(self._token):
            raise foreign_thread_error(
                "cancel of an actor system", "trio.from_thread.run_sync(system.cancel)"
            )
        self._nursery.cancel_scope.cancel()
        self._cancel_live()

    def _cancel_live(self) -> None:
        """Cancel every live actor, and none restarts: those in the system's
        nursery are cancelled with it, but an actor spawned with
        ``nursery=`` lives elsewhere and would outlive its system."""
        for cell in self._live.values():
            cell.final = True
            cell.scope.cancel()

    async def _stop_all(self) -> None:
        await stop_last_first(self._live, lambda cell: cell)


def _strategy(strategy: Strategy) -> Strategy:
    """``strategy``, or :class:`TypeError` if it is not one."""
    if not isinstance(strategy, Escalate | OneForOne | OneForAll | RestForOne):
        raise TypeError(
            "a supervisor's strategy must be an instance of Escalate, OneForOne, OneForAll "
            f"or RestForOne, not {strategy!r}"
        )
    return strategy


def open_system(
    *, seed: int | None = None, tracer: Tracer | None = None, latency: Latency = None
) -> AbstractAsyncContextManager[ActorSystem, bool]:
    """Open an actor system: a nursery scope whose actors end with it.

    When the block ends normally, every live actor of the system is stopped
    gracefully, last spawned first (later actors may depend on earlier ones),
    and the block returns once all have stopped; after
    :meth:`ActorSystem.cancel` it returns at once instead. If the block or an
    actor raises, everything in it is cancelled and the error propagates (in a
    :class:`BaseExceptionGroup`, as Trio's nurseries do).

    ``seed`` defaults to the seed :func:`actors.run` was given, or 0.

    ``latency`` (default: the latency :func:`actors.run` was given, else
    off) delays each message between actors by a virtual time drawn from a
    generator seeded with ``seed``: ``L`` draws each delay uniformly in
    ``[0, L]`` seconds, ``(low, high)`` in ``[low, high]``. The messages of
    one sender to one receiver keep their order; those of different senders
    interleave as their delays fall. See "Latency" in ``docs/actors.md``.
    A bad ``latency`` raises :class:`TypeError` or :class:`ValueError` here,
    before the system opens.
    """
    opened = _open_system(seed, tracer, None if latency is None else check_latency(latency))
    # Its exit returns True when it swallowed the cancellation of
    # ActorSystem.cancel: typed so, as trio's nurseries are, a checker knows
    # the block may end early.
    return cast("AbstractAsyncContextManager[ActorSystem, bool]", opened)


@asynccontextmanager
async def _open_system(
    seed: int | None, tracer: Tracer | None, latency: Bounds | None
) -> AsyncIterator[ActorSystem]:
    if seed is None:
        seed = current_seed()
    if latency is None:
        latency = current_latency()
    async with trio.open_nursery() as nursery:
        system = ActorSystem._create(nursery, seed, tracer, latency)
        try:
            yield system
            if not nursery.cancel_scope.cancel_called:
                await system._stop_all()
        finally:
            # After a cancel or an error: actors spawned elsewhere end too.
            system._cancel_live()
            system._timekeeper.close()
