"""The public names of ``replica.storage.persist``, its errors, and why the
PostgreSQL tests skip when they do."""

from __future__ import annotations

from pathlib import Path

import pytest

import replica.storage.persist
from replica import ComputeError
from replica.storage.persist.testing import PostgresUnavailableError, temporary_postgres

PUBLIC = {
    "DurableShard",
    "DurableShardCatalog",
    "MemoryStorage",
    "NotificationsUnsupportedError",
    "PersistError",
    "PostgresStorage",
    "SCHEMA_VERSION",
    "SchemaVersionError",
    "ShardState",
    "ShardStorage",
    "SqliteStorage",
    "StorageCorruptError",
    "StorageOpenError",
    "StorageUnavailableError",
    "StorageUrlError",
    "StoredBatch",
    "UnstorableError",
    "open_catalog",
    "open_storage",
}


def test_the_public_names_are_pinned() -> None:
    names = {name for name in dir(replica.storage.persist) if not name.startswith("_")}
    assert names - {"testing"} == PUBLIC


def test_every_error_is_a_persist_error_and_a_compute_error() -> None:
    errors = [getattr(replica.storage.persist, name) for name in PUBLIC if name.endswith("Error")]
    assert all(issubclass(error, replica.storage.persist.PersistError) for error in errors)
    assert issubclass(replica.storage.persist.PersistError, ComputeError)


def test_without_server_binaries_the_reason_is_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TRIO_RECONCILE_PG_BIN", str(tmp_path))
    with (
        pytest.raises(
            PostgresUnavailableError,
            match=r"^no PostgreSQL server binaries \(initdb\): install the 'postgresql' "
            r"package or set \$TRIO_RECONCILE_PG_BIN$",
        ),
        temporary_postgres(),
    ):
        pass
