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
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import attrs
import trio

from actors import ActorRef, ActorSystem, Sequencer, Tracer, open_system
from barrier import ReconcileBarrier, Side
from sharing import Registry

from ..compute._state import Role
from ..engine._exchange import Fabric
from ..engine._exports import IndexPart
from ..model._metrics import Metrics
from ..storage._shard import ShardCatalog
from ._connection import RuntimeConnection
from ._faults import FaultPlan, Faults
from ._process import INTERACTIVE, MAINTENANCE, ChannelAdapter, Process
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
    """

    processes: int = attrs.field(default=1, validator=attrs.validators.ge(1))
    workers: int = attrs.field(default=1, validator=attrs.validators.ge(1))
    interactive: bool = False
    barrier: bool = True
    align: bool = True
    # Seed-driven fault injection for simulation runs; none by default.
    faults: FaultPlan = attrs.field(factory=FaultPlan)


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

    def hold(self, runtime: str) -> None:
        """Every process's multiplexer queues what it would forward to ``runtime``."""
        for process in self.processes:
            process.hold(runtime)

    def release(self, runtime: str) -> None:
        """Forward what was queued for ``runtime``, in order, and stop holding it."""
        for process in self.processes:
            process.release(runtime)


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
        places = [(p, local) for p in range(config.processes) for local in range(config.workers)]
        registries: dict[tuple[int, int], Registry[IndexPart]] = {}
        barriers: dict[tuple[int, int], ReconcileBarrier] = {}
        if config.interactive:
            for p, local in places:
                registries[p, local] = Registry(name=f"registry/p{p}/w{local}")
                if config.barrier:
                    barriers[p, local] = await ReconcileBarrier.spawn(
                        system, name=f"barrier/p{p}/w{local}"
                    )
        runtimes: dict[str, Runtime] = {}
        metrics = Metrics()
        roles = (
            [
                (MAINTENANCE, Role.MAINTENANCE, Side.MAINTENANCE),
                (INTERACTIVE, Role.INTERACTIVE, Side.INTERACTIVE),
            ]
            if config.interactive
            else [(MAINTENANCE, Role.SOLO, None)]
        )
        for name, role, side in roles:
            runtimes[name] = await _start_runtime(
                name,
                config,
                system,
                shards,
                processes,
                nursery,
                role,
                registries,
                barriers,
                side,
                metrics,
            )
        for runtime in runtimes.values():
            for worker in runtime.workers:
                worker.faults = faults
        replica = Replica(
            config, system, shards, processes, runtimes, registries, barriers, faults, metrics
        )
        for process in processes:
            nursery.start_soon(process.multiplex, nursery)
        yield replica
        # A replica ends by cancellation: a worker may be parked at a barrier.
        nursery.cancel_scope.cancel()
        system.cancel()


async def _start_runtime(
    name: str,
    config: ReplicaConfig,
    system: ActorSystem,
    shards: ShardCatalog,
    processes: list[Process],
    nursery: trio.Nursery,
    role: Role,
    registries: dict[tuple[int, int], Registry[IndexPart]],
    barriers: dict[tuple[int, int], ReconcileBarrier],
    side: Side | None,
    metrics: Metrics,
) -> Runtime:
    total = config.processes * config.workers
    fabric = Fabric(total)
    workers: list[Worker] = []
    refs: list[ActorRef[SequencedCommand]] = []
    adapters: list[ChannelAdapter] = []
    for process in processes:
        channels: list[trio.MemorySendChannel[RuntimeConnection]] = []
        for local in range(config.workers):
            send, receive = trio.open_memory_channel[RuntimeConnection](math.inf)
            channels.append(send)
            adapters.append(
                ChannelAdapter(process.index * config.workers + local, local, receive, None, None)
            )
        process.adapters[name] = channels
    for p in range(config.processes):
        for local in range(config.workers):
            index = p * config.workers + local
            worker = Worker.build(
                index,
                p,
                local,
                total,
                shards,
                adapters[index].accept,
                role=role,
                registry=registries.get((p, local)),
                align=config.align,
                fabric=fabric,
                metrics=metrics,
                respond_many=adapters[index].accept_many,
            )
            worker.barrier = barriers.get((p, local))
            worker.claim = processes[p].claim
            worker.side = side if worker.barrier is not None else None
            refs.append(
                await system.spawn(worker.run, name=f"{name}/p{p}/w{local}", capacity=math.inf)
            )
            workers.append(worker)
    command_channel = system.sequencer(refs, name=f"{name}/command-channel")
    # Global worker 0's adapter sequences the runtime's commands.
    adapters[0].sequencer, adapters[0].leader_order = command_channel, processes[0].order
    for adapter in adapters:
        process_index = adapter.index // config.workers
        nursery.start_soon(adapter.run, name=f"{name}/p{process_index}/adapter{adapter.local}")
    return Runtime(name, workers, command_channel, fabric)
