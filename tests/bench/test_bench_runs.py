"""The benchmarks still run (at their smallest), beside the shared baseline."""

from __future__ import annotations

import importlib.util
import json
import re
import signal
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest
import trio

from actors.testing import explore

from ..paths import run_python

ROOT = Path(__file__).resolve().parents[2]
BASELINE = ROOT.parent / "shared" / "bench" / "baseline.py"


@pytest.mark.skipif(not BASELINE.is_file(), reason="../shared/bench/baseline.py is not here")
def test_the_actor_rows_run_beside_the_baseline(tmp_path: Path) -> None:
    # Its results go to tmp_path: bench/results/ holds the last real run's.
    out = str(tmp_path / "latest.json")
    result = subprocess.run(
        [
            sys.executable,
            "bench/run.py",
            "--quick",
            "--repeats",
            "1",
            "--only",
            "actors",
            "-q",
            "--json",
            out,
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    rows = [line.split("  ")[0] for line in result.stdout.splitlines()]
    assert "actors sequencer K=8" in rows
    assert "actors ask" in rows
    assert "trio ping-pong" in rows
    assert "idle actor memory:" in result.stdout


def test_the_runner_exits_2_without_the_baseline(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "bench/run.py", "--quick"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
        env={"TRIO_RECONCILE_BASELINE": str(tmp_path / "missing.py"), "PATH": ""},
    )
    assert result.returncode == 2
    assert "baseline not found" in result.stderr


@pytest.mark.skipif(not hasattr(signal, "SIGSTOP"), reason="needs SIGSTOP (POSIX)")
def test_the_failure_detector_figures_run(tmp_path: Path) -> None:
    # At its smallest: short windows, a few connections, one freeze found
    # within a peer timeout of 1 s.
    out = tmp_path / "idle.json"
    result = subprocess.run(
        [
            sys.executable,
            "bench/net_idle_bench.py",
            "--window",
            "0.3",
            "--rounds",
            "1",
            "--connections",
            "3",
            "--freezes",
            "1",
            "--freeze-detector",
            "0.2,1",
            "--json",
            str(out),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert "idle N=3 detector on" in result.stdout
    doc = json.loads(out.read_text())
    assert [s["down"] for s in doc["idle"]["samples"]] == [0, 0]
    (freeze,) = doc["freeze"]
    assert freeze["node_down"]
    assert 0.7 <= freeze["down_s"] <= 5.0, freeze


def test_the_ablation_leaves_out_one_thing_at_a_time() -> None:
    # At its smallest: the recreate scenario at P=1 W=1, no reordering,
    # one delay (88 schedules a search).
    result = run_python(
        "bench/explore_bench.py", "--ablation", "--bound", "0", "--delays", "1", "--small"
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[1] == "  all recorded: 88 runs, 48 traces", result.stdout
    left_out = [line for line in lines if line.startswith("  without ")]
    assert len(left_out) == 14, result.stdout
    # Each search drops what one thing recorded: no more traces than all.
    for line in left_out:
        traces = int(line.rsplit(", ", 1)[1].split()[0])
        assert traces <= 48, line


def _schedules(*args: str) -> int:
    result = run_python(
        "bench/explore_bench.py", "--full-count", "--small", "--bound", "1", "--delays", "1", *args
    )
    assert result.returncode == 0, result.stderr
    (line,) = result.stdout.splitlines()
    found = re.search(r"the full enumeration runs (at least )?(\d+) schedules", line)
    assert found is not None, line
    return int(found[2])


def test_the_full_counts_lower_bound_reaches_the_count_with_every_schedule_sampled() -> None:
    # The recreate scenario at P=1 W=1, one reordering, one delay: its full
    # enumeration runs 14,411 schedules (docs/protocol.md).
    exact = _schedules()
    assert exact == 14_411
    below = _schedules("--upto", "1")  # the levels before the last alone
    assert below < exact
    assert _schedules("--sample", "10000000") == exact
    few = _schedules("--sample", "3")
    assert below < few < exact
    assert few < _schedules("--sample", "30") < exact


def _explore_bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "explore_bench", ROOT / "bench" / "explore_bench.py"
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


async def _two_workers_and_a_waiter() -> None:
    # Small enough to enumerate: two workers of three steps, one of which
    # wakes a third task.
    woken = trio.Event()

    async def worker(index: int) -> None:
        for step in range(3):
            if index == 0 and step == 1:
                woken.set()
            await trio.lowlevel.checkpoint()

    async def waiter() -> None:
        await woken.wait()
        await trio.lowlevel.checkpoint()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(worker, 0)
        nursery.start_soon(worker, 1)
        nursery.start_soon(waiter)


@pytest.mark.parametrize(("bound", "delays"), [(1, 1), (0, 2), (1, 2), (2, 1)])
def test_the_sampled_count_is_the_enumerations_with_every_schedule_sampled(
    bound: int, delays: int
) -> None:
    # Against the enumeration itself (reduction=False), three levels deep
    # where bound + delays is 3: the sampled schedules' parents are then
    # the runs of level 1, not the default run alone.
    bench = _explore_bench()
    full = explore(
        _two_workers_and_a_waiter,
        strategy="dfs",
        bound=bound,
        delays=delays,
        reduction=False,
        budget=10**6,
    )
    assert full.complete
    assert full.runs > 100
    counted, sampled = bench.count_at_least(_two_workers_and_a_waiter, bound, delays, 10**9)
    assert counted == full.runs
    few, two = bench.count_at_least(_two_workers_and_a_waiter, bound, delays, 2)
    assert two == 2 < sampled
    assert few < full.runs


def test_a_sampled_count_of_one_level_is_refused() -> None:
    bench = _explore_bench()
    with pytest.raises(ValueError, match="bound \\+ delays >= 2"):
        bench.count_at_least(_two_workers_and_a_waiter, 0, 1, 10)
