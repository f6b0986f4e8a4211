"""The replica on real OS processes: ``trio-reconcile serve`` (one replica
process) and ``trio-reconcile run --spawn`` (a spec against ``P`` of them),
over ``actors.net`` nodes. See docs/processes.md.

The in-process replica (:func:`replica.open_replica`) is untouched by this
package: it is a separate composition of the same workers, adapters,
multiplexers, barriers and registries, whose command channel, exchanges,
shards and controller connections cross processes.
"""

from ._cluster import Cluster as Cluster
from ._cluster import RemoteProcess as RemoteProcess
from ._cluster import open_cluster as open_cluster
from ._cluster import serve_command as serve_command
from ._errors import ClusterError as ClusterError
from ._errors import HandlerFailedError as HandlerFailedError
from ._errors import ItemTooLargeError as ItemTooLargeError
from ._errors import LinkLostError as LinkLostError
from ._errors import ListenFailedError as ListenFailedError
from ._errors import ProcessAbortedError as ProcessAbortedError
from ._errors import ProcsError as ProcsError
from ._errors import SecretFileError as SecretFileError
from ._errors import ShardHostLostError as ShardHostLostError
from ._errors import TlsError as TlsError
from ._errors import WireError as WireError
from ._limits import MAX_PEER_TIMEOUT as MAX_PEER_TIMEOUT
from ._limits import MIN_PEER_TIMEOUT as MIN_PEER_TIMEOUT
from ._links import Wire as Wire
from ._options import ServeOptions as ServeOptions
from ._secret import read_secret_file as read_secret_file
from ._serve import serve as serve
from ._shards import MirrorCatalog as MirrorCatalog
from ._shards import MirrorShard as MirrorShard
from ._shards import ShardHost as ShardHost
from ._tls import TlsFiles as TlsFiles
