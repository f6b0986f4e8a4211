"""What the SQL stores share: the schema's version and tables, and how an
unsigned 64-bit time fits a signed ``BIGINT``.

Tables (the same in SQLite and PostgreSQL)::

    persist_meta    (key TEXT PRIMARY KEY, value TEXT)       -- schema_version
    persist_shards  (name TEXT PRIMARY KEY, upper_ts BIGINT, batches BIGINT)
    persist_batches (shard TEXT, seq BIGINT, lower_ts BIGINT, upper_ts BIGINT,
                     data BLOB/BYTEA, PRIMARY KEY (shard, seq))

A batch's ``seq`` is its position in its shard (0, 1, ...); ``batches`` is
how many the shard holds. Times are stored as ``time - 2**63`` so that the
whole unsigned range of times fits a signed 64-bit column, in order.
"""

from __future__ import annotations

SCHEMA_VERSION = 1
TABLES = ("persist_meta", "persist_shards", "persist_batches")
_OFFSET = 2**63


def to_db(time: int) -> int:
    """A time as stored."""
    return time - _OFFSET


def from_db(stored: int) -> int:
    """A stored time as the time it is."""
    return stored + _OFFSET


# The shards as persist_shards holds them, and a row (name, NULL, NULL) for
# each shard of which persist_batches holds batches but persist_shards no row.
SHARDS_QUERY = (
    "SELECT name, upper_ts, batches FROM persist_shards UNION ALL "
    "SELECT DISTINCT b.shard, CAST(NULL AS BIGINT), CAST(NULL AS BIGINT) FROM persist_batches b "
    "WHERE NOT EXISTS (SELECT 1 FROM persist_shards s WHERE s.name = b.shard)"
)
