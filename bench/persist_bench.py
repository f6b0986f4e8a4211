"""Benchmarks of durable shards (``replica.storage.persist``), as rows beside
``../shared/bench/baseline.py``.

Loaded by the baseline with ``--extra bench/persist_bench.py`` (``bench/run.py``
does that). Each row appends N batches of 1,000 rows (``(i, "row i", bool)``)
to one shard by compare-and-append, batch k covering ``[k, k + 1)``; one op is
one append (ops/s is appends/s; times 1,000 for rows/s). The catalog is
opened and the batches built untimed; only the appends are timed.

* ``persist append 1000 rows memory``: today's in-memory catalog.
* ``persist append 1000 rows sqlite``: a SQLite file in a temporary folder,
  WAL, ``synchronous=FULL`` (every append is one fsynced transaction).
* ``persist append 1000 rows postgresql``: a throwaway local cluster
  (``replica.storage.persist.testing``, fsync on, a Unix socket), or the server of
  ``$TRIO_RECONCILE_POSTGRES_URL``, on a fresh database. The row is left out
  when neither is available.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import time
from collections.abc import Callable, Iterator
from typing import Any

from replica import ShardCatalog, Update
from replica.storage.persist import open_catalog
from replica.storage.persist.testing import (
    PostgresUnavailableError,
    create_database,
    find_binaries,
    temporary_postgres,
)

ROWS = 1_000
MEMORY_N = 2_000
DURABLE_N = 200
QUICK = 10
ENV_URL = "TRIO_RECONCILE_POSTGRES_URL"

BenchFn = Callable[[int], tuple[int, float]]


def batches(n: int) -> list[list[Update]]:
    return [[((k * ROWS + i, f"row {i}", i % 7 == 0), k, 1) for i in range(ROWS)] for k in range(n)]


def appends(catalog: ShardCatalog, n: int) -> float:
    """Time ``n`` appends of 1,000 rows to a fresh shard of ``catalog``."""
    prepared = batches(n)
    shard = catalog.shard("bench")
    t0 = time.perf_counter()
    for k, batch in enumerate(prepared):
        shard.append(batch, k, k + 1)
    return time.perf_counter() - t0


def memory_appends(n: int) -> tuple[int, float]:
    return n, appends(ShardCatalog(), n)


def sqlite_appends(n: int) -> tuple[int, float]:
    with (
        tempfile.TemporaryDirectory() as folder,
        open_catalog(f"sqlite:{os.path.join(folder, 'shards.db')}") as catalog,
    ):
        return n, appends(catalog, n)


@contextlib.contextmanager
def postgres_database() -> Iterator[str]:
    given = os.environ.get(ENV_URL)
    if given:
        yield create_database(given)
        return
    with temporary_postgres(fsync=True) as server:
        yield create_database(server)


def postgres_appends(n: int) -> tuple[int, float]:
    with postgres_database() as url, open_catalog(url) as catalog:
        return n, appends(catalog, n)


def postgres_available() -> bool:
    return bool(os.environ.get(ENV_URL)) or find_binaries() is not None


def persist_benchmarks() -> list[Any]:
    from baseline import Bench

    rows = [
        Bench(
            "persist append 1000 rows memory", memory_appends, MEMORY_N, MEMORY_N // QUICK, "append"
        ),
        Bench(
            "persist append 1000 rows sqlite",
            sqlite_appends,
            DURABLE_N,
            DURABLE_N // QUICK,
            "append",
        ),
    ]
    if postgres_available():
        rows.append(
            Bench(
                "persist append 1000 rows postgresql",
                postgres_appends,
                DURABLE_N,
                DURABLE_N // QUICK,
                "append",
            )
        )
    return rows


def __getattr__(name: str) -> Any:
    """``BENCHMARKS``, made when the baseline asks for it."""
    if name == "BENCHMARKS":
        return persist_benchmarks()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


if __name__ == "__main__":
    for label, fn, n in (
        ("memory", memory_appends, MEMORY_N),
        ("sqlite", sqlite_appends, DURABLE_N),
        ("postgresql", postgres_appends, DURABLE_N),
    ):
        try:
            ops, seconds = fn(n)
        except PostgresUnavailableError as error:
            print(f"{label:>10}: skipped ({error})")
            continue
        print(
            f"{label:>10}: {ops / seconds:10,.0f} appends/s of {ROWS:,} rows "
            f"({ops * ROWS / seconds:,.0f} rows/s)"
        )
