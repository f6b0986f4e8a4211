"""The replica's public names are pinned: its face (``replica``) and its data
model (``replica.model``), as ``actors``' are (tests/actors/test_public_api.py).
A name added or removed is a decision, made here."""

from __future__ import annotations

import pytest

import replica
import replica.model

LAYERS = {
    "client",
    "compute",
    "engine",
    "model",
    "protocol",
    "runtime",
    "storage",
    "procs",
    "driver",
}
"""The layers: subpackages, bound on the package once imported."""

REPLICA = {
    "Aggregate",
    "AllowCompaction",
    "AllowWrites",
    "Arrangement",
    "Build",
    "CancelPeek",
    "Canceled",
    "Command",
    "CommandRejected",
    "ComputeError",
    "ComputeState",
    "ConnectionOrder",
    "Controller",
    "CreateDataflow",
    "CreateInstance",
    "Dataflow",
    "DataflowClass",
    "DataflowDescription",
    "Datum",
    "FaultPlan",
    "Faults",
    "Frontier",
    "Frontiers",
    "Get",
    "GlobalId",
    "Hello",
    "HoldMechanism",
    "IdError",
    "IndexExport",
    "IndexImport",
    "IndexPart",
    "InitializationComplete",
    "InstanceConfig",
    "Join",
    "MaterializedView",
    "Metrics",
    "PartitionedState",
    "Peek",
    "PeekCanceledError",
    "PeekError",
    "PeekFailedError",
    "ReplicaAbortedError",
    "PeekResponse",
    "PeerView",
    "Plan",
    "PlanError",
    "Project",
    "ProtocolError",
    "ReconcilePlan",
    "Reduce",
    "Replica",
    "ReplicaConfig",
    "ReplicaStatistics",
    "WorkerHolds",
    "Response",
    "Row",
    "Rows",
    "Running",
    "Runtime",
    "Schedule",
    "SequencedCommand",
    "Shard",
    "ShardCatalog",
    "SinkExport",
    "SinkPart",
    "SourceImport",
    "Subscribe",
    "SubscribeBatch",
    "Update",
    "UpdateConfiguration",
    "UpperMismatchError",
    "UpperRegressionError",
    "Worker",
    "WriteBelowUpperError",
    "open_controller",
    "open_replica",
    "partition_of",
    "plan_reconcile",
    "row_order",
    "runtime_divergence",
    "runtimes_agreed",
    "stable_hash",
}

MODEL = {
    "Aggregate",
    "AggregateExpr",
    "AggregateFunc",
    "Build",
    "COMPLETE",
    "Call",
    "Column",
    "ComputeError",
    "Constant",
    "DataflowClass",
    "DataflowDescription",
    "Datum",
    "EvalError",
    "Filter",
    "FlatMap",
    "Frontier",
    "Get",
    "GlobalId",
    "IdError",
    "IndexExport",
    "IndexImport",
    "Join",
    "Listeners",
    "Literal",
    "MAX_RESULT_ROWS",
    "MAX_SERIES",
    "Map",
    "MaterializedView",
    "Metrics",
    "Negate",
    "Plan",
    "PlanError",
    "Project",
    "Reduce",
    "ResultTooLargeError",
    "Reversed",
    "Row",
    "Scalar",
    "ScalarFunc",
    "SinkExport",
    "SourceImport",
    "Subscribe",
    "Threshold",
    "TopK",
    "Union",
    "Update",
    "accumulate",
    "consolidate",
    "row_order",
    "rows_of_counts",
    "table_rows",
    "threshold_count",
    "top_k_rows",
}


def test_the_replicas_public_names_are_pinned() -> None:
    # The face loads each name when first used: what it offers is __all__
    # (and dir), each of which resolves.
    assert set(replica.__all__) == REPLICA
    assert {name for name in dir(replica) if not name.startswith("_")} - LAYERS == REPLICA
    for name in REPLICA:
        assert getattr(replica, name) is not None, name
    with pytest.raises(AttributeError, match="no attribute 'Nothing'"):
        replica.Nothing  # noqa: B018


def test_the_models_public_names_are_pinned() -> None:
    assert {name for name in vars(replica.model) if not name.startswith("_")} == MODEL


def test_the_face_and_the_model_export_the_same_objects() -> None:
    for name in REPLICA & MODEL:
        assert getattr(replica, name) is getattr(replica.model, name), name


def test_the_models_errors_are_the_replicas() -> None:
    for error in (
        replica.model.PlanError,
        replica.model.EvalError,
        replica.model.IdError,
        replica.model.ResultTooLargeError,
    ):
        assert issubclass(error, replica.ComputeError), error
        assert issubclass(error, ValueError), error  # as they were
