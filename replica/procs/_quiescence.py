"""The replica's quiescence, from the driver's side: every process probed for
its counts once idle, and the replica settled when nothing is in flight
between any two nodes; the processes' reports on the invariants."""

from __future__ import annotations

from typing import Any

import trio
import trio.testing

from ._cluster_base import ClusterBase
from ._errors import ClusterError
from ._items import Probe, Probed
from ._options import process_node


class Quiescence(ClusterBase):
    """Probes and settling (see the module's docstring)."""

    __slots__ = ()

    async def probe(self, *, final: bool = False) -> dict[int, tuple[int, int, dict[str, Any]]]:
        """Ask every process for its counts (and, ``final``, its report)
        once it is idle."""
        token = next(self._tokens)
        answers = self._probes[token] = {}
        try:
            for process in self.processes:
                self.controller_hub.send(process_node(process.index), Probe(token, final))
            with trio.move_on_after(self.probe_patience):
                while len(answers) < len(self.processes):
                    self._check_running("answer a probe")
                    await self._wait_change()
                return answers
            silent = [p.index for p in self.processes if p.index not in answers]
            raise ClusterError(
                f"replica processes {silent} did not answer within {self.probe_patience:g}s"
            )
        finally:
            self._probes.pop(token, None)

    async def settle(self) -> None:
        """Wait until the replica is quiescent: every process idle, and
        nothing in flight between any two nodes (the items put and the items
        handled agree, twice in a row).

        Raises :class:`ClusterError`, named, if they stay apart, unchanged,
        for ``probe_patience`` (items lost with a connection that dropped,
        say, before a :meth:`recover` started the counts again): it probed
        for ever before."""
        previous: tuple[int, int] | None = None
        stuck_since: float | None = None
        while True:
            await trio.testing.wait_all_tasks_blocked(0.001)
            answers = await self.probe()
            sent = self.controller_hub.sent + self.shards_hub.sent
            handled = self.controller_hub.received + self.controller_hub.dropped
            handled += self.shards_hub.received + self.shards_hub.dropped
            for process_sent, process_handled, _ in answers.values():
                sent += process_sent
                handled += process_handled
            now = (sent, handled)
            if sent == handled and now == previous:
                return
            if now != previous:
                stuck_since = None
            elif stuck_since is None:
                stuck_since = trio.current_time()
            elif trio.current_time() - stuck_since > self.probe_patience:
                raise ClusterError(
                    f"the replica did not settle: the items put ({sent}) and handled "
                    f"({handled}) stayed apart for {self.probe_patience:g}s (lost with a "
                    "connection that dropped? Cluster.recover starts the counts again)"
                )
            previous = now

    async def reports(self) -> list[dict[str, Any]]:
        """Every process's report on the invariants (see ``Generation.report``)."""
        answers = await self.probe(final=True)
        return [answers[index][2] for index in sorted(answers)]

    async def violations(self) -> list[str]:
        """The invariants the replica broke, as the processes report them: a
        merger's regressions; the runtimes' divergence; workers of a runtime
        that applied other commands than its worker 0."""
        found: list[str] = []
        reports = await self.reports()
        firsts: dict[str, str] = {}
        for index, report in enumerate(reports):
            found += report.get("regressions", [])
            found += [d for d in report.get("divergence", []) if d not in found]
            for name, digests in report.get("digests", {}).items():
                for local, digest in enumerate(digests):
                    first = firsts.setdefault(name, digest)
                    if digest != first:
                        worker = index * self.config.workers + local
                        found.append(
                            f"{name}: worker {worker} applied other commands than worker 0"
                        )
        return found

    async def divergence(self) -> list[str]:
        found: list[str] = []
        for report in await self.reports():
            found += [d for d in report.get("divergence", []) if d not in found]
        return found

    def _probed(self, source: str, item: Probed) -> None:
        answers = self._probes.get(item.token)
        if answers is not None:
            answers[item.process] = (item.sent, item.handled, item.report)
            self._notify()
