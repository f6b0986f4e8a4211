"""examples/work_queue_processes.py: a coordinator in one OS process, workers
in another, connected as nodes over loopback TCP; real clock, bounded time."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "work_queue_processes.py"

PRIMES = {
    10_000: 1229,
    15_000: 1754,
    20_000: 2262,
    25_000: 2762,
    30_000: 3245,
    35_000: 3732,
    40_000: 4203,
    45_000: 4675,
    50_000: 5133,
}


def test_the_work_queue_spans_two_processes_and_sees_the_second_one_end() -> None:
    result = subprocess.run(
        [sys.executable, str(EXAMPLE)], capture_output=True, text=True, check=False, timeout=90
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    # The two processes print side by side: what each says, and the order
    # within the coordinator's own story.
    assert lines[0] == "[queue] node 'queue' listening on 127.0.0.1 (loopback)"
    assert "[workers] connected to node 'queue', handshake done" in lines
    assert "[queue] all 9 jobs done:" in lines
    for limit, primes in PRIMES.items():
        assert f"[queue]   primes below {limit}: {primes}" in lines
    for index in (1, 2, 3):
        assert f"[queue] Down from worker-{index}@workers: normal" in lines
    assert "[workers] the queue is empty: the workers' process ends" in lines
    assert lines[-3:] == [
        "[queue] Down from keeper@workers: node 'workers' down",
        "[queue] the workers' process exited with status 0",
        "[queue] done",
    ]


def test_a_bad_role_is_refused() -> None:
    result = subprocess.run(
        [sys.executable, str(EXAMPLE), "nonsense"],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert result.returncode == 2
    assert "usage" in result.stderr
