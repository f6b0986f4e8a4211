"""Shards and their catalogs: in memory (:class:`ShardCatalog`), or durable
in SQLite or PostgreSQL (:mod:`replica.storage.persist`, docs/persist.md).

The durable catalogs are the layer above the shards: they load when first
used (:meth:`ShardCatalog.open`, or ``import replica.storage.persist``), so
what needs only shards (the engine) loads no Trio and no database driver.
"""

from ._errors import UpperMismatchError as UpperMismatchError
from ._errors import UpperRegressionError as UpperRegressionError
from ._errors import WriteBelowUpperError as WriteBelowUpperError
from ._shard import Partitioned as Partitioned
from ._shard import Shard as Shard
from ._shard import ShardCatalog as ShardCatalog
