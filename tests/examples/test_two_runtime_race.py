from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "two_runtime_race.py"


@pytest.mark.parametrize(("workers", "processes"), [("1", "1"), ("2", "2")])
def test_the_example_shows_the_race_and_the_fix(workers: str, processes: str) -> None:
    result = subprocess.run(
        [sys.executable, str(EXAMPLE), "--workers", workers, "--processes", processes],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "barrier off: read timed out after 10s (virtual t=10s)"
    assert "barrier on : read answered 3 rows at virtual t=0s" in lines
    assert lines[-1] == "the race without the barrier, and its fix with it: shown"
    assert sum(line.endswith("(frozen)") for line in lines) == int(workers) * int(processes)
