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

import re
from typing import LiteralString
from urllib.parse import quote, urlencode

import attrs
import psycopg
import trio

from .._errors import UpperMismatchError
from ._checks import (
    beyond_count,
    stored_count,
    stored_integer,
    stored_shards,
    stored_state,
    stored_time,
)
from ._codec import damaged
from ._errors import (
    PersistError,
    SchemaVersionError,
    StorageCorruptError,
    StorageOpenError,
    StorageUnavailableError,
    UnstorableError,
)
from ._sql import SCHEMA_VERSION, SHARDS_QUERY, TABLES, to_db
from ._storage import Changed, ShardState

NOTIFY_CHANNEL = "trio_reconcile_persist"
# A NOTIFY payload is at most 8000 bytes: a longer name is sent as an empty
# payload, which means "any shard".
_PAYLOAD_LIMIT = 7999
# Taken while the schema is created, so two first openers do not race.
_SCHEMA_LOCK = 0x7472696F  # "trio"
# Seconds a change waits for a shard's row locked by another session (as
# SQLite's BUSY_TIMEOUT): then it fails, rather than block the Trio thread
# for as long as that session lives.
LOCK_TIMEOUT = 30.0

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

    # Not in the repr: it may hold the password (``url`` is shown instead).
    conninfo: str = attrs.field(repr=False)
    _db: psycopg.Connection[tuple[object, ...]] | None = attrs.field(repr=False)

    @classmethod
    def open(cls, conninfo: str) -> PostgresStorage:
        """Connect to the database ``conninfo`` names (a libpq URL) and make
        sure it holds this schema version, creating it in an empty database.
        Raises :class:`StorageOpenError` if the server cannot be reached or
        refuses, :class:`StorageCorruptError` if the tables are not a shard
        store's, :class:`SchemaVersionError` if another version wrote them."""
        try:
            db = _connect(conninfo)
        except psycopg.Error as error:
            raise StorageOpenError(
                f"postgresql {_shown(conninfo)} cannot be opened: {_open_failure(conninfo, error)}"
            ) from None
        try:
            _prepare(db, conninfo)
        except BaseException:
            db.close()
            raise
        return cls(conninfo, db)

    @property
    def url(self) -> str:
        url = _redacted(self.conninfo)
        assert url is not None, "an opened storage's conninfo parses"
        return url

    def __repr__(self) -> str:
        return f"PostgresStorage(url={self.url!r}, open={self._db is not None})"

    def uppers(self) -> dict[str, ShardState]:
        try:
            rows = self._connection().execute(SHARDS_QUERY).fetchall()
        except psycopg.Error as error:
            raise self._failed(error) from None
        return stored_shards(rows)

    def read(self, name: str, since: int) -> ShardState:
        try:
            # One statement: one snapshot of the upper and the batches. The
            # one row it starts from is there even with no shard's row, so
            # batches stored without it are seen.
            rows = (
                self._connection()
                .execute(
                    "SELECT s.upper_ts, s.batches, b.seq, b.lower_ts, b.upper_ts, b.data"
                    " FROM (SELECT 1) one"
                    " LEFT JOIN persist_shards s ON s.name = %s"
                    " LEFT JOIN persist_batches b ON b.shard = %s AND b.seq >= %s"
                    " ORDER BY b.seq",
                    (name, name, since),
                )
                .fetchall()
            )
        except psycopg.Error as error:
            raise self._failed(error) from None
        shard = rows[0][:2] if rows[0][0] is not None else None
        return stored_state(name, shard, [row[2:] for row in rows if row[2] is not None])

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
                    return stored_integer(name, "a batch's position", moved[0])
                stored = self._stored_upper(db, name)
                if stored is None:
                    self._ensure(db, name)
                elif stored != lower:
                    raise UpperMismatchError(
                        f"append to shard {name!r} expected upper {lower}, found {stored}"
                    )
                # Else the upper reached lower since the update: try again.
        except psycopg.errors.UniqueViolation:
            # The primary key of persist_batches: the position the batch
            # count gave is taken.
            raise damaged(name, beyond_count(self._stored_count(db, name))) from None
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
                    return ShardState(upper, stored_count(name, moved[0]))
                found = db.execute(
                    "SELECT upper_ts, batches FROM persist_shards WHERE name = %s", (name,)
                ).fetchone()
                if found is None:
                    self._ensure(db, name)
                    continue
                stored = stored_time(name, "its upper", found[0])
                if stored >= upper:
                    return ShardState(stored, stored_count(name, found[1]))
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
        """The connection; a new one if the last was lost (its operation
        failed with :class:`StorageUnavailableError`), so a catalog outlives
        a restart of the server."""
        if self._db is None:
            raise trio.ClosedResourceError(f"postgresql storage {self.url!r} is closed")
        if self._db.closed:
            try:
                self._db = _connect(self.conninfo)
            except psycopg.Error as error:
                raise self._failed(error) from None
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
        return None if found is None else stored_time(name, "its upper", found[0])

    def _stored_count(self, db: psycopg.Connection[tuple[object, ...]], name: str) -> int:
        """Shard ``name``'s batch count; :class:`StorageUnavailableError` if it
        cannot be read."""
        try:
            found = db.execute(
                "SELECT batches FROM persist_shards WHERE name = %s", (name,)
            ).fetchone()
        except psycopg.Error as error:
            raise self._failed(error) from None
        return 0 if found is None else stored_count(name, found[0])

    def _failed(self, error: psycopg.Error) -> PersistError:
        if isinstance(error, psycopg.errors.ProgramLimitExceeded):
            # A value over a limit of the server (a shard name too long
            # for the index): it would fail again.
            return UnstorableError(f"postgresql {self.url!r}: {_first_line(error)}")
        return StorageUnavailableError(f"postgresql {self.url!r}: {_first_line(error)}")


def _connect(conninfo: str) -> psycopg.Connection[tuple[object, ...]]:
    """A connection for changes: autocommit, its lock waits bounded."""
    db = psycopg.connect(conninfo, autocommit=True)
    try:
        db.execute(
            "SELECT set_config('lock_timeout', %s, false)", (f"{int(LOCK_TIMEOUT * 1000)}ms",)
        )
    except BaseException:
        db.close()
        raise
    return db


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
            f"postgresql {_shown(conninfo)} cannot be prepared: {_first_line(error)}"
        ) from None
    if tables != set(TABLES) or version is None:
        raise StorageCorruptError(
            f"postgresql {_shown(conninfo)} is not a shard store: it holds only "
            f"{', '.join(sorted(tables))} of the tables {', '.join(TABLES)}"
        )
    if version != str(SCHEMA_VERSION):
        raise SchemaVersionError(
            f"postgresql {_shown(conninfo)} has shard schema version {version}, "
            f"this is version {SCHEMA_VERSION}"
        )


def _redacted(conninfo: str) -> str | None:
    """``conninfo`` as a ``postgresql://`` URL without its password, or
    ``None`` if libpq cannot parse it."""
    try:
        params = {
            key: str(value)
            for key, value in psycopg.conninfo.conninfo_to_dict(conninfo).items()
            if key != "password"
        }
    except psycopg.Error:
        return None
    user, dbname = params.pop("user", None), params.pop("dbname", None)
    user_at = f"{quote(user, safe='')}@" if user else ""
    path = f"/{quote(dbname, safe='')}" if dbname else ""
    query = f"?{urlencode(params, quote_via=quote, safe='')}" if params else ""
    return f"postgresql://{user_at}{path}{query}"


def _shown(conninfo: str) -> str:
    """``conninfo`` to be shown in a message: quoted, without its password."""
    url = _redacted(conninfo)
    return "(an unparsable url)" if url is None else repr(url)


def _open_failure(conninfo: str, error: psycopg.Error) -> str:
    """Why ``conninfo`` could not be opened, as libpq says. If libpq cannot
    parse it, the parts it quotes may be the password's: they are hidden."""
    reason = _first_line(error)
    try:
        psycopg.conninfo.conninfo_to_dict(conninfo)
    except psycopg.Error:
        return re.sub(r'"[^"]*"', '"..."', reason)
    return reason


def _payload(name: str) -> str:
    """The notification of a change to shard ``name``: its name, or empty
    ("any shard") if it is too long for a payload."""
    return name if len(name.encode("utf-8")) <= _PAYLOAD_LIMIT else ""


def _first_line(error: BaseException) -> str:
    return (str(error).strip().splitlines() or [type(error).__name__])[0]
