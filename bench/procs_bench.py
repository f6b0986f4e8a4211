"""The command channel across real OS processes, as rows beside
``../shared/bench/baseline.py`` (``bench/run.py`` loads it with ``--extra``).

* ``procs command channel P=p W=1`` (p = 1, 2): a Solo replica of p
  ``trio-reconcile serve`` processes of one worker each, spawned on loopback
  (untimed, as is the shutdown). The controller (in this process) sends M
  ``CancelPeek`` commands of peeks nobody made (a no-op at a worker, and,
  unlike ``UpdateConfiguration``, sent to process 0 only, as every command
  but ``Hello`` and ``UpdateConfiguration`` is) to process 0, whose global
  worker 0
  adapter sequences them to its own worker and, over an ``actors.net`` link,
  to the other process's worker; then an index dataflow of a written shard,
  whose merged frontier reaches the controller only once every worker of
  every process applied everything before it. One op is one delivery (ops =
  M * p), timed from the first send to that frontier. The ratio P=2 / P=1 is
  the parallelism the second process buys (goal above 1.3 on 2 cores).

Run alone (``.venv/bin/python bench/procs_bench.py [M] [REPEATS]``) it prints
each row's deliveries/s and the ratio.
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import trio

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from replica import (  # noqa: E402 (the project root first, when run as a script)
    CancelPeek,
    CreateDataflow,
    CreateInstance,
    DataflowDescription,
    InitializationComplete,
    ReplicaConfig,
    Schedule,
    open_controller,
)
from replica.procs import open_cluster  # noqa: E402

COMMANDS_M = 100_000
PROCESS_COUNTS = (1, 2)

BenchFn = Callable[[int], tuple[int, float]]


def make_command_channel(processes: int) -> BenchFn:
    def bench(m: int) -> tuple[int, float]:
        async def main() -> float:
            config = ReplicaConfig(processes=processes, workers=1)
            async with open_cluster(config) as cluster, open_controller(cluster) as controller:
                cluster.shards.shard("bench").write(0, [(1, "row")])
                await controller.send(CreateInstance())
                await controller.send(InitializationComplete())
                await cluster.settle()
                index = DataflowDescription.index(1, "bench", 2, (0,), as_of=0)
                start = time.perf_counter()
                for uuid in range(m):
                    await controller.send(CancelPeek(uuid))
                await controller.send(CreateDataflow(index))
                await controller.send(Schedule(2))
                await controller.await_frontier(2, 1)
                return time.perf_counter() - start

        return m * processes, trio.run(main)

    return bench


def procs_benchmarks() -> list[object]:
    from baseline import Bench  # registered by baseline.py before it loads this module

    return [
        Bench(
            f"procs command channel P={p} W=1",
            make_command_channel(p),
            COMMANDS_M,
            COMMANDS_M // 10,
            "delivery",
        )
        for p in PROCESS_COUNTS
    ]


BENCHMARKS = procs_benchmarks


def main(argv: list[str]) -> int:
    m = int(argv[0]) if argv else COMMANDS_M
    repeats = int(argv[1]) if len(argv) > 1 else 3
    rates: dict[int, list[float]] = {p: [] for p in PROCESS_COUNTS}
    for _ in range(repeats):
        for p in PROCESS_COUNTS:  # interleaved, as the baseline's repeats are
            ops, seconds = make_command_channel(p)(m)
            rates[p].append(ops / seconds)
    for p, found in rates.items():
        print(
            f"procs command channel P={p} W=1: {statistics.median(found):,.0f} deliveries/s "
            f"(median of {repeats}; {', '.join(f'{r:,.0f}' for r in found)})"
        )
    ratios = [two / one for one, two in zip(rates[1], rates[2], strict=True)]
    print(
        f"P=2 / P=1: {statistics.median(ratios):.2f} "
        f"(per repeat: {', '.join(f'{r:.2f}' for r in ratios)})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
