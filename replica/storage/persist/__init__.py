"""Durable shards: shard catalogs whose shards are stored in SQLite or
PostgreSQL, and survive a restart (docs/persist.md).

    with open_catalog("sqlite:shards.db") as shards:
        shards.shard("data").write(0, [(1, "a")])
"""

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
from ._postgres import PostgresStorage as PostgresStorage
from ._sql import SCHEMA_VERSION as SCHEMA_VERSION
from ._sqlite import SqliteStorage as SqliteStorage
from ._storage import MemoryStorage as MemoryStorage
from ._storage import ShardState as ShardState
from ._storage import ShardStorage as ShardStorage
from ._storage import StoredBatch as StoredBatch
