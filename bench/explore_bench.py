"""Benchmarks and figures of schedule exploration (``actors.testing.explore``).

Rows beside ``../shared/bench/baseline.py`` (``bench/run.py`` loads this module
with ``--extra``):

* ``spec seeded runs recreate W=1``: n plain seeded runs (``run_spec``, seeds
  1..n) of the bundled ``two_runtime_recreate_index.spec`` on one process of
  one worker, both runtimes. One op is one run.
* ``explore dfs recreate W=1``: ``explore`` of the same spec, ``dfs`` with
  bound 1, n runs (its 106 schedules, then again). One op is one run, so the
  ratio of the two rows is what choosing every batch's order costs a run.

Figures, printed by ``.venv/bin/python bench/explore_bench.py [--proofs]``:

* runs until the race is found without the barrier, on the bundled
  ``two_runtime_recreate_race.spec`` (nothing held): ``pct`` and ``random``
  for exploration seeds 0..19 (median), and ``dfs`` (deterministic);
* with ``--proofs``, the exhaustive runs: ``dfs`` on the recreate and
  divergent scenarios, P, W in {1, 2}, with the barrier: runs, choice points
  and time until complete.
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from actors.testing import StrategyName, explore
from replica.driver.lang._spec import Spec, read_spec
from replica.driver.run._bundled import bundled_spec
from replica.driver.run._runner import Topology, _run, run_spec

RUNS = 200
RECREATE = "two_runtime_recreate_index.spec"
RACE = "two_runtime_recreate_race.spec"
PROOF_SPECS = (
    RECREATE,
    RACE,
    "divergent_compaction_interactive_only.spec",
    "divergent_compaction_maintenance_only.spec",
    "divergent_drop_interactive_only.spec",
    "divergent_drop_maintenance_only.spec",
    "divergent_create_interactive_only.spec",
    "divergent_create_maintenance_only.spec",
    "reconnects.spec",
)


def bundled(name: str) -> Spec:
    with bundled_spec(name) as path:
        return read_spec(path, name)


class SpecDiffers(Exception):
    pass


def spec_main(spec: Spec, topology: Topology) -> Callable[[], Awaitable[None]]:
    async def main() -> None:
        run = await _run(spec, topology, None)
        if not run.passed:
            raise SpecDiffers(run.violations)

    return main


def seeded_runs(n: int) -> tuple[int, float]:
    spec = bundled(RECREATE)
    start = time.perf_counter()
    for seed in range(1, n + 1):
        assert run_spec(spec, Topology(1, 1), seed=seed, trace=None).passed
    return n, time.perf_counter() - start


def explored_runs(n: int) -> tuple[int, float]:
    main = spec_main(bundled(RECREATE), Topology(1, 1))
    start = time.perf_counter()
    done = 0
    while done < n:
        exploration = explore(main, strategy="dfs", bound=1, budget=n - done)
        done += exploration.runs
    return done, time.perf_counter() - start


def explore_benchmarks() -> list[object]:
    from baseline import Bench  # registered by baseline.py before it loads this module

    return [
        Bench("spec seeded runs recreate W=1", seeded_runs, RUNS, RUNS // 10, "run"),
        Bench("explore dfs recreate W=1", explored_runs, RUNS, RUNS // 10, "run"),
    ]


BENCHMARKS = explore_benchmarks


def runs_until_found(topology: Topology) -> None:
    main = spec_main(bundled(RACE), topology)
    strategy: StrategyName
    for strategy in ("pct", "random"):
        runs = []
        for seed in range(20):
            found = explore(
                main,
                strategy=strategy,
                budget=1000,
                seed=seed,
                minimise=False,
                raise_on_failure=False,
            )
            runs.append(found.runs if found.failure is not None else None)
        shown = ", ".join("-" if r is None else str(r) for r in runs)
        median = statistics.median(10**9 if r is None else r for r in runs)
        print(f"  {strategy:6} ({topology}): seeds 0..19: {shown}; median {median:g}")
    dfs = explore(
        main,
        strategy="dfs",
        bound=2,
        budget=100_000,
        minimise=False,
        raise_on_failure=False,
    )
    where = f"at run {dfs.runs}" if dfs.failure is not None else f"not in {dfs.runs} runs"
    print(f"  dfs    ({topology}): bound 2, found {where}")


def proofs(bound: int) -> None:
    for name in PROOF_SPECS:
        spec = bundled(name)
        for processes, workers in ((1, 1), (1, 2), (2, 1), (2, 2)):
            topology = Topology(processes, workers)
            start = time.perf_counter()
            exploration = explore(
                spec_main(spec, topology),
                strategy="dfs",
                bound=bound,
                budget=10**9,
                raise_on_failure=False,
            )
            print(
                f"  {name} ({topology}): {exploration.summary()} "
                f"[{time.perf_counter() - start:.1f}s]",
                flush=True,
            )


if __name__ == "__main__":
    print("runs until the race is found without the barrier (two_runtime_recreate_race.spec):")
    for topology in (Topology(1, 1, barrier=False), Topology(2, 2, barrier=False)):
        runs_until_found(topology)
    if "--proofs" in sys.argv:
        bound = int(sys.argv[sys.argv.index("--proofs") + 1]) if sys.argv[-1] != "--proofs" else 1
        print(f"dfs bound {bound} with the barrier, until complete:")
        proofs(bound)
