"""Shards and their catalogs: in memory (:class:`ShardCatalog`), or durable
in SQLite or PostgreSQL (:mod:`replica.storage.persist`, docs/persist.md).

Importing this package imports the durable catalogs, which register how
:meth:`ShardCatalog.open` opens a URL.
"""

from . import persist as persist
from ._errors import UpperMismatchError as UpperMismatchError
from ._errors import UpperRegressionError as UpperRegressionError
from ._errors import WriteBelowUpperError as WriteBelowUpperError
from ._shard import Partitioned as Partitioned
from ._shard import Shard as Shard
from ._shard import ShardCatalog as ShardCatalog
