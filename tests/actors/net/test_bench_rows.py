"""The network benchmark rows still run (at their smallest), beside the baseline."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from ...paths import BASELINE, ROOT


@pytest.mark.skipif(not BASELINE.is_file(), reason="../shared/bench/baseline.py is not here")
def test_the_net_rows_run_beside_the_baseline(tmp_path: Path) -> None:
    result = subprocess.run(
        [
            sys.executable,
            "bench/run.py",
            "--quick",
            "--repeats",
            "1",
            "--only",
            "net|tcp",
            "-q",
            "--json",
            str(tmp_path / "net.json"),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr
    rows = [line.split("  ")[0] for line in result.stdout.splitlines()]
    for row in (
        "net ask (loopback tcp)",
        "tcp ping-pong raw",
        "tcp ping-pong 4 hops",
        "net tell (loopback tcp)",
        "tcp frames raw",
        "tcp frames raw batched",
    ):
        assert row in rows
