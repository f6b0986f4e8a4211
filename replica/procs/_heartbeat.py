"""Failure detection, from the driver's side: every process pinged, and the
link to one that stayed silent for the heartbeat timeout closed (a
partition then behaves as a lost connection)."""

from __future__ import annotations

import logging

import trio

from ._cluster_base import ClusterBase
from ._items import Ping, Pong
from ._limits import MIN_PEER_TIMEOUT
from ._options import process_node

logger = logging.getLogger("replica.procs")

MIN_HEARTBEAT = MIN_PEER_TIMEOUT / 4
"""The shortest ``open_cluster(heartbeat=...)``: the quickest a ``serve``
process pings (a quarter of the least ``--peer-timeout``). Shorter, the
driver's heartbeat loop spins, flooding every process with pings."""


class Heartbeats(ClusterBase):
    """The driver's heartbeat (see the module's docstring)."""

    __slots__ = ()

    def _pong(self, source: str, item: Pong) -> None:
        index = int(source[1:])
        self._pongs[index] = trio.current_time()
        self.slots[index].silent = False

    def _lost(self, target: str) -> None:
        if target.startswith("p"):
            index = int(target[1:])
            self._connections_lost(index, f"lost the connection to replica process {index}")

    async def heartbeats(self) -> None:
        """Ping every process; close the link to one that stayed silent for
        ``heartbeat_timeout`` (a partition then behaves as a lost connection).
        A process silent that long with no link open (one stopped while the
        link was being dialled, so it never answered the handshake) is lost
        as well: its connections fail, named."""
        while True:
            now = trio.current_time()
            for process in self.processes:
                link = self.controller_hub.outlinks[process_node(process.index)]
                last = self._pongs.setdefault(process.index, now)
                if now - last > self.heartbeat_timeout:
                    self._pongs[process.index] = now
                    self.slots[process.index].silent = True
                    peer = link.peer
                    if peer is not None:
                        logger.warning("no answer from process %d: closing its link", process.index)
                        self.nursery.start_soon(peer.close, "heartbeat missed")
                    elif (
                        process.index in self.ready
                        and not self.slots[process.index].exited.is_set()
                    ):
                        # (Not one being started again: see restart.)
                        logger.warning("no answer from process %d, and no link", process.index)
                        self._connections_lost(
                            process.index,
                            f"no answer from replica process {process.index} for "
                            f"{self.heartbeat_timeout:g}s (its link could not be opened)",
                        )
                link.put(Ping(now))
            await trio.sleep(self.heartbeat)

    async def wait_lost(self, index: int, *, times: int = 1) -> None:
        """Wait until the controller's link to process ``index`` went down
        ``times`` times in all."""
        while self.losses.get(index, 0) < times:
            await self._wait_change()
