"""Actor nodes over the network: an actor system made reachable over Trio
streams (TCP on loopback by default, TLS when given a context), references to
another node's actors with the typed API of local ones, and the sans-I/O
protocol underneath (framing, a shared-secret handshake, a codec of attrs
message classes, credit-based flow control).

Imported explicitly (``import actors.net``): ``import actors`` does not load
it, nor msgspec. It needs msgspec, the ``net`` extra (``pip install
'trio-reconcile[net]'``): without it, importing it raises
:class:`ModuleNotFoundError` saying so. See the "Nodes" section of
``docs/actors.md``.
"""

from . import _needs  # noqa: F401 (first: the extra it needs, named if it is missing)
from ._codec import Codec as Codec
from ._errors import CodecError as CodecError
from ._errors import ConnectionStateError as ConnectionStateError
from ._errors import HandshakeError as HandshakeError
from ._errors import NetError as NetError
from ._errors import NoCreditError as NoCreditError
from ._errors import NodeDownError as NodeDownError
from ._errors import RemoteError as RemoteError
from ._events import AnswerReceived as AnswerReceived
from ._events import Authenticated as Authenticated
from ._events import ConnectionClosed as ConnectionClosed
from ._events import CreditGranted as CreditGranted
from ._events import EndedReceived as EndedReceived
from ._events import Event as Event
from ._events import FailureReceived as FailureReceived
from ._events import FindRequested as FindRequested
from ._events import FoundReceived as FoundReceived
from ._events import FrameRefused as FrameRefused
from ._events import ListingReceived as ListingReceived
from ._events import LookupRequested as LookupRequested
from ._events import MessageReceived as MessageReceived
from ._events import PeerRefused as PeerRefused
from ._events import RestartedReceived as RestartedReceived
from ._events import StopRequested as StopRequested
from ._events import UnwatchRequested as UnwatchRequested
from ._events import WatchRequested as WatchRequested
from ._node import Dialer as Dialer
from ._node import Node as Node
from ._node import NodeStatistics as NodeStatistics
from ._node import open_node as open_node
from ._peer import DeadLetter as DeadLetter
from ._peer import DeadLetters as DeadLetters
from ._peer import Peer as Peer
from ._peer import PeerStatistics as PeerStatistics
from ._process import NodeMain as NodeMain
from ._process import NodeProcess as NodeProcess
from ._process import NodeProcessError as NodeProcessError
from ._process import open_node_process as open_node_process
from ._protocol import Connection as Connection
from ._protocol import ConnectionStatistics as ConnectionStatistics
from ._protocol import Role as Role
from ._protocol import State as State
from ._spawning import SpawnKey as SpawnKey
from ._values import Values as Values


def _report_public_names_as_ours() -> None:
    """Public classes and functions say they are ``actors.net.X`` (as
    ``actors`` does for its own)."""
    for value in list(globals().values()):
        if (isinstance(value, type) or callable(value)) and getattr(
            value, "__module__", ""
        ).startswith("actors.net._"):
            value.__module__ = "actors.net"


_report_public_names_as_ours()
