"""A replica: processes, a runtime of workers, and the command channel that
gives every worker the same commands in the same order (DESIGN.md §2.1-2.3).

With one runtime the role is Solo: the ``maintenance`` runtime serves every
command, peeks included.
"""

from __future__ import annotations

import math
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import attrs
import trio

from .._mailbox import ActorRef
from .._sequencer import Sequencer
from .._system import ActorSystem, open_system
from .._trace import Tracer
from ._connection import RuntimeConnection
from ._process import ChannelAdapter, Process
from ._protocol import Response
from ._shard import ShardCatalog
from ._worker import SequencedCommand, Worker

MAINTENANCE = "maintenance"


@attrs.frozen
class ReplicaConfig:
    """The shape of a replica: ``processes`` processes of ``workers`` workers each."""

    processes: int = attrs.field(default=1, validator=attrs.validators.ge(1))
    workers: int = attrs.field(default=1, validator=attrs.validators.ge(1))


@attrs.define(eq=False)
class Runtime:
    """One runtime across every process: its workers in global order, and the
    command channel global worker 0 sequences into."""

    name: str
    workers: list[Worker]
    refs: list[ActorRef[SequencedCommand]]
    command_channel: Sequencer[SequencedCommand]

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

    @property
    def solo(self) -> Runtime:
        return self.runtimes[MAINTENANCE]


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
        processes = [Process(index, config.workers) for index in range(config.processes)]
        runtime = await _start_runtime(MAINTENANCE, config, system, shards, processes, nursery)
        replica = Replica(config, system, shards, processes, {MAINTENANCE: runtime})
        for process in processes:
            nursery.start_soon(process.multiplex, nursery)
        yield replica
        nursery.cancel_scope.cancel()


async def _start_runtime(
    name: str,
    config: ReplicaConfig,
    system: ActorSystem,
    shards: ShardCatalog,
    processes: list[Process],
    nursery: trio.Nursery,
) -> Runtime:
    total = config.processes * config.workers
    workers: list[Worker] = []
    refs: list[ActorRef[SequencedCommand]] = []
    responses: list[trio.MemoryReceiveChannel[tuple[int, Response]]] = []
    for p in range(config.processes):
        for local in range(config.workers):
            index = p * config.workers + local
            out, back = trio.open_memory_channel[tuple[int, Response]](math.inf)
            worker = Worker.build(index, p, local, total, shards, out)
            refs.append(
                await system.spawn(worker.run, name=f"{name}/p{p}/w{local}", capacity=math.inf)
            )
            workers.append(worker)
            responses.append(back)
    command_channel = system.sequencer(refs, name=f"{name}/command-channel")
    for process in processes:
        channels: list[trio.MemorySendChannel[RuntimeConnection]] = []
        for local in range(config.workers):
            index = process.index * config.workers + local
            send, receive = trio.open_memory_channel[RuntimeConnection](math.inf)
            channels.append(send)
            leader = index == 0
            adapter = ChannelAdapter(
                index,
                local,
                responses[index],
                receive,
                command_channel if leader else None,
                processes[0].order if leader else None,
            )
            nursery.start_soon(adapter.run, name=f"{name}/p{process.index}/adapter{local}")
        process.adapters[name] = channels
    return Runtime(name, workers, refs, command_channel)
