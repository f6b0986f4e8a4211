"""examples/kv_cache_processes.py: a cache sharded across two node processes,
one killed (SIGKILL) and started again as a new incarnation; the output,
the parent's alone, is pinned line for line."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "kv_cache_processes.py"

EXPECTED = [
    "[cache] started shards-0, shards-1",
    "[cache] found 2 shards: shard-0@shards-0, shard-1@shards-1",
    "[cache] apple -> APPLE (shard 0)",
    "[cache] banana -> BANANA (shard 1)",
    "[cache] cherry -> CHERRY (shard 0)",
    "[cache] damson -> DAMSON (shard 0)",
    "[cache] elder -> ELDER (shard 1)",
    "[cache] fig -> FIG (shard 1)",
    "[cache] killed shards-1 (SIGKILL)",
    "[cache] Down from shard-1@shards-1: node 'shards-1' down",
    "[cache] an ask of the dead shard: ActorStoppedError",
    "[cache] shards-1 exited with status -9",
    "[cache] started shards-1 again: shard-0@shards-0, shard-1@shards-1",
    "[cache] same name, new incarnation: True and True",
    "[cache] apple -> APPLE (shard 0)",
    "[cache] banana -> None (shard 1)",
    "[cache] cherry -> CHERRY (shard 0)",
    "[cache] damson -> DAMSON (shard 0)",
    "[cache] elder -> None (shard 1)",
    "[cache] fig -> None (shard 1)",
    "[cache] after putting shard 1's keys again: APPLE BANANA CHERRY DAMSON ELDER FIG",
    "[cache] done: both node processes ended with the block",
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
