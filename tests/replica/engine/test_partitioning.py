"""Partitioning of rows over workers: a stable hash of the key columns, the
same in every process whatever Python's hash seed."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from replica import (
    partition_of,
)

PINNED = "[0, 1, 3, 0, 2, 3, 0, 2] [3, 3, 1, 3, 3, 3]"


PARTITIONS = (
    "from replica import partition_of; "
    "print([partition_of((i, 'x'), (0,), 4) for i in range(8)], "
    "[partition_of(('k%d' % i, 1), (0,), 4) for i in range(6)])"
)


def test_partitioning_is_a_stable_hash_of_the_key_columns() -> None:
    assert partition_of((1, "a"), (1,), 4) == partition_of((2, "a"), (1,), 4)
    assert partition_of((1,), (3,), 4) == partition_of((2,), (3,), 4)  # missing key column


@pytest.mark.parametrize("seed", ["0", "1", "4242"])
def test_partitions_are_the_same_whatever_the_hash_seed(seed: str) -> None:
    # Pinned values: these must not change between runs or processes
    # (Python salts the hash of strings; the partitioning must not depend on it).
    result = subprocess.run(
        [sys.executable, "-c", PARTITIONS],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONHASHSEED": seed},
    )
    assert result.stdout.strip() == PINNED
