"""Benchmarks and figures of read holds and physical compaction (issue 23).

Rows beside ``../shared/bench/baseline.py`` (``bench/run.py`` loads this module
with ``--extra``):

* ``compute write to controller frontier W=2 compaction on`` / ``... off``: as
  ``compute write to controller frontier W=2 two runtimes`` (both runtimes,
  one process of 2 workers, one scheduled index; each op writes one row at
  the next time and waits until the controller has the frontier past it),
  and after each write the controller allows compaction of the index to the
  new time, so compaction follows the frontier. The two rows send the same
  commands; *off* replaces :meth:`Arrangement.maintain` by one that rewrites
  nothing (the logical ``since`` still moves), so their ratio is what
  physically compacting costs a write.
* ``explore dfs holds counterexample W=1``: ``explore`` of the bundled
  ``holds_counterexample.spec``, ``dfs`` bound 1, n runs (its 58 schedules,
  then again), with publisher holds. One op is one run.

Figures, printed by ``.venv/bin/python bench/holds_bench.py`` (and by
``bench/run.py`` after the table, into the JSON under ``churn_memory``):

* the memory of an index under churn: 1,000 keys, 100 updates a time (50
  keys change value: a retraction and an insertion each) over 1,000 times,
  the controller's hold following the frontier; the arrangement's retained
  updates against its distinct contents, and its bytes (tracemalloc) beside
  a dict of the same final contents; the same without compaction.
"""

from __future__ import annotations

import contextlib
import gc
import sys
import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import trio

from actors.testing import explore
from replica import (
    AllowCompaction,
    CreateDataflow,
    CreateInstance,
    DataflowDescription,
    Frontier,
    InitializationComplete,
    ReplicaConfig,
    Schedule,
    ShardCatalog,
    open_controller,
    open_replica,
)
from replica.driver.lang._spec import read_spec
from replica.driver.run._bundled import bundled_spec
from replica.driver.run._runner import Topology, _run
from replica.engine._arrangement import Arrangement
from replica.model._rows import Update

KEYS = 1_000
PER_TIME = 100
TIMES = 1_000
COUNTEREXAMPLE = "holds_counterexample.spec"


@contextlib.contextmanager
def compaction(on: bool) -> Iterator[None]:
    """Physical compaction as it is (``on``), or a maintain that rewrites nothing."""
    if on:
        yield
        return
    original = Arrangement.maintain
    Arrangement.maintain = lambda self, work=0: False  # type: ignore[method-assign]
    try:
        yield
    finally:
        Arrangement.maintain = original  # type: ignore[method-assign]


def make_write_to_controller(*, on: bool) -> Any:
    def bench(n: int) -> tuple[int, float]:
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
                for command in (CreateInstance(), CreateDataflow(index), Schedule(1001)):
                    await controller.send(command)
                await controller.send(InitializationComplete())
                await controller.await_frontier(1001, 1)
                start = time.perf_counter()
                for ts in range(1, n + 1):
                    data.write(ts, [(ts % 100, str(ts))])
                    await controller.await_frontier(1001, ts + 1)
                    await controller.send(AllowCompaction(1001, Frontier.at(ts)))
                return time.perf_counter() - start

        with compaction(on):
            return n, trio.run(main)

    return bench


def explored_counterexample(n: int) -> tuple[int, float]:
    with bundled_spec(COUNTEREXAMPLE) as path:
        spec = read_spec(path, COUNTEREXAMPLE)

    async def main() -> None:
        run = await _run(spec, Topology(1, 1), None)
        assert run.passed, run.violations

    start = time.perf_counter()
    done = 0
    while done < n:
        done += explore(main, strategy="dfs", bound=1, budget=n - done).runs
    return done, time.perf_counter() - start


def churn(on: bool) -> dict[str, float]:
    """Churn one arrangement as an index export's operator would, the
    controller's hold following the upper; measure what it retains."""
    value = dict.fromkeys(range(KEYS), 0)
    tracemalloc.start()
    gc.collect()
    before = tracemalloc.take_snapshot()
    arrangement = Arrangement((0,))
    arrangement.update([((key, 0), 0, 1) for key in range(KEYS)], 1)
    hold = arrangement.hold(0)
    changes = PER_TIME // 2
    for time_ in range(1, TIMES):
        batch: list[Update] = []
        for step in range(changes):
            key = (time_ * changes + step) % KEYS
            batch.append(((key, value[key]), time_, -1))
            value[key] += 1
            batch.append(((key, value[key]), time_, 1))
        arrangement.update(batch, time_ + 1)
        hold.downgrade(time_)
        if on:
            while arrangement.maintain():
                pass
    gc.collect()
    after = tracemalloc.take_snapshot()
    arranged = sum(stat.size_diff for stat in after.compare_to(before, "filename"))
    # The same final contents, as a dict of rows to their counts (new rows).
    gc.collect()
    dict_before = tracemalloc.take_snapshot()
    contents = {(key, int(str(version))): 1 for key, version in value.items()}
    gc.collect()
    dict_after = tracemalloc.take_snapshot()
    tracemalloc.stop()
    dict_bytes = sum(stat.size_diff for stat in dict_after.compare_to(dict_before, "filename"))
    assert len(contents) == KEYS
    return {
        "updates_written": KEYS + (TIMES - 1) * PER_TIME,
        "distinct_contents": KEYS,
        "retained_updates": len(arrangement.log),
        "retained_over_distinct": len(arrangement.log) / KEYS,
        "arrangement_bytes": arranged,
        "dict_bytes": dict_bytes,
        "since": arrangement.since,
    }


def churn_memory() -> dict[str, dict[str, float]]:
    return {"compaction on": churn(True), "compaction off": churn(False)}


def print_churn(figures: dict[str, dict[str, float]]) -> None:
    for label, f in figures.items():
        print(
            f"index under churn ({label}): {f['updates_written']:,.0f} updates written, "
            f"{f['retained_updates']:,.0f} retained for {f['distinct_contents']:,.0f} distinct "
            f"({f['retained_over_distinct']:.2f}x); {f['arrangement_bytes']:,.0f} bytes "
            f"(tracemalloc), a dict of the final contents {f['dict_bytes']:,.0f} bytes"
        )


def holds_benchmarks() -> list[object]:
    from baseline import Bench  # registered by baseline.py before it loads this module

    return [
        Bench(
            "compute write to controller frontier W=2 compaction on",
            make_write_to_controller(on=True),
            3_000,
            300,
            "write",
        ),
        Bench(
            "compute write to controller frontier W=2 compaction off",
            make_write_to_controller(on=False),
            3_000,
            300,
            "write",
        ),
        Bench("explore dfs holds counterexample W=1", explored_counterexample, 200, 20, "run"),
    ]


BENCHMARKS = holds_benchmarks


if __name__ == "__main__":
    print_churn(churn_memory())
