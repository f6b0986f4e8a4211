"""Placement by class (docs/protocol.md, "Placement by class, peers and
frontiers"): the runtime a dataflow's class places it on renders it, the
other records every export as a peer, and only the renderer reports."""

from __future__ import annotations

import attrs
import pytest
import trio

from replica import (
    AllowCompaction,
    AllowWrites,
    CreateDataflow,
    DataflowClass,
    DataflowDescription,
    Frontier,
    GlobalId,
    MaterializedView,
    Schedule,
    SinkExport,
    Subscribe,
)
from replica.compute._peers import PeerRecord, PeerView
from replica.compute._placement import interactive_dataflows, renders_interactively

from .test_two_runtimes import hydrate, send_all, two_runtimes

U = GlobalId.user
T = GlobalId.transient


def one_shot(as_of: int = 0) -> DataflowDescription:
    return attrs.evolve(
        DataflowDescription.index(T(1), "data", T(2), (0,), as_of),
        until=as_of + 1,
        dataflow_class=DataflowClass.ONE_SHOT_READ,
    )


def test_the_setting_decides_only_for_one_shot_reads() -> None:
    read, lasting = one_shot(), DataflowDescription.index(1, "s", 2, (0,), 0)
    assert renders_interactively(read, {})
    assert not renders_interactively(lasting, {})
    assert not renders_interactively(read, {"enable_compute_interactive_dataflows": "false"})
    assert renders_interactively(read, {"enable_compute_interactive_dataflows": "true"})
    # A bool's false or off turns it off (the driver refuses other values).
    assert not interactive_dataflows({"enable_compute_interactive_dataflows": "off"})
    assert interactive_dataflows({"enable_compute_interactive_dataflows": "FALSE"})


def test_the_class_is_not_part_of_a_description_s_equality() -> None:
    read = one_shot()
    assert attrs.evolve(read, dataflow_class=DataflowClass.MAINTAINED) == read
    assert DataflowClass("OneShotRead") is DataflowClass.ONE_SHOT_READ
    with pytest.raises(ValueError, match="Sometimes"):
        attrs.evolve(read, dataflow_class="Sometimes")


def test_a_one_shot_read_s_shape() -> None:
    assert one_shot().shape_misfits() == []
    lasting = attrs.evolve(
        DataflowDescription.index(1, "s", 2, (0,), 3),
        sink_exports=(SinkExport(4, 1, Subscribe()),),
        dataflow_class=DataflowClass.ONE_SHOT_READ,
    )
    assert lasting.shape_misfits() == [
        "export u2, u4 is not transient",
        "until empty is not as_of + 1 = 4",
        "sink u4 is a subscribe",
    ]
    assert DataflowDescription(0).shape_misfits() == [
        "it exports nothing",
        "until empty is not as_of + 1 = 1",
    ]


@pytest.mark.parametrize("workers", [1, 2])
async def test_each_runtime_renders_its_class_and_holds_the_others_as_peers(workers: int) -> None:
    view = attrs.evolve(
        DataflowDescription.index(3000, "data", 3001, (0,), 0),
        sink_exports=(SinkExport(3002, 3000, MaterializedView("copy")),),
    )
    async with two_runtimes(workers=workers) as (replica, controller, shards):
        await hydrate(controller, shards)
        await send_all(
            controller,
            CreateDataflow(view),
            CreateDataflow(one_shot()),
            Schedule(3001),
            Schedule(T(2)),
            AllowWrites(3002),
        )
        await controller.await_frontier(3001, 1)
        await controller.await_frontier(T(2), 1)
        for maintenance, interactive in zip(
            replica.maintenance.workers, replica.interactive.workers, strict=True
        ):
            ours, theirs = maintenance.state.collections, interactive.state.collections
            assert isinstance(ours[T(2)], PeerRecord)
            assert not isinstance(theirs[T(2)], PeerView | PeerRecord)
            assert isinstance(theirs[U(3001)], PeerView)
            assert isinstance(theirs[U(3002)], PeerRecord)
            assert not isinstance(ours[U(3002)], PeerView | PeerRecord)
        assert replica.processes[0].owners[T(2)] == ("interactive",)
        assert replica.processes[0].owners[U(3001)] == ("maintenance",)
        # A peer's compaction frontier moves; its drop reports nothing, the
        # renderer's does.
        await send_all(controller, AllowCompaction(T(2), Frontier.at(1)))
        await trio.testing.wait_all_tasks_blocked()
        assert replica.maintenance.workers[0].state.collections[T(2)].since == 1
        await send_all(controller, AllowCompaction(T(2), Frontier.empty()))
        await controller.await_frontier(T(2), 2**64)
        for worker in [*replica.maintenance.workers, *replica.interactive.workers]:
            assert T(2) not in worker.state.collections
        assert controller.rejections == []
        assert controller.misfits == []


async def test_a_frontier_reported_for_a_peer_is_an_invariant_broken() -> None:
    from replica.runtime._invariants import peer_reports

    async with two_runtimes() as (replica, controller, shards):
        await hydrate(controller, shards)
        await send_all(controller, CreateDataflow(one_shot()), Schedule(T(2)))
        await controller.await_frontier(T(2), 1)
        assert peer_reports(replica) == []
        # As a bug would: maintenance reporting the one-shot read it holds as a peer.
        replica.maintenance.workers[0].state.reported[T(2)] = 1
        assert peer_reports(replica) == [
            "maintenance p0/w0 reported a frontier of t2, which it does not render"
        ]
