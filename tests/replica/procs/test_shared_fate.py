"""Shared fate on OS processes: a worker's panic ends its ``serve`` process
with a non-zero status and the panic in its log, and ``run --spawn`` ends as
for a lost process (exit 1, named, no traceback, no hang)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from ..runtime.test_shared_fate import SHARED, SPEC
from .helpers import TIME_LIMIT


@pytest.mark.parametrize("processes", [1, 2])
def test_a_panic_ends_the_serve_process_and_the_run(tmp_path: Path, processes: int) -> None:
    spec = tmp_path / "late.spec"
    spec.write_text(SPEC)
    command = [sys.executable, "-m", "replica.driver", "run", str(spec), "--spawn"]
    command += ["--interactive", "--processes", str(processes), "--workers", "1"]
    done = subprocess.run(command, capture_output=True, text=True, check=False, timeout=TIME_LIMIT)
    assert done.returncode == 1, done.stdout + done.stderr
    # The process whose worker panicked first says so and exits 1; another
    # may panic too, or end first for the loss of its peer (shared fate).
    said = [
        p
        for p in range(processes)
        if (
            f"trio-reconcile: error: serve --process {p}: replica process {p} aborted: "
            f"a worker panicked: {SHARED}\n"
        )
        in done.stderr
    ]
    assert said, done.stderr
    assert "trio-reconcile: error: lost the connection to replica process" in done.stderr
    assert "Traceback" not in done.stdout + done.stderr
