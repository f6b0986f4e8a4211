"""The replica on real OS processes: ``trio-reconcile serve`` (one replica
process) and ``trio-reconcile run --spawn`` (a spec against ``P`` of them),
over ``actors.net`` nodes. See docs/processes.md.

The in-process replica (:func:`replica.open_replica`) is untouched by this
package: it is a separate composition of the same workers, adapters,
multiplexers, barriers and registries, whose command channel, exchanges,
shards and controller connections cross processes.
"""

from ._cluster import Cluster as Cluster
from ._cluster import ClusterError as ClusterError
from ._cluster import RemoteProcess as RemoteProcess
from ._cluster import open_cluster as open_cluster
from ._cluster import serve_command as serve_command
from ._links import Wire as Wire
from ._serve import ServeOptions as ServeOptions
from ._serve import serve as serve
from ._shards import MirrorCatalog as MirrorCatalog
from ._shards import MirrorShard as MirrorShard
from ._shards import ShardHost as ShardHost
from ._tls import TlsError as TlsError
from ._tls import TlsFiles as TlsFiles
from ._wire import WireError as WireError
