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

import contextlib
import sqlite3
import warnings
from collections.abc import Iterator

import attrs
import trio

from .._errors import UpperMismatchError
from ._checks import beyond_count, stored_count, stored_shards, stored_state, stored_time
from ._codec import damaged
from ._errors import (
    NotificationsUnsupportedError,
    PersistError,
    SchemaVersionError,
    StorageCorruptError,
    StorageOpenError,
    StorageUnavailableError,
    UnstorableError,
)
from ._sql import SCHEMA_VERSION, SHARDS_QUERY, TABLES, to_db
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
        # A path that starts with "//" needs the "//" of sqlite:///PATH, or
        # the URL would name a relative path.
        return f"sqlite://{self.path}" if self.path.startswith("//") else f"sqlite:{self.path}"

    def uppers(self) -> dict[str, ShardState]:
        with self._transaction("BEGIN") as db:
            rows = db.execute(SHARDS_QUERY).fetchall()
        return stored_shards(rows)

    def read(self, name: str, since: int) -> ShardState:
        with self._transaction("BEGIN") as db:
            found = db.execute(
                "SELECT upper_ts, batches FROM persist_shards WHERE name = ?", (name,)
            ).fetchone()
            batches = db.execute(
                "SELECT seq, lower_ts, upper_ts, data FROM persist_batches"
                " WHERE shard = ? AND seq >= ? ORDER BY seq",
                (name, since),
            ).fetchall()
        return stored_state(name, found, batches)

    def append(self, name: str, data: bytes, lower: int, upper: int) -> int:
        with self._transaction("BEGIN IMMEDIATE") as db:
            stored, seq = self._locked_state(db, name)
            if stored != lower:
                raise UpperMismatchError(
                    f"append to shard {name!r} expected upper {lower}, found {stored}"
                )
            try:
                db.execute(
                    "INSERT INTO persist_batches VALUES (?, ?, ?, ?, ?)",
                    (name, seq, to_db(lower), to_db(upper), data),
                )
            except sqlite3.IntegrityError:  # the primary key: (shard, seq) is taken
                raise damaged(name, beyond_count(seq)) from None
            self._store_upper(db, name, upper, seq + 1)
        return seq

    def advance(self, name: str, upper: int) -> ShardState:
        with self._transaction("BEGIN IMMEDIATE") as db:
            stored, batches = self._locked_state(db, name)
            if upper > stored:
                self._store_upper(db, name, upper, batches)
                stored = upper
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

    @contextlib.contextmanager
    def _transaction(self, begin: str) -> Iterator[sqlite3.Connection]:
        """One transaction, committed at the end of the block and rolled back
        if anything escapes it (an error, a mismatch, a KeyboardInterrupt:
        none leaves the file locked)."""
        db = self._connection()
        try:
            db.execute(begin)
            yield db
            db.execute("COMMIT")
        except BaseException as error:
            if db.in_transaction:
                with contextlib.suppress(sqlite3.Error):
                    db.execute("ROLLBACK")
            if isinstance(error, sqlite3.Error):
                raise self._failed(error) from None
            raise

    @staticmethod
    def _locked_state(db: sqlite3.Connection, name: str) -> tuple[int, int]:
        found = db.execute(
            "SELECT upper_ts, batches FROM persist_shards WHERE name = ?", (name,)
        ).fetchone()
        if found is None:
            return (0, 0)
        return (stored_time(name, "its upper", found[0]), stored_count(name, found[1]))

    @staticmethod
    def _store_upper(db: sqlite3.Connection, name: str, upper: int, batches: int) -> None:
        db.execute(
            "INSERT INTO persist_shards VALUES (?, ?, ?) ON CONFLICT (name) DO UPDATE "
            "SET upper_ts = excluded.upper_ts, batches = excluded.batches",
            (name, to_db(upper), batches),
        )

    def _failed(self, error: sqlite3.Error) -> PersistError:
        """The error to raise for ``error``, met in a transaction rolled back."""
        match getattr(error, "sqlite_errorname", None):
            case "SQLITE_TOOBIG":
                return UnstorableError(f"sqlite file {self.path!r}: {error}")
            case "SQLITE_CORRUPT" | "SQLITE_NOTADB":
                return StorageCorruptError(f"sqlite file {self.path!r} is corrupt: {error}")
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
        if getattr(error, "sqlite_errorname", None) in ("SQLITE_NOTADB", "SQLITE_CORRUPT"):
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
