"""The procs benchmark rows still run (at their smallest), beside the baseline."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
BASELINE = ROOT.parent / "shared" / "bench" / "baseline.py"


@pytest.mark.skipif(not BASELINE.is_file(), reason="../shared/bench/baseline.py is not here")
def test_the_procs_rows_run_beside_the_baseline(tmp_path: Path) -> None:
    result = subprocess.run(
        [
            *(sys.executable, "bench/run.py", "--quick", "--repeats", "1"),
            *("--only", "procs", "-q", "--json", str(tmp_path / "procs.json")),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr
    rows = [line.split("  ")[0] for line in result.stdout.splitlines()]
    assert "procs command channel P=1 W=1" in rows
    assert "procs command channel P=2 W=1" in rows
