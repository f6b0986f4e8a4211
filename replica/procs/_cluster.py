"""The driver's side of a replica on OS processes: the controller's node, the
shard host's node, and the ``serve`` processes it spawned.

:func:`open_cluster` spawns ``P`` ``trio-reconcile serve`` processes (the
same Python, ``-m replica.driver``), hosts the shards, and gives a
:class:`Cluster` that a :class:`~replica.Controller` drives as it drives an
in-process :class:`~replica.Replica`: ``cluster.processes[i].accept``
opens a controller connection to process ``i`` over the network.
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import trio

import actors
from actors.net import open_node

from ..runtime._replica import ReplicaConfig
from ..storage._shard import ShardCatalog
from ._cluster_base import RemoteProcess, Slot
from ._connections import Connections
from ._errors import ClusterError
from ._heartbeat import MIN_HEARTBEAT, Heartbeats
from ._items import (
    AppendShard,
    Gauge,
    Hello,
    LostPeer,
    Metric,
    Ping,
    Pong,
    Probed,
    Ready,
    Refused,
    ResetDone,
    Respond,
    SubscribeShard,
)
from ._links import MAX_FRAME, Hub, codec
from ._options import CONTROLLER, SHARDS, process_node
from ._quiescence import Quiescence
from ._resets import Resets
from ._shards import ShardHost
from ._spawning import Processes, listening_socket, serve_command
from ._tls import TlsFiles

__all__ = ["Cluster", "RemoteProcess", "open_cluster", "serve_command"]


class Cluster(Connections, Quiescence, Resets, Processes, Heartbeats):
    """A replica on OS processes, from the driver's side. ``processes``,
    ``faults``, ``system`` and ``metrics`` are what a controller uses; its
    parts are the modules of its mixins (see :mod:`._cluster_base`)."""

    __slots__ = ()

    def install(self) -> None:
        """The handlers of the controller's node and the shard host's."""
        hub = self.controller_hub
        hub.on(Respond, self._response)
        hub.on(Metric, lambda source, item: self.metrics.add(item.name, item.amount))
        hub.on(
            Gauge, lambda source, item: self.metrics.set_gauge(item.name, item.source, item.value)
        )
        hub.on(Probed, self._probed)
        hub.on(ResetDone, self._reset_done)
        hub.on(Pong, self._pong)
        hub.on(LostPeer, self._lost_peer)
        hub.on(Refused, self._refused)
        hub.on_lost.append(self._lost)
        shards = self.shards_hub
        shards.on(Hello, lambda source, item: shards.inbound(source).refresh())
        # A process pings the host (and closes the connection if it stays silent).
        shards.on(Ping, lambda source, item: shards.send(source, Pong(item.sent_at)))
        shards.on(Ready, self._ready)
        shards.on(
            SubscribeShard, lambda source, item: self.host.subscribe(source, item.token, item.name)
        )
        shards.on(
            AppendShard,
            lambda source, item: self.host.append(item.name, item.updates, item.lower, item.upper),
        )

    async def reset(self, catalog: ShardCatalog | None = None) -> None:
        """A fresh replica on the same processes: settle, then every process
        starts a new generation; the host serves ``catalog`` (a fresh one by
        default) and the counters start at zero."""
        await self.settle()
        await self.recover()
        self.host.replace(ShardCatalog() if catalog is None else catalog)

    async def restart(self, index: int, *, patience: float = 60.0) -> None:
        """Start replica process ``index`` again (after :meth:`kill`), wait
        until it is ready, then :meth:`recover`: every process starts a fresh
        replica at one new epoch (the others ended theirs when they lost it),
        and the controller reconnects next (docs/processes.md).

        Raises :class:`ClusterError` at once, changing nothing, if the
        process is running (it was not killed: it would never exit), and
        :class:`ValueError` for no such process. Cancelled once the process
        started, it runs on at its own epoch: :meth:`recover` (not another
        ``restart``, which finds it running) puts every process at one."""
        slot = self._slot(index)
        if not (slot.expected_exit or slot.exited.is_set()):
            raise ClusterError(
                f"replica process {index} is running: restart starts one that was killed "
                "(Cluster.kill) or exited"
            )
        await slot.exited.wait()
        self.ready.pop(index, None)
        await self.start(index)
        await self.wait_ready([index], patience=patience)
        await self.recover()


@asynccontextmanager
async def open_cluster(
    config: ReplicaConfig,
    *,
    seed: int | None = None,
    python: str = sys.executable,
    catalog: ShardCatalog | None = None,
    dial: Callable[[int, tuple[str, int]], tuple[str, int]] | None = None,
    dial_peer: Callable[[int, int, tuple[str, int]], tuple[str, int]] | None = None,
    dial_shards: Callable[[int, tuple[str, int]], tuple[str, int]] | None = None,
    heartbeat: float = 0.5,
    heartbeat_timeout: float = 10.0,
    peer_timeout: float | None = None,
    start_timeout: float = 60.0,
    tls: TlsFiles | None = None,
) -> AsyncIterator[Cluster]:
    """Spawn ``config.processes`` replica processes on loopback and host their
    shards (``catalog``, a fresh in-memory one by default: any
    :class:`ShardCatalog` works); stop them when the block ends. Each
    process's port is bound and listening, here, before any process starts,
    and held until the block ends: each OS process started for it inherits
    the socket (:func:`listening_socket`).

    ``dial(index, address)`` says where the controller dials process
    ``index`` (a proxy, for partition tests), ``dial_peer(index, other,
    address)`` where process ``index`` dials process ``other``, and
    ``dial_shards(index, address)`` where it dials the shard host; the
    address itself by default. With ``tls``, every node's connections are mutual
    TLS (:class:`~._tls.TlsFiles`: the certificate must name ``127.0.0.1``).
    The driver pings each process every ``heartbeat`` seconds and closes
    the link to one silent for ``heartbeat_timeout``; each process does the
    same to the other processes and the shard host, silent for
    ``peer_timeout`` (``heartbeat_timeout`` by default).
    Raises :class:`ClusterError` if a process does not start in time, and
    :class:`ValueError` (before anything starts) unless ``heartbeat``,
    ``heartbeat_timeout`` and ``peer_timeout`` are above 0 (a tiny
    ``peer_timeout`` is raised to the least ``serve`` takes,
    ``MIN_PEER_TIMEOUT``), ``heartbeat`` is at least ``MIN_HEARTBEAT`` (a
    shorter one spins) and ``heartbeat_timeout`` at least twice
    ``heartbeat`` (a process answers a ping a heartbeat later at the
    earliest: a shorter timeout, or one late pong, would make every process
    lost)."""
    if not (heartbeat > 0 and heartbeat_timeout > 0):
        raise ValueError(
            f"heartbeat ({heartbeat!r}) and heartbeat_timeout ({heartbeat_timeout!r}) "
            "must be above 0"
        )
    if heartbeat < MIN_HEARTBEAT:
        raise ValueError(
            f"heartbeat ({heartbeat!r}) must be at least {MIN_HEARTBEAT:g}s (shorter, the "
            "driver's pings would spin)"
        )
    if not heartbeat_timeout >= 2 * heartbeat:
        raise ValueError(
            f"heartbeat_timeout ({heartbeat_timeout!r}) must be at least twice heartbeat "
            f"({heartbeat!r}): a process answers a ping a heartbeat later at the earliest, "
            "so a shorter one makes every process lost"
        )
    if peer_timeout is not None and not peer_timeout > 0:
        raise ValueError(f"peer_timeout ({peer_timeout!r}) must be above 0")
    host_address = "127.0.0.1"
    with (
        tempfile.TemporaryDirectory(prefix="trio-reconcile-") as folder,
        contextlib.ExitStack() as listeners,
    ):
        secret = os.urandom(32)
        secret_file = Path(folder) / "secret"
        secret_file.touch(mode=0o600)
        secret_file.write_bytes(secret)
        async with (
            actors.open_system(seed=seed) as controller_system,
            actors.open_system() as shards_system,
            open_node(
                shards_system,
                name=SHARDS,
                secret=secret,
                codec=codec(),
                listen=(host_address, 0),
                max_frame=MAX_FRAME,
                peer_timeout=None,  # the links ping and judge silence (--peer-timeout)
                ssl_context=None if tls is None else tls.server_context(),
            ) as shards_node,
            open_node(
                controller_system,
                name=CONTROLLER,
                secret=secret,
                codec=codec(),
                listen=None,
                max_frame=MAX_FRAME,
                peer_timeout=None,  # the links ping and judge silence (--peer-timeout)
            ) as controller_node,
            trio.open_nursery() as nursery,
        ):
            assert shards_node.address is not None
            client = None if tls is None else tls.client_context()
            shards_hub = Hub(SHARDS, shards_node, nursery, ssl_context=client)
            await shards_hub.start()
            controller_hub = Hub(CONTROLLER, controller_node, nursery, ssl_context=client)
            await controller_hub.start()
            host = ShardHost(
                ShardCatalog() if catalog is None else catalog,
                lambda process, item: shards_hub.send(process, item),
            )
            cluster = Cluster(
                config,
                controller_system,
                controller_hub,
                shards_hub,
                host,
                nursery,
                heartbeat=heartbeat,
                heartbeat_timeout=heartbeat_timeout,
            )
            cluster.install()
            # Every process's port bound (and listening) before any starts.
            sockets = [
                listeners.enter_context(listening_socket(host_address))
                for _ in range(config.processes)
            ]
            addresses = [(host_address, sock.getsockname()[1]) for sock in sockets]
            for index in range(config.processes):
                cluster.processes.append(RemoteProcess(index, cluster))
                peers = [
                    address
                    if dial_peer is None or other == index
                    else dial_peer(index, other, address)
                    for other, address in enumerate(addresses)
                ]
                command = serve_command(
                    config,
                    index,
                    addresses[index],
                    peers,
                    shards_node.address
                    if dial_shards is None
                    else dial_shards(index, shards_node.address),
                    str(secret_file),
                    python=python,
                    tls=tls,
                    peer_timeout=heartbeat_timeout if peer_timeout is None else peer_timeout,
                    listen_fd=sockets[index].fileno(),
                )
                cluster.slots.append(Slot(index, command, sockets[index]))
            try:
                for index in range(config.processes):
                    await cluster.start(index)
                await cluster.wait_ready(patience=start_timeout)
                for index, address in enumerate(addresses):
                    target = address if dial is None else dial(index, address)
                    controller_hub.dial(process_node(index), target)
                nursery.start_soon(cluster.heartbeats)
                yield cluster
            finally:
                for slot in cluster.slots:
                    slot.expected_exit = True
                nursery.cancel_scope.cancel()
