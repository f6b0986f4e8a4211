"""Shards in a SQLite file (``sqlite:PATH``).

The file is in WAL mode with ``synchronous=FULL``: a change is on disk when
its transaction returns, and survives a kill -9 of the process or the loss
of power. Each change is one ``BEGIN IMMEDIATE`` transaction, which takes the
file's write lock before it reads the stored upper: two catalogs on one file
(in one process or two) are serialized, and of two appends at the same lower
exactly one is stored. A writer waits up to ``BUSY_TIMEOUT`` seconds for the
lock.

SQLite cannot tell another process that the file changed: a catalog learns of
other writers' changes only when told (:meth:`DurableShardCatalog.refresh`).
With several processes, one owner process (the shard host) opens the file
and serves the shards to the others, pushing their changes.
"""

from __future__ import annotations

import sqlite3
import warnings

import attrs
import trio

from .._errors import UpperMismatchError
from ._errors import (
    NotificationsUnsupportedError,
    SchemaVersionError,
    StorageCorruptError,
    StorageOpenError,
    StorageUnavailableError,
)
from ._sql import SCHEMA_VERSION, TABLES, from_db, to_db
from ._storage import Changed, ShardState

BUSY_TIMEOUT = 30.0

# Statement by statement, inside the caller's transaction (executescript
# would commit it first); then the schema version.
_SCHEMA = (
    "CREATE TABLE persist_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE persist_shards ("
    " name TEXT PRIMARY KEY, upper_ts INTEGER NOT NULL, batches INTEGER NOT NULL)",
    "CREATE TABLE persist_batches ("
    " shard TEXT NOT NULL, seq INTEGER NOT NULL,"
    " lower_ts INTEGER NOT NULL, upper_ts INTEGER NOT NULL, data BLOB NOT NULL,"
    " PRIMARY KEY (shard, seq))",
)


@attrs.define(eq=False)
class SqliteStorage:
    """A shard store in one SQLite file; see the module's docstring for its
    guarantees. Use in one thread (the Trio thread)."""

    path: str
    _db: sqlite3.Connection | None

    @classmethod
    def open(cls, path: str) -> SqliteStorage:
        """Open (or create) the store in the file ``path``. Raises
        :class:`StorageOpenError` if it cannot be opened,
        :class:`StorageCorruptError` if it is not a SQLite file or holds
        other tables, :class:`SchemaVersionError` if another schema version
        wrote it."""
        try:
            db = sqlite3.connect(path, timeout=BUSY_TIMEOUT, isolation_level=None)
        except sqlite3.Error as error:
            raise StorageOpenError(f"sqlite file {path!r} cannot be opened: {error}") from None
        try:
            _prepare(db, path)
        except BaseException:
            db.close()
            raise
        return cls(path, db)

    @property
    def url(self) -> str:
        return f"sqlite:{self.path}"

    def uppers(self) -> dict[str, ShardState]:
        rows = self._run("SELECT name, upper_ts, batches FROM persist_shards", ()).fetchall()
        return {name: ShardState(from_db(upper), batches) for name, upper, batches in rows}

    def read(self, name: str, since: int) -> ShardState:
        db = self._connection()
        try:
            db.execute("BEGIN")
            found = db.execute(
                "SELECT upper_ts, batches FROM persist_shards WHERE name = ?", (name,)
            ).fetchone()
            data = db.execute(
                "SELECT data FROM persist_batches WHERE shard = ? AND seq >= ? ORDER BY seq",
                (name, since),
            ).fetchall()
            db.execute("COMMIT")
        except sqlite3.Error as error:
            raise self._failed(db, error) from None
        if found is None:
            return ShardState(0, 0)
        return ShardState(from_db(found[0]), found[1], tuple(blob for (blob,) in data))

    def append(self, name: str, data: bytes, lower: int, upper: int) -> int:
        db = self._connection()
        try:
            db.execute("BEGIN IMMEDIATE")
            stored, seq = self._locked_state(db, name)
            if stored != lower:
                db.execute("ROLLBACK")
                raise UpperMismatchError(
                    f"append to shard {name!r} expected upper {lower}, found {stored}"
                )
            db.execute(
                "INSERT INTO persist_batches VALUES (?, ?, ?, ?, ?)",
                (name, seq, to_db(lower), to_db(upper), data),
            )
            self._store_upper(db, name, upper, seq + 1)
            db.execute("COMMIT")
        except sqlite3.Error as error:
            raise self._failed(db, error) from None
        return seq

    def advance(self, name: str, upper: int) -> ShardState:
        db = self._connection()
        try:
            db.execute("BEGIN IMMEDIATE")
            stored, batches = self._locked_state(db, name)
            if upper > stored:
                self._store_upper(db, name, upper, batches)
                stored = upper
            db.execute("COMMIT")
        except sqlite3.Error as error:
            raise self._failed(db, error) from None
        return ShardState(stored, batches)

    async def watch(self, changed: Changed, *, task_status: trio.TaskStatus[None]) -> None:
        raise NotificationsUnsupportedError(
            f"sqlite file {self.path!r} cannot push other writers' changes: "
            "refresh the catalog when told of them"
        )

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None

    def __del__(self) -> None:
        if getattr(self, "_db", None) is not None:
            warnings.warn(
                f"sqlite storage {self.path!r} was not closed", ResourceWarning, stacklevel=1
            )
            self.close()

    def _connection(self) -> sqlite3.Connection:
        if self._db is None:
            raise trio.ClosedResourceError(f"sqlite storage {self.path!r} is closed")
        return self._db

    def _run(self, sql: str, args: tuple[object, ...]) -> sqlite3.Cursor:
        db = self._connection()
        try:
            return db.execute(sql, args)
        except sqlite3.Error as error:
            raise self._failed(db, error) from None

    @staticmethod
    def _locked_state(db: sqlite3.Connection, name: str) -> tuple[int, int]:
        found = db.execute(
            "SELECT upper_ts, batches FROM persist_shards WHERE name = ?", (name,)
        ).fetchone()
        return (0, 0) if found is None else (from_db(found[0]), found[1])

    @staticmethod
    def _store_upper(db: sqlite3.Connection, name: str, upper: int, batches: int) -> None:
        db.execute(
            "INSERT INTO persist_shards VALUES (?, ?, ?) ON CONFLICT (name) DO UPDATE "
            "SET upper_ts = excluded.upper_ts, batches = excluded.batches",
            (name, to_db(upper), batches),
        )

    def _failed(self, db: sqlite3.Connection, error: sqlite3.Error) -> StorageUnavailableError:
        if db.in_transaction:
            db.execute("ROLLBACK")
        return StorageUnavailableError(f"sqlite file {self.path!r}: {error}")


def _prepare(db: sqlite3.Connection, path: str) -> None:
    """Put ``db`` in WAL mode and make sure it holds this schema version."""
    try:
        mode = db.execute("PRAGMA journal_mode = WAL").fetchone()[0]
        db.execute("PRAGMA synchronous = FULL")
        db.execute("BEGIN IMMEDIATE")
        tables = {
            name for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        }
        if not tables:
            for statement in _SCHEMA:
                db.execute(statement)
            db.execute(
                "INSERT INTO persist_meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),)
            )
            tables = set(TABLES)
        version = None
        if "persist_meta" in tables:
            found = db.execute(
                "SELECT value FROM persist_meta WHERE key = 'schema_version'"
            ).fetchone()
            version = None if found is None else found[0]
        db.execute("COMMIT")
    except sqlite3.Error as error:
        if db.in_transaction:
            db.execute("ROLLBACK")
        if error.sqlite_errorname in ("SQLITE_NOTADB", "SQLITE_CORRUPT"):
            raise StorageCorruptError(f"sqlite file {path!r} is corrupt: {error}") from None
        raise StorageOpenError(f"sqlite file {path!r} cannot be opened: {error}") from None
    if mode != "wal":
        raise StorageOpenError(f"sqlite file {path!r} cannot be put in WAL mode (got {mode!r})")
    if not set(TABLES) <= tables or version is None:
        raise StorageCorruptError(
            f"sqlite file {path!r} is not a shard store: it holds other tables "
            f"({', '.join(sorted(tables))})"
        )
    if version != str(SCHEMA_VERSION):
        raise SchemaVersionError(
            f"sqlite file {path!r} has shard schema version {version}, this is version "
            f"{SCHEMA_VERSION}"
        )
