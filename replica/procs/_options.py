"""What a replica process is told (``trio-reconcile serve``'s options) and
the names of the nodes of a replica on OS processes."""

from __future__ import annotations

import attrs

from ..runtime._replica import ReplicaConfig
from ._tls import TlsFiles

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
