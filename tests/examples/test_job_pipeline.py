"""examples/job_pipeline.py: a pool, retries with backoff, poison jobs, a drain."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "job_pipeline.py"

# On the mock clock the run is the same every time, virtual times included.
LOG = """\
t= 1.00  job 2 attempt 1 failed: retry in 0.5s
t= 1.00  job 1 done (attempt 1)
t= 2.00  job 3 done (attempt 1)
t= 2.00  job 4 attempt 1 failed: retry in 0.5s
t= 2.00  job 5 attempt 1 failed: retry in 0.5s
t= 3.00  job 6 done (attempt 1)
t= 3.00  drain: 3 jobs still running, taking no more
t= 3.00  job 2 attempt 2 failed: retry in 1s
t= 3.10  job 7 refused: draining
t= 3.50  job 5 done (attempt 2)
t= 4.00  job 4 attempt 2 failed: retry in 1s
t= 5.00  job 2 done (attempt 3)
t= 6.00  job 4 attempt 3 failed: retry in 2s
t= 9.00  job 4 is poison: set aside after 4 attempts
t= 9.00  drained; dead letters: job 4
t= 9.00  job 8 not accepted: actor 'dispatcher' is stopped
"""


def test_the_pipeline_retries_with_backoff_sets_poison_aside_and_drains() -> None:
    result = subprocess.run(
        [sys.executable, str(EXAMPLE)], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == LOG
