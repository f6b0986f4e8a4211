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
* ``compute reconcile kept N=n`` / ``compute reconcile dropped N=n``
  (n = 100, 1,000, 10,000): a replica with one worker runs n scheduled index
  dataflows; a reconnecting controller either replays all n (all kept) or
  none (all dropped). Timed from the reconnect to the end of the
  reconciliation (every task blocked again). One op is one dataflow
  reconciled, so ops/s is the inverse of the reconcile time per dataflow.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import trio
import trio.testing

from actors.compute import (
    Controller,
    CreateDataflow,
    CreateInstance,
    DataflowDescription,
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
RECONCILE_NS = (100, 1_000, 10_000)

BenchFn = Callable[[int], tuple[int, float]]


def make_command_channel(workers: int) -> BenchFn:
    def bench(m: int) -> tuple[int, float]:
        async def main() -> float:
            config = ReplicaConfig(processes=1, workers=workers)
            async with open_replica(config) as replica, open_controller(replica) as controller:
                await controller.send(CreateInstance())
                await controller.send(InitializationComplete())
                await trio.testing.wait_all_tasks_blocked()
                before = len(replica.solo.workers[0].applied)
                command = UpdateConfiguration((("k", "v"),))
                start = time.perf_counter()
                for _ in range(m):
                    await controller.send(command)
                await trio.testing.wait_all_tasks_blocked()
                elapsed = time.perf_counter() - start
                applied = [len(worker.applied) - before for worker in replica.solo.workers]
                assert applied == [m] * workers, applied
            return elapsed

        return m * workers, trio.run(main)

    return bench


async def _install(controller: Controller, dataflows: list[DataflowDescription]) -> None:
    await controller.send(CreateInstance())
    for dataflow in dataflows:
        await controller.send(CreateDataflow(dataflow))
        await controller.send(Schedule(dataflow.index_id))
    await controller.send(InitializationComplete())


def make_reconcile(*, keep: bool) -> BenchFn:
    def bench(size: int) -> tuple[int, float]:
        async def main() -> float:
            shards = ShardCatalog()
            shards.shard("data").write(0, [(1,), (2,)])
            dataflows = [
                DataflowDescription(2 * i, "data", 2 * i + 1, (0,), 0) for i in range(size)
            ]
            async with (
                open_replica(ReplicaConfig(), shards=shards) as replica,
                open_controller(replica) as controller,
            ):
                await _install(controller, dataflows)
                await trio.testing.wait_all_tasks_blocked()
                worker = replica.solo.workers[0]
                assert len(worker.state.dataflows) == size
                start = time.perf_counter()
                await controller.connect()
                await _install(controller, dataflows if keep else [])
                await trio.testing.wait_all_tasks_blocked()
                elapsed = time.perf_counter() - start
                assert worker.buffer is None
                assert len(worker.state.dataflows) == (size if keep else 0)
                assert worker.state.builds == size
            return elapsed

        return size, trio.run(main)

    return bench


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
    for n in RECONCILE_NS:
        for keep, label in ((True, "kept"), (False, "dropped")):
            rows.append(
                Bench(
                    f"compute reconcile {label} N={n}", make_reconcile(keep=keep), n, n, "dataflow"
                )
            )
    return rows


BENCHMARKS = compute_benchmarks
