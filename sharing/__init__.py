"""The sharing registry of index incarnations between runtimes (docs/protocol.md).

See :mod:`sharing._registry` for the rules: slots keyed by incarnation,
publishers and peers, bindings that never move, frozen views.
"""

from ._registry import Incarnation as Incarnation
from ._registry import Peer as Peer
from ._registry import PeerHold as PeerHold
from ._registry import Pin as Pin
from ._registry import Publisher as Publisher
from ._registry import Registry as Registry
from ._registry import RegistryStatistics as RegistryStatistics
from ._registry import SharingError as SharingError
from ._registry import SlotTakenError as SlotTakenError
