"""One replica process as an OS process (``trio-reconcile serve``).

Process ``I`` of ``P`` hosts process ``I``'s workers of each runtime, its
multiplexer and channel adapters, and (with two runtimes) its registries and
barriers, composed as :func:`replica.open_replica` composes them for every
process in one Trio run; what crosses to another process goes over
``actors.net`` (:mod:`._links`):

- the controller's connections: ``open``/``cmds``/``end`` in, each
  connection's responses out (``resp``), over the connection the controller
  dialled;
- the command channel: process 0's global worker 0 adapter sequences each
  batch onto the link to every other process (``seq``, one item a batch) and
  into the sequencer of process 0's workers; at another process a local
  sequencer hands the batch to its workers: the same commands in the same
  order everywhere;
- exchanges (:mod:`._fabric`) and shards (:mod:`._shards`);
- the materialized-view counters (``metric``), summed by the controller.

A *generation* is one such composition. ``reset`` (a fresh replica for the
next spec, or after a loss) ends the generation and starts a fresh one, as a
restarted process starts, in place: the node, its links and its address
stay. The loss of another replica process (a process of a replica that lost
one of its peers cannot go on: its dataflows' exchanges span the lost one)
ends the generation too, and the next starts at the controller's next reset
(``Cluster.recover``), as a real process halts and serves again when the
controller reconnects with a new epoch.
"""

from __future__ import annotations

import gc
import hashlib
import logging
import math
import socket
from collections.abc import AsyncIterator, Callable, Iterable
from contextlib import asynccontextmanager
from typing import Any

import attrs
import trio
import trio.testing

import actors
from actors import ActorRef, ActorSystem, Sequencer
from actors.net import Peer, open_node
from barrier import ReconcileBarrier, Side
from sharing import Registry

from ..compute._state import Role
from ..engine._exports import IndexPart
from ..model._metrics import Metrics
from ..protocol import ProtocolError, Response
from ..runtime._connection import CommandLine, ResponseLine, RuntimeConnection, ServerEnd
from ..runtime._invariants import runtime_divergence
from ..runtime._process import INTERACTIVE, MAINTENANCE, ChannelAdapter, Process
from ..runtime._replica import Replica, ReplicaConfig, Runtime
from ..runtime._worker import SequencedCommand, Worker
from . import _wire
from ._errors import ListenFailedError, ShardHostLostError
from ._fabric import NetFabric
from ._limits import MIN_PEER_TIMEOUT
from ._links import CHUNK, MAX_FRAME, Hub, codec
from ._shards import MirrorCatalog
from ._tls import TlsFiles

logger = logging.getLogger("replica.procs")

CONTROLLER = "controller"
SHARDS = "shards"
SHARDS_PATIENCE = 10.0
"""Seconds a process dials the shard host before it gives up and ends, by
default (``serve --shards-patience``): the host (the driver's process) is up
before any replica process starts, and one that went away for good (the
driver killed) leaves nothing to serve."""


def process_node(index: int) -> str:
    return f"p{index}"


@attrs.frozen
class ServeOptions:
    """What ``trio-reconcile serve`` was told."""

    process: int
    config: ReplicaConfig
    # Where the node listens: it binds it, unless listen_fd is given.
    listen: tuple[str, int]
    peers: tuple[tuple[str, int], ...]
    shards: tuple[str, int]
    secret: bytes
    tls: TlsFiles | None = None
    # Seconds another replica process may stay silent before the connections
    # to it are closed (a partition then behaves as a dropped connection).
    peer_timeout: float = 10.0
    # Seconds to dial the shard host before giving up (see SHARDS_PATIENCE).
    shards_patience: float = SHARDS_PATIENCE
    # The epoch of the process's first replica (see Generation.epoch): 0 when
    # the cluster starts; a relaunched process (Cluster.restart) gets a fresh
    # reset token, which no other process is at, so nothing meant for the
    # replica it replaces reaches it, nor anything of its own another.
    epoch: int = 0
    # A listening TCP socket this process inherited, bound to listen (by the
    # driver, which holds it for the cluster's life: serve --listen-fd).
    listen_fd: int | None = None


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
            self._hub.send(CONTROLLER, ("metric", name, amount))


@attrs.define(eq=False)
class _Encoded:
    """The bytes each command arrived as, by the command, until every runtime
    forwarded it (so process 0 forwards them as they came instead of encoding
    them again). ``uses`` is the number of runtimes; a command routed to
    fewer of them (a peek, to the interactive runtime only) stays until it
    is among the oldest when ``limit`` are kept, or their bytes pass
    ``byte_limit`` (a count alone let 2,000 peeks of 97 KB of literals hold
    193 MB here). Keeping only what is still to be forwarded keeps the
    collector's work down (forwarded commands are not held here)."""

    uses: int = 1
    limit: int = 1 << 16
    byte_limit: int = 64 * 2**20
    _by_id: dict[int, list[Any]] = attrs.field(factory=dict)
    # The bytes of the commands held.
    size: int = 0

    def remember(self, command: object, data: bytes) -> None:
        by_id = self._by_id
        key = id(command)
        old = by_id.pop(key, None)
        if old is not None:
            self.size -= len(old[1])
        while by_id and (len(by_id) >= self.limit or self.size + len(data) > self.byte_limit):
            self.size -= len(by_id.pop(next(iter(by_id)))[1])
        by_id[key] = [command, data, self.uses]
        self.size += len(data)

    def take(self, command: object) -> bytes:
        """The bytes ``command`` arrived as (encoded again if forgotten)."""
        key = id(command)
        found = self._by_id.get(key)
        if found is None or found[0] is not command:
            return _wire.encode(command)
        found[2] -= 1
        data: bytes = found[1]
        if not found[2]:
            del self._by_id[key]
            self.size -= len(data)
        return data


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
    encoded: _Encoded = attrs.field(
        default=attrs.Factory(
            lambda self: _Encoded(uses=2 if self.options.config.interactive else 1),
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
        0 forwards the same bytes to the other processes (:class:`_Fanout`)."""
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
        self.hub.send(CONTROLLER, ("resp", nonce, response))

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
        if config.interactive:
            for local in range(workers):
                generation.registries[index, local] = Registry(name=f"registry/p{index}/w{local}")
                if config.barrier:
                    generation.barriers[index, local] = await ReconcileBarrier.spawn(
                        system, name=f"barrier/p{index}/w{local}"
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
            await _start_runtime(generation, nursery, name, role, side)
        nursery.start_soon(process.multiplex, nursery)
        try:
            yield generation
        finally:
            generation.end_all()
            nursery.cancel_scope.cancel()
            system.cancel()


async def _start_runtime(
    generation: Generation, nursery: trio.Nursery, name: str, role: Role, side: Side | None
) -> None:
    options, hub, system = generation.options, generation.hub, generation.system
    config, index = options.config, options.process
    total = config.processes * config.workers
    fabric = NetFabric(
        total,
        runtime=name,
        process=index,
        per_process=config.workers,
        processes=config.processes,
        send_to=lambda p, item: hub.send(process_node(p), (item[0], generation.epoch, *item[1:])),
    )
    generation.fabrics[name] = fabric
    channels: list[trio.MemorySendChannel[RuntimeConnection]] = []
    adapters: list[ChannelAdapter] = []
    for local in range(config.workers):
        send, receive = trio.open_memory_channel[RuntimeConnection](math.inf)
        channels.append(send)
        adapters.append(ChannelAdapter(index * config.workers + local, local, receive, None, None))
    generation.process.adapters[name] = channels
    refs: list[ActorRef[SequencedCommand]] = []
    workers: list[Worker] = []
    for local in range(config.workers):
        worker = Worker.build(
            index * config.workers + local,
            index,
            local,
            total,
            generation.shards,
            adapters[local].accept,
            role=role,
            registry=generation.registries.get((index, local)),
            align=config.align,
            fabric=fabric,
            metrics=generation.metrics,
        )
        worker.barrier = generation.barriers.get((index, local))
        worker.claim = generation.process.claim
        worker.side = side if worker.barrier is not None else None
        refs.append(
            await system.spawn(worker.run, name=f"{name}/p{index}/w{local}", capacity=math.inf)
        )
        workers.append(worker)
    if index == 0:
        command_channel = system.sequencer(refs, name=f"{name}/command-channel")
        others = [process_node(other) for other in range(1, config.processes)]
        adapters[0].sequencer = _Fanout(
            command_channel, hub, others, name, generation.encoded, epoch=lambda: generation.epoch
        )
        adapters[0].leader_order = generation.process.order
    else:
        command_channel = system.sequencer(refs, name=f"{name}/command-relay")
        generation.relays[name] = command_channel
    generation.runtimes[name] = _LocalRuntime(name, workers, command_channel, fabric)
    for adapter in adapters:
        nursery.start_soon(adapter.run, name=f"{name}/p{index}/adapter{adapter.local}")


@attrs.define(eq=False)
class _Fanout:
    """Process 0's command channel: each batch goes on the link to every other
    process (``seq``, one item a batch), then to this process's workers
    through the local sequencer. Links keep their order, so every process's
    workers get the same commands in the same order."""

    local: Sequencer[SequencedCommand]
    hub: Hub
    others: list[str]
    runtime: str
    encoded: _Encoded
    # The generation's controller reset (see Generation.epoch), when sent.
    epoch: Callable[[], int] = lambda: 0
    # The most bytes of commands one item carries (unless one command is
    # larger): a burst the adapter sequences at once may be far more than a
    # frame carries (MAX_FRAME), and the other end decodes an item at once.
    item_bytes: int = CHUNK

    async def broadcast_many(self, messages: Iterable[SequencedCommand]) -> object:
        batch = list(messages)
        if self.others:
            # One item per run of the same connection and position (or per
            # item_bytes of it): the commands' bytes joined into one array
            # (one decode at the other end).
            runs: list[tuple[int, int, list[bytes]]] = []
            take = self.encoded.take
            size = 0
            for sequenced in batch:
                data = take(sequenced.command)
                if (
                    not runs
                    or runs[-1][:2] != (sequenced.nonce, sequenced.position)
                    or size + len(data) > self.item_bytes
                ):
                    runs.append((sequenced.nonce, sequenced.position, []))
                    size = 0
                runs[-1][2].append(data)
                size += len(data)
            epoch = self.epoch()
            items = [
                ("seq", epoch, self.runtime, nonce, position, _wire.join(commands))
                for nonce, position, commands in runs
            ]
            for target in self.others:
                for item in items:
                    self.hub.send(target, item)
        return await self.local.broadcast_many(batch)


async def serve(
    options: ServeOptions, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
) -> None:
    """Run replica process ``options.process`` until cancelled (the process's
    one task: what it loaded to start, the modules and classes, is frozen
    out of the garbage collector's full collections, which a stream of
    commands otherwise makes scan it again and again)."""
    name = process_node(options.process)
    async with (
        actors.open_system() as system,
        open_node(
            system,
            name=name,
            secret=options.secret,
            codec=codec(),
            listen=await _listener(options),
            max_frame=MAX_FRAME,
            ssl_context=None if options.tls is None else options.tls.server_context(),
        ) as node,
        trio.open_nursery() as nursery,
    ):
        client = None if options.tls is None else options.tls.client_context()
        hub = Hub(name, node, nursery, ssl_context=client)
        await hub.start()
        hub.dial(SHARDS, options.shards, patience=options.shards_patience)
        for other, address in enumerate(options.peers):
            if other != options.process:
                hub.dial(process_node(other), address)
        server = _Server(options, hub, nursery)
        server.install()
        gc.freeze()
        task_status.started()
        nursery.start_soon(server.run)
        nursery.start_soon(server.heartbeats)
        await server.host_lost.wait()
        raise ShardHostLostError(server.host_error)


async def _listener(options: ServeOptions) -> trio.SocketListener | tuple[str, int]:
    """What the node listens on: the socket inherited as ``listen_fd``, or
    ``listen`` (checked here, so that a failure is :class:`ListenFailedError`,
    named: the node's own listen would say only the OS's words)."""
    if options.listen_fd is not None:
        inherited = socket.socket(fileno=options.listen_fd)
        return trio.SocketListener(trio.socket.from_stdlib_socket(inherited))
    host, port = options.listen
    try:
        for listener in await trio.open_tcp_listeners(port, host=host):
            await listener.aclose()
    except OSError as error:
        raise ListenFailedError(
            f"cannot listen on --listen {host}:{port}: {error.strerror or error}"
        ) from None
    return options.listen


@attrs.define(eq=False)
class _Server:
    options: ServeOptions
    hub: Hub
    nursery: trio.Nursery
    generation: Generation | None = None
    token: int = 0
    # The last controller reset taken (see Generation.epoch).
    epoch: int = attrs.field(
        default=attrs.Factory(lambda self: self.options.epoch, takes_self=True)
    )
    _restart: trio.Event = attrs.field(factory=trio.Event)
    _reset_tokens: list[int] = attrs.field(factory=list)
    # Set when a controller reset arrives (a generation that ended for a lost
    # peer waits for one: see run).
    _reset_came: trio.Event = attrs.field(factory=trio.Event)
    # The generation ended for a lost peer: the next starts at the next reset.
    awaiting_reset: bool = False
    # Set when the shard host cannot be reached (see SHARDS_PATIENCE).
    host_lost: trio.Event = attrs.field(factory=trio.Event)
    host_error: str = ""
    # Why the last generation ended for a lost peer (see _open).
    lost_reason: str = ""
    # The connections to and from other replica processes, by id, with the
    # process's node name; and those written off (their process's loss was
    # handled once, when another of its connections dropped).
    _links: dict[int, tuple[str, Peer]] = attrs.field(factory=dict)
    _written_off: set[int] = attrs.field(factory=set)

    def install(self) -> None:
        handlers = self.hub.handlers
        handlers["hello"] = self._hello
        handlers["open"] = self._open
        handlers["cmds"] = self._current(Generation.commands)
        handlers["end"] = self._current(Generation.end)
        handlers["hold"] = self._current(lambda g, runtime: g.process.hold(runtime))
        handlers["release"] = self._current(lambda g, runtime: g.process.release(runtime))
        handlers["ping"] = self._ping
        # The shard host's answer to a ping: its arrival is what counts.
        handlers["pong"] = lambda source, sent_at: None
        handlers["probe"] = self._probe
        handlers["reset"] = self._reset
        handlers["seq"] = self._seq
        handlers["xs"] = self._current_epoch(
            lambda g, runtime, *args: g.fabrics[runtime].arrive(*args)
        )
        handlers["xf"] = self._current_epoch(
            lambda g, runtime, *args: g.fabrics[runtime].heard(*args)
        )
        handlers["shard"] = self._shard
        self.hub.on_lost.append(self._lost)
        self.hub.on_connected.append(self._connected)
        self.hub.on_unreachable.append(self._unreachable)

    def _unreachable(self, target: str, error: Exception) -> None:
        if target == SHARDS:
            self.host_error = f"the shard host is gone ({error})"
            self.host_lost.set()

    def _current(self, handle: Callable[..., None]) -> Callable[..., None]:
        """A handler applied to the current generation; an item that comes
        while none runs (between two) belonged to the one that ended."""

        def handler(source: str, *args: Any) -> None:
            if self.generation is not None:
                handle(self.generation, *args)

        return handler

    def _open(self, source: str, nonce: int) -> None:
        """The controller opened a connection. With no replica here (one
        ended for a lost peer and the controller's reset has not come, or a
        fresh one is starting), it is refused, named: dropped, the
        controller's commands on it would get no answer, and nothing would
        say why."""
        if self.generation is not None:
            self.generation.open(nonce)
            return
        process = self.options.process
        if self.awaiting_reset:
            reason = (
                f"replica process {process} has no replica: it {self.lost_reason} and "
                "waits for the controller's reset (Cluster.recover)"
            )
        else:
            reason = f"replica process {process} was starting a fresh replica (a reset)"
        self.hub.send(CONTROLLER, ("refused", nonce, reason))

    def _current_epoch(self, handle: Callable[..., None]) -> Callable[..., None]:
        """A handler of another replica process's items, applied to the
        current generation if the item carries its epoch: one sent before a
        controller reset (still on a connection that stayed open) belonged
        to the replica the reset ended."""

        def handler(source: str, epoch: int, *args: Any) -> None:
            generation = self._generation_of(epoch)
            if generation is not None:
                handle(generation, *args)

        return handler

    def _generation_of(self, epoch: int) -> Generation | None:
        """The current generation, if an item of ``epoch`` from another
        replica process is for it; ``None`` otherwise (the item of an ended
        epoch is then not counted: see :meth:`Hub.uncount`)."""
        generation = self.generation
        if generation is not None and epoch == generation.epoch:
            return generation
        if epoch != self.epoch:
            self.hub.uncount()
        return None

    def _shard(self, source: str, token: int, *push: Any) -> None:
        """The host's push to subscription ``token`` (this process's
        generation token): one for a generation before the last reset is not
        counted (see :meth:`Hub.uncount`); the mirror ignores it."""
        if token != self.token:
            self.hub.uncount()
        if self.generation is not None:
            self.generation.shards.receive(token, *push)

    def _hello(self, source: str, *rest: object) -> None:
        if source == CONTROLLER:
            # A new connection from the controller: answer over it.
            self.hub.inbound(CONTROLLER).refresh()
        elif source.startswith("p"):
            # Another replica process dialled this one.
            for peer in self.hub.node.peers:
                if peer.node == source:
                    self._watch_link(source, peer)

    def _ping(self, source: str, sent_at: float) -> None:
        # Another process's pings only need to arrive (see heartbeats).
        if source == CONTROLLER:
            self.hub.send(CONTROLLER, ("pong", sent_at))

    async def heartbeats(self) -> None:
        """Ping every other replica process and the shard host (a quarter of
        ``peer_timeout`` apart), and close the connections to one not heard
        from for ``peer_timeout``: a partition (frames dropped, the
        connections open) then behaves as a dropped connection (another
        process's: see :meth:`_watch_link`; the host's is dialled again, and
        the mirrors subscribe again: see :meth:`_lost`). The host answers a
        ping (``pong``); another process's pings are enough."""
        timeout = self.options.peer_timeout
        others = [
            process_node(other)
            for other in range(self.options.config.processes)
            if other != self.options.process
        ]
        heard = self.hub.last_heard
        while True:
            now = trio.current_time()
            for name in [*others, SHARDS]:
                last = heard.setdefault(name, now)
                if now - last > timeout:
                    logger.warning(
                        "%s: nothing from %s for %gs: closing its connections",
                        self.hub.name,
                        "the shard host" if name == SHARDS else f"replica process {name}",
                        timeout,
                    )
                    heard[name] = now
                    for peer in [p for p in self.hub.node.peers if p.node == name]:
                        self.nursery.start_soon(peer.close, "heartbeat missed")
                self.hub.send(name, ("ping", now))
            await trio.sleep(max(timeout, MIN_PEER_TIMEOUT) / 4)

    def _connected(self, target: str, peer: Peer) -> None:
        if target.startswith("p"):
            self._watch_link(target, peer)

    def _watch_link(self, name: str, peer: Peer) -> None:
        """Watch a connection to or from replica process ``name``: losing
        either is losing that process (a timely cluster's connections are
        its processes' shared fate)."""
        if id(peer) not in self._links:
            self._links[id(peer)] = (name, peer)
            self.nursery.start_soon(self._watch, name, peer)

    async def _watch(self, name: str, peer: Peer) -> None:
        try:
            await peer.closed.wait()
        finally:
            del self._links[id(peer)]
        if id(peer) in self._written_off:
            self._written_off.discard(id(peer))
        else:
            self._peer_lost(name, peer.reason or "the connection was lost")

    def _peer_lost(self, peer: str, reason: str) -> None:
        """A connection to replica process ``peer`` dropped (it died, or only
        the connection did) for ``reason``: the processes of a cluster share
        fate, so this one ends its replica, starts the next at the
        controller's next reset (see :meth:`run`), and tells the controller,
        whose connections to this process ended with the old one (a real
        process halts and restarts: the controller sees its connections
        fail). A warning, unless the other process closed it stopping in
        order (SIGTERM: the driver stops them all)."""
        # One loss a process: its other connections say nothing more, and end
        # now (as a real process's restart ends them all) if they did not
        # with it. One left open would stay written off: its own loss, in
        # the fresh replica, would go unnoticed, and what it carried lost.
        for key, (name, other) in self._links.items():
            if name == peer and key not in self._written_off:
                self._written_off.add(key)
                self.nursery.start_soon(other.close, f"shared fate: {reason}")
        if self.generation is None or self._restart.is_set():
            return  # a fresh replica is on its way already
        logger.log(
            logging.INFO if reason.endswith(": node closing") else logging.WARNING,
            "%s: lost the connection to replica process %s (%s): its replica ends; "
            "the next starts at the controller's next reset",
            self.hub.name,
            peer,
            reason,
        )
        if CONTROLLER in self.hub.outlinks:
            self.hub.send(CONTROLLER, ("lost-peer", peer))
        self.awaiting_reset = True
        self.lost_reason = f"lost its connection to replica process {peer[1:]} ({reason})"
        self._restart.set()
        self._forget_peer_items()

    def _forget_peer_items(self) -> None:
        """Drop what the ending generation queued for other replica processes
        (commands relayed, exchanges): sent later, on a connection dialled
        anew, it would reach their fresh replicas. (Items already written to
        a connection that has not dropped yet can still arrive: generations
        are not tagged on the wire.)"""
        for name, outlink in self.hub.outlinks.items():
            if name.startswith("p"):
                outlink.discard()

    async def _seq(
        self, source: str, epoch: int, runtime: str, nonce: int, position: int, commands: bytes
    ) -> None:
        generation = self._generation_of(epoch)
        if generation is None:
            return  # for the replica that ended (see _current_epoch)
        relay = generation.relays.get(runtime)
        if relay is None:
            raise ProtocolError(f"process {self.options.process} relays no {runtime} runtime")
        await relay.broadcast_many(SequencedCommand.all_of(nonce, position, _wire.split(commands)))

    def _probe(self, source: str, token: int, final: bool) -> None:
        self.nursery.start_soon(self._answer_probe, token, final)

    async def _answer_probe(self, token: int, final: bool) -> None:
        await trio.testing.wait_all_tasks_blocked(0.001)
        hub = self.hub
        generation = self.generation
        report = generation.report() if final and generation is not None else {}
        hub.send(
            CONTROLLER,
            ("probed", token, self.options.process, hub.sent, hub.received + hub.dropped, report),
        )

    def _reset(self, source: str, token: int) -> None:
        self._reset_tokens.append(token)
        self._reset_came.set()
        # Between two generations (one ended, for a lost peer), the next is
        # fresh already and says it did the reset: no second one after it,
        # which would drop what the controller sends once told it is done.
        if self.generation is not None:
            self._restart.set()

    def _lost(self, target: str) -> None:
        if target == SHARDS:
            # Dial the host again now (not at the next item for it, which an
            # idle process may never have): if it is gone for good (the driver
            # was killed), this process ends instead of outliving it.
            self.hub.send(SHARDS, ("hello",))
            # What was in flight on the dropped connection (pushes, a sink's
            # append) is lost: every mirror asks for its shard again.
            if self.generation is not None:
                self.generation.shards.resubscribe()
            return
        if target == CONTROLLER and self.generation is not None:
            # The controller went away: every connection it opened ends.
            self.generation.end_all()
        # A link to another replica process: see _watch_link.

    async def run(self) -> None:
        while True:
            if self.awaiting_reset:
                # After a lost peer, the next replica starts at the
                # controller's next reset, at its epoch, as every other
                # process's does (a real process halts, and the controller
                # reconnects with a new epoch): one started at the epoch it
                # had could take what the other processes' ended replicas
                # wrote to connections still closing.
                while not self._reset_tokens:
                    await self._reset_came.wait()
                    self._reset_came = trio.Event()
                self.awaiting_reset = False
            self.token += 1
            # The last reset taken, before or between generations.
            self.epoch = max([self.epoch, *self._reset_tokens])
            async with open_generation(
                self.options, self.hub, self.token, self.epoch
            ) as generation:
                self.generation = generation
                # With every reset taken, those that came while it started too.
                self.epoch = generation.epoch = max([self.epoch, *self._reset_tokens])
                # A quiescence test counts within one generation.
                self.hub.sent = self.hub.received = self.hub.dropped = 0
                self.hub.send(SHARDS, ("ready", self.options.process, self.token))
                for token in self._reset_tokens:
                    self.hub.send(
                        CONTROLLER, ("reset-done", token, self.options.process, self.token)
                    )
                self._reset_tokens = []
                await self._restart.wait()
                self._restart = trio.Event()
                self.generation = None
                self._forget_peer_items()
