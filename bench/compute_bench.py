"""Benchmarks of the replica model, as rows beside ``../shared/bench/baseline.py``.

Loaded by the baseline with ``--extra bench/compute_bench.py`` (``bench/run.py``
does that). Like every row, each function sets up untimed, times only its hot
part with :func:`time.perf_counter`, and returns ``(ops, seconds)``.

* ``compute command channel W=k`` (k = 1, 2, 4, 8, 16): a Solo replica of one
  process with k workers; the controller sends M ``UpdateConfiguration``
  commands, which the multiplexer forwards, global worker 0's channel adapter
  sequences, and the command channel delivers to all k workers. One op is one
  delivery (ops = M * k), timed until every worker applied all M. Compare with
  ``trio fan-out K=k``.
* ``compute command channel P=p W=2`` (p = 1, 2, 4): the same across p
  processes of 2 workers each (ops = M * 2p).
* ``compute reconcile kept N=n`` / ``compute reconcile dropped N=n``
  (n = 100, 1,000, 10,000): a replica with one worker runs n scheduled index
  dataflows; a reconnecting controller either replays all n (all kept) or
  none (all dropped), its commands in one ``Controller.send_many`` call.
  Timed from the reconnect to the end of the reconciliation (every task
  blocked again). The setup's objects are frozen
  (``gc.freeze()``) for the timed part, so the collection debt the n installs
  ran up does not land in it, as a collection; nor does a full collection run
  just before it: one traverses the whole heap and leaves the caches cold, and
  at n = 100 that alone added about 7 us per dataflow (measured; see
  bench/README.md). One op is one dataflow reconciled, so ops/s is the
  inverse of the reconcile time per dataflow.
* ``compute write to controller frontier W=2 two runtimes``: both runtimes,
  one process of 2 workers, one scheduled index; each op writes one row at the
  next time and waits until the controller has the merged frontier past it
  (shard, both runtimes' workers, adapters, the process's merge, the
  controller). Compare with ``trio ping-pong``.
* ``barrier rounds``: two tasks, one per side, arrive at one
  :class:`~barrier.ReconcileBarrier` at positions 0, 1, 2, ... and each waits
  for the other; one op is one round (both passed). Compare with
  ``trio rendezvous (Event)``.
* ``compute frontier advances none waiting`` / ``... one waiting``: a replica
  with both runtimes, one process of 2 workers, one scheduled index. Each op
  writes one row at the next time and waits until every maintenance part's
  upper passed it. In the second row maintenance worker 0 is parked at its
  barrier (the interactive runtime is held mid-reconcile; worker 1's barrier
  was passed), so its part advances only through the dataflow loop.
"""

from __future__ import annotations

import contextlib
import gc
import time
from collections.abc import Callable, Iterator

import trio
import trio.testing

import actors
from barrier import ReconcileBarrier, Side
from replica import (
    Command,
    Controller,
    CreateDataflow,
    CreateInstance,
    DataflowDescription,
    GlobalId,
    InitializationComplete,
    ReplicaConfig,
    Schedule,
    ShardCatalog,
    UpdateConfiguration,
    open_controller,
    open_replica,
)

COMMANDS_M = 5_000
WORKER_COUNTS = (1, 2, 4, 8, 16)
PROCESS_COUNTS = (1, 2, 4)
RECONCILE_NS = (100, 1_000, 10_000)

BenchFn = Callable[[int], tuple[int, float]]


@contextlib.contextmanager
def _setup_frozen() -> Iterator[None]:
    """Every object alive now out of the collector's reach until the block
    ends: a collection in the block traverses only what the block made."""
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


def make_command_channel(workers: int, processes: int = 1) -> BenchFn:
    def bench(m: int) -> tuple[int, float]:
        async def main() -> float:
            config = ReplicaConfig(processes=processes, workers=workers)
            async with open_replica(config) as replica, open_controller(replica) as controller:
                await controller.send(CreateInstance())
                await controller.send(InitializationComplete())
                await trio.testing.wait_all_tasks_blocked()
                before = len(replica.maintenance.workers[0].applied)
                command = UpdateConfiguration((("k", "v"),))
                start = time.perf_counter()
                for _ in range(m):
                    await controller.send(command)
                await trio.testing.wait_all_tasks_blocked()
                elapsed = time.perf_counter() - start
                applied = [len(worker.applied) - before for worker in replica.maintenance.workers]
                assert applied == [m] * (workers * processes), applied
            return elapsed

        return m * workers * processes, trio.run(main)

    return bench


async def _install(controller: Controller, dataflows: list[DataflowDescription]) -> None:
    """Send a connection's commands for ``dataflows`` in one call, as a
    controller replays its history."""
    commands: list[Command] = [CreateInstance()]
    for dataflow in dataflows:
        commands.append(CreateDataflow(dataflow))
        commands.append(Schedule(dataflow.exports[0]))
    commands.append(InitializationComplete())
    await controller.send_many(commands)


def make_reconcile(*, keep: bool) -> BenchFn:
    def bench(size: int) -> tuple[int, float]:
        async def main() -> float:
            shards = ShardCatalog()
            shards.shard("data").write(0, [(1,), (2,)])
            dataflows = [
                DataflowDescription.index(2 * i, "data", 2 * i + 1, (0,), 0) for i in range(size)
            ]
            async with (
                open_replica(ReplicaConfig(), shards=shards) as replica,
                open_controller(replica) as controller,
            ):
                await _install(controller, dataflows)
                await trio.testing.wait_all_tasks_blocked()
                worker = replica.maintenance.workers[0]
                assert len(worker.state.collections) == size
                # The setup's garbage-collection debt is setup: frozen, it cannot
                # land in the timed part as a full collection (the baseline
                # collects before each row for the same reason; here a
                # collection right before would leave the caches cold).
                with _setup_frozen():
                    start = time.perf_counter()
                    await controller.connect()
                    await _install(controller, dataflows if keep else [])
                    await trio.testing.wait_all_tasks_blocked()
                    elapsed = time.perf_counter() - start
                assert worker.buffer is None
                assert len(worker.state.collections) == (size if keep else 0)
                assert worker.state.builds == size
            return elapsed

        return size, trio.run(main)

    return bench


def barrier_rounds(n: int) -> tuple[int, float]:
    async def main() -> float:
        async with actors.open_system() as system:
            barrier = await ReconcileBarrier.spawn(system, name="barrier")

            async def side(which: Side) -> None:
                for position in range(n):
                    await barrier.arrive_and_wait(which, position)

            start = time.perf_counter()
            async with trio.open_nursery() as nursery:
                nursery.start_soon(side, Side.MAINTENANCE)
                nursery.start_soon(side, Side.INTERACTIVE)
            elapsed = time.perf_counter() - start
        return elapsed

    return n, trio.run(main)


def make_frontier_advances(*, one_waiting: bool) -> BenchFn:
    def bench(n: int) -> tuple[int, float]:
        async def main() -> float:
            shards = ShardCatalog()
            data = shards.shard("data")
            data.write(0, [(0,)])
            index = DataflowDescription.index(1000, "data", 1001, (0,), 0)
            config = ReplicaConfig(processes=1, workers=2, interactive=True)
            async with (
                open_replica(config, shards=shards) as replica,
                open_controller(replica) as controller,
                trio.open_nursery() as helpers,
            ):
                await _install(controller, [index])
                await trio.testing.wait_all_tasks_blocked()
                workers = replica.maintenance.workers
                if one_waiting:
                    replica.hold("interactive")
                    # Worker 1's barrier is passed by hand; worker 0 waits.
                    helpers.start_soon(replica.barriers[0, 1].arrive_and_wait, Side.INTERACTIVE, 1)
                    await controller.connect()
                    await _install(controller, [index])
                    await trio.testing.wait_all_tasks_blocked()
                    assert [worker.buffer for worker in workers] == [None, None]
                start = time.perf_counter()
                for ts in range(1, n + 1):
                    data.write(ts, [(ts,)])
                    await trio.testing.wait_all_tasks_blocked()
                elapsed = time.perf_counter() - start
                index_id = GlobalId.user(1001)
                uppers = [worker.state.collections[index_id].frontier for worker in workers]
                assert all(u is not None and u.time == n + 1 for u in uppers), uppers
                helpers.cancel_scope.cancel()
            return elapsed

        return n, trio.run(main)

    return bench


def write_to_controller(n: int) -> tuple[int, float]:
    """Each op writes one row at the next time and waits until the controller
    has the merged frontier past it: both runtimes, one process of 2 workers."""

    async def main() -> float:
        shards = ShardCatalog()
        data = shards.shard("data")
        data.write(0, [(0, "0")])
        index = DataflowDescription.index(1000, "data", 1001, (0,), 0)
        config = ReplicaConfig(processes=1, workers=2, interactive=True)
        async with (
            open_replica(config, shards=shards) as replica,
            open_controller(replica) as controller,
        ):
            await _install(controller, [index])
            await controller.await_frontier(1001, 1)
            start = time.perf_counter()
            for ts in range(1, n + 1):
                data.write(ts, [(ts, str(ts))])
                await controller.await_frontier(1001, ts + 1)
            return time.perf_counter() - start

    return n, trio.run(main)


def compute_benchmarks() -> list[object]:
    from baseline import Bench  # registered by baseline.py before it loads this module

    rows = [
        Bench(
            f"compute command channel W={w}",
            make_command_channel(w),
            COMMANDS_M,
            COMMANDS_M // 10,
            "delivery",
        )
        for w in WORKER_COUNTS
    ]
    rows += [
        Bench(
            f"compute command channel P={p} W=2",
            make_command_channel(2, processes=p),
            COMMANDS_M,
            COMMANDS_M // 10,
            "delivery",
        )
        for p in PROCESS_COUNTS
    ]
    for n in RECONCILE_NS:
        for keep, label in ((True, "kept"), (False, "dropped")):
            rows.append(
                Bench(
                    f"compute reconcile {label} N={n}", make_reconcile(keep=keep), n, n, "dataflow"
                )
            )
    rows.append(Bench("barrier rounds", barrier_rounds, 20_000, 2_000, "round"))
    rows.append(
        Bench(
            "compute write to controller frontier W=2 two runtimes",
            write_to_controller,
            5_000,
            500,
            "write",
        )
    )
    for one_waiting, label in ((False, "none waiting"), (True, "one waiting")):
        rows.append(
            Bench(
                f"compute frontier advances {label}",
                make_frontier_advances(one_waiting=one_waiting),
                2_000,
                200,
                "advance",
            )
        )
    return rows


BENCHMARKS = compute_benchmarks
