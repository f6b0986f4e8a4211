"""An executable model of a compute replica, built on the actor framework.

See DESIGN.md §2: processes, a runtime of workers, the command channel,
channel adapters, the multiplexing client, reconciliation, and a controller.
"""

import logging as _logging

from ._arrangement import Arrangement as Arrangement
from ._arrangement import partition_of as partition_of
from ._arrangement import stable_hash as stable_hash
from ._connection import ConnectionOrder as ConnectionOrder
from ._controller import Controller as Controller
from ._controller import open_controller as open_controller
from ._dataflow import Dataflow as Dataflow
from ._dataflow import IndexPart as IndexPart
from ._dataflow import PeerView as PeerView
from ._dataflow import SinkPart as SinkPart
from ._errors import ComputeError as ComputeError
from ._errors import PeekCanceledError as PeekCanceledError
from ._errors import PeekFailedError as PeekFailedError
from ._errors import ProtocolError as ProtocolError
from ._errors import UpperMismatchError as UpperMismatchError
from ._errors import UpperRegressionError as UpperRegressionError
from ._errors import WriteBelowUpperError as WriteBelowUpperError
from ._faults import FaultPlan as FaultPlan
from ._faults import Faults as Faults
from ._ids import GlobalId as GlobalId
from ._ids import IdError as IdError
from ._invariants import runtime_divergence as runtime_divergence
from ._invariants import runtimes_agreed as runtimes_agreed
from ._merge import PartitionedState as PartitionedState
from ._plan import Aggregate as Aggregate
from ._plan import Get as Get
from ._plan import Join as Join
from ._plan import Plan as Plan
from ._plan import PlanError as PlanError
from ._plan import Project as Project
from ._plan import Reduce as Reduce
from ._protocol import AllowCompaction as AllowCompaction
from ._protocol import AllowWrites as AllowWrites
from ._protocol import Build as Build
from ._protocol import Canceled as Canceled
from ._protocol import CancelPeek as CancelPeek
from ._protocol import Command as Command
from ._protocol import CommandRejected as CommandRejected
from ._protocol import CreateDataflow as CreateDataflow
from ._protocol import CreateInstance as CreateInstance
from ._protocol import DataflowDescription as DataflowDescription
from ._protocol import Datum as Datum
from ._protocol import Frontier as Frontier
from ._protocol import Frontiers as Frontiers
from ._protocol import Hello as Hello
from ._protocol import IndexExport as IndexExport
from ._protocol import IndexImport as IndexImport
from ._protocol import InitializationComplete as InitializationComplete
from ._protocol import InstanceConfig as InstanceConfig
from ._protocol import MaterializedView as MaterializedView
from ._protocol import Peek as Peek
from ._protocol import PeekError as PeekError
from ._protocol import PeekResponse as PeekResponse
from ._protocol import Response as Response
from ._protocol import Row as Row
from ._protocol import Rows as Rows
from ._protocol import Schedule as Schedule
from ._protocol import SinkExport as SinkExport
from ._protocol import SourceImport as SourceImport
from ._protocol import Subscribe as Subscribe
from ._protocol import SubscribeBatch as SubscribeBatch
from ._protocol import Update as Update
from ._protocol import UpdateConfiguration as UpdateConfiguration
from ._protocol import row_order as row_order
from ._reconcile import ReconcilePlan as ReconcilePlan
from ._reconcile import Running as Running
from ._reconcile import plan_reconcile as plan_reconcile
from ._replica import Replica as Replica
from ._replica import ReplicaConfig as ReplicaConfig
from ._replica import Runtime as Runtime
from ._replica import open_replica as open_replica
from ._shard import Shard as Shard
from ._shard import ShardCatalog as ShardCatalog
from ._sinks import Metrics as Metrics
from ._state import ComputeState as ComputeState
from ._worker import SequencedCommand as SequencedCommand
from ._worker import Worker as Worker

# A library logs; the application decides where logs go (nowhere by default).
_logging.getLogger("replica").addHandler(_logging.NullHandler())
