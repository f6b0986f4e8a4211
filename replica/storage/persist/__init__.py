"""Durable shards: shard catalogs whose shards are stored in SQLite or
PostgreSQL, and survive a restart (docs/persist.md).

.. not run: a fragment; docs/persist.md has the example the tests run

::

    with open_catalog("sqlite:shards.db") as shards:
        shards.shard("data").write(0, [(1, "a")])

It needs msgspec, the ``persist`` extra (``pip install
'trio-reconcile[persist]'``), and PostgreSQL psycopg too, the ``postgres``
extra: without them, importing it (or a ``postgresql://`` URL) raises an
error that says which to install.
"""

from typing import TYPE_CHECKING as _TYPE_CHECKING

from . import _needs  # first: the extra it needs, named if it is missing
from ._catalog import DurableShard as DurableShard
from ._catalog import DurableShardCatalog as DurableShardCatalog
from ._catalog import open_catalog as open_catalog
from ._errors import NotificationsUnsupportedError as NotificationsUnsupportedError
from ._errors import PersistError as PersistError
from ._errors import SchemaVersionError as SchemaVersionError
from ._errors import StorageCorruptError as StorageCorruptError
from ._errors import StorageOpenError as StorageOpenError
from ._errors import StorageUnavailableError as StorageUnavailableError
from ._errors import StorageUrlError as StorageUrlError
from ._errors import UnstorableError as UnstorableError
from ._open import open_storage as open_storage
from ._sql import SCHEMA_VERSION as SCHEMA_VERSION
from ._sqlite import SqliteStorage as SqliteStorage
from ._storage import MemoryStorage as MemoryStorage
from ._storage import ShardState as ShardState
from ._storage import ShardStorage as ShardStorage
from ._storage import StoredBatch as StoredBatch

if _TYPE_CHECKING:
    from ._postgres import PostgresStorage as PostgresStorage


def __getattr__(name: str) -> object:
    # PostgresStorage, and psycopg with it, only when asked for.
    if name == "PostgresStorage":
        _needs.require_psycopg("replica.storage.persist.PostgresStorage")
        from ._postgres import PostgresStorage

        return PostgresStorage
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), "PostgresStorage"])
