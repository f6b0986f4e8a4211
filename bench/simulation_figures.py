"""Figures of the simulation (issue: deterministic simulation), for the notes.

    .venv/bin/python bench/simulation_figures.py

Prints (1) examples per second of the property test that checks the replica
against the reference model (Hypothesis generating programs, each run in one
``trio.run`` on the mock clock, random topologies W = 1..4, P = 1..2), and
(2) with the barrier disabled, how many generated programs it takes to find
the frozen-read race, for 10 search seeds, and their median.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from hypothesis import given, settings
from hypothesis import strategies as st

from replica.driver.run._runner import Topology
from tests.simulation.programs import Program, programs, topologies
from tests.simulation.test_simulation import find_the_race, simulate

EXAMPLES = 200


def examples_per_second() -> float:
    ran = 0

    @settings(max_examples=EXAMPLES, deadline=None, database=None)
    @given(program=programs(), topology=topologies, seed=st.integers(0, 2**16))
    def check(program: Program, topology: Topology, seed: int) -> None:
        nonlocal ran
        ran += 1
        _, run = simulate(program, topology, seed)
        assert run.passed

    start = time.perf_counter()
    check()
    return ran / (time.perf_counter() - start)


def main() -> int:
    rate = examples_per_second()
    print(f"examples per second (barrier on, {EXAMPLES} examples): {rate:.1f}")
    counts = [find_the_race(seed)[1] for seed in range(10)]
    print(f"barrier off: examples until the race was found, seeds 0..9: {counts}")
    print(f"median: {statistics.median(counts)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
