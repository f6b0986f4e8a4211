"""Benchmarks of the dataflow engine, as rows beside ``../shared/bench/baseline.py``.

Loaded by the baseline with ``--extra bench/dataflow_bench.py`` (``bench/run.py``
does that). Each function sets up untimed and times only its hot part.

* ``dict of lists N=n``: the physical limit for hydrating an index in Python:
  a plain ``dict`` of lists keyed by column 0, built from the same n
  synthetic rows (sample schema: an integer and a 64-character string). One
  op is one row.
* ``index hydration W=w N=n``: a Solo replica of one process with w workers;
  the shard already holds the n rows and the index dataflow is created;
  timed from ``Schedule`` until the controller has the index's frontier past
  the rows. One op is one row. Compare with ``dict of lists``.
* ``index writes k=1000 N=n``: the same index (W=1) over n rows, then 100
  writes of 1,000 new rows each, each until the controller has the frontier
  past it. One op is one row written.

Not rows (``bench/run.py`` prints them after the table):
:func:`write_times` (time per write of the 100, to see that it does not grow
with the index) and :func:`scripts_wall_time` (the real driver's scripts on
the five topologies).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import trio
import trio.testing

from replica import (
    CreateDataflow,
    CreateInstance,
    DataflowDescription,
    InitializationComplete,
    ReplicaConfig,
    Row,
    Schedule,
    ShardCatalog,
    open_controller,
    open_replica,
)

ROWS_N = 100_000
WRITES = 100
WRITE_K = 1_000
WIDTH = 64
SCRIPTS = Path(__file__).resolve().parents[2] / "shared" / "external" / "driver-scripts"

BenchFn = Callable[[int], tuple[int, float]]


def synthetic(start: int, count: int) -> list[Row]:
    """The sample schema's synthetic rows ``start .. start + count``."""
    return [(i, str(i).zfill(WIDTH)) for i in range(start, start + count)]


def dict_of_lists(n: int) -> tuple[int, float]:
    rows = synthetic(0, n)
    start = time.perf_counter()
    index: dict[object, list[Row]] = {}
    for row in rows:
        index.setdefault(row[0], []).append(row)
    return n, time.perf_counter() - start


def make_hydration(workers: int) -> BenchFn:
    def bench(n: int) -> tuple[int, float]:
        async def main() -> float:
            shards = ShardCatalog()
            shards.shard("data").write(0, synthetic(0, n))
            index = DataflowDescription.index(1000, "data", 1001, (0,), 0)
            config = ReplicaConfig(workers=workers)
            async with (
                open_replica(config, shards=shards) as replica,
                open_controller(replica) as controller,
            ):
                for command in (CreateInstance(), InitializationComplete(), CreateDataflow(index)):
                    await controller.send(command)
                await trio.testing.wait_all_tasks_blocked()
                start = time.perf_counter()
                await controller.send(Schedule(1001))
                await controller.await_frontier(1001, 1)
                return time.perf_counter() - start

        return n, trio.run(main)

    return bench


def write_times(n: int, writes: int = WRITES, k: int = WRITE_K) -> list[float]:
    """Seconds per write of ``k`` rows, for ``writes`` writes into an index of
    ``n`` rows (W=1), each until the controller has the frontier past it."""

    async def main() -> list[float]:
        shards = ShardCatalog()
        data = shards.shard("data")
        data.write(0, synthetic(0, n))
        index = DataflowDescription.index(1000, "data", 1001, (0,), 0)
        async with (
            open_replica(ReplicaConfig(), shards=shards) as replica,
            open_controller(replica) as controller,
        ):
            for command in (
                CreateInstance(),
                InitializationComplete(),
                CreateDataflow(index),
                Schedule(1001),
            ):
                await controller.send(command)
            await controller.await_frontier(1001, 1)
            times: list[float] = []
            for write in range(writes):
                rows = synthetic(n + write * k, k)
                start = time.perf_counter()
                data.write(write + 1, rows)
                await controller.await_frontier(1001, write + 2)
                times.append(time.perf_counter() - start)
            return times

    return trio.run(main)


def index_writes(n: int) -> tuple[int, float]:
    times = write_times(n)
    return len(times) * WRITE_K, sum(times)


def scripts_wall_time() -> tuple[int, float] | None:
    """Every real driver script on the five topologies: (runs, seconds), or
    ``None`` when ``../shared/external/driver-scripts`` is not there."""
    from replica.driver.lang._spec import read_spec
    from replica.driver.run._runner import Topology, run_spec

    if not SCRIPTS.is_dir():
        return None
    topologies = [
        Topology(1, 1, interactive=False),
        Topology(2, 2, interactive=False),
        Topology(1, 1),
        Topology(1, 2),
        Topology(2, 2),
    ]
    specs = [read_spec(path) for path in sorted(SCRIPTS.glob("*.spec"))]
    start = time.perf_counter()
    runs = 0
    for spec in specs:
        for topology in topologies:
            run = run_spec(spec, topology, seed=1, trace=None)
            assert run.passed, f"{spec.path} failed on {topology}"
            runs += 1
    return runs, time.perf_counter() - start


def dataflow_benchmarks() -> list[object]:
    from baseline import Bench  # registered by baseline.py before it loads this module

    rows = [Bench(f"dict of lists N={ROWS_N}", dict_of_lists, ROWS_N, ROWS_N // 10, "row")]
    rows += [
        Bench(f"index hydration W={w} N={ROWS_N}", make_hydration(w), ROWS_N, ROWS_N // 10, "row")
        for w in (1, 2)
    ]
    rows.append(
        Bench(f"index writes k={WRITE_K} N={ROWS_N}", index_writes, ROWS_N, ROWS_N // 10, "row")
    )
    return rows


BENCHMARKS = dataflow_benchmarks
