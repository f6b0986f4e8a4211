"""An executable model of a compute replica, built on the actor framework.

Processes, runtimes of workers, the command channel, channel adapters, the
multiplexing client, reconciliation and a controller (docs/protocol.md), in
layers, each a package importing only those below it (docs/architecture.md):
``replica.model``, ``replica.protocol``, ``replica.storage``,
``replica.engine``, ``replica.compute``, ``replica.runtime``,
``replica.client``, then ``replica.procs`` and ``replica.driver``. This
package's face re-exports what a user of the replica needs, each name loaded
when first used: importing ``replica.model`` (or any one layer) loads that
layer and those below it, not every layer.
"""

import importlib as _importlib
import logging as _logging
import typing as _typing

if _typing.TYPE_CHECKING:
    from .client._controller import Controller as Controller
    from .client._controller import open_controller as open_controller
    from .client._errors import PeekCanceledError as PeekCanceledError
    from .client._errors import PeekFailedError as PeekFailedError
    from .client._errors import ReplicaAbortedError as ReplicaAbortedError
    from .compute._holds import HoldMechanism as HoldMechanism
    from .compute._peers import PeerView as PeerView
    from .compute._reconcile import ReconcilePlan as ReconcilePlan
    from .compute._reconcile import Running as Running
    from .compute._reconcile import plan_reconcile as plan_reconcile
    from .compute._state import ComputeState as ComputeState
    from .engine._arrangement import Arrangement as Arrangement
    from .engine._arrangement import partition_of as partition_of
    from .engine._arrangement import stable_hash as stable_hash
    from .engine._exports import Dataflow as Dataflow
    from .engine._exports import IndexPart as IndexPart
    from .engine._exports import SinkPart as SinkPart
    from .model._dataflow import Build as Build
    from .model._dataflow import DataflowClass as DataflowClass
    from .model._dataflow import DataflowDescription as DataflowDescription
    from .model._dataflow import IndexExport as IndexExport
    from .model._dataflow import IndexImport as IndexImport
    from .model._dataflow import MaterializedView as MaterializedView
    from .model._dataflow import SinkExport as SinkExport
    from .model._dataflow import SourceImport as SourceImport
    from .model._dataflow import Subscribe as Subscribe
    from .model._errors import ComputeError as ComputeError
    from .model._frontier import Frontier as Frontier
    from .model._ids import GlobalId as GlobalId
    from .model._ids import IdError as IdError
    from .model._metrics import Metrics as Metrics
    from .model._plan import Aggregate as Aggregate
    from .model._plan import Get as Get
    from .model._plan import Join as Join
    from .model._plan import Plan as Plan
    from .model._plan import PlanError as PlanError
    from .model._plan import Project as Project
    from .model._plan import Reduce as Reduce
    from .model._rows import Datum as Datum
    from .model._rows import Row as Row
    from .model._rows import Update as Update
    from .model._rows import row_order as row_order
    from .protocol import AllowCompaction as AllowCompaction
    from .protocol import AllowWrites as AllowWrites
    from .protocol import Canceled as Canceled
    from .protocol import CancelPeek as CancelPeek
    from .protocol import Command as Command
    from .protocol import CommandRejected as CommandRejected
    from .protocol import CreateDataflow as CreateDataflow
    from .protocol import CreateInstance as CreateInstance
    from .protocol import Frontiers as Frontiers
    from .protocol import Hello as Hello
    from .protocol import InitializationComplete as InitializationComplete
    from .protocol import InstanceConfig as InstanceConfig
    from .protocol import Peek as Peek
    from .protocol import PeekError as PeekError
    from .protocol import PeekResponse as PeekResponse
    from .protocol import ProtocolError as ProtocolError
    from .protocol import Response as Response
    from .protocol import Rows as Rows
    from .protocol import Schedule as Schedule
    from .protocol import SubscribeBatch as SubscribeBatch
    from .protocol import UpdateConfiguration as UpdateConfiguration
    from .runtime._connection import ConnectionOrder as ConnectionOrder
    from .runtime._faults import FaultPlan as FaultPlan
    from .runtime._faults import Faults as Faults
    from .runtime._invariants import runtime_divergence as runtime_divergence
    from .runtime._invariants import runtimes_agreed as runtimes_agreed
    from .runtime._merge import PartitionedState as PartitionedState
    from .runtime._replica import Replica as Replica
    from .runtime._replica import ReplicaConfig as ReplicaConfig
    from .runtime._replica import ReplicaStatistics as ReplicaStatistics
    from .runtime._replica import Runtime as Runtime
    from .runtime._replica import WorkerHolds as WorkerHolds
    from .runtime._replica import open_replica as open_replica
    from .runtime._worker import SequencedCommand as SequencedCommand
    from .runtime._worker import Worker as Worker
    from .storage._errors import UpperMismatchError as UpperMismatchError
    from .storage._errors import UpperRegressionError as UpperRegressionError
    from .storage._errors import WriteBelowUpperError as WriteBelowUpperError
    from .storage._shard import Shard as Shard
    from .storage._shard import ShardCatalog as ShardCatalog

_FROM: dict[str, str] = {
    "Controller": ".client._controller",
    "open_controller": ".client._controller",
    "PeekCanceledError": ".client._errors",
    "PeekFailedError": ".client._errors",
    "ReplicaAbortedError": ".client._errors",
    "PeerView": ".compute._peers",
    "ReconcilePlan": ".compute._reconcile",
    "Running": ".compute._reconcile",
    "plan_reconcile": ".compute._reconcile",
    "ComputeState": ".compute._state",
    "Arrangement": ".engine._arrangement",
    "partition_of": ".engine._arrangement",
    "stable_hash": ".engine._arrangement",
    "Dataflow": ".engine._exports",
    "IndexPart": ".engine._exports",
    "SinkPart": ".engine._exports",
    "Build": ".model._dataflow",
    "DataflowClass": ".model._dataflow",
    "DataflowDescription": ".model._dataflow",
    "IndexExport": ".model._dataflow",
    "IndexImport": ".model._dataflow",
    "MaterializedView": ".model._dataflow",
    "SinkExport": ".model._dataflow",
    "SourceImport": ".model._dataflow",
    "Subscribe": ".model._dataflow",
    "ComputeError": ".model._errors",
    "Frontier": ".model._frontier",
    "GlobalId": ".model._ids",
    "IdError": ".model._ids",
    "Metrics": ".model._metrics",
    "Aggregate": ".model._plan",
    "Get": ".model._plan",
    "Join": ".model._plan",
    "Plan": ".model._plan",
    "PlanError": ".model._plan",
    "Project": ".model._plan",
    "Reduce": ".model._plan",
    "Datum": ".model._rows",
    "Row": ".model._rows",
    "Update": ".model._rows",
    "row_order": ".model._rows",
    "AllowCompaction": ".protocol",
    "AllowWrites": ".protocol",
    "Canceled": ".protocol",
    "CancelPeek": ".protocol",
    "Command": ".protocol",
    "CommandRejected": ".protocol",
    "CreateDataflow": ".protocol",
    "CreateInstance": ".protocol",
    "Frontiers": ".protocol",
    "HoldMechanism": ".compute._holds",
    "Hello": ".protocol",
    "InitializationComplete": ".protocol",
    "InstanceConfig": ".protocol",
    "Peek": ".protocol",
    "PeekError": ".protocol",
    "PeekResponse": ".protocol",
    "ProtocolError": ".protocol",
    "Response": ".protocol",
    "Rows": ".protocol",
    "Schedule": ".protocol",
    "SubscribeBatch": ".protocol",
    "UpdateConfiguration": ".protocol",
    "ConnectionOrder": ".runtime._connection",
    "FaultPlan": ".runtime._faults",
    "Faults": ".runtime._faults",
    "runtime_divergence": ".runtime._invariants",
    "runtimes_agreed": ".runtime._invariants",
    "PartitionedState": ".runtime._merge",
    "Replica": ".runtime._replica",
    "ReplicaConfig": ".runtime._replica",
    "ReplicaStatistics": ".runtime._replica",
    "WorkerHolds": ".runtime._replica",
    "Runtime": ".runtime._replica",
    "open_replica": ".runtime._replica",
    "SequencedCommand": ".runtime._worker",
    "Worker": ".runtime._worker",
    "UpperMismatchError": ".storage._errors",
    "UpperRegressionError": ".storage._errors",
    "WriteBelowUpperError": ".storage._errors",
    "Shard": ".storage._shard",
    "ShardCatalog": ".storage._shard",
}
"""Where each public name of the face is defined (relative to ``replica``)."""

__all__ = sorted(_FROM)


def __getattr__(name: str) -> object:
    module = _FROM.get(name)
    if module is None:
        raise AttributeError(f"module 'replica' has no attribute {name!r}")
    value = getattr(_importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_FROM})


# A library logs; the application decides where logs go (nowhere by default).
_logging.getLogger("replica").addHandler(_logging.NullHandler())
