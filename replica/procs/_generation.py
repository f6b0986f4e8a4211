"""One generation of a replica process: one composition of its part of the
replica (:func:`replica.runtime.compose`), the workers, adapters,
multiplexer and (with two runtimes) registries and barriers of process
``I``, whose exchanges, shards, command channel and controller connections
cross processes. A reset ends the generation and starts a fresh one in
place (see :mod:`._server`)."""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import attrs
import trio

import actors
from actors import ActorRef, ActorSystem, Sequencer
from barrier import ReconcileBarrier
from sharing import Registry

from ..engine._exports import IndexPart
from ..model._metrics import Metrics
from ..protocol import Response
from ..runtime._connection import CommandLine, ResponseLine, ServerEnd
from ..runtime._invariants import runtime_divergence
from ..runtime._process import CommandChannel, Process
from ..runtime._replica import Replica, Runtime, compose
from ..runtime._worker import SequencedCommand, Worker
from . import _wire
from ._fabric import NetFabric
from ._fanout import Encoded, Fanout
from ._items import Gauge, Metric, Respond
from ._links import Hub
from ._options import CONTROLLER, SHARDS, ServeOptions, process_node
from ._shards import MirrorCatalog


@attrs.define(eq=False)
class _LocalRuntime(Runtime):
    """One runtime's workers in this process (for the invariants)."""

    def worker(self, process: int, local: int) -> Worker:
        return self.workers[local]


class _ForwardedMetrics(Metrics):
    def __init__(self, hub: Hub) -> None:
        super().__init__()
        self._hub = hub

    def add(self, name: str, amount: int) -> None:
        super().add(name, amount)
        if amount and CONTROLLER in self._hub.outlinks:
            self._hub.send(CONTROLLER, Metric(name, amount))

    def set_gauge(self, name: str, source: str, value: int) -> None:
        super().set_gauge(name, source, value)
        if CONTROLLER in self._hub.outlinks:
            self._hub.send(CONTROLLER, Gauge(name, source, value))


@attrs.define(eq=False)
class Generation:
    """One composition of this process's part of the replica."""

    options: ServeOptions
    hub: Hub
    system: ActorSystem
    process: Process
    shards: MirrorCatalog
    metrics: Metrics
    fabrics: dict[str, NetFabric] = attrs.field(factory=dict)
    runtimes: dict[str, Runtime] = attrs.field(factory=dict)
    relays: dict[str, Sequencer[SequencedCommand]] = attrs.field(factory=dict)
    registries: dict[tuple[int, int], Registry[IndexPart]] = attrs.field(factory=dict)
    barriers: dict[tuple[int, int], ReconcileBarrier] = attrs.field(factory=dict)
    # The last controller reset this process took (0: none). Every item for
    # another replica process carries it, and one that carries another is
    # dropped: it was sent before a reset, to the replica that reset ended.
    epoch: int = 0
    connections: dict[int, tuple[CommandLine, ResponseLine]] = attrs.field(factory=dict)
    encoded: Encoded = attrs.field(
        default=attrs.Factory(
            lambda self: Encoded(uses=2 if self.options.config.interactive else 1),
            takes_self=True,
        )
    )

    # What the controller sends.

    def open(self, nonce: int) -> None:
        commands = CommandLine()
        line = ResponseLine(lambda response: self._respond(nonce, response))
        self.connections[nonce] = (commands, line)
        self.process.accept(ServerEnd(nonce, commands, line))

    def commands(self, nonce: int, encoded: list[bytes]) -> None:
        """Commands of connection ``nonce``, each encoded on its own: process
        0 forwards the same bytes to the other processes (:class:`Fanout`)."""
        found = self.connections.get(nonce)
        if found is None:
            return
        forwarding = self.options.process == 0 and self.options.config.processes > 1
        for data in encoded:
            command = _wire.decode(data)
            if forwarding:
                self.encoded.remember(command, data)
            try:
                found[0].send_nowait(command)
            except (trio.ClosedResourceError, trio.BrokenResourceError):
                return

    def end(self, nonce: int) -> None:
        found = self.connections.pop(nonce, None)
        if found is not None:
            found[0].close()
            found[1].close()

    def end_all(self) -> None:
        for nonce in list(self.connections):
            self.end(nonce)

    def _respond(self, nonce: int, response: Response) -> None:
        self.hub.send(CONTROLLER, Respond(nonce, response))

    # The invariants, for the controller's checks.

    def report(self) -> dict[str, Any]:
        """What this process can say about the replica's invariants: its
        mergers' regressions, the runtimes' divergence here, and a digest of
        the commands each worker applied (every worker of a runtime, in every
        process, must have applied the same)."""
        local = Replica(
            self.options.config,
            self.system,
            self.shards,
            [self.process],
            self.runtimes,
            dict(self.registries),
            self.barriers,
        )
        digests: dict[str, list[str]] = {}
        positions: list[int] = []
        for name, runtime in self.runtimes.items():
            digests[name] = []
            for worker in runtime.workers:
                digest = hashlib.sha256()
                for _, position, command in worker.applied:
                    digest.update(_wire.encode((position, command)))
                digests[name].append(digest.hexdigest())
                positions.append(worker.position)
        return {
            "regressions": [f"process {self.process.index}: {r}" for r in self.process.regressions],
            "divergence": runtime_divergence(local),
            "digests": digests,
        }


@asynccontextmanager
async def open_generation(
    options: ServeOptions, hub: Hub, token: int, epoch: int = 0
) -> AsyncIterator[Generation]:
    """This process's part of a fresh replica (after controller reset
    ``epoch``); cancelled when the block ends."""
    config = options.config
    index, workers = options.process, config.workers
    async with actors.open_system() as system, trio.open_nursery() as nursery:
        process = Process(index, workers)
        metrics = _ForwardedMetrics(hub)
        shards = MirrorCatalog(token=token, send=lambda item: hub.send(SHARDS, item))
        generation = Generation(options, hub, system, process, shards, metrics, epoch=epoch)
        composition = await compose(
            config,
            system,
            nursery,
            [process],
            shards,
            metrics,
            fabric=lambda name: _fabric(generation, name),
            command_channel=lambda name, refs: _command_channel(generation, name, refs),
            runtime=_LocalRuntime,
            # (A worker here responds one response at a time, as it always did.)
            respond_many=False,
        )
        generation.runtimes = composition.runtimes
        generation.registries = composition.registries
        generation.barriers = composition.barriers
        nursery.start_soon(process.multiplex, nursery)
        try:
            yield generation
        finally:
            generation.end_all()
            nursery.cancel_scope.cancel()
            system.cancel()


def _fabric(generation: Generation, name: str) -> NetFabric:
    """Runtime ``name``'s exchanges, whose items for another process go on
    the link to it, at the generation's epoch."""
    config, hub = generation.options.config, generation.hub
    fabric = NetFabric(
        config.processes * config.workers,
        runtime=name,
        process=generation.options.process,
        per_process=config.workers,
        processes=config.processes,
        send_to=lambda p, item: hub.send(process_node(p), item),
        epoch=lambda: generation.epoch,
    )
    generation.fabrics[name] = fabric
    return fabric


def _command_channel(
    generation: Generation, name: str, refs: list[ActorRef[SequencedCommand]]
) -> tuple[Sequencer[SequencedCommand], CommandChannel | None]:
    """Runtime ``name``'s command channel here: at process 0, a sequencer of
    its workers behind the fan-out to the other processes (which global
    worker 0's adapter sequences into); elsewhere, the relay the fan-out's
    runs go into."""
    options, system = generation.options, generation.system
    if options.process == 0:
        channel = system.sequencer(refs, name=f"{name}/command-channel")
        others = [process_node(other) for other in range(1, options.config.processes)]
        fanout = Fanout(
            channel,
            generation.hub,
            others,
            name,
            generation.encoded,
            epoch=lambda: generation.epoch,
        )
        return channel, fanout
    relay = system.sequencer(refs, name=f"{name}/command-relay")
    generation.relays[name] = relay
    return relay, None
