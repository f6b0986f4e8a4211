"""``trio-reconcile run --spawn``: specs against a replica on OS processes.

One set of ``P`` replica processes serves every spec of the command: before
each spec but the first, the cluster is reset (every process starts a fresh
replica in place, the host a fresh catalog), so each spec meets a fresh
replica as it does in one process. The runner is the in-process one
(:func:`replica.driver._runner.run_stanzas`), on the real clock: a spec's
``timeout-secs`` are real seconds.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import attrs
import trio

from .._controller import open_controller
from .._faults import Faults
from ..driver._runner import SpecRun, Topology, run_stanzas
from ..driver._spec import Spec
from ._cluster import Cluster, ClusterError, open_cluster


@attrs.define(eq=False)
class ClusterBackend:
    """The runner's view of a :class:`Cluster`."""

    cluster: Cluster
    max_wait: float = 5.0

    @property
    def faults(self) -> Faults:
        return self.cluster.faults

    async def settle(self) -> None:
        await self.cluster.settle()

    def hold(self, runtime: str) -> None:
        self.cluster.hold(runtime)

    def release(self, runtime: str) -> None:
        self.cluster.release(runtime)

    async def divergence(self) -> list[str]:
        return await self.cluster.divergence()


def run_spawned(
    specs: Sequence[Spec],
    topology: Topology,
    seed: int,
    done: Callable[[Spec, SpecRun], None],
    *,
    max_wait: float = 5.0,
) -> None:
    """Run each spec against replica processes of ``topology`` (spawned once
    for all of them); call ``done`` with each run as it ends. A stanza waits
    at most ``max_wait`` real seconds, whatever its ``timeout-secs``."""
    trio.run(_run_spawned, specs, topology, seed, done, max_wait)


async def _run_spawned(
    specs: Sequence[Spec],
    topology: Topology,
    seed: int,
    done: Callable[[Spec, SpecRun], None],
    max_wait: float,
) -> None:
    async with (
        open_cluster(topology.config(), seed=seed) as cluster,
        trio.open_nursery() as nursery,
    ):
        lost = trio.Event()
        losses: list[int] = []

        def on_lost(process: int) -> None:
            losses.append(process)
            lost.set()

        async def watch() -> None:
            # A spec has no way to recover a lost process: the run ends, named.
            await lost.wait()
            raise ClusterError(f"lost the connection to replica process {losses[0]}")

        cluster.on_lost.append(on_lost)
        nursery.start_soon(watch)
        await _run_each(cluster, specs, done, max_wait)
        nursery.cancel_scope.cancel()


async def _run_each(
    cluster: Cluster,
    specs: Sequence[Spec],
    done: Callable[[Spec, SpecRun], None],
    max_wait: float,
) -> None:
    backend = ClusterBackend(cluster, max_wait)
    for number, spec in enumerate(specs):
        if number:
            await cluster.reset()
        async with open_controller(cluster) as controller:

            async def violations(controller: object = controller) -> list[str]:
                return await cluster.violations()

            run = await run_stanzas(spec, backend, controller, cluster.shards, violations)
            run.violations[:0] = [r for r in controller.regressions if r not in run.violations]
        done(spec, run)
