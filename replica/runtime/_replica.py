"""A replica: processes, one or two runtimes of workers, and for each runtime
the command channel that gives its workers the same commands in the same
order (docs/protocol.md).

With one runtime the role is Solo: the ``maintenance`` runtime serves every
command, peeks included. With ``interactive`` on, each process also runs the
interactive runtime, which serves the peeks from peers bound to maintenance's
published parts; the two workers of each (process, local ordinal) share a
sharing registry and, unless the diagnostic ``barrier=False`` is given, a
reconcile barrier.
"""

from __future__ import annotations

import math
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

import attrs
import trio

from actors import ActorRef, ActorSystem, Sequencer, Tracer, open_system
from barrier import ReconcileBarrier, Side
from sharing import Registry

from ..compute._holds import HoldMechanism
from ..compute._state import Role
from ..engine._exchange import Fabric
from ..engine._exports import IndexPart
from ..model._metrics import Metrics
from ..storage._shard import ShardCatalog
from ._connection import RuntimeConnection
from ._faults import FaultPlan, Faults
from ._process import INTERACTIVE, MAINTENANCE, ChannelAdapter, CommandChannel, Process
from ._worker import SequencedCommand, Worker


@attrs.frozen
class ReplicaConfig:
    """The shape of a replica: ``processes`` processes of ``workers`` workers
    per runtime each; ``interactive`` adds the interactive runtime (the
    setting ``enable_interactive_runtime``, off by default: Solo).

    ``barrier=False`` is a diagnostic, UNSAFE switch: the runtimes reconcile
    without the reconcile barrier, which lets the interactive runtime bind an
    incarnation the maintenance runtime is about to drop (the race of
    docs/protocol.md). Never the default.

    ``align=False`` is another diagnostic, UNSAFE switch: reconciliation no
    longer aligns the runtimes' incarnations (maintenance stops publishing a
    kept part under its new ``(id, as_of)``; the interactive runtime stops
    rebinding kept peers that are frozen or parked elsewhere). Then a runtime
    that applied a command of a lost connection the other dropped (a
    compaction, a drop, a create) leaves a peer parked or frozen for good,
    even with the barrier (docs/protocol.md). Never the default.

    ``holds`` says how a shared arrangement is held for the runtime that
    reads it (:class:`~replica.compute._holds.HoldMechanism`): ``publisher``,
    the design of record and the default, or the refuted ``broadcast`` and
    ``routed``, diagnostic, UNSAFE switches under which maintenance may
    compact an index past the ``as_of`` of a dataflow the interactive runtime
    has yet to build (its import panics: I1 of docs/protocol.md).
    """

    processes: int = attrs.field(default=1, validator=attrs.validators.ge(1))
    workers: int = attrs.field(default=1, validator=attrs.validators.ge(1))
    interactive: bool = False
    barrier: bool = True
    align: bool = True
    holds: HoldMechanism = attrs.field(default=HoldMechanism.PUBLISHER, converter=HoldMechanism)
    # Seed-driven fault injection for simulation runs; none by default.
    faults: FaultPlan = attrs.field(factory=FaultPlan)


@attrs.frozen
class WorkerHolds:
    """One maintenance worker's hold gauges (docs/protocol.md, "The price")."""

    process: int
    local: int
    hold_gap_ms: int
    held_count: int


@attrs.frozen
class ReplicaStatistics:
    """A snapshot of a replica's read holds and compaction.

    ``hold_gap_ms`` and ``held_count`` are the real gauges
    ``mz_compute_shared_arrangement_hold_gap_ms`` and
    ``mz_compute_shared_arrangement_held_count``, as the ``metrics``
    directive reads them: the largest over the maintenance workers (0 is
    healthy; always 0 with one runtime, where nothing is shared).
    ``retained_updates`` counts the updates every arrangement keeps, and
    ``arrangements`` how many there are (each worker's part counts once)."""

    hold_gap_ms: int
    held_count: int
    workers: tuple[WorkerHolds, ...]
    arrangements: int
    retained_updates: int


@attrs.define(eq=False)
class Runtime:
    """One runtime across every process: its workers in global order, and the
    command channel global worker 0 sequences into."""

    name: str
    workers: list[Worker]
    command_channel: Sequencer[SequencedCommand]
    fabric: Fabric

    def worker(self, process: int, local: int) -> Worker:
        per_process = len(self.workers) // len({worker.process for worker in self.workers})
        return self.workers[process * per_process + local]


@attrs.define(eq=False)
class Replica:
    """A running replica: see :func:`open_replica`."""

    config: ReplicaConfig
    system: ActorSystem
    shards: ShardCatalog
    processes: list[Process]
    runtimes: dict[str, Runtime]
    # Per (process, local ordinal), with two runtimes only.
    registries: dict[tuple[int, int], Registry[IndexPart]] = attrs.field(factory=dict)
    barriers: dict[tuple[int, int], ReconcileBarrier] = attrs.field(factory=dict)
    faults: Faults = attrs.field(factory=lambda: Faults.seeded(FaultPlan(), 0))
    # The replica's counters (the materialized-view sinks' correction buffers).
    metrics: Metrics = attrs.field(factory=Metrics)

    @property
    def maintenance(self) -> Runtime:
        """The maintenance runtime: always there; the only one when Solo."""
        return self.runtimes[MAINTENANCE]

    @property
    def interactive(self) -> Runtime:
        return self.runtimes[INTERACTIVE]

    def statistics(self) -> ReplicaStatistics:
        """The gauges of the read holds, and what the arrangements retain."""
        workers: list[WorkerHolds] = []
        parts: dict[int, int] = {}
        for runtime in self.runtimes.values():
            for worker in runtime.workers:
                for collection in worker.state.collections.values():
                    part = collection.arrangement if isinstance(collection, IndexPart) else None
                    if part is not None:
                        parts[id(part)] = len(part.log)
        for worker in self.maintenance.workers:
            gap, held = worker.state.gauges
            workers.append(WorkerHolds(worker.process, worker.local, gap, held))
        return ReplicaStatistics(
            max((w.hold_gap_ms for w in workers), default=0),
            max((w.held_count for w in workers), default=0),
            tuple(workers),
            len(parts),
            sum(parts.values()),
        )

    def hold(self, runtime: str) -> None:
        """Every process's multiplexer queues what it would forward to ``runtime``."""
        for process in self.processes:
            process.hold(runtime)

    def release(self, runtime: str) -> None:
        """Forward what was queued for ``runtime``, in order, and stop holding it."""
        for process in self.processes:
            process.release(runtime)


@attrs.define(eq=False)
class Composition:
    """What :func:`compose` started: the runtimes, and (with two runtimes)
    the registries and barriers of each (process, local ordinal) composed."""

    runtimes: dict[str, Runtime] = attrs.field(factory=dict)
    registries: dict[tuple[int, int], Registry[IndexPart]] = attrs.field(factory=dict)
    barriers: dict[tuple[int, int], ReconcileBarrier] = attrs.field(factory=dict)


CommandChannelOf = Callable[
    [str, list[ActorRef[SequencedCommand]]],
    tuple[Sequencer[SequencedCommand], CommandChannel | None],
]
"""Given a runtime's name and its workers' references (in global order), the
runtime's command channel, and what global worker 0's adapter sequences its
commands into (None: global worker 0 is not among these processes')."""


async def compose(
    config: ReplicaConfig,
    system: ActorSystem,
    nursery: trio.Nursery,
    processes: list[Process],
    shards: ShardCatalog,
    metrics: Metrics,
    *,
    fabric: Callable[[str], Fabric] | None = None,
    command_channel: CommandChannelOf | None = None,
    runtime: Callable[[str, list[Worker], Sequencer[SequencedCommand], Fabric], Runtime] = Runtime,
    respond_many: bool = True,
) -> Composition:
    """Start the part of a replica of shape ``config`` that ``processes``
    host (every process in one Trio run: :func:`open_replica`; one, in its
    OS process: :func:`replica.procs.serve`), in ``system`` and ``nursery``:
    the registries and barriers (with two runtimes), then each runtime's
    channel adapters, workers (actors), command channel and the adapters'
    tasks. The processes' multiplexers are the caller's to start.

    ``fabric(name)`` gives each runtime's exchanges (an in-process
    :class:`~replica.engine.Fabric` by default); ``command_channel`` its
    command channel (by default a sequencer of all its workers, which global
    worker 0's adapter sequences into); ``runtime`` makes the
    :class:`Runtime`; with ``respond_many``, a worker's responses to one
    connection go to its adapter as one batch."""
    total = config.processes * config.workers
    composition = Composition()
    registries, barriers = composition.registries, composition.barriers
    if config.interactive:
        for process in processes:
            p = process.index
            for local in range(config.workers):
                registries[p, local] = Registry(name=f"registry/p{p}/w{local}")
                if config.barrier:
                    barriers[p, local] = await ReconcileBarrier.spawn(
                        system, name=f"barrier/p{p}/w{local}"
                    )
    roles = (
        [
            (MAINTENANCE, Role.MAINTENANCE, Side.MAINTENANCE),
            (INTERACTIVE, Role.INTERACTIVE, Side.INTERACTIVE),
        ]
        if config.interactive
        else [(MAINTENANCE, Role.SOLO, None)]
    )
    for name, role, side in roles:
        exchanges = Fabric(total) if fabric is None else fabric(name)
        workers: list[Worker] = []
        refs: list[ActorRef[SequencedCommand]] = []
        adapters: list[ChannelAdapter] = []
        for process in processes:
            channels: list[trio.MemorySendChannel[RuntimeConnection]] = []
            for local in range(config.workers):
                send, receive = trio.open_memory_channel[RuntimeConnection](math.inf)
                channels.append(send)
                adapters.append(
                    ChannelAdapter(
                        process.index * config.workers + local, local, receive, None, None
                    )
                )
            process.adapters[name] = channels
        for adapter in adapters:
            p, local = adapter.index // config.workers, adapter.local
            process = processes[len(workers) // config.workers]
            worker = Worker.build(
                adapter.index,
                p,
                local,
                total,
                shards,
                adapter.accept,
                role=role,
                registry=registries.get((p, local)),
                align=config.align,
                holds=config.holds,
                fabric=exchanges,
                metrics=metrics,
                respond_many=adapter.accept_many if respond_many else None,
            )
            worker.barrier = barriers.get((p, local))
            worker.claim = process.claim
            worker.panic = process.abort
            process.members.append(worker)
            worker.side = side if worker.barrier is not None else None
            refs.append(
                await system.spawn(worker.run, name=f"{name}/p{p}/w{local}", capacity=math.inf)
            )
            workers.append(worker)
        if command_channel is None:
            channel = system.sequencer(refs, name=f"{name}/command-channel")
            leader: CommandChannel | None = channel
        else:
            channel, leader = command_channel(name, refs)
        if leader is not None:
            # Global worker 0's adapter sequences the runtime's commands.
            adapters[0].sequencer, adapters[0].leader_order = leader, processes[0].order
        for adapter in adapters:
            process_index = adapter.index // config.workers
            nursery.start_soon(adapter.run, name=f"{name}/p{process_index}/adapter{adapter.local}")
        composition.runtimes[name] = runtime(name, workers, channel, exchanges)
    return composition


@asynccontextmanager
async def open_replica(
    config: ReplicaConfig | None = None,
    *,
    shards: ShardCatalog | None = None,
    seed: int | None = None,
    tracer: Tracer | None = None,
) -> AsyncIterator[Replica]:
    """Start a replica; it runs until the block ends, then is cancelled.

    Every process, runtime, worker (an actor), adapter and multiplexer lives in
    this block's nursery. ``shards`` is the storage the replica reads (shared
    with whoever writes); ``seed`` and ``tracer`` go to the replica's actor
    system.
    """
    config = ReplicaConfig() if config is None else config
    shards = ShardCatalog() if shards is None else shards
    async with open_system(seed=seed, tracer=tracer) as system, trio.open_nursery() as nursery:
        faults = Faults.seeded(config.faults, system.seed)
        processes = [
            Process(index, config.workers, faults=faults) for index in range(config.processes)
        ]
        metrics = Metrics()
        composition = await compose(config, system, nursery, processes, shards, metrics)
        runtimes = composition.runtimes
        for runtime in runtimes.values():
            for worker in runtime.workers:
                worker.faults = faults
        replica = Replica(
            config,
            system,
            shards,
            processes,
            runtimes,
            composition.registries,
            composition.barriers,
            faults,
            metrics,
        )
        for process in processes:
            nursery.start_soon(process.multiplex, nursery)
        yield replica
        # A replica ends by cancellation: a worker may be parked at a barrier.
        nursery.cancel_scope.cancel()
        system.cancel()
