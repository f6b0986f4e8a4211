"""Shards in a PostgreSQL database (``postgresql://...``), through psycopg 3's
synchronous API.

A compare-and-append is one transaction whose conditional ``UPDATE`` of the
shard's row (``... WHERE upper_ts = lower``) both checks and moves the upper:
of two concurrent appends at the same lower, the second waits on the row lock
and then finds the upper moved, so it stores nothing. Every change ends with
``pg_notify`` on the channel ``NOTIFY_CHANNEL``, delivered on commit with the
shard's name: :meth:`PostgresStorage.watch` listens on a connection of its
own and waits for its socket to become readable in Trio
(``trio.lowlevel.wait_readable``), so other writers' changes are pushed, with
no thread and no polling. What a commit guarantees is the server's
(``synchronous_commit``, ``fsync``): with its defaults, a returned change
survives a crash of the server or the machine.
"""

from __future__ import annotations

from typing import LiteralString

import attrs
import psycopg
import trio

from .._errors import UpperMismatchError
from ._errors import (
    SchemaVersionError,
    StorageCorruptError,
    StorageOpenError,
    StorageUnavailableError,
)
from ._sql import SCHEMA_VERSION, TABLES, from_db, to_db
from ._storage import Changed, ShardState

NOTIFY_CHANNEL = "trio_reconcile_persist"
# A NOTIFY payload is at most 8000 bytes: a longer name is sent as an empty
# payload, which means "any shard".
_PAYLOAD_LIMIT = 7999
# Taken while the schema is created, so two first openers do not race.
_SCHEMA_LOCK = 0x7472696F  # "trio"

_SCHEMA: tuple[LiteralString, ...] = (
    "CREATE TABLE persist_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE persist_shards ("
    " name TEXT PRIMARY KEY, upper_ts BIGINT NOT NULL, batches BIGINT NOT NULL)",
    "CREATE TABLE persist_batches ("
    " shard TEXT NOT NULL, seq BIGINT NOT NULL,"
    " lower_ts BIGINT NOT NULL, upper_ts BIGINT NOT NULL, data BYTEA NOT NULL,"
    " PRIMARY KEY (shard, seq))",
    # A batch is already compact: compressing it (TOAST's default for values
    # over 2 kB) costs more than it saves (2.6x slower appends of 1,000 rows).
    "ALTER TABLE persist_batches ALTER COLUMN data SET STORAGE EXTERNAL",
)


@attrs.define(eq=False)
class PostgresStorage:
    """A shard store in a PostgreSQL database; see the module's docstring.
    Use in one thread (the Trio thread)."""

    conninfo: str
    _db: psycopg.Connection[tuple[object, ...]] | None

    @classmethod
    def open(cls, conninfo: str) -> PostgresStorage:
        """Connect to the database ``conninfo`` names (a libpq URL) and make
        sure it holds this schema version, creating it in an empty database.
        Raises :class:`StorageOpenError` if the server cannot be reached or
        refuses, :class:`StorageCorruptError` if the tables are not a shard
        store's, :class:`SchemaVersionError` if another version wrote them."""
        try:
            db = psycopg.connect(conninfo, autocommit=True)
        except psycopg.Error as error:
            raise StorageOpenError(
                f"postgresql {_redacted(conninfo)} cannot be opened: {_first_line(error)}"
            ) from None
        try:
            _prepare(db, conninfo)
        except BaseException:
            db.close()
            raise
        return cls(conninfo, db)

    @property
    def url(self) -> str:
        return _redacted(self.conninfo)

    def uppers(self) -> dict[str, ShardState]:
        try:
            rows = (
                self._connection()
                .execute("SELECT name, upper_ts, batches FROM persist_shards")
                .fetchall()
            )
        except psycopg.Error as error:
            raise self._failed(error) from None
        return {
            str(name): ShardState(from_db(_int(upper)), _int(batches))
            for name, upper, batches in rows
        }

    def read(self, name: str, since: int) -> ShardState:
        try:
            # One statement: one snapshot of the upper and the batches.
            rows = (
                self._connection()
                .execute(
                    "SELECT s.upper_ts, s.batches, b.data FROM persist_shards s "
                    "LEFT JOIN persist_batches b ON b.shard = s.name AND b.seq >= %s "
                    "WHERE s.name = %s ORDER BY b.seq",
                    (since, name),
                )
                .fetchall()
            )
        except psycopg.Error as error:
            raise self._failed(error) from None
        if not rows:
            return ShardState(0, 0)
        upper, batches = from_db(_int(rows[0][0])), _int(rows[0][1])
        return ShardState(
            upper, batches, tuple(_bytes(blob) for _, _, blob in rows if blob is not None)
        )

    def append(self, name: str, data: bytes, lower: int, upper: int) -> int:
        db = self._connection()
        try:
            while True:
                # One statement, so one round trip and one transaction: the
                # conditional UPDATE checks and moves the upper under the
                # row's lock, the batch takes the position it freed, and the
                # notification goes out at commit.
                moved = db.execute(
                    "WITH moved AS ("
                    " UPDATE persist_shards SET upper_ts = %s, batches = batches + 1"
                    " WHERE name = %s AND upper_ts = %s RETURNING batches - 1 AS seq),"
                    " stored AS ("
                    " INSERT INTO persist_batches SELECT %s, seq, %s, %s, %s FROM moved"
                    " RETURNING seq)"
                    " SELECT seq, pg_notify(%s, %s) FROM stored",
                    (to_db(upper), name, to_db(lower), name, to_db(lower), to_db(upper), data,
                     NOTIFY_CHANNEL, _payload(name)),
                ).fetchone()  # fmt: skip
                if moved is not None:
                    return _int(moved[0])
                stored = self._stored_upper(db, name)
                if stored is None:
                    self._ensure(db, name)
                elif stored != lower:
                    raise UpperMismatchError(
                        f"append to shard {name!r} expected upper {lower}, found {stored}"
                    )
                # Else the upper reached lower since the update: try again.
        except psycopg.Error as error:
            raise self._failed(error) from None

    def advance(self, name: str, upper: int) -> ShardState:
        db = self._connection()
        try:
            while True:
                moved = db.execute(
                    "WITH moved AS ("
                    " UPDATE persist_shards SET upper_ts = %s"
                    " WHERE name = %s AND upper_ts < %s RETURNING batches)"
                    " SELECT batches, pg_notify(%s, %s) FROM moved",
                    (to_db(upper), name, to_db(upper), NOTIFY_CHANNEL, _payload(name)),
                ).fetchone()
                if moved is not None:
                    return ShardState(upper, _int(moved[0]))
                found = db.execute(
                    "SELECT upper_ts, batches FROM persist_shards WHERE name = %s", (name,)
                ).fetchone()
                if found is None:
                    self._ensure(db, name)
                    continue
                stored = from_db(_int(found[0]))
                if stored >= upper:
                    return ShardState(stored, _int(found[1]))
        except psycopg.Error as error:
            raise self._failed(error) from None

    async def watch(self, changed: Changed, *, task_status: trio.TaskStatus[None]) -> None:
        """See :meth:`ShardStorage.watch`. Listens on a connection of its own;
        between notifications the task is parked on that connection's socket
        (``trio.lowlevel.wait_readable``). Raises
        :class:`StorageUnavailableError` if the connection is lost."""
        self._connection()
        try:
            listener = await trio.to_thread.run_sync(
                lambda: psycopg.connect(self.conninfo, autocommit=True)
            )
        except psycopg.Error as error:
            raise self._failed(error) from None
        try:
            listener.execute("LISTEN " + NOTIFY_CHANNEL)
            changed(None)
            task_status.started()
            socket = listener.fileno()
            while True:
                await trio.lowlevel.wait_readable(socket)
                names = {note.payload for note in listener.notifies(timeout=0.0)}
                if "" in names:
                    changed(None)
                elif names:
                    changed(frozenset(names))
        except psycopg.Error as error:
            raise self._failed(error) from None
        finally:
            listener.close()

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None

    def _connection(self) -> psycopg.Connection[tuple[object, ...]]:
        if self._db is None:
            raise trio.ClosedResourceError(f"postgresql storage {self.url} is closed")
        return self._db

    @staticmethod
    def _ensure(db: psycopg.Connection[tuple[object, ...]], name: str) -> None:
        db.execute(
            "INSERT INTO persist_shards VALUES (%s, %s, 0) ON CONFLICT (name) DO NOTHING",
            (name, to_db(0)),
        )

    @staticmethod
    def _stored_upper(db: psycopg.Connection[tuple[object, ...]], name: str) -> int | None:
        found = db.execute(
            "SELECT upper_ts FROM persist_shards WHERE name = %s", (name,)
        ).fetchone()
        return None if found is None else from_db(_int(found[0]))

    def _failed(self, error: psycopg.Error) -> StorageUnavailableError:
        return StorageUnavailableError(f"postgresql {self.url}: {_first_line(error)}")


def _prepare(db: psycopg.Connection[tuple[object, ...]], conninfo: str) -> None:
    try:
        with db.transaction():
            db.execute("SELECT pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK,))
            tables = {
                str(name)
                for (name,) in db.execute(
                    "SELECT table_name FROM information_schema.tables "
                    "WHERE table_schema = current_schema() AND table_name = ANY(%s)",
                    (list(TABLES),),
                )
            }
            if not tables:
                for statement in _SCHEMA:
                    db.execute(statement)
                db.execute(
                    "INSERT INTO persist_meta VALUES ('schema_version', %s)",
                    (str(SCHEMA_VERSION),),
                )
                tables = set(TABLES)
            version = None
            if "persist_meta" in tables:
                found = db.execute(
                    "SELECT value FROM persist_meta WHERE key = 'schema_version'"
                ).fetchone()
                version = None if found is None else str(found[0])
    except psycopg.Error as error:
        raise StorageOpenError(
            f"postgresql {_redacted(conninfo)} cannot be prepared: {_first_line(error)}"
        ) from None
    if tables != set(TABLES) or version is None:
        raise StorageCorruptError(
            f"postgresql {_redacted(conninfo)} is not a shard store: it holds only "
            f"{', '.join(sorted(tables))} of the tables {', '.join(TABLES)}"
        )
    if version != str(SCHEMA_VERSION):
        raise SchemaVersionError(
            f"postgresql {_redacted(conninfo)} has shard schema version {version}, "
            f"this is version {SCHEMA_VERSION}"
        )


def _redacted(conninfo: str) -> str:
    """``conninfo`` without its password, to be shown."""
    try:
        params = psycopg.conninfo.conninfo_to_dict(conninfo)
    except psycopg.Error:
        return "(an unparsable url)"
    shown = {key: str(value) for key, value in params.items() if key != "password"}
    return repr(psycopg.conninfo.make_conninfo("", **shown))


def _payload(name: str) -> str:
    """The notification of a change to shard ``name``: its name, or empty
    ("any shard") if it is too long for a payload."""
    return name if len(name.encode("utf-8")) <= _PAYLOAD_LIMIT else ""


def _first_line(error: BaseException) -> str:
    return (str(error).strip().splitlines() or [type(error).__name__])[0]


def _int(value: object) -> int:
    assert isinstance(value, int), f"stored {value!r} where an integer was expected"
    return value


def _bytes(value: object) -> bytes:
    assert isinstance(value, bytes), f"stored {value!r} where bytes were expected"
    return value
