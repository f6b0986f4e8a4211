"""What the replica's tasks share outside actors' mailboxes, for the
explorer's reduction (docs/actors.md, "Reduction"; docs/protocol.md).

The explorer treats two steps as independent unless they touch a common
object it records. The replica's actors (its workers and barriers) also
share plain Python objects with each other and with the tasks outside
actors (the driver, the channel adapters, the multiplexers): every
attribute read or write of an instance of these classes is recorded as a
touch of that instance. The list follows an audit of every object that
tasks of two owners touched in explored runs of the bundled specs, which
``tests/replica/driver/run/test_shared_audit.py`` repeats: it watches every
mutable class of the packages left out of this list, and fails when two
owners touch one instance. Frozen values (commands, responses,
dataflow descriptions, frontiers, incarnations) need no entry: reads of
what never changes commute.
"""

from __future__ import annotations

from barrier._barrier import ReconcileBarrier
from barrier._state import BarrierState
from replica.client._controller import Controller, _PendingPeek, _Session, _Subscription
from replica.compute._peers import PeerRecord, PeerView
from replica.compute._state import ComputeState
from replica.engine._arrangement import Arrangement, Cursor, ReadHold
from replica.engine._exchange import Exchange, Fabric
from replica.engine._exports import IndexPart
from replica.model._listeners import Listeners
from replica.model._metrics import Metrics
from replica.runtime._connection import (
    CommandLine,
    ConnectionOrder,
    ResponseLine,
    RuntimeConnection,
    ServerEnd,
)
from replica.runtime._faults import Faults
from replica.runtime._merge import PartitionedState
from replica.runtime._process import ChannelAdapter, Process, _Merge
from replica.runtime._worker import Worker
from replica.storage._shard import Partitioned, Shard, ShardCatalog
from sharing._registry import Peer, PeerHold, Publisher, Registry, _Slot

SHARED: tuple[type, ...] = (
    # The sharing registry, and what maintenance publishes in it, which the
    # interactive runtime reads (and holds, and listens to).
    Registry,
    _Slot,
    Publisher,
    Peer,
    PeerHold,
    Arrangement,
    Cursor,
    ReadHold,
    IndexPart,
    PeerView,
    # A runtime's record of a peer's sink or one-shot export: its since,
    # which AllowCompaction moves, is read by the driver's invariant checks.
    PeerRecord,
    Listeners,
    ComputeState,
    Worker,
    # The reconcile barrier's arrivals, written by both runtimes' workers.
    ReconcileBarrier,
    BarrierState,
    # The response path, run in the worker's task up to the controller,
    # which the driver reads.
    ChannelAdapter,
    _Merge,
    PartitionedState,
    Process,
    # The connection order process 0's multiplexer writes and global worker
    # 0's adapter reads (each in a task of its own: Process.multiplex and
    # ChannelAdapter.run belong to their objects).
    ConnectionOrder,
    # A connection's commands, which the driver sends and process's
    # multiplexer takes (all that is queued at once).
    CommandLine,
    RuntimeConnection,
    ResponseLine,
    ServerEnd,
    Controller,
    _Session,
    _PendingPeek,
    _Subscription,
    # Storage, exchanges, metrics and faults, shared across runtimes and
    # with the driver.
    ShardCatalog,
    Shard,
    Partitioned,
    Exchange,
    Fabric,
    Metrics,
    Faults,
)
