"""How the driver stops its replica processes when the cluster's block ends:
SIGTERM and a short grace (``STOP_GRACE``) to stop in order, then SIGKILL;
SIGKILL at once for one already silent (frozen: it could not act on
SIGTERM). Never trio's own wait of 5 s and its ``RuntimeWarning``."""

from __future__ import annotations

import os
import signal

import trio

from replica import ReplicaConfig
from replica.procs import open_cluster
from replica.procs._spawning import STOP_GRACE

from .helpers import run_real

CONFIG = ReplicaConfig(processes=1, workers=1, interactive=False)


def _freeze(process: trio.Process | None, nursery: trio.Nursery) -> None:
    """SIGSTOP ``process``; SIGKILL it in 20 s if it is still there (the
    cluster's stop waits for it shielded from the test's bound)."""
    assert process is not None
    os.kill(process.pid, signal.SIGSTOP)

    async def watchdog() -> None:
        await trio.sleep(20)
        process.kill()

    nursery.start_soon(watchdog)


def test_a_process_found_silent_is_killed_at_once_when_the_cluster_stops() -> None:
    """Frozen (SIGSTOP) and found silent by the driver's heartbeat, it would
    only have sat on a SIGTERM: the cluster stopped 5 s later, with trio's
    warning that the process ignored SIGTERM."""

    async def main() -> None:
        async with trio.open_nursery() as nursery:
            async with open_cluster(CONFIG, heartbeat=0.1, heartbeat_timeout=0.5) as cluster:
                _freeze(cluster.slots[0].process, nursery)
                await cluster.wait_lost(0)
                stopping = trio.current_time()
            assert trio.current_time() - stopping < STOP_GRACE
            assert cluster.slots[0].exited.is_set()
            nursery.cancel_scope.cancel()

    run_real(main, limit=60)


def test_a_process_that_does_not_stop_on_sigterm_is_killed_after_the_grace() -> None:
    """Frozen just before the cluster stops (not yet found silent), it gets
    SIGTERM, then SIGKILL after ``STOP_GRACE``, and nothing is printed."""

    async def main() -> None:
        async with trio.open_nursery() as nursery:
            async with open_cluster(CONFIG) as cluster:
                _freeze(cluster.slots[0].process, nursery)
                stopping = trio.current_time()
            assert STOP_GRACE <= trio.current_time() - stopping < STOP_GRACE + 2
            assert cluster.slots[0].exited.is_set()
            nursery.cancel_scope.cancel()

    run_real(main, limit=60)


def test_processes_that_stop_on_sigterm_stop_at_once() -> None:
    async def main() -> None:
        config = ReplicaConfig(processes=2, workers=1, interactive=False)
        async with open_cluster(config):
            stopping = trio.current_time()
        assert trio.current_time() - stopping < STOP_GRACE

    run_real(main, limit=60)
