"""A Solo replica end to end, on the mock clock: hydration, reconciliation
across reconnects, command sequencing across workers and processes, and bad
input (DESIGN.md §2.1-2.6)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest
import trio
import trio.testing

import actors
from replica import (
    AllowCompaction,
    CommandRejected,
    Controller,
    CreateDataflow,
    CreateInstance,
    DataflowDescription,
    Frontier,
    GlobalId,
    IndexPart,
    InitializationComplete,
    InstanceConfig,
    PeekFailedError,
    Replica,
    ReplicaConfig,
    Schedule,
    ShardCatalog,
    UpdateConfiguration,
    WriteBelowUpperError,
    open_controller,
    open_replica,
)

U = GlobalId.user


def index(id: int, key: tuple[int, ...] = (0,), as_of: int = 0) -> DataflowDescription:
    return DataflowDescription.index(id - 1, "data", id, key, as_of)


@asynccontextmanager
async def replica_and_controller(
    processes: int = 1, workers: int = 1, trace: actors.Trace | None = None
) -> AsyncIterator[tuple[Replica, Controller, ShardCatalog]]:
    shards = ShardCatalog()
    config = ReplicaConfig(processes=processes, workers=workers)
    with trio.fail_after(600):  # virtual seconds: a hang fails fast
        async with (
            open_replica(config, shards=shards, tracer=trace) as replica,
            open_controller(replica) as controller,
        ):
            yield replica, controller, shards


async def initialize(controller: Controller, *indexes: DataflowDescription) -> None:
    await controller.send(CreateInstance())
    for dataflow in indexes:
        await controller.send(CreateDataflow(dataflow))
        await controller.send(Schedule(dataflow.exports[0]))
    await controller.send(InitializationComplete())


async def test_an_index_hydrates_and_answers_reads() -> None:
    async with replica_and_controller(workers=2) as (_, controller, shards):
        await controller.send(CreateInstance())
        await controller.send(UpdateConfiguration((("k", "v"),)))
        await controller.send(InitializationComplete())
        shards.shard("data").write(0, [(i, f"r{i}") for i in range(100)])
        await controller.send(CreateDataflow(index(1001)))
        await controller.send(Schedule(1001))
        assert await controller.await_frontier(1001, 1) == Frontier.at(1)
        rows = await controller.peek(1001, 0)
        assert rows == [(i, f"r{i}") for i in range(100)]


async def test_a_dataflow_does_nothing_until_it_is_scheduled() -> None:
    async with replica_and_controller() as (_, controller, shards):
        shards.shard("data").write(0, [(1,)])
        await initialize(controller)
        await controller.send(CreateDataflow(index(1001)))
        await trio.testing.wait_all_tasks_blocked()
        assert controller.frontier(1001) is None
        await controller.send(Schedule(1001))
        assert await controller.await_frontier(1001, 1) == Frontier.at(1)


async def test_reconcile_keeps_compatible_drops_unmentioned_and_rebuilds_incompatible() -> None:
    async with replica_and_controller(workers=2) as (replica, controller, shards):
        data = shards.shard("data")
        data.write(0, [(i, i % 3) for i in range(30)])
        kept, dropped, changed = index(1001), index(2001), index(3001, key=(0,))
        await initialize(controller, kept, dropped, changed)
        await controller.await_frontier(3001, 1)
        assert [w.state.builds for w in replica.maintenance.workers] == [3, 3]

        await controller.connect()
        await initialize(controller, kept, index(3001, key=(1,)))
        data.write(1, [(100, 0)])  # data keeps flowing into the kept index
        await controller.await_frontier(1001, 2)
        assert len(await controller.peek(1001, 1)) == 31
        assert [w.state.builds for w in replica.maintenance.workers] == [4, 4]  # only 3001 rebuilt
        with pytest.raises(PeekFailedError, match=r"^collection ID does not exist$"):
            await controller.peek(2001, 1)
        await controller.await_frontier(3001, 2)
        assert len(await controller.peek(3001, 1)) == 31
        assert sorted(replica.maintenance.workers[0].state.collections) == [U(1001), U(3001)]


async def test_frontiers_are_reported_afresh_to_a_new_connection() -> None:
    async with replica_and_controller() as (_, controller, shards):
        shards.shard("data").write(4, [(1,)])
        await initialize(controller, index(1001))
        await controller.await_frontier(1001, 5)
        await controller.connect()
        assert controller.frontier(1001) is None
        await initialize(controller, index(1001))
        assert await controller.await_frontier(1001, 5) == Frontier.at(5)


@pytest.mark.parametrize("processes", [1, 2])
@pytest.mark.parametrize("workers", [1, 2, 4])
async def test_every_worker_of_a_runtime_applies_the_same_commands(
    processes: int, workers: int
) -> None:
    trace = actors.Trace()
    async with replica_and_controller(processes, workers, trace) as (replica, controller, shards):
        shards.shard("data").write(0, [(i,) for i in range(40)])
        await initialize(controller, index(1001), index(2001))
        await controller.send(AllowCompaction(2001, Frontier.at(0)))
        await controller.connect()
        await initialize(controller, index(1001, key=(0,), as_of=0))
        await controller.await_frontier(1001, 1)
        assert len(await controller.peek(1001, 0)) == 40

    names = [f"maintenance/p{p}/w{w}" for p in range(processes) for w in range(workers)]
    delivered = {
        name: [(e.seq, e.detail) for e in trace.for_actor(name) if e.kind == "delivered"]
        for name in names
    }
    first = delivered[names[0]]
    # hello, create-instance, 2 x (create, schedule), init-complete, compaction;
    # hello, create-instance, create, schedule, init-complete; the peek
    assert len(first) == 14
    assert all(sequence == first for sequence in delivered.values())
    applied = [worker.applied for worker in replica.maintenance.workers]
    assert len(applied) == processes * workers
    assert all(sequence == applied[0] for sequence in applied)


async def test_a_worker_whose_process_never_recorded_the_connection_still_reconciles() -> None:
    async with replica_and_controller(processes=2) as (replica, controller, shards):
        shards.shard("data").write(0, [(i,) for i in range(10)])
        await initialize(controller, index(1001))
        await controller.await_frontier(1001, 1)

        nonce = await controller.connect(lose_hello_at={1})
        await initialize(controller, index(1001, key=(1,)))
        await controller.await_frontier(1001, 1)
        assert nonce in replica.processes[0].order
        assert nonce not in replica.processes[1].order
        remote = replica.maintenance.worker(1, 0)
        assert remote.position == 1
        part = remote.state.collections[U(1001)]
        assert isinstance(part, IndexPart)
        assert part.dataflow.description.index_exports[0].key == (1,)
        assert len(await controller.peek(1001, 0)) == 10


async def test_a_reconnect_during_a_reconciliation_restarts_it() -> None:
    async with replica_and_controller(workers=2) as (replica, controller, shards):
        shards.shard("data").write(0, [(1,), (2,)])
        await initialize(controller, index(1001))
        await controller.await_frontier(1001, 1)
        await controller.connect()
        await controller.send(CreateInstance())
        await controller.send(CreateDataflow(index(1001, key=(1,))))
        await trio.testing.wait_all_tasks_blocked()
        assert replica.maintenance.workers[0].buffer is not None  # still reconciling
        await controller.connect()
        await initialize(controller, index(1001))
        await controller.await_frontier(1001, 1)
        assert [w.position for w in replica.maintenance.workers] == [2, 2]
        assert [w.state.builds for w in replica.maintenance.workers] == [1, 1]  # never rebuilt


async def test_a_read_that_cannot_become_ready_waits_until_the_client_gives_up() -> None:
    async with replica_and_controller() as (_, controller, shards):
        shards.shard("data").write(0, [(1,)])
        await initialize(controller, index(1001))
        start = trio.current_time()
        with trio.move_on_after(30):
            await controller.peek(1001, 5)
        assert trio.current_time() - start == 30
        shards.shard("data").write(5, [(2,)])
        assert await controller.peek(1001, 5) == [(1,), (2,)]


async def test_bad_input_gets_clear_errors_and_the_replica_keeps_serving() -> None:
    async with replica_and_controller(processes=2, workers=2) as (_, controller, shards):
        data = shards.shard("data")
        data.write(0, [(1,)])
        await initialize(controller, index(1001))
        await controller.send(AllowCompaction(1001, Frontier.at(1)))

        await controller.send(CreateInstance(InstanceConfig((("other", "config"),))))
        await controller.send(AllowCompaction(1001, Frontier.at(0)))
        with pytest.raises(PeekFailedError, match=r"^collection ID does not exist$"):
            await controller.peek(4242, 0)
        with pytest.raises(
            PeekFailedError, match=r"^read at ts 0 is before the compaction frontier 1$"
        ):
            await controller.peek(1001, 0)
        with pytest.raises(WriteBelowUpperError):
            data.write(0, [(2,)])
        await trio.testing.wait_all_tasks_blocked()
        assert [(type(r.command).__name__, r.reason) for r in controller.rejections] == [
            ("CreateInstance", "instance configuration differs from the running instance"),
            (
                "AllowCompaction",
                "allow compaction of collection u1001 to 0 is before its compaction frontier 1",
            ),
        ]
        assert all(isinstance(r, CommandRejected) for r in controller.rejections)
        data.write(1, [(3,)])
        assert await controller.peek(1001, 1) == [(1,), (3,)]
