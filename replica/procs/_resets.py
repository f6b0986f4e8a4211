"""Resets of the replica, from the driver's side: every process starts a fresh
replica in place, at one new epoch, round after round until none lost a
peer again while it did (docs/processes.md)."""

from __future__ import annotations

import logging

import trio

from ..model._metrics import Metrics
from ._cluster_base import ClusterBase, _Round
from ._errors import ClusterError
from ._items import LostPeer, Reset, ResetDone
from ._options import process_node

logger = logging.getLogger("replica.procs")


class Resets(ClusterBase):
    """Reset rounds (see the module's docstring)."""

    __slots__ = ()

    async def recover(self) -> None:
        """Every process starts a fresh replica in place, and the shards stay:
        what follows the loss of a process (a replica whose process died
        restarts whole, as a timely cluster does; a controller then
        reconnects and replays what it wants). Returns once every process
        said it did; the replica's counters start at zero.

        A process that loses a peer again after it said so (its fresh
        replica ended at once) waits for another reset: a new round goes to
        every process, so that when this returns each has a replica, all
        at one epoch. Raises :class:`ClusterError` at once, sending
        nothing, if a process is not running (killed, or exited: restart
        it first), and as soon as one exits while it waits; or if the
        processes did not all reset within ``probe_patience``."""
        self._check_running("recover")
        expected = {process.index for process in self.processes}
        done: set[int] = set()
        with trio.move_on_after(self.probe_patience):
            while True:
                token = next(self._tokens)
                round = self._resets[token] = _Round()
                done = round.done
                try:
                    for process in self.processes:
                        self.controller_hub.send(process_node(process.index), Reset(token))
                    while not round.relost and (done != expected or not self._host_ready(round)):
                        self._check_running("reset")
                        await self._wait_change()
                finally:
                    del self._resets[token]
                if not round.relost:
                    break
                logger.warning(
                    "replica processes %s lost a peer again while resetting: another round",
                    sorted(round.relost),
                )
        if done != expected:
            silent = sorted(expected - done)
            raise ClusterError(
                f"replica processes {silent} did not reset within {self.probe_patience:g}s"
            )
        self._servers.clear()
        for scope in self._pumps:
            scope.cancel()
        for hub in (self.controller_hub, self.shards_hub):
            hub.sent = hub.received = hub.dropped = 0
        self.metrics = Metrics()

    def _host_ready(self, round: _Round) -> bool:
        """Whether the host took every process's ``ready`` for the generation
        it started for ``round`` (on another connection than its
        ``reset-done``): only then has it forgotten the ended generations'
        subscriptions, so that nothing it pushes them comes after the
        counts start again."""
        return all(self.ready.get(p, 0) >= g for p, g in round.generations.items())

    def _reset_done(self, source: str, item: ResetDone) -> None:
        round = self._resets.get(item.token)
        if round is not None:
            round.done.add(item.process)
            round.generations[item.process] = item.generation
            self._notify()

    def _lost_peer(self, source: str, item: LostPeer) -> None:
        peer = item.peer
        index = int(source[1:])
        # After its reset-done, a lost peer ended the fresh replica too: it
        # waits for another reset (see recover).
        for round in self._resets.values():
            if index in round.done:
                round.done.discard(index)
                round.relost.add(index)
        self._connections_lost(
            index,
            f"replica process {index} lost its connection to replica process {peer[1:]} "
            "and restarted (the processes of a replica share fate)",
        )
