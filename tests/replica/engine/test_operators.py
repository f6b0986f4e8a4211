"""The dataflow engine's operators and exchanges at several workers of one
runtime (DESIGN.md §2.5): built by hand on a shared Fabric, or rendered from
one description at every worker and stepped in varying orders."""

from __future__ import annotations

import functools
import random
from collections import Counter

import attrs
import pytest

from replica import (
    Build,
    CreateDataflow,
    DataflowDescription,
    Get,
    GlobalId,
    IndexExport,
    IndexImport,
    Join,
    Plan,
    Project,
    Reduce,
    Row,
    Schedule,
    Shard,
    SourceImport,
    Update,
    partition_of,
)
from replica.engine._exchange import CLOSED, Exchange, Fabric
from replica.engine._join import JoinOperator
from replica.engine._reduce import CountReduce
from replica.engine._sources import ShardSource
from replica.engine._stream import Times

from .harness import Workers, accumulate, consolidate, evaluate, index_of, taken, tap

ORDERS = [None, 1, 2, 3]
"""Step orders for ``Workers.settle``: first woken worker first, or seeded."""


def rng_of(seed: int | None) -> random.Random | None:
    return None if seed is None else random.Random(seed)


def view(as_of: int, plan: Plan, key: tuple[int, ...] = (0,)) -> DataflowDescription:
    """A dataflow over shards ``a`` (source 1) and ``b`` (source 2) building
    ``plan`` as 10, exported as index 20 keyed by ``key``."""
    return DataflowDescription(
        as_of=as_of,
        source_imports=(SourceImport(1, "a"), SourceImport(2, "b")),
        objects_to_build=(Build(10, plan),),
        index_exports=(IndexExport(20, 10, key),),
    )


def started(workers: int, description: DataflowDescription) -> Workers:
    runtime = Workers.start(workers)
    runtime.apply(CreateDataflow(description))
    runtime.apply(Schedule(description.exports[0]))
    return runtime


def inputs_at(runtime: Workers, ts: int) -> dict[GlobalId, Counter[Row]]:
    """Shards ``a`` and ``b`` at ``ts``, as sources 1 and 2."""
    return {
        GlobalId.user(1): accumulate(runtime.shards.shard("a").updates, ts),
        GlobalId.user(2): accumulate(runtime.shards.shard("b").updates, ts),
    }


def logs(runtime: Workers, id: int) -> list[Update]:
    """Every update every worker's part of index ``id`` holds."""
    found: list[Update] = []
    for worker in range(runtime.count):
        part = runtime.index(id, worker).arrangement
        assert part is not None
        found += part.log
    return found


# Shard sources.


@pytest.mark.parametrize("workers", [1, 2, 3, 4])
def test_a_shard_read_by_several_workers_delivers_each_update_exactly_once(workers: int) -> None:
    shard = Shard("data")
    sources = [
        ShardSource(shard, Times(0), worker, workers, shard.listen(lambda: None))
        for worker in range(workers)
    ]
    outputs = tap(sources)
    rng = random.Random(workers)
    for ts in range(6):
        shard.write(ts, [(ts, i) for i in range(rng.randint(0, 7))])
        for worker in rng.sample(range(workers), rng.randint(0, workers)):
            sources[worker].step()
    for source in sources:
        source.step()
    delivered = [update for queue in outputs for update in queue.take()]
    assert sorted(delivered) == sorted(shard.updates)
    assert len(set(delivered)) == len(delivered)  # every row written is distinct


# Exchanges.


def test_an_exchange_frontier_is_the_least_of_what_every_worker_said() -> None:
    exchange = Exchange(3)
    exchange.say(0, 5)
    exchange.say(2, 7)
    assert exchange.frontier() is None  # worker 1 said nothing: it holds everyone back
    exchange.say(1, 2)
    assert exchange.frontier() == 2
    exchange.say(1, 1)  # a frontier never goes back
    assert exchange.frontier() == 2
    exchange.say(1, 9)
    assert exchange.frontier() == 5


def test_a_worker_that_left_an_exchange_holds_nobody_back() -> None:
    woken: list[int] = []
    exchange = Exchange(3)
    for worker in range(3):
        exchange.join(worker, functools.partial(woken.append, worker))
        exchange.say(worker, 1)
    exchange.leave(1)
    assert exchange.sent[1] == CLOSED
    exchange.say(0, 4)
    exchange.say(2, 3)
    assert exchange.frontier() == 3
    woken.clear()
    exchange.send(0, {1: [((1,), 3, 1)], 2: [((2,), 3, 1)]})
    assert exchange.take(1) == []  # what goes to a worker that left is dropped
    assert exchange.take(2) == [((2,), 3, 1)]
    assert woken == [2]


def test_an_exchange_goes_once_every_worker_released_it() -> None:
    fabric = Fabric(2)
    first = fabric.exchange(0, 0)
    assert fabric.exchange(0, 0) is first
    fabric.release(0, 0, 1)
    assert len(fabric) == 1
    fabric.release(0, 0, 0)
    assert len(fabric) == 0


@pytest.mark.parametrize("order", ORDERS)
def test_rows_routed_through_an_exchange_arrive_once_at_the_worker_of_their_key(
    order: int | None,
) -> None:
    runtime = started(3, view(0, Project((1, 0), Get(1)), key=(0,)))
    runtime.shards.shard("a").write(0, [(i, i % 5) for i in range(40)])
    runtime.shards.shard("b").advance(1)
    runtime.settle(rng_of(order))
    for worker in range(3):
        for row in runtime.part_rows(20, worker, 0):
            assert partition_of(row, (0,), 3) == worker
    assert runtime.rows(20, 0) == Counter((i % 5, i) for i in range(40))


# Reduce.


def count_outputs_are_only_for_completed_times(runtime: Workers, seed: int) -> list[Update]:
    """Write and step; after every step, what each worker's CountReduce
    pushed is at times before its frontier. Returns everything it pushed."""
    rng = random.Random(seed)
    reduces = [
        next(op for op in operators if isinstance(op, CountReduce))
        for operators in runtime.operators(20)
    ]
    queues = tap(reduces)
    emitted: list[Update] = []
    data = runtime.shards.shard("a")
    runtime.shards.shard("b").advance(100)
    present: list[Row] = []
    for ts in range(8):
        updates: list[Update] = [((rng.randint(0, 3), ts), ts, 1) for _ in range(rng.randint(0, 4))]
        for row in list(present):
            if rng.random() < 0.4:
                present.remove(row)
                updates.append((row, ts, -1))
        present += [row for row, _, diff in updates if diff > 0]
        data.append(updates, ts, ts + 1)
        for _ in range(rng.randint(0, 3)):
            woken = [worker for worker, flag in enumerate(runtime.woken) if flag]
            if woken:
                worker = rng.choice(woken)
                runtime.step(worker)
                pushed = queues[worker].take()
                frontier = reduces[worker].out.frontier
                assert all(frontier is not None and time < frontier for _, time, _ in pushed)
                emitted += pushed
    runtime.settle(rng)
    for queue in queues:
        emitted += queue.take()
    return emitted


@pytest.mark.parametrize("seed", range(4))
def test_grouped_count_emits_changes_only_for_completed_times(seed: int) -> None:
    runtime = started(3, view(0, Reduce(Get(1), group_key=(0,))))
    emitted = count_outputs_are_only_for_completed_times(runtime, seed)
    assert all(row[-1] != 0 for row, _, _ in emitted), "no row for an empty group"
    for ts in range(8):
        expected = evaluate(Reduce(Get(1), group_key=(0,)), inputs_at(runtime, ts))
        assert accumulate(emitted, ts) == expected
        assert runtime.rows(20, ts) == expected


@pytest.mark.parametrize("seed", range(4))
def test_count_of_everything_emits_changes_only_for_completed_times(seed: int) -> None:
    runtime = started(2, view(0, Reduce(Get(1)), key=()))
    emitted = count_outputs_are_only_for_completed_times(runtime, seed)
    assert all(row != (0,) for row, _, _ in emitted), "no row for an empty input"
    for ts in range(8):
        assert runtime.rows(20, ts) == evaluate(Reduce(Get(1)), inputs_at(runtime, ts))


def test_a_group_that_empties_is_retracted_and_gets_no_row() -> None:
    runtime = started(2, view(0, Reduce(Get(1), group_key=(0,))))
    data = runtime.shards.shard("a")
    runtime.shards.shard("b").advance(10)
    data.write(0, [(7, 0), (7, 1)])
    data.append([((7, 0), 1, -1), ((7, 1), 1, -1)], 1, 2)
    data.write(2, [(8, 0)])
    reduces = [op for ops in runtime.operators(20) for op in ops if isinstance(op, CountReduce)]
    queues = tap(reduces)
    runtime.settle()
    assert consolidate(u for queue in queues for u in queue.take()) == {
        ((7, 2), 0): 1,
        ((7, 2), 1): -1,
        ((8, 1), 2): 1,
    }
    assert runtime.rows(20, 1) == Counter()


def test_count_waits_for_every_worker_before_emitting_a_time() -> None:
    runtime = started(2, view(0, Reduce(Get(1)), key=()))
    runtime.shards.shard("a").write(0, [(i, 0) for i in range(6)])
    runtime.shards.shard("b").advance(1)
    reduces = [op for ops in runtime.operators(20) for op in ops if isinstance(op, CountReduce)]
    queues = tap(reduces)
    for _ in range(3):
        runtime.step(0)
    assert taken(queues) == 0  # worker 1 has not read its share of time 0
    runtime.settle()
    assert runtime.rows(20, 0) == Counter({(6,): 1})


# Join.


JOIN = Join((Get(1), Get(2)), ((1, 2),))


@pytest.mark.parametrize("order", ORDERS)
def test_a_join_matches_a_brute_force_join_at_every_completed_time(order: int | None) -> None:
    runtime = started(3, view(0, JOIN, key=(1,)))
    rng = random.Random(order)
    a, b = runtime.shards.shard("a"), runtime.shards.shard("b")
    for ts in range(6):
        a.write(ts, [(rng.randint(0, 9), rng.randint(0, 3)) for _ in range(rng.randint(0, 5))])
        b.write(ts, [(rng.randint(0, 3), rng.randint(0, 9)) for _ in range(rng.randint(0, 5))])
        runtime.settle(rng_of(order))
        frontier = runtime.frontier(20)
        assert frontier == ts + 1
        for time in range(frontier):
            assert runtime.rows(20, time) == evaluate(JOIN, inputs_at(runtime, time))


def test_a_join_is_right_when_updates_arrive_out_of_time_order_across_workers() -> None:
    runtime = started(2, view(0, JOIN, key=(1,)))
    a, b = runtime.shards.shard("a"), runtime.shards.shard("b")
    joins = [op for ops in runtime.operators(20) for op in ops if isinstance(op, JoinOperator)]
    queues = tap(joins)
    for ts in range(5):
        a.write(ts, [(ts, k) for k in range(3)])
        b.write(ts, [(k, 10 * ts + k) for k in range(3)])
        # Worker 1 reads and sends each time as it comes; worker 0 lags and
        # then sends several times at once, so each join holds later times
        # of one worker before earlier ones of the other.
        runtime.step(1)
        if ts % 3 == 2:
            runtime.step(0)
    a.append([((0, 1), 5, -1)], 5, 6)
    b.append([((1, 11), 5, -1)], 5, 6)
    runtime.step(1)
    runtime.settle()
    emitted = [update for queue in queues for update in queue.take()]
    assert runtime.frontier(20) == 6
    for time in range(6):
        expected = evaluate(JOIN, inputs_at(runtime, time))
        assert accumulate(emitted, time) == expected
        assert runtime.rows(20, time) == expected


# as_of and until.


def test_until_caps_frontiers_and_drops_later_updates() -> None:
    description = DataflowDescription(
        as_of=0,
        source_imports=(SourceImport(1, "a"),),
        objects_to_build=(Build(10, Project((0,), Get(1))),),
        index_exports=(IndexExport(20, 10, (0,)),),
        until=3,
    )
    runtime = started(2, description)
    data = runtime.shards.shard("a")
    for ts in range(6):
        data.write(ts, [(ts, 0)])
        runtime.settle()
    assert runtime.frontier(20) == 3
    assert sorted(time for _, time, _ in logs(runtime, 20)) == [0, 1, 2]
    assert runtime.rows(20, 2) == Counter({(0,): 1, (1,): 1, (2,): 1})


def test_until_caps_an_index_of_a_shard() -> None:
    description = attrs.evolve(index_of(1000, "a", 1001, (0,)), until=2)
    runtime = started(3, description)
    data = runtime.shards.shard("a")
    for ts in range(5):
        data.write(ts, [(ts, ts)])
    runtime.settle()
    assert runtime.frontier(1001) == 2
    assert runtime.rows(1001, 9) == Counter({(0, 0): 1, (1, 1): 1})


@pytest.mark.parametrize("workers", [1, 3])
def test_as_of_advances_earlier_updates_to_it(workers: int) -> None:
    runtime = Workers.start(workers)
    data = runtime.shards.shard("a")
    data.write(0, [(1, "x")])
    data.write(1, [(2, "x")])
    data.append([((1, "x"), 2, -1), ((3, "x"), 2, 1)], 2, 3)
    data.write(5, [(4, "x")])
    runtime.apply(CreateDataflow(index_of(1000, "a", 1001, (0,), as_of=3)))
    runtime.apply(Schedule(1001))
    runtime.settle()
    assert min(time for _, time, _ in logs(runtime, 1001)) == 3
    assert runtime.rows(1001, 3) == Counter({(2, "x"): 1, (3, "x"): 1})
    assert runtime.rows(1001, 5) == Counter({(2, "x"): 1, (3, "x"): 1, (4, "x"): 1})
    assert runtime.frontier(1001) == 6


def test_a_frontier_is_never_before_as_of() -> None:
    runtime = started(2, index_of(1000, "a", 1001, (0,), as_of=4))
    runtime.shards.shard("a").write(0, [(1, 1)])
    runtime.settle()
    assert runtime.frontier(1001) == 4


# Index exports.


@pytest.mark.parametrize("key", [(0,), (1,), (0, 1), ()])
@pytest.mark.parametrize("order", [None, 5])
def test_an_index_export_partitions_rows_by_key_and_each_row_lands_at_one_worker(
    key: tuple[int, ...], order: int | None
) -> None:
    rows = [(i, f"r{i % 4}") for i in range(60)]
    for description in (
        index_of(1000, "a", 20, key),  # read keyed, straight from the shard
        view(0, Get(1), key=key),  # through an exchange
    ):
        runtime = started(3, description)
        runtime.shards.shard("a").write(0, rows)
        runtime.shards.shard("b").advance(1)
        runtime.settle(rng_of(order))
        parts = [runtime.part_rows(20, worker, 0) for worker in range(3)]
        for worker, part in enumerate(parts):
            assert all(partition_of(row, key, 3) == worker for row in part)
        assert sum(parts, Counter()) == Counter(rows)


def test_an_import_of_an_index_reads_it_at_every_worker() -> None:
    runtime = started(3, index_of(1000, "a", 1001, (1,)))
    runtime.shards.shard("a").write(0, [(i, i % 3) for i in range(30)])
    counting = DataflowDescription(
        as_of=0,
        index_imports=(IndexImport(1001, 1000, (1,)),),
        objects_to_build=(Build(10, Reduce(Get(1000), group_key=(1,))),),
        index_exports=(IndexExport(20, 10, (0,)),),
    )
    runtime.apply(CreateDataflow(counting))
    runtime.apply(Schedule(20))
    runtime.settle(random.Random(7))
    assert runtime.rows(20, 0) == Counter({(0, 10): 1, (1, 10): 1, (2, 10): 1})


def test_a_reexport_frontier_never_passes_until_nor_stays_before_as_of() -> None:
    # DRIVER_COMPAT: an export's frontier never passes until=, and (as every
    # other export's) is never before its dataflow's as_of.
    runtime = started(2, index_of(1000, "a", 1001, (0,)))
    reexport = DataflowDescription(
        as_of=5,
        index_imports=(IndexImport(1001, 1000, (0,)),),
        index_exports=(IndexExport(2001, 1000, (0,)),),
        until=7,
    )
    runtime.apply(CreateDataflow(reexport))
    runtime.apply(Schedule(2001))
    data = runtime.shards.shard("a")
    data.write(0, [(1, "a")])
    runtime.settle()
    assert runtime.frontier(1001) == 1
    assert runtime.frontier(2001) == 5
    data.write(9, [(2, "a")])
    runtime.settle()
    assert runtime.frontier(1001) == 10
    assert runtime.frontier(2001) == 7


def test_rows_whose_key_is_nan_go_to_one_worker() -> None:
    # NaNs parsed from several rows' "nan" are distinct objects, and one key:
    # the hash must not depend on which object (nor on the process).
    nans = [float("nan") for _ in range(8)]
    assert len({partition_of((value, "x"), (0,), 8) for value in nans}) == 1


# Incremental work.


def hydrated(workers: int, description: DataflowDescription, rows: int) -> Workers:
    runtime = started(workers, description)
    runtime.shards.shard("a").write(0, [(i, i % 10) for i in range(rows)])
    runtime.shards.shard("b").write(0, [(i % 10, i) for i in range(rows)])
    runtime.settle()
    return runtime


@pytest.mark.parametrize(
    ("name", "description"),
    [
        ("index of a shard", index_of(1, "a", 20, (0,))),
        ("projection", view(0, Project((1,), Get(1)))),
        ("grouped count", view(0, Reduce(Get(1), group_key=(1,)))),
        ("count", view(0, Reduce(Get(1)), key=())),
        ("join", view(0, Join((Get(1), Get(2)), ((1, 3),)))),
    ],
)
def test_a_write_of_k_rows_makes_the_operators_look_at_o_k_updates(
    name: str, description: DataflowDescription
) -> None:
    rows, k = 3000, 4
    runtime = hydrated(2, description, rows)
    operators = [op for ops in runtime.operators(20) for op in ops]
    queues = tap(operators)
    runtime.shards.shard("a").write(1, [(rows + i, i) for i in range(k)])
    runtime.shards.shard("b").write(1, [])
    runtime.settle()
    # What every stage pushed on (each stage takes what the one before
    # pushed): a bounded number of updates per row written, whatever the size.
    assert 0 < taken(queues) <= 12 * k, name
    for operator in operators:  # and holds nothing back once the times are complete
        for held in ("pending", "left_pending", "right_pending"):
            assert getattr(operator, held, []) == [], name
