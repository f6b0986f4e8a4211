"""Shards in a SQLite file: files that are not shard stores, two OS processes
racing on one file, and what a kill -9 leaves."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import attrs
import pytest
import trio

from replica.storage.persist import (
    SCHEMA_VERSION,
    DurableShardCatalog,
    NotificationsUnsupportedError,
    SchemaVersionError,
    SqliteStorage,
    StorageCorruptError,
    StorageOpenError,
    StorageUnavailableError,
    UnstorableError,
    open_catalog,
    open_storage,
)

from .children import check_what_the_killed_process_stored, race_two_processes, write_and_kill_9


def test_the_file_is_in_wal_mode_with_full_sync(tmp_path: Path) -> None:
    path = tmp_path / "shards.db"
    with open_catalog(f"sqlite:{path}") as catalog:
        catalog.shard("data").write(0, [(1,)])
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    db.close()


def test_a_file_that_is_not_sqlite_is_corrupt(tmp_path: Path) -> None:
    path = tmp_path / "shards.db"
    path.write_bytes(b"not a database, not at all " * 100)
    with pytest.raises(
        StorageCorruptError,
        match=rf"^sqlite file '{path}' is corrupt: file is not a database$",
    ):
        open_storage(f"sqlite:{path}")


def test_a_sqlite_file_with_other_tables_is_not_a_shard_store(tmp_path: Path) -> None:
    path = tmp_path / "other.db"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE accounts (id INTEGER)")
    db.close()
    with pytest.raises(
        StorageCorruptError,
        match=rf"^sqlite file '{path}' is not a shard store: it holds other tables \(accounts\)$",
    ):
        open_storage(f"sqlite:{path}")


def test_a_store_of_another_schema_version_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "shards.db"
    open_storage(f"sqlite:{path}").close()
    with sqlite3.connect(path) as db:
        db.execute("UPDATE persist_meta SET value = '99' WHERE key = 'schema_version'")
    db.close()
    with pytest.raises(
        SchemaVersionError,
        match=rf"^sqlite file '{path}' has shard schema version 99, "
        rf"this is version {SCHEMA_VERSION}$",
    ):
        open_storage(f"sqlite:{path}")


def test_a_path_that_cannot_be_opened_is_named(tmp_path: Path) -> None:
    path = tmp_path / "missing" / "shards.db"
    with pytest.raises(
        StorageOpenError,
        match=rf"^sqlite file '{path}' cannot be opened: unable to open database file$",
    ):
        open_storage(f"sqlite:{path}")


def test_a_folder_cannot_be_opened(tmp_path: Path) -> None:
    with pytest.raises(StorageOpenError, match=rf"^sqlite file '{tmp_path}' cannot be opened: "):
        open_storage(f"sqlite:{tmp_path}")


def test_a_batch_that_does_not_decode_is_corrupt_at_load(tmp_path: Path) -> None:
    path = tmp_path / "shards.db"
    with open_catalog(f"sqlite:{path}") as catalog:
        catalog.shard("data").write(0, [(1,)])
    with sqlite3.connect(path) as db:
        db.execute("UPDATE persist_batches SET data = x'c1'")
    db.close()
    with pytest.raises(
        StorageCorruptError,
        match=r"^shard 'data' is damaged: batch 0 does not decode: "
        r"MessagePack data is malformed: invalid opcode '\\xc1' \(byte 0\)$",
    ):
        open_catalog(f"sqlite:{path}")


def test_a_closed_storage_refuses_changes(tmp_path: Path) -> None:
    storage = open_storage(f"sqlite:{tmp_path / 'shards.db'}")
    catalog = DurableShardCatalog.load(storage)
    data = catalog.shard("data")
    data.write(0, [(1,)])
    catalog.close()
    catalog.close()
    assert data.read_at(0) == [(1,)]
    with pytest.raises(
        trio.ClosedResourceError, match=r"^the shard catalog on 'sqlite:.*' is closed$"
    ):
        data.write(1, [(2,)])
    with pytest.raises(trio.ClosedResourceError, match=r"^sqlite storage '.*' is closed$"):
        storage.append("data", b"\x90", 1, 2)


async def test_sqlite_cannot_push_other_writers_changes(tmp_path: Path) -> None:
    storage = open_storage(f"sqlite:{tmp_path / 'shards.db'}")
    assert isinstance(storage, SqliteStorage)
    with (
        DurableShardCatalog.load(storage) as catalog,
        pytest.raises(
            NotificationsUnsupportedError,
            match=r"^sqlite file '.*' cannot push other writers' changes: "
            r"refresh the catalog when told of them$",
        ),
    ):
        await catalog.follow()


def test_of_two_processes_appending_at_the_same_lower_exactly_one_wins(tmp_path: Path) -> None:
    url = f"sqlite:{tmp_path / 'shards.db'}"
    open_storage(url).close()  # the schema, before either starts
    winner = race_two_processes(url)
    with open_catalog(url) as catalog:
        assert catalog.shard("data").updates == [((winner,), 0, 1)]
        assert catalog.shard("data").upper == 1


def test_what_was_stored_survives_a_kill_9(tmp_path: Path) -> None:
    url = f"sqlite:{tmp_path / 'shards.db'}"
    write_and_kill_9(url)
    with open_catalog(url) as catalog:
        check_what_the_killed_process_stored(catalog)


def test_a_corrupt_batch_met_while_catching_up_changes_nothing(tmp_path: Path) -> None:
    url = f"sqlite:{tmp_path / 'shards.db'}"
    with open_catalog(url) as writer, DurableShardCatalog.load(open_storage(url)) as reader:
        writer.shard("data").write(0, [(1,)])
        assert reader.refresh() == ["data"]
        writer.shard("data").write(1, [(2,)])
        writer.shard("data").write(2, [(3,)])
        with sqlite3.connect(tmp_path / "shards.db") as db:
            db.execute("UPDATE persist_batches SET data = x'c1' WHERE seq = 2")
        db.close()
        with pytest.raises(
            StorageCorruptError, match=r"^shard 'data' is damaged: batch 2 does not decode: "
        ):
            reader.refresh()
        assert (reader.shard("data").upper, reader.shard("data").updates) == (1, [((1,), 0, 1)])


def test_storage_left_open_warns(tmp_path: Path) -> None:
    storage = open_storage(f"sqlite:{tmp_path / 'shards.db'}")
    with pytest.warns(ResourceWarning, match=r"^sqlite storage '.*' was not closed$"):
        del storage  # the last reference


def test_every_commit_is_synced(tmp_path: Path) -> None:
    storage = open_storage(f"sqlite:{tmp_path / 'shards.db'}")
    assert isinstance(storage, SqliteStorage)
    with DurableShardCatalog.load(storage):
        assert storage._db is not None
        assert storage._db.execute("PRAGMA synchronous").fetchone() == (2,)  # FULL


@attrs.define
class InterruptedConnection:
    """A connection on which the statement starting with ``at`` raises
    KeyboardInterrupt, as a Ctrl-C between two statements would."""

    db: sqlite3.Connection
    at: str

    def execute(self, sql: str, *args: tuple[object, ...]) -> sqlite3.Cursor:
        if sql.startswith(self.at):
            raise KeyboardInterrupt
        return self.db.execute(sql, *args)

    def __getattr__(self, name: str) -> object:
        return getattr(self.db, name)


@pytest.mark.parametrize("at", ["INSERT INTO persist_batches", "INSERT INTO persist_shards"])
def test_a_keyboard_interrupt_mid_change_stores_nothing_and_holds_no_lock(
    tmp_path: Path, at: str
) -> None:
    path = tmp_path / "shards.db"
    storage = open_storage(f"sqlite:{path}")
    assert isinstance(storage, SqliteStorage)
    with DurableShardCatalog.load(storage) as catalog:
        db = storage._db
        assert db is not None
        storage._db = InterruptedConnection(db, at)  # type: ignore[assignment]
        with pytest.raises(KeyboardInterrupt):
            catalog.shard("data").write(0, [(1,)])
        storage._db = db
        assert not db.in_transaction
        other = sqlite3.connect(path, timeout=0, isolation_level=None)
        other.execute("BEGIN IMMEDIATE")  # the file's write lock is free
        other.execute("ROLLBACK")
        other.close()
        catalog.shard("data").write(0, [(2,)])
    with open_catalog(f"sqlite:{path}") as reopened:
        assert reopened.shard("data").updates == [((2,), 0, 1)]


def test_a_batch_too_big_for_the_file_is_unstorable(tmp_path: Path) -> None:
    storage = open_storage(f"sqlite:{tmp_path / 'shards.db'}")
    assert isinstance(storage, SqliteStorage)
    with DurableShardCatalog.load(storage) as catalog:
        assert storage._db is not None
        storage._db.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, 1_000)
        with pytest.raises(UnstorableError, match=r"^sqlite file '.*': string or blob too big$"):
            catalog.shard("data").write(0, [("x" * 2_000,)])
        catalog.shard("data").write(0, [("x",)])


def test_a_file_damaged_inside_is_corrupt(tmp_path: Path) -> None:
    path = tmp_path / "shards.db"
    with open_catalog(f"sqlite:{path}") as catalog:
        for ts in range(100):
            catalog.shard("data").write(ts, [("y" * 3_000,)])
    with open(path, "r+b") as file:
        file.seek(4096 * 5)
        file.write(b"\xff" * 4096 * 20)
    with pytest.raises(StorageCorruptError, match=r"^sqlite file '.*' is corrupt: "):
        open_catalog(f"sqlite:{path}")


def test_the_url_of_a_storage_opens_the_same_file(tmp_path: Path) -> None:
    for url in (
        f"sqlite:{tmp_path}/a.db",
        f"sqlite://{tmp_path}/b.db",
        f"sqlite:///{tmp_path}/c.db",
    ):
        storage = open_storage(url)
        again = open_storage(storage.url)
        assert isinstance(storage, SqliteStorage)
        assert isinstance(again, SqliteStorage)
        assert Path(again.path).resolve() == Path(storage.path).resolve()
        storage.close()
        again.close()


async def test_a_catalog_used_from_another_thread_is_refused_by_name(tmp_path: Path) -> None:
    with open_catalog(f"sqlite:{tmp_path / 'shards.db'}") as catalog:
        data = catalog.shard("data")
        with pytest.raises(StorageUnavailableError, match=r"can only be used in that same thread"):
            await trio.to_thread.run_sync(data.write, 0, [(1,)])
        data.write(0, [(2,)])
        assert data.updates == [((2,), 0, 1)]
