"""Sinks at several workers (DRIVER_COMPAT.md "Dataflows"): materialized
views with their correction buffer and its two counters, and subscribes."""

from __future__ import annotations

import random
from collections import Counter

import pytest
import trio

from replica import (
    AllowCompaction,
    AllowWrites,
    Build,
    CreateDataflow,
    CreateInstance,
    DataflowDescription,
    Frontier,
    Get,
    InitializationComplete,
    MaterializedView,
    Project,
    Reduce,
    ReplicaConfig,
    Row,
    Schedule,
    ShardCatalog,
    SinkExport,
    SourceImport,
    Subscribe,
    SubscribeBatch,
    Update,
    open_controller,
    open_replica,
)
from replica.engine._sinks import DELETIONS, INSERTIONS, MaterializedViewSink, SubscribeSink
from replica.model import Plan

from .harness import U, Workers, accumulate, evaluate

# Materialized views.

SOURCE = Get(1)


def materialized(plan: Plan, as_of: int = 0) -> DataflowDescription:
    """Shard ``src`` (source 1) through ``plan`` into shard ``mv`` (sink 11)."""
    return DataflowDescription(
        as_of=as_of,
        source_imports=(SourceImport(1, "src"),),
        objects_to_build=(Build(10, plan),),
        sink_exports=(SinkExport(11, 10, MaterializedView("mv")),),
    )


def sinking(workers: int, plan: Plan = SOURCE, as_of: int = 0) -> Workers:
    runtime = Workers.start(workers)
    runtime.apply(CreateDataflow(materialized(plan, as_of)))
    runtime.apply(Schedule(11))
    return runtime


def buffers(runtime: Workers) -> list[MaterializedViewSink]:
    """Sink 11's operator at each worker."""
    found = []
    for worker in range(runtime.count):
        operator = runtime.sink(11, worker).operator
        assert isinstance(operator, MaterializedViewSink)
        found.append(operator)
    return found


def buffered(runtime: Workers) -> int:
    return sum(sink.size for sink in buffers(runtime))


def occupancy(runtime: Workers) -> int:
    """What the counters say the buffers hold."""
    return runtime.metrics.value(INSERTIONS) - runtime.metrics.value(DELETIONS)


def shard_at(runtime: Workers, name: str, ts: int) -> Counter[Row]:
    return accumulate(runtime.shards.shard(name).updates, ts)


@pytest.mark.parametrize("workers", [1, 3])
def test_a_read_only_sink_appends_nothing(workers: int) -> None:
    runtime = sinking(workers)
    src = runtime.shards.shard("src")
    for ts in range(4):
        src.write(ts, [(ts, "x"), (ts + 1, "y")])
        runtime.settle()
    mv = runtime.shards.shard("mv")
    assert (mv.upper, mv.updates) == (0, [])
    assert buffered(runtime) == 8  # it knows what it would write


def test_a_read_only_sink_consolidates_its_buffer_as_the_shard_upper_moves() -> None:
    runtime = sinking(2)
    src, mv = runtime.shards.shard("src"), runtime.shards.shard("mv")
    rows = [(i, "x") for i in range(10)]
    src.write(0, rows)
    runtime.settle()
    assert buffered(runtime) == 10
    # Another writer (the old generation) writes the same rows, spread out.
    mv.append([(row, i % 3, 1) for i, row in enumerate(rows)], 0, 3)
    runtime.settle()
    assert buffered(runtime) == 0
    # ... and then one row that is not wanted: the buffer keeps its
    # retraction, at the shard's upper as that moves.
    mv.write(4, [(99, "z")])
    runtime.settle()
    mv.advance(8)
    runtime.settle()
    (owner,) = [sink for sink in buffers(runtime) if sink.owner]
    assert owner.correction == {8: {(99, "z"): -1}}
    assert mv.updates[-1] == ((99, "z"), 4, 1)  # still nothing of its own


@pytest.mark.parametrize("workers", [1, 2, 3])
def test_a_writable_sink_appends_exactly_the_desired_collection(workers: int) -> None:
    plan = Reduce(Get(1), group_key=(1,))
    runtime = sinking(workers, plan)
    src, mv = runtime.shards.shard("src"), runtime.shards.shard("mv")
    rng = random.Random(workers)
    # Each row of the source once at most: a retraction only of a row there
    # (a collection never holds a row a negative number of times).
    present: list[Row] = []
    for ts in range(8):
        updates: list[Update] = []
        for row in list(present):
            if rng.random() < 0.3:
                present.remove(row)
                updates.append((row, ts, -1))
        for _ in range(3):
            row = (ts, rng.randint(0, 2))
            if row not in present:
                present.append(row)
                updates.append((row, ts, 1))
        src.append(updates, ts, ts + 1)
        if ts == 3:
            runtime.apply(AllowWrites(11))
        runtime.settle(rng)
    assert mv.upper == src.upper
    for ts in range(mv.upper):
        assert shard_at(runtime, "mv", ts) == evaluate(plan, {U(1): shard_at(runtime, "src", ts)})
    assert buffered(runtime) == 0


def test_a_sink_made_writable_corrects_what_another_writer_left() -> None:
    runtime = sinking(2)
    src, mv = runtime.shards.shard("src"), runtime.shards.shard("mv")
    mv.write(0, [(1, "stale"), (2, "x")])
    mv.write(1, [(3, "stale")])
    src.write(0, [(2, "x"), (4, "x")])
    src.write(2, [(5, "x")])
    runtime.settle()
    assert mv.upper == 2
    runtime.apply(AllowWrites(11))
    runtime.settle()
    assert mv.upper == 3
    assert shard_at(runtime, "mv", 2) == shard_at(runtime, "src", 2)
    assert buffered(runtime) == occupancy(runtime) == 0


@pytest.mark.parametrize("seed", range(6))
def test_the_counters_difference_is_the_buffer_size_after_every_step(seed: int) -> None:
    rng = random.Random(seed)
    runtime = sinking(rng.randint(1, 3), Project((1,), Get(1)), as_of=rng.randint(0, 2))
    src, mv = runtime.shards.shard("src"), runtime.shards.shard("mv")
    for ts in range(10):
        src.write(ts, [(rng.randint(0, 5), rng.randint(0, 3)) for _ in range(rng.randint(0, 4))])
        if rng.random() < 0.3 and mv.upper <= ts:
            mv.write(ts, [(rng.randint(0, 3),)])  # another writer
        if ts == 6:
            runtime.apply(AllowWrites(11))
        for _ in range(rng.randint(1, 4)):
            woken = [worker for worker, flag in enumerate(runtime.woken) if flag]
            if woken:
                runtime.step(rng.choice(woken))
            assert occupancy(runtime) == buffered(runtime)
    runtime.settle(rng)
    assert occupancy(runtime) == buffered(runtime)


def test_the_clu_131_shape_ends_with_an_empty_buffer() -> None:
    # The old generation wrote the view at spread times; a read-only sink
    # recomputes it from a source at one time: the two halves are the same
    # rows at different times, and cancel once re-timed to the upper.
    count, spread = 2000, 10
    runtime = sinking(2)
    mv, src = runtime.shards.shard("mv"), runtime.shards.shard("src")
    mv.append([((i, f"{i:064}"), i % spread, 1) for i in range(count)], 0, spread)
    src.write(0, [(i, f"{i:064}") for i in range(count)])
    runtime.settle()
    assert buffered(runtime) == 0
    assert occupancy(runtime) == 0
    assert runtime.metrics.value(INSERTIONS) >= count  # the desired half did enter it
    assert len(mv.updates) == count  # read-only: nothing appended


def test_a_dropped_sink_takes_its_buffer_out_of_the_counters() -> None:
    runtime = sinking(2)
    runtime.shards.shard("src").write(0, [(1, "x"), (2, "x")])
    runtime.settle()
    assert occupancy(runtime) == 2
    runtime.apply(AllowCompaction(11, Frontier.empty()))
    assert occupancy(runtime) == 0


def test_every_worker_reports_a_materialized_views_frontier() -> None:
    # A collection's frontier is merged over every worker of a runtime, once
    # each reported it: a worker that does not own the sink must report too.
    runtime = sinking(2)
    runtime.shards.shard("src").write(0, [(1, "x")])
    runtime.apply(AllowWrites(11))
    runtime.settle()
    assert runtime.shards.shard("mv").upper == 1
    assert [runtime.sink(11, worker).frontier for worker in range(2)] == [Frontier.at(1)] * 2


async def test_a_replica_of_two_workers_reports_a_materialized_views_frontier() -> None:
    shards = ShardCatalog()
    async with (
        open_replica(ReplicaConfig(processes=1, workers=2), shards=shards) as replica,
        open_controller(replica) as controller,
    ):
        await controller.send(CreateInstance())
        await controller.send(InitializationComplete())
        shards.shard("src").write(0, [(1, "x")])
        await controller.send(CreateDataflow(materialized(Get(1))))
        await controller.send(Schedule(11))
        await controller.send(AllowWrites(11))
        with trio.move_on_after(60):
            await controller.await_frontier(11, 1)
        reported = controller.frontier(11)
    assert shards.shard("mv").upper == 1  # the sink did write
    assert reported == Frontier.at(1)


# Subscribes.


def subscribing(workers: int, plan: Plan, as_of: int = 0, up_to: int | None = None) -> Workers:
    runtime = Workers.start(workers)
    description = DataflowDescription(
        as_of=as_of,
        source_imports=(SourceImport(1, "src"),),
        objects_to_build=(Build(10, plan),),
        sink_exports=(SinkExport(11, 10, Subscribe(up_to)),),
    )
    runtime.apply(CreateDataflow(description))
    runtime.apply(Schedule(11))
    return runtime


def check_contiguous(batches: list[SubscribeBatch], as_of: int) -> None:
    """Each batch starts where the one before ended; nothing after an empty
    upper; every update within its batch."""
    assert batches, "a subscribe sends batches"
    assert batches[0].lower <= as_of
    lower = batches[0].lower
    for number, batch in enumerate(batches):
        assert batch.lower == lower
        upper = batch.upper.time
        assert all(
            lower <= time and (upper is None or time < upper) for _, time, _ in batch.updates
        )
        if upper is None:
            assert number == len(batches) - 1, "nothing after the final batch"
        else:
            assert upper > lower
            lower = upper


@pytest.mark.parametrize("workers", [1, 3])
def test_subscribe_batches_cover_lower_to_upper_contiguously(workers: int) -> None:
    runtime = subscribing(workers, Get(1), as_of=2)
    src = runtime.shards.shard("src")
    rng = random.Random(workers)
    for ts in range(10):
        src.write(ts, [(rng.randint(0, 9), ts) for _ in range(3)])
        if rng.random() < 0.5:
            runtime.settle(rng)
    runtime.settle(rng)
    for worker in range(workers):
        check_contiguous(runtime.batches(11, worker), 2)
        assert runtime.batches(11, worker)[-1].upper == Frontier.at(10)


def test_subscribe_batches_are_consolidated_with_net_zero_updates_dropped() -> None:
    runtime = subscribing(1, Project((0,), Get(1)))
    src = runtime.shards.shard("src")
    src.write(0, [(1, "a"), (1, "b"), (2, "a")])  # (1,) twice at 0
    src.append([((2, "a"), 1, -1), ((2, "b"), 1, 1), ((3, "a"), 1, 1), ((3, "a"), 1, -1)], 1, 2)
    runtime.settle()
    (batch,) = runtime.batches(11, 0)
    assert (batch.lower, batch.upper) == (0, Frontier.at(2))
    assert sorted(batch.updates) == [((1,), 0, 2), ((2,), 0, 1)]


def test_a_subscribe_ends_with_an_empty_upper_at_up_to_and_sends_nothing_after() -> None:
    runtime = subscribing(2, Reduce(Get(1)), up_to=3)
    src = runtime.shards.shard("src")
    for ts in range(6):
        src.write(ts, [(ts, "x")])
        runtime.settle()
    merged: list[Update] = []
    for worker in range(2):
        batches = runtime.batches(11, worker)
        check_contiguous(batches, 0)
        assert batches[-1].upper == Frontier.empty()
        merged += [update for batch in batches for update in batch.updates]
    assert all(time < 3 for _, time, _ in merged)
    assert sorted(merged) == [
        ((1,), 0, 1),
        ((1,), 1, -1),
        ((2,), 1, 1),
        ((2,), 2, -1),
        ((3,), 2, 1),
    ]
    before = [len(runtime.batches(11, worker)) for worker in range(2)]
    src.write(6, [(6, "x")])
    runtime.settle()
    assert [len(runtime.batches(11, worker)) for worker in range(2)] == before


@pytest.mark.parametrize("seed", range(6))
def test_every_workers_batches_together_are_the_collections_changes(seed: int) -> None:
    rng = random.Random(seed)
    plans: list[Plan] = [Get(1), Project((1,), Get(1)), Reduce(Get(1), group_key=(1,))]
    plan = rng.choice(plans)
    workers, as_of, up_to = rng.randint(1, 3), rng.randint(0, 2), rng.randint(4, 9)
    runtime = subscribing(workers, plan, as_of, up_to)
    src = runtime.shards.shard("src")
    present: list[Row] = []
    for ts in range(10):
        updates: list[Update] = [((rng.randint(0, 5), rng.randint(0, 2)), ts, 1) for _ in range(3)]
        for row in list(present):
            if rng.random() < 0.3:
                present.remove(row)
                updates.append((row, ts, -1))
        present += [row for row, _, diff in updates if diff > 0]
        src.append(updates, ts, ts + 1)
        if rng.random() < 0.5:
            runtime.settle(rng)
    runtime.settle(rng)
    merged: list[Update] = []
    for worker in range(workers):
        batches = runtime.batches(11, worker)
        check_contiguous(batches, as_of)
        assert batches[-1].upper == Frontier.empty()
        merged += [update for batch in batches for update in batch.updates]
    for ts in range(as_of, up_to):
        assert accumulate(merged, ts) == evaluate(plan, {U(1): shard_at(runtime, "src", ts)})


def test_a_subscribe_whose_up_to_is_its_as_of_finishes_at_once() -> None:
    # Nothing lies in [as_of, up_to): the subscribe is complete from the start
    # and says so with its final batch (else a client waits for it forever).
    runtime = subscribing(1, Get(1), as_of=3, up_to=3)
    runtime.shards.shard("src").write(5, [(1, "x")])
    runtime.settle()
    batches = runtime.batches(11, 0)
    assert [(batch.upper, batch.updates) for batch in batches] == [(Frontier.empty(), ())]


def test_a_finished_subscribe_holds_nothing_of_what_comes_after() -> None:
    runtime = subscribing(1, Get(1), up_to=2)
    src = runtime.shards.shard("src")
    for ts in range(6):
        src.write(ts, [(ts, "x")] * 50)
        runtime.settle()
    assert runtime.batches(11, 0)[-1].upper == Frontier.empty()
    operator = runtime.sink(11, 0).operator
    assert isinstance(operator, SubscribeSink)
    assert operator.pending == []
