"""The persist benchmark rows run (at their smallest), beside the baseline."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from ....paths import BASELINE, ROOT


@pytest.mark.skipif(not BASELINE.is_file(), reason="../shared/bench/baseline.py is not here")
def test_the_persist_rows_run_beside_the_baseline(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "bench/run.py", "--quick", "--repeats", "1", "--only", "persist",
         "-q", "--json", str(tmp_path / "persist.json")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    rows = [line.split("  ")[0] for line in result.stdout.splitlines()]
    assert "persist append 1000 rows memory" in rows
    assert "persist append 1000 rows sqlite" in rows
