"""Shards in a SQLite file: files that are not shard stores, two OS processes
racing on one file, and what a kill -9 leaves."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
import trio

from replica.persist import (
    SCHEMA_VERSION,
    DurableShardCatalog,
    NotificationsUnsupportedError,
    SchemaVersionError,
    SqliteStorage,
    StorageCorruptError,
    StorageOpenError,
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
        StorageCorruptError, match=r"^shard 'data': a stored batch does not decode: "
    ):
        open_catalog(f"sqlite:{path}")


def test_a_closed_storage_refuses_changes(tmp_path: Path) -> None:
    catalog = open_catalog(f"sqlite:{tmp_path / 'shards.db'}")
    data = catalog.shard("data")
    data.write(0, [(1,)])
    catalog.close()
    catalog.close()
    assert data.read_at(0) == [(1,)]
    with pytest.raises(trio.ClosedResourceError, match=r"^sqlite storage '.*' is closed$"):
        data.write(1, [(2,)])


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
        with pytest.raises(StorageCorruptError, match=r"^shard 'data': a stored batch "):
            reader.refresh()
        assert (reader.shard("data").upper, reader.shard("data").updates) == (1, [((1,), 0, 1)])


def test_storage_left_open_warns(tmp_path: Path) -> None:
    storage = open_storage(f"sqlite:{tmp_path / 'shards.db'}")
    with pytest.warns(ResourceWarning, match=r"^sqlite storage '.*' was not closed$"):
        del storage  # the last reference
