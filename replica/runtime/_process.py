"""A clusterd process: its multiplexing client and its channel adapters
(docs/architecture.md).

The multiplexing client serves the controller's connections to this process
one at a time: on ``Hello`` it records the nonce in the process's
:class:`ConnectionOrder` first, then forwards commands to the runtime(s) and
merges their responses back onto the connection.

A channel adapter serves one connection at a time for one worker: the adapter
of global worker 0 sequences the connection's commands into the runtime's
command channel (with the connection's position in process 0's order); every
adapter forwards its worker's responses for that connection. A response for a
connection the adapter has not seen yet is stashed until it arrives. Once a
response send fails (the controller went away), the adapter leaves the
connection and drops its queued commands; it also leaves when the connection's
command stream ended and it forwarded everything. Either way it then waits for
the next connection.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Protocol

import attrs
import trio

from actors._declare import Table, belong

from ..compute._placement import renders_interactively
from ..compute._state import Role
from ..model._dataflow import DataflowDescription
from ..model._ids import GlobalId
from ..protocol import (
    CancelPeek,
    Command,
    CreateDataflow,
    CreateInstance,
    Hello,
    Peek,
    PeekResponse,
    ProtocolError,
    Response,
    UpdateConfiguration,
)
from ._connection import ConnectionOrder, RuntimeConnection, ServerEnd, logger
from ._faults import Faults
from ._merge import PartitionedState
from ._worker import SequencedCommand, Worker


class CommandChannel(Protocol):
    """What global worker 0's adapter sequences into: the runtime's
    :class:`~actors.Sequencer` (in one process), or one that also forwards
    each batch to the other processes (``replica.procs``)."""

    async def broadcast_many(self, messages: Iterable[SequencedCommand]) -> object:
        """Give every worker of the runtime ``messages``, in order."""
        ...


# A runtime's name is its workers' role's (the names the driver's language
# and the trace use).
MAINTENANCE: str = Role.MAINTENANCE.value
INTERACTIVE: str = Role.INTERACTIVE.value
MAINTENANCE_ONLY = (MAINTENANCE,)
INTERACTIVE_ONLY = (INTERACTIVE,)
EVERY_RUNTIME = (MAINTENANCE, INTERACTIVE)


@attrs.define(eq=False)
class ChannelAdapter:
    """The adapter of one worker: the worker's global ``index``, and (for global
    worker 0 only) the command channel it sequences into.

    The worker hands each response to :meth:`accept`, in its own task (no
    hop): the adapter forwards it to the connection it serves, stashes it for
    a connection it has not seen, or leaves its connection when the send
    fails or the worker has moved on to an unseen one. Its task serves one
    connection at a time: global worker 0's forwards the commands."""

    index: int
    local: int
    connections: trio.MemoryReceiveChannel[RuntimeConnection]
    sequencer: CommandChannel | None
    leader_order: ConnectionOrder | None
    stash: list[tuple[int, Response]] = attrs.field(factory=list)
    seen: set[int] = attrs.field(factory=set)
    # The connection served now (None between connections), why the adapter
    # left it (a failed response send), and the scope its task serves it in
    # (leaving cancels it).
    current: RuntimeConnection | None = None
    _failed: bool = False
    _serving: trio.CancelScope | None = None

    def accept(self, nonce: int, response: Response) -> None:
        """A response of this adapter's worker, tagged with its connection's
        nonce. Never blocks, never checkpoints."""
        current = self.current
        if current is None:
            self.stash.append((nonce, response))
        elif nonce == current.nonce:
            if not current.send(self.local, response):
                self._leave(failed=True)
        elif nonce not in self.seen:
            # The worker is already on a connection this adapter has not
            # seen: keep the response for it, and move on.
            self.stash.append((nonce, response))
            self._leave(failed=False)
        # Otherwise: for a connection this adapter already left; dropped.

    def accept_many(self, nonce: int, responses: list[Response]) -> None:
        """:meth:`accept` each of ``responses``, in order: what the connection
        served takes is handed on at once. Never blocks, never checkpoints."""
        current = self.current
        if current is not None and nonce == current.nonce:
            sent = current.send_many(self.local, responses)
            if sent == len(responses):
                return
            responses = responses[sent:]
        for response in responses:
            self.accept(nonce, response)

    def _leave(self, *, failed: bool) -> None:
        self.current, self._failed = None, failed
        if self._serving is not None:
            self._serving.cancel()

    async def run(self) -> None:
        belong(self)
        async for connection in self.connections:
            self.seen.add(connection.nonce)
            await self._serve(connection)

    async def _serve(self, connection: RuntimeConnection) -> None:
        self.current, self._failed = connection, False
        stashed, self.stash = self.stash, []
        for nonce, response in stashed:
            if self.current is not None and nonce == connection.nonce:
                if not connection.send(self.local, response):
                    self._leave(failed=True)
            elif nonce not in self.seen:
                self.stash.append((nonce, response))
        if self.current is not None:
            # In this task, until the connection's commands end or the adapter
            # leaves (which cancels the scope): no task of its own per connection.
            with trio.CancelScope() as self._serving:
                if self.sequencer is not None:
                    await self._forward_commands(connection)
                else:
                    await connection.ended.wait()
                self.current = None
            self._serving = None
        # The first reason to leave wins: a failed response send drops the queue
        # of commands, which only global worker 0's adapter reads.
        failed = self._failed and self.current is None
        self.current = None
        connection.leave(drop_queued=failed and self.sequencer is not None)

    async def _forward_commands(self, connection: RuntimeConnection) -> None:
        assert self.sequencer is not None, "only global worker 0's adapter sequences"
        assert self.leader_order is not None, "the leader reads process 0's order"
        nonce = connection.nonce
        async for first in connection.batches:
            # Sequence everything already queued as one batch (one checkpoint).
            batch = connection.with_queued(first)
            position = self.leader_order.position(nonce)
            # Commands taken from the queue are forwarded whole: worker
            # mailboxes are unbounded, so this never waits for room.
            with trio.CancelScope(shield=True):
                await self.sequencer.broadcast_many(SequencedCommand.all_of(nonce, position, batch))


@attrs.define(eq=False)
class _Merge:
    """The responses of one connection at one process: each runtime's
    workers merged, then the runtimes (with one runtime, what its workers'
    merge completes is the process's: a merger of one part would pass it on
    as it is); what completes goes to the controller. Once a send to the
    controller fails, every runtime connection is broken."""

    connection: ServerEnd
    runtimes: list[RuntimeConnection]
    within: list[PartitionedState]
    across: PartitionedState | None

    def deliver(self, number: int, local: int, response: Response) -> None:
        merged = self.within[number].absorb(local, response)
        across = self.across
        if merged is not None and across is not None and not isinstance(merged, PeekResponse):
            merged = across.absorb(number, merged)
        if merged is None:
            return
        try:
            self.connection.responses.send_nowait(merged)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            # The controller went away: the adapters' next sends fail.
            for runtime in self.runtimes:
                runtime.broken = True

    def deliver_many(self, number: int, local: int, responses: list[Response]) -> int:
        """:meth:`deliver` each of ``responses``, in order, until a send to the
        controller fails; how many it delivered (the one whose send failed
        among them)."""
        within, across = self.within[number], self.across
        line = self.connection.responses
        # What completes goes on at once to a controller that takes it so and
        # is still there (it is until this returns); else one by one.
        merged_all: list[Response] | None = (
            [] if line.reader_many is not None and not line.closed else None
        )
        for done, response in enumerate(responses, 1):
            merged = within.absorb(local, response)
            if merged is not None and across is not None and not isinstance(merged, PeekResponse):
                merged = across.absorb(number, merged)
            if merged is None:
                continue
            if merged_all is not None:
                merged_all.append(merged)
                continue
            try:
                line.send_nowait(merged)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                for runtime in self.runtimes:
                    runtime.broken = True
                return done
        if merged_all:
            line.send_many_nowait(merged_all)
        return len(responses)


@attrs.define(eq=False)
class Process:
    """One clusterd process: its connection order, its incoming connections,
    and for each runtime the inboxes of its local channel adapters."""

    index: int
    workers: int
    order: ConnectionOrder = attrs.field(factory=ConnectionOrder)
    # Per runtime, the channels that hand a connection to each local adapter.
    adapters: dict[str, list[trio.MemorySendChannel[RuntimeConnection]]] = attrs.field(
        factory=Table
    )
    _incoming: tuple[trio.MemorySendChannel[ServerEnd], trio.MemoryReceiveChannel[ServerEnd]] = (
        attrs.field(factory=lambda: trio.open_memory_channel[ServerEnd](math.inf))
    )
    # The runtime connections of every connection served, by nonce (for tests
    # and tracing: how many commands each adapter dropped).
    served: dict[int, dict[str, RuntimeConnection]] = attrs.field(factory=dict)
    # Per held runtime, what the multiplexer would have forwarded to it, in
    # order: a command, or None for the end of a connection's commands.
    held: dict[str, list[tuple[RuntimeConnection, Command | None]]] = attrs.field(factory=dict)
    faults: Faults | None = None
    # Frontiers that went back, as this process's mergers saw them.
    regressions: list[str] = attrs.field(factory=list)
    # Per runtime delayed by a fault: what waits behind the delay, in order.
    delayed: dict[str, list[tuple[RuntimeConnection, Command | None]]] = attrs.field(factory=dict)
    # Which runtimes run each collection (by the dataflows routed so far);
    # every runtime when absent.
    # (Tables: the explorer's reduction records their uses key by key.)
    owners: dict[GlobalId, tuple[str, ...]] = attrs.field(factory=Table)
    # Why the process aborted (a worker panicked: shared fate), once it did.
    panicked: str | None = None
    # Every runtime's workers of this process, which an abort stops.
    members: list[Worker] = attrs.field(factory=list)
    # Told the reason once the process aborted (a spawned process exits).
    on_abort: Callable[[str], None] | None = None
    # The controller connections served, which an abort fails.
    _connections: list[ServerEnd] = attrs.field(factory=list)
    # The settings as the multiplexer has routed them (which decide placement).
    configuration: dict[str, str] = attrs.field(factory=dict)
    _instanced: bool = False
    _nursery: trio.Nursery | None = None

    def accept(self, connection: ServerEnd) -> None:
        """A controller opened ``connection`` to this process."""
        self._incoming[0].send_nowait(connection)

    def hold(self, runtime: str) -> None:
        """From now on, queue what would be forwarded to ``runtime``."""
        self._check(runtime)
        self.held.setdefault(runtime, [])

    def release(self, runtime: str) -> None:
        """Forward what was queued for ``runtime``, in order, and stop holding it."""
        self._check(runtime)
        for connection, command in self.held.pop(runtime, []):
            self._pass(runtime, connection, command)

    def _check(self, runtime: str) -> None:
        if runtime not in self.adapters:
            running = ", ".join(self.adapters)
            raise ProtocolError(f"process {self.index} runs no {runtime} runtime (only {running})")

    def _targets(self, command: Command) -> Sequence[str]:
        """Every command goes to every runtime, maintenance first, except
        peeks and their cancels, which go to the interactive runtime only (to
        maintenance when Solo): each runtime decides from a dataflow's class
        whether it renders it (:mod:`replica.compute._placement`)."""
        if INTERACTIVE not in self.adapters:
            return MAINTENANCE_ONLY
        match command:
            case Peek() | CancelPeek():
                return INTERACTIVE_ONLY
            case CreateInstance(config):
                if not self._instanced:
                    self._instanced = True
                    self.configuration.update(config.settings)
            case UpdateConfiguration(params):
                self.configuration.update(params)
            case CreateDataflow(dataflow):
                self.claim(dataflow, self.configuration)
        return EVERY_RUNTIME

    def claim(self, dataflow: DataflowDescription, configuration: Mapping[str, str]) -> None:
        """Record which runtime renders ``dataflow``'s collections (and so
        alone reports their frontiers), under ``configuration`` as it is when
        the dataflow is created. Process 0's multiplexer does it when it
        routes the dataflow; every worker when it applies it, so the other
        processes (which see no command but ``Hello``) know it before any
        response about the dataflow reaches their mergers."""
        if INTERACTIVE not in self.adapters:
            return
        renderer = (
            (INTERACTIVE,) if renders_interactively(dataflow, configuration) else (MAINTENANCE,)
        )
        owners = self.owners
        for id in dataflow.exports:
            owners[id] = renderer  # every worker the same: entry by entry, they commute

    def _reporting(self, names: list[str]) -> Callable[[GlobalId], frozenset[int]]:
        """Which of the runtimes (``names``, in merge order) report ``id``."""
        everyone = frozenset(range(len(names)))
        parts: dict[tuple[str, ...], frozenset[int]] = {}

        def reporting(id: GlobalId) -> frozenset[int]:
            owners = self.owners.get(id)
            if owners is None:
                return everyone
            found = parts.get(owners)
            if found is None:
                found = parts[owners] = frozenset(names.index(name) for name in owners)
            return found

        return reporting

    def _forward(
        self, runtime: str, connection: RuntimeConnection, command: Command | None
    ) -> None:
        queue = self.held.get(runtime)
        if queue is None:
            self._pass(runtime, connection, command)
        else:
            queue.append((connection, command))

    def _pass(self, runtime: str, connection: RuntimeConnection, command: Command | None) -> None:
        """Deliver now, unless a delivery fault delays this runtime."""
        waiting = self.delayed.get(runtime)
        if waiting is not None:
            waiting.append((connection, command))
            return
        delay = None if self.faults is None else self.faults.delay_delivery()
        if delay is None or self._nursery is None:
            _deliver(connection, command)
            return
        self.delayed[runtime] = [(connection, command)]
        assert self.faults is not None
        self.faults.started()
        self._nursery.start_soon(self._deliver_after, runtime, delay, self.faults)

    async def _deliver_after(self, runtime: str, delay: float, faults: Faults) -> None:
        try:
            await trio.sleep(delay)
            for connection, command in self.delayed.pop(runtime, []):
                _deliver(connection, command)
        finally:
            faults.finished()

    def abort(self, message: str) -> None:
        """A worker of this process panicked (``message``): stop every
        runtime's workers here and fail the controller's connections to this
        process, which then sees it gone (shared fate). Later commands are
        dropped, a later connection fails at once. Only the first panic
        counts."""
        if self.panicked is not None:
            return
        self.panicked = message
        logger.error("replica process %d aborted: a worker panicked: %s", self.index, message)
        for worker in self.members:
            worker.halt()
        for connection in self._connections:
            connection.responses.fail(self._panic_reason())
        if self.on_abort is not None:
            self.on_abort(self._panic_reason())

    def _panic_reason(self) -> str:
        return f"replica process {self.index} aborted: a worker panicked: {self.panicked}"

    async def multiplex(self, nursery: trio.Nursery) -> None:
        """Serve connections one at a time, in the order they arrive."""
        belong(self)
        self._nursery = nursery
        async for connection in self._incoming[1]:
            self._connections.append(connection)
            if self.panicked is not None:
                connection.responses.fail(self._panic_reason())
                continue
            runtimes = {
                name: RuntimeConnection.open(connection.nonce, len(channels))
                for name, channels in self.adapters.items()
            }
            self.served[connection.nonce] = runtimes
            self._merge(connection, runtimes)
            for name, channels in self.adapters.items():
                for channel in channels:
                    channel.send_nowait(runtimes[name])
            async for commands in connection.commands:
                # Everything already queued goes on in one turn.
                self._route(commands, runtimes)
            for name, runtime in runtimes.items():
                self._forward(name, runtime, None)

    def _route(self, commands: list[Command], runtimes: dict[str, RuntimeConnection]) -> None:
        """Record each ``Hello`` and forward each command to its runtimes. When
        nothing is held, delayed or faulted, each runtime gets its share of
        ``commands`` as one batch; otherwise command by command. An aborted
        process drops them."""
        if self.panicked is not None:
            return
        faults = self.faults
        if self.held or self.delayed or (faults is not None and faults.plan.active):
            for command in commands:
                if isinstance(command, Hello):
                    self.order.record(command.nonce)
                for name in self._targets(command):
                    self._forward(name, runtimes[name], command)
            return
        if INTERACTIVE not in self.adapters:
            # Solo: the one runtime takes every command (see _targets).
            for command in commands:
                if isinstance(command, Hello):
                    self.order.record(command.nonce)
            if commands:
                runtimes[MAINTENANCE].forward(commands)
            return
        shares: dict[str, list[Command]] = {name: [] for name in runtimes}
        for command in commands:
            if isinstance(command, Hello):
                self.order.record(command.nonce)
            for name in self._targets(command):
                shares[name].append(command)
        for name, share in shares.items():
            if share:
                runtimes[name].forward(share)

    def _merge(self, connection: ServerEnd, runtimes: dict[str, RuntimeConnection]) -> None:
        """Merge each runtime's workers, then the runtimes: a collection's
        frontier comes from the runtime that renders it alone; peek
        responses come from the one runtime that serves peeks."""
        merge = _Merge(
            connection,
            list(runtimes.values()),
            [PartitionedState(self.workers, self.regressions) for _ in runtimes],
            PartitionedState(
                len(runtimes), self.regressions, owners=self._reporting(list(runtimes))
            )
            if len(runtimes) > 1
            else None,
        )
        for number, runtime in enumerate(runtimes.values()):
            runtime.deliver = functools.partial(merge.deliver, number)
            runtime.deliver_many = functools.partial(merge.deliver_many, number)


def _deliver(connection: RuntimeConnection, command: Command | None) -> None:
    if command is None:
        connection.end()
    else:
        connection.forward([command])
