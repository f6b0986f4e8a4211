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
    # Every process whose worker panicked logs it; the first to end says so
    # as its exit's error (exit 1); another may be stopped first by the run,
    # which ends once it lost a process (shared fate).
    logged = [
        p
        for p in range(processes)
        if f"ERROR replica: replica process {p} aborted: a worker panicked: {SHARED}\n"
        in done.stderr
    ]
    assert logged, done.stderr
    # The run ends on the first loss it hears of: the driver's own connection
    # to the aborted process, or (with two) the other process's report that
    # it lost that one and restarted, whichever comes first on a busy machine.
    assert (
        "trio-reconcile: error: lost the connection to replica process" in done.stderr
        or "lost its connection to replica process 0 and restarted" in done.stderr
    ), done.stderr
    assert "Traceback" not in done.stdout + done.stderr
