"""The controller client: connects to every process of a replica, routes
commands, and merges the processes' responses (docs/architecture.md).

``Hello`` and ``UpdateConfiguration`` go to every process; every other command
to process 0 only. A reconnect opens a new connection (a fresh nonce from the
replica's seed) to every process, sends only ``Hello``, and closes the old one,
so the replica's response sends to it fail from then on.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import AsyncIterator, Callable, Collection, Iterable, Sequence
from contextlib import asynccontextmanager
from typing import Protocol

import attrs
import trio

from actors import ActorSystem

from ..model._dataflow import DataflowClass, DataflowDescription
from ..model._frontier import Frontier
from ..model._ids import GlobalId, as_id
from ..model._metrics import Metrics
from ..model._rows import (
    MAX_RESULT_ROWS,
    RESULT_TOO_LARGE,
    ResultTooLargeError,
    Row,
    Update,
    row_order,
)
from ..protocol import (
    Canceled,
    CancelPeek,
    Command,
    CommandRejected,
    CreateDataflow,
    Frontiers,
    Hello,
    Peek,
    PeekError,
    PeekResponse,
    PeekResult,
    ProtocolError,
    Response,
    Rows,
    SubscribeBatch,
    UpdateConfiguration,
)
from ..runtime._connection import ClientEnd, ServerEnd, logger, open_connection
from ..runtime._faults import Faults
from ..runtime._merge import PartitionedState
from ..storage._shard import Shard
from ._errors import PeekCanceledError, PeekFailedError, ReplicaAbortedError


class Endpoint(Protocol):
    """Where a controller connection to one process opens: an in-process
    :class:`~replica.Process`, or a process across the network."""

    def accept(self, connection: ServerEnd) -> None: ...


class Served(Protocol):
    """What a controller needs of the replica it drives: its processes, the
    faults to inject, the actor system whose seeded random makes nonces, and
    the replica's counters. A :class:`~replica.Replica` is one."""

    @property
    def processes(self) -> Sequence[Endpoint]: ...

    @property
    def faults(self) -> Faults: ...

    @property
    def system(self) -> ActorSystem: ...

    @property
    def metrics(self) -> Metrics: ...


@attrs.define(eq=False)
class _Subscription:
    """What a subscribe delivered and the controller has not handed out."""

    upper: Frontier = attrs.field(factory=lambda: Frontier.at(0))
    updates: list[Update] = attrs.field(factory=list)


@attrs.define(eq=False)
class _PendingPeek:
    done: trio.Event = attrs.field(factory=trio.Event)
    result: PeekResult | None = None


@attrs.define(eq=False)
class _Session:
    """What the controller knows on one connection."""

    nonce: int
    ends: list[ClientEnd]
    # The processes' responses merged; none with one process (what a process
    # sends is already merged: a merger of one part would pass it on as it is).
    merger: PartitionedState | None
    frontiers: dict[GlobalId, Frontier] = attrs.field(factory=dict)
    peeks: dict[int, _PendingPeek] = attrs.field(factory=dict)
    subscriptions: dict[GlobalId, _Subscription] = attrs.field(factory=dict)


@attrs.define(eq=False)
class Controller:
    """A controller of one replica; built by :func:`open_controller`."""

    replica: Served
    _nursery: trio.Nursery
    _session: _Session | None = None
    _uuids: itertools.count[int] = attrs.field(factory=lambda: itertools.count(1))
    # Set on the next change, for whoever waits for one; None while nobody does.
    _changed: trio.Event | None = None
    rejections: list[CommandRejected] = attrs.field(factory=list)
    # The one-shot reads sent that miss a one-shot read's shape, each with
    # what it misses: sent all the same, and logged (see ``send``).
    misfits: list[str] = attrs.field(factory=list)
    # Frontiers that went back, as the mergers saw them (a bug if ever non-empty).
    regressions: list[str] = attrs.field(factory=list)
    # Set once a replica process failed its connection (it aborted): what
    # every call raises from then on.
    failure: ReplicaAbortedError | None = None

    async def connect(self, *, lose_hello_at: Collection[int] = ()) -> int:
        """Open a new connection to every process (closing the current one) and
        send ``Hello``; return its nonce. A checkpoint.

        ``lose_hello_at`` injects a fault: the ``Hello`` to those processes is
        lost, so they serve the connection without ever recording it in their
        connection order (process 0 must not be among them).
        """
        if self.failure is not None:
            raise self.failure
        if 0 in lose_hello_at:
            raise ProtocolError("process 0 must record every connection")
        lose_hello_at = frozenset(lose_hello_at) | self.replica.faults.lose_hello(
            len(self.replica.processes)
        )
        await trio.lowlevel.checkpoint()
        old = self._session
        if old is not None:
            for end in old.ends:
                end.close()
            for pending in old.peeks.values():
                pending.result = PeekError("connection closed before the peek was answered")
                pending.done.set()
        nonce = self.replica.system.random.getrandbits(63)
        processes = self.replica.processes
        merger = PartitionedState(len(processes), self.regressions) if len(processes) > 1 else None
        session = _Session(nonce, [], merger)
        for part, process in enumerate(processes):
            client, server = open_connection(
                nonce,
                functools.partial(self._absorb, session, part),
                functools.partial(self._absorb_many, session, part),
                functools.partial(self._lost, session),
            )
            process.accept(server)
            session.ends.append(client)
        self._session = session
        self._notify()
        await trio.lowlevel.checkpoint()
        late = self.replica.faults.delay_hello(len(session.ends))
        for part, end in enumerate(session.ends):
            if part in lose_hello_at:
                continue
            if part in late:
                self.replica.faults.started()
                self._nursery.start_soon(self._hello_later, end, nonce, late[part])
            else:
                end.commands.send_nowait(Hello(nonce))
        return nonce

    def _lost(self, session: _Session, reason: str) -> None:
        """A process failed ``session``'s connection to it: the replica is
        gone for this controller (its processes share fate)."""
        if self.failure is None:
            self.failure = ReplicaAbortedError(reason)
        for pending in session.peeks.values():
            pending.done.set()
        self._notify()

    async def _hello_later(self, end: ClientEnd, nonce: int, delay: float) -> None:
        try:
            await trio.sleep(delay)
            end.commands.send_nowait(Hello(nonce))
        except trio.ClosedResourceError:
            return  # the controller reconnected meanwhile
        finally:
            self.replica.faults.finished()

    async def send(self, command: Command, *, check_shape: bool = True) -> None:
        """Send ``command``, routed by the protocol's rules; returns once sent,
        without waiting for the replica to apply it.

        A ``OneShotRead`` dataflow is checked for a one-shot read's shape, as
        the real compute controller checks it (every export transient, a
        single-time read, no subscribe and no materialized view): a misfit is
        sent all the same, logged as a warning and recorded in
        :attr:`misfits` (``check_shape=False`` skips the check, for a client
        that builds such a dataflow on purpose, as the driver's ``count``). A cancellation point but
        not a scheduling point (like trio's ``checkpoint_if_cancelled``):
        commands sent back to back travel together, as a real client's
        pipelined writes do, and the replica takes them when the caller next
        waits."""
        await trio.lowlevel.checkpoint_if_cancelled()
        session = self._connected()
        if check_shape and isinstance(command, CreateDataflow):
            self._check_shape(command.dataflow)
        if isinstance(command, (Hello, UpdateConfiguration)):
            for end in session.ends:
                end.commands.send_nowait(command)
        else:
            session.ends[0].commands.send_nowait(command)

    async def send_many(self, commands: Iterable[Command]) -> None:
        """Send ``commands`` in order, as :meth:`send` would one by one (a
        cancellation point, not a scheduling point): how a controller replays
        its history on a reconnect. If cancelled, nothing was sent."""
        await trio.lowlevel.checkpoint_if_cancelled()
        session = self._connected()
        ends = session.ends
        commands = list(commands)
        for command in commands:
            if isinstance(command, CreateDataflow):
                self._check_shape(command.dataflow)
        if len(ends) == 1:
            ends[0].commands.send_many_nowait(commands)
            return
        # Hello and UpdateConfiguration go to every process, the rest to process 0.
        for command in commands:
            if isinstance(command, (Hello, UpdateConfiguration)):
                for end in ends:
                    end.commands.send_nowait(command)
            else:
                ends[0].commands.send_nowait(command)

    def _check_shape(self, dataflow: DataflowDescription) -> None:
        if dataflow.dataflow_class is not DataflowClass.ONE_SHOT_READ:
            return
        misses = dataflow.shape_misfits()
        if misses:
            what = f"one-shot read {dataflow.name or list(dataflow.exports)}: {'; '.join(misses)}"
            self.misfits.append(what)
            logger.warning("a OneShotRead dataflow misses the shape of a one-shot read: %s", what)

    def frontier(self, id: GlobalId | int) -> Frontier | None:
        """The merged frontier the replica reported for ``id`` on this connection."""
        return self._connected().frontiers.get(as_id(id))

    async def await_frontier(self, id: GlobalId | int, ts: int) -> Frontier:
        """Wait until the replica reported a frontier for ``id`` that reached
        ``ts`` (every time before ``ts`` complete); return it. Parks on changes,
        never polls; use a cancel scope for a timeout. A checkpoint: parking
        is one, so it checkpoints again only if it never parked (one
        scheduling turn fewer for a waiter that was woken)."""
        id = as_id(id)
        parked = False
        while True:
            frontier = self._connected().frontiers.get(id)
            if frontier is not None and frontier.reached(ts):
                if not parked:
                    await trio.lowlevel.checkpoint()
                return frontier
            await self._next_change().wait()
            parked = True

    async def await_subscribe(self, id: GlobalId | int, up_to: int) -> list[Update]:
        """Wait until subscribe ``id``'s upper reached ``up_to``; return (and
        forget) every update it delivered since the last call that returned.
        Cancelled (a timeout), it keeps them. Parks on changes, never polls."""
        session = self._connected()
        subscription = session.subscriptions.setdefault(as_id(id), _Subscription())
        while not subscription.upper.reached(up_to):
            await self._next_change().wait()
            self._connected()
        await trio.lowlevel.checkpoint()
        updates, subscription.updates = subscription.updates, []
        return updates

    async def peek(
        self, id: GlobalId | int, ts: int, literals: tuple[Row, ...] | None = None
    ) -> list[Row]:
        """Read index ``id`` at ``ts`` (only the rows whose key is one of
        ``literals``, if given); return its rows, sorted (a row with
        multiplicity k, k times).

        Raises :class:`~replica.PeekFailedError` with the replica's
        message (unknown collection, read below the compaction frontier). The
        replica has no peek timeout: use a cancel scope. If cancelled, the peek
        is canceled at the replica too.
        """
        session = self._connected()
        uuid = next(self._uuids)
        pending = session.peeks[uuid] = _PendingPeek()
        try:
            await self.send(Peek(uuid, id, ts, literals))
            await pending.done.wait()
        except BaseException:
            if session.peeks.pop(uuid, None) is not None and session is self._session:
                session.ends[0].commands.send_nowait(CancelPeek(uuid))
            raise
        if self.failure is not None and pending.result is None:
            raise self.failure
        result = pending.result
        match result:
            case Rows(rows):
                if len(rows) > MAX_RESULT_ROWS:
                    # Each worker's part was within it; together they are not.
                    raise PeekFailedError(RESULT_TOO_LARGE)
                return sorted(rows, key=row_order)
            case PeekError(message):
                raise PeekFailedError(message)
            case Canceled():
                raise PeekCanceledError(f"peek {uuid} of collection {id} was canceled")
        raise AssertionError(f"peek {uuid} finished without a result")

    async def peek_shard(self, shard: Shard, ts: int) -> list[Row]:
        """Read ``shard`` at ``ts`` once its upper is past ``ts`` (a persist
        peek: what a materialized view holds). Parks on the shard's changes."""
        while shard.upper <= ts:
            await self._park_on(shard.listen)
        await trio.lowlevel.checkpoint()
        try:
            return shard.read_at(ts)
        except ResultTooLargeError as error:
            raise PeekFailedError(str(error)) from None

    async def await_metric(self, name: str, minus: str | None, most: int) -> int:
        """Wait until the replica's metric ``name`` (less ``minus``) is at most
        ``most``; return it. Parks on the metrics' changes."""
        metrics = self.replica.metrics
        while True:
            value = metrics.value(name) - (0 if minus is None else metrics.value(minus))
            if value <= most:
                await trio.lowlevel.checkpoint()
                return value
            await self._park_on(metrics.listen)

    def _connected(self) -> _Session:
        if self.failure is not None:
            raise self.failure
        if self._session is None:
            raise ProtocolError("the controller is not connected")
        return self._session

    async def _park_on(self, listen: Callable[[Callable[[], None]], Callable[[], None]]) -> None:
        """Park until what ``listen`` listens to changes, or the controller's
        state does (a replica that failed raises its failure)."""
        changed = self._next_change()
        stop = listen(changed.set)
        try:
            await changed.wait()
        finally:
            stop()
            if self._changed is changed:
                self._changed = None
        if self.failure is not None:
            raise self.failure

    def _next_change(self) -> trio.Event:
        if self._changed is None:
            self._changed = trio.Event()
        return self._changed

    def _notify(self) -> None:
        if self._changed is not None:
            self._changed.set()
            self._changed = None

    def _absorb_many(self, session: _Session, part: int, responses: list[Response]) -> None:
        """:meth:`_absorb` each of ``responses``, in order (with one process, its
        frontiers inline and one notification for them all)."""
        if session.merger is not None:
            for response in responses:
                self._absorb(session, part, response)
            return
        frontiers = session.frontiers
        changed = False
        for response in responses:
            if isinstance(response, Frontiers):
                frontiers[response.id] = response.upper
                changed = True
            else:
                self._absorb(session, part, response)
        if changed:
            self._notify()

    def _absorb(self, session: _Session, part: int, response: Response) -> None:
        """Process ``part``'s response, in the task that sent it (the
        connection hands it over at once)."""
        merger = session.merger
        merged = response if merger is None else merger.absorb(part, response)
        if isinstance(merged, Frontiers):
            # The common case first: most responses are frontiers.
            session.frontiers[merged.id] = merged.upper
            self._notify()
            return
        match merged:
            case PeekResponse(uuid, result):
                pending = session.peeks.pop(uuid, None)
                if pending is not None:
                    pending.result = result
                    pending.done.set()
            case SubscribeBatch(id, _, upper, updates):
                subscription = session.subscriptions.setdefault(id, _Subscription())
                subscription.updates.extend(updates)
                subscription.upper = upper
                self._notify()
            case CommandRejected():
                logger.warning("replica rejected %r: %s", merged.command, merged.reason)
                self.rejections.append(merged)
                self._notify()


@asynccontextmanager
async def open_controller(replica: Served, *, connect: bool = True) -> AsyncIterator[Controller]:
    """A controller for ``replica``, connected (``Hello`` sent) unless told not to."""
    async with trio.open_nursery() as nursery:
        controller = Controller(replica, nursery)
        if connect:
            await controller.connect()
        yield controller
        nursery.cancel_scope.cancel()
