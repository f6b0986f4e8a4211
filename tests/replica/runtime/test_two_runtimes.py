"""Two runtimes in one replica (DESIGN.md §2.6-2.8): the race when an index is
recreated at the same as_of, its fix by the reconcile barrier, routing, and a
waiting worker that keeps stepping."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest
import trio
import trio.testing

import actors
from barrier import BarrierBrokenError
from replica import (
    AllowCompaction,
    Controller,
    CreateDataflow,
    CreateInstance,
    DataflowDescription,
    Frontier,
    GlobalId,
    IndexPart,
    InitializationComplete,
    Peek,
    PeekFailedError,
    PeerView,
    Replica,
    ReplicaConfig,
    Schedule,
    ShardCatalog,
    open_controller,
    open_replica,
)

U = GlobalId.user

OLD = DataflowDescription.index(1000, "data", 1001, (0,), 0)
NEW = DataflowDescription.index(1000, "data", 1001, (1,), 0)  # same id and as_of, new key


@asynccontextmanager
async def two_runtimes(
    processes: int = 1, workers: int = 1, *, barrier: bool = True, trace: actors.Trace | None = None
) -> AsyncIterator[tuple[Replica, Controller, ShardCatalog]]:
    shards = ShardCatalog()
    config = ReplicaConfig(processes, workers, interactive=True, barrier=barrier)
    async with (
        open_replica(config, shards=shards, tracer=trace) as replica,
        open_controller(replica) as controller,
    ):
        yield replica, controller, shards


async def send_all(controller: Controller, *commands: object) -> None:
    for command in commands:
        await controller.send(command)  # type: ignore[arg-type]


async def hydrate(controller: Controller, shards: ShardCatalog) -> None:
    shards.shard("data").write(0, [(1, "a"), (2, "b")])
    await send_all(controller, CreateInstance(), InitializationComplete())
    await send_all(controller, CreateDataflow(OLD), Schedule(1001))
    await controller.await_frontier(1001, 1)
    assert await controller.peek(1001, 0) == [(1, "a"), (2, "b")]


async def recreate_while_maintenance_is_held(
    replica: Replica, controller: Controller, shards: ShardCatalog
) -> None:
    """Reconnect and recreate 1001 at the same as_of under a new key, with the
    maintenance runtime held until the interactive runtime has done all it can."""
    replica.hold("maintenance")
    await controller.connect()
    await send_all(
        controller, CreateInstance(), CreateDataflow(NEW), Schedule(1001), InitializationComplete()
    )
    await trio.testing.wait_all_tasks_blocked()
    replica.release("maintenance")
    await trio.testing.wait_all_tasks_blocked()
    shards.shard("data").write(1, [(3, "c")])


def mark_index(trace: actors.Trace, actor: str, detail: str) -> int:
    """Where in the trace ``actor`` marked ``detail`` while reconciling position 1."""
    events = list(trace)
    reconciling = next(
        i for i, e in enumerate(events) if e.actor == actor and e.detail == "reconcile position=1"
    )
    return next(
        i
        for i, e in enumerate(events)
        if i > reconciling
        and e.actor == actor
        and e.detail is not None
        and e.detail.startswith(detail)
    )


@pytest.mark.parametrize("processes", [1, 2])
@pytest.mark.parametrize("workers", [1, 2])
async def test_the_interactive_runtime_creates_only_after_maintenance_dropped(
    processes: int, workers: int
) -> None:
    trace = actors.Trace()
    async with two_runtimes(processes, workers, trace=trace) as (replica, controller, shards):
        await hydrate(controller, shards)
        await recreate_while_maintenance_is_held(replica, controller, shards)
        with trio.fail_after(30):
            assert await controller.peek(1001, 1) == [(1, "a"), (2, "b"), (3, "c")]
        for worker in replica.interactive.workers:
            view = worker.state.collections[U(1001)]
            assert isinstance(view, PeerView)
            assert view.peer.publisher is not None
            assert view.peer.publisher.serial == 2  # the new incarnation
            assert not view.peer.frozen
    for p in range(processes):
        for w in range(workers):
            dropped = mark_index(trace, f"maintenance/p{p}/w{w}", "drop phase")
            created = mark_index(trace, f"interactive/p{p}/w{w}", "create phase")
            assert dropped < created


@pytest.mark.parametrize("processes", [1, 2])
@pytest.mark.parametrize("workers", [1, 2])
async def test_without_the_barrier_the_peer_binds_the_frozen_incarnation(
    processes: int, workers: int
) -> None:
    trace = actors.Trace()
    async with two_runtimes(processes, workers, barrier=False, trace=trace) as (
        replica,
        controller,
        shards,
    ):
        await hydrate(controller, shards)
        await recreate_while_maintenance_is_held(replica, controller, shards)
        # Only the renderer reports (the design of record): maintenance's
        # new incarnation says the index is readable at 1 ...
        with trio.fail_after(30):
            await controller.await_frontier(1001, 2)
        # ... while interactive's peer, bound to the dropped incarnation,
        # cannot answer a read at it: the frozen view, now behind a frontier
        # that promises the read.
        with trio.move_on_after(30) as read:
            await controller.peek(1001, 1)
        assert read.cancelled_caught, "a read bound to a frozen incarnation cannot answer"
        for worker in replica.interactive.workers:
            view = worker.state.collections[U(1001)]
            assert isinstance(view, PeerView)
            assert view.peer.frozen
            assert view.peer.publisher is not None
            assert view.peer.publisher.serial == 1  # the old incarnation
    for p in range(processes):
        for w in range(workers):
            created = mark_index(trace, f"interactive/p{p}/w{w}", "create phase")
            dropped = mark_index(trace, f"maintenance/p{p}/w{w}", "drop phase")
            assert created < dropped


async def test_peeks_go_to_the_interactive_runtime_only() -> None:
    async with two_runtimes(workers=2) as (replica, controller, shards):
        await hydrate(controller, shards)
        maintenance = [c for _, _, c in replica.maintenance.workers[0].applied]
        interactive = [c for _, _, c in replica.interactive.workers[0].applied]
        assert not any(isinstance(c, Peek) for c in maintenance)
        assert sum(isinstance(c, Peek) for c in interactive) == 1
        assert [c for c in interactive if not isinstance(c, Peek)] == maintenance


async def test_a_waiting_worker_keeps_stepping_its_dataflows_and_reads_no_command() -> None:
    kept = DataflowDescription.index(2000, "data", 2001, (0,), 0)
    async with two_runtimes() as (replica, controller, shards):
        await hydrate(controller, shards)
        await send_all(controller, CreateDataflow(kept), Schedule(2001))
        await controller.await_frontier(2001, 1)
        replica.hold("interactive")
        await controller.connect()
        await send_all(
            controller,
            CreateInstance(),
            CreateDataflow(kept),
            Schedule(2001),
            CreateDataflow(NEW),
            Schedule(1001),
            InitializationComplete(),
        )
        await trio.testing.wait_all_tasks_blocked()
        worker = replica.maintenance.workers[0]
        applied = len(worker.applied)
        assert U(1001) not in worker.state.collections  # dropped, not yet created: waiting
        shards.shard("data").write(5, [(9, "z")])
        await trio.testing.wait_all_tasks_blocked()
        part = worker.state.collections[U(2001)]
        assert isinstance(part, IndexPart)
        assert part.arrangement is not None
        assert part.arrangement.upper == 6  # still stepping
        assert len(worker.applied) == applied  # but applying no command
        replica.release("interactive")
        await controller.await_frontier(1001, 6)
        assert await controller.peek(2001, 5) == [(1, "a"), (2, "b"), (9, "z")]


async def test_a_worker_whose_process_never_recorded_the_connection_still_reconciles() -> None:
    async with two_runtimes(processes=2) as (replica, controller, shards):
        await hydrate(controller, shards)
        nonce = await controller.connect(lose_hello_at={1})
        await send_all(
            controller,
            CreateInstance(),
            CreateDataflow(NEW),
            Schedule(1001),
            InitializationComplete(),
        )
        assert await controller.await_frontier(1001, 1) == Frontier.at(1)
        assert nonce not in replica.processes[1].order
        for runtime in (replica.maintenance, replica.interactive):
            assert runtime.worker(1, 0).position == 1
        assert await controller.peek(1001, 0) == [(1, "a"), (2, "b")]


async def test_solo_skips_the_barrier() -> None:
    trace = actors.Trace()
    async with open_replica(ReplicaConfig(workers=2), tracer=trace) as replica:
        assert replica.barriers == {}
        assert all(worker.barrier is None for worker in replica.maintenance.workers)
        async with open_controller(replica) as controller:
            await send_all(controller, CreateInstance(), InitializationComplete())
            await controller.connect()
            await send_all(controller, CreateInstance(), InitializationComplete())
            await trio.testing.wait_all_tasks_blocked()
    assert not any("barrier" in (event.detail or "") for event in trace)
    assert any(event.detail == "create phase" for event in trace)


def leaves(group: BaseException) -> list[BaseException]:
    if isinstance(group, BaseExceptionGroup):
        return [leaf for inner in group.exceptions for leaf in leaves(inner)]
    return [group]


async def kill_the_barrier_while_interactive_waits() -> None:
    async with two_runtimes() as (replica, controller, shards):
        await hydrate(controller, shards)
        replica.hold("maintenance")
        await controller.connect()
        await send_all(controller, CreateInstance(), InitializationComplete())
        await trio.testing.wait_all_tasks_blocked()
        await replica.barriers[0, 0].ref.kill()
        await trio.sleep_forever()


async def test_a_dead_barrier_fails_the_waiting_worker_instead_of_hanging() -> None:
    with pytest.raises(BaseExceptionGroup) as info:
        await kill_the_barrier_while_interactive_waits()
    broken = [leaf for leaf in leaves(info.value) if isinstance(leaf, BarrierBrokenError)]
    assert [str(error) for error in broken] == [
        "reconcile barrier 'barrier/p0/w0' stopped while interactive waited at position 1"
    ]


async def test_the_interactive_runtime_holds_reads_at_its_own_compaction_frontier() -> None:
    async with two_runtimes(workers=2) as (replica, controller, shards):
        await hydrate(controller, shards)
        shards.shard("data").write(3, [(4, "d")])
        await send_all(controller, AllowCompaction(1001, Frontier.at(2)))
        with pytest.raises(
            PeekFailedError, match=r"^read at ts 1 is before the compaction frontier 2$"
        ):
            await controller.peek(1001, 1)
        assert await controller.peek(1001, 3) == [(1, "a"), (2, "b"), (4, "d")]
        views = [worker.state.collections[U(1001)] for worker in replica.interactive.workers]
        assert [view.since for view in views] == [2, 2]
        assert all(isinstance(view, PeerView) for view in views)
