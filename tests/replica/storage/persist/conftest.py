"""Storage for the persist tests: a SQLite file per test, and a PostgreSQL
database per test on a throwaway cluster started once per session (or on the
server of ``$TRIO_RECONCILE_POSTGRES_URL``); the PostgreSQL tests skip, with
the reason, when no server can be started."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from replica.storage.persist.testing import (
    PostgresUnavailableError,
    create_database,
    temporary_postgres,
)

ENV_URL = "TRIO_RECONCILE_POSTGRES_URL"


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[str]:
    """The URL of a PostgreSQL database this session may create databases from."""
    given = os.environ.get(ENV_URL)
    if given:
        yield given
        return
    try:
        with temporary_postgres(fsync=False) as url:
            yield url
    except PostgresUnavailableError as error:
        pytest.skip(f"no PostgreSQL server: {error}")


@pytest.fixture
def postgres_url(postgres_server: str) -> str:
    """A fresh, empty database."""
    return create_database(postgres_server)


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    return f"sqlite:{tmp_path / 'shards.db'}"


@pytest.fixture(params=["sqlite", "postgresql"])
def url(request: pytest.FixtureRequest) -> str:
    """Each durable storage in turn."""
    name = "sqlite_url" if request.param == "sqlite" else "postgres_url"
    found: str = request.getfixturevalue(name)
    return found
