"""examples/fan_out_processes.py: a frontend hands its callers' replies to
workers in a child node process, which answer the callers directly; the
output is pinned line for line."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "fan_out_processes.py"

EXPECTED = [
    "[front] on node 'workers': worker-1@workers, worker-2@workers, worker-3@workers",
    "[front] 1 squared is 1, by worker-2",
    "[front] 2 squared is 4, by worker-3",
    "[front] 3 squared is 9, by worker-1",
    "[front] 4 squared is 16, by worker-2",
    "[front] 5 squared is 25, by worker-3",
    "[front] 6 squared is 36, by worker-1",
    "[front] 7 squared is 49, by worker-2",
    "[front] 8 squared is 64, by worker-3",
    "[front] the frontend took 8 requests; the workers answered the callers",
    "[front] done: the workers' process ended with the block",
]


def test_the_output_is_pinned() -> None:
    result = subprocess.run(
        [sys.executable, str(EXAMPLE)], capture_output=True, text=True, check=False, timeout=90
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == EXPECTED
    assert result.stderr == ""


def test_an_argument_is_refused() -> None:
    result = subprocess.run(
        [sys.executable, str(EXAMPLE), "nonsense"],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert result.returncode == 2
    assert "usage" in result.stderr
