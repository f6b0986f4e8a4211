"""``trio-reconcile run --spawn``: specs against a replica on OS processes.

One set of ``P`` replica processes serves every spec of the command: before
each spec but the first, the cluster is reset (every process starts a fresh
replica in place, the host a fresh catalog), so each spec meets a fresh
replica as it does in one process. The runner is the in-process one
(:func:`._runner.run_stanzas`), on the real clock: a spec's ``timeout-secs``
are real seconds. The processes are ``replica.procs``'s (docs/processes.md);
the replica on processes never imports the driver.

The host keeps the shards in a durable catalog (:mod:`replica.storage.persist`):
by default each spec's in a SQLite file of its own, in a temporary folder
removed when the command ends; ``persist`` names one store instead (``memory:`` keeps
them in the host's memory, fresh for each spec).
"""

from __future__ import annotations

import contextlib
import logging
import signal
import tempfile
from collections.abc import Callable, Iterator, Sequence

import attrs
import trio

from ...client._controller import open_controller
from ...procs import Cluster, ClusterError, TlsFiles, open_cluster
from ...runtime._faults import Faults
from ...storage._shard import ShardCatalog
from ...storage.persist import PersistError, open_catalog
from ..lang._errors import DriverError
from ..lang._spec import Spec
from ._runner import DEFAULT_MAX_WAIT, SpecRun, Topology, run_stanzas

logger = logging.getLogger("replica.procs")


class TerminatedError(DriverError):
    """``run --spawn`` got SIGTERM: it stopped its replica processes first."""


class StoreNotEmptyError(DriverError, PersistError):
    """``--persist`` named a store that already holds shards: a spec starts
    from empty shards, and its writes would land on top of another run's."""


Catalogs = Callable[[int], ShardCatalog]
"""The catalog the host serves to the n-th spec of a run."""


@contextlib.contextmanager
def spec_catalogs(persist: str | None, specs: int) -> Iterator[Catalogs]:
    """The catalogs of a run of ``specs`` specs, closed when the block ends.

    Without ``persist``: each spec's shards in a SQLite file of its own (WAL,
    synced at every commit), in a temporary folder removed at the end.
    ``memory:``: a fresh in-memory catalog a spec. Any other store URL
    (``sqlite:PATH``, ``postgresql://...``) serves one spec and must hold no
    shard yet: a :class:`ValueError` for several specs,
    :class:`StoreNotEmptyError` for a store in use, and the store's own
    :class:`~replica.storage.persist.PersistError` when it cannot be opened (all
    before any process starts: the first spec's catalog opens at once)."""
    if persist is not None and persist.strip().lower() != "memory:" and specs > 1:
        raise ValueError(
            f"--persist {persist} serves one spec ({specs} given): each spec starts from "
            "empty shards; leave --persist out for a SQLite file a spec"
        )
    with contextlib.ExitStack() as stack:
        folder = (
            stack.enter_context(tempfile.TemporaryDirectory(prefix="trio-reconcile-shards-"))
            if persist is None
            else None
        )

        def catalog(number: int) -> ShardCatalog:
            url = f"sqlite:{folder}/spec-{number}.db" if persist is None else persist
            opened = open_catalog(url)
            stack.callback(opened.close)
            if opened.shards:
                names = ", ".join(sorted(opened.shards)[:5])
                raise StoreNotEmptyError(f"{url}: the store already holds shards ({names})")
            return opened

        first = catalog(0)
        yield lambda number: first if number == 0 else catalog(number)


@attrs.define(eq=False)
class ClusterBackend:
    """The runner's view of a :class:`Cluster`."""

    cluster: Cluster
    max_wait: float = DEFAULT_MAX_WAIT

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
    max_wait: float = DEFAULT_MAX_WAIT,
    catalogs: Catalogs | None = None,
    tls: TlsFiles | None = None,
    peer_timeout: float | None = None,
) -> None:
    """Run each spec against replica processes of ``topology`` (spawned once
    for all of them); call ``done`` with each run as it ends. A stanza waits
    at most ``max_wait`` real seconds, whatever its ``timeout-secs``. The
    host serves the n-th spec ``catalogs(n)`` (see :func:`spec_catalogs`; a
    fresh in-memory catalog by default). With ``tls``, the nodes' connections
    are mutual TLS. ``peer_timeout`` is the processes' (see
    :func:`open_cluster`)."""
    trio.run(
        _run_spawned,
        specs,
        topology,
        seed,
        done,
        max_wait,
        (lambda _: ShardCatalog()) if catalogs is None else catalogs,
        tls,
        peer_timeout,
    )


async def _run_spawned(
    specs: Sequence[Spec],
    topology: Topology,
    seed: int,
    done: Callable[[Spec, SpecRun], None],
    max_wait: float,
    catalogs: Catalogs,
    tls: TlsFiles | None,
    peer_timeout: float | None,
) -> None:
    async def terminated() -> None:
        # SIGTERM ends the run as Ctrl-C does: the replica processes are
        # stopped (and reaped) as the cluster's block ends, not orphaned. The
        # receiver is in place before the first process starts.
        with trio.open_signal_receiver(signal.SIGTERM) as signals:
            async for _ in signals:
                raise TerminatedError("terminated")

    async with trio.open_nursery() as outer:
        outer.start_soon(terminated)
        await _run_cluster(specs, topology, seed, done, max_wait, catalogs, tls, peer_timeout)
        outer.cancel_scope.cancel()


async def _run_cluster(
    specs: Sequence[Spec],
    topology: Topology,
    seed: int,
    done: Callable[[Spec, SpecRun], None],
    max_wait: float,
    catalogs: Catalogs,
    tls: TlsFiles | None,
    peer_timeout: float | None,
) -> None:
    async with (
        open_cluster(
            topology.config(), seed=seed, catalog=catalogs(0), tls=tls, peer_timeout=peer_timeout
        ) as cluster,
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
            raise ClusterError(cluster.reasons[losses[0]])

        cluster.on_lost.append(on_lost)
        nursery.start_soon(watch)
        await _run_each(cluster, specs, done, max_wait, catalogs)
        nursery.cancel_scope.cancel()


async def _run_each(
    cluster: Cluster,
    specs: Sequence[Spec],
    done: Callable[[Spec, SpecRun], None],
    max_wait: float,
    catalogs: Catalogs,
) -> None:
    backend = ClusterBackend(cluster, max_wait)
    for number, spec in enumerate(specs):
        if number:
            await cluster.reset(catalogs(number))
        logger.info("%s: starts on %d ready replica processes", spec.path, len(cluster.processes))
        async with open_controller(cluster) as controller:

            async def violations(controller: object = controller) -> list[str]:
                return await cluster.violations()

            run = await run_stanzas(spec, backend, controller, cluster.shards, violations)
            run.violations[:0] = [r for r in controller.regressions if r not in run.violations]
        done(spec, run)
