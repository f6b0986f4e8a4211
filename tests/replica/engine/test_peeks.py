"""Peeks of an index at several workers (DESIGN.md §2.5): with a work budget
(``peek_yielding``), a scan resumes across steps while the dataflow keeps
stepping; and peeks of literal keys."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from replica import (
    CreateDataflow,
    CreateInstance,
    InitializationComplete,
    Peek,
    PeekResponse,
    ReplicaConfig,
    Row,
    Rows,
    Schedule,
    ShardCatalog,
    Update,
    UpdateConfiguration,
    open_controller,
    open_replica,
    row_order,
)
from replica.model._rows import key_of

from .harness import Workers, accumulate, index_of

YIELDING = UpdateConfiguration((("peek_yielding", "work:1,time:60000"),))


def budget(work: int) -> UpdateConfiguration:
    return UpdateConfiguration((("peek_yielding", f"work:{work},time:60000"),))


def indexed(
    workers: int, key: tuple[int, ...] = (0,), *configuration: UpdateConfiguration
) -> Workers:
    runtime = Workers.start(workers)
    for command in configuration:
        runtime.apply(command)
    runtime.apply(CreateDataflow(index_of(1000, "data", 1001, key)))
    runtime.apply(Schedule(1001))
    return runtime


def answer(runtime: Workers, uuid: int) -> Counter[Row] | None:
    """Every worker's rows for peek ``uuid``, once all answered."""
    answers = runtime.answers(uuid)
    if len(answers) < runtime.count:
        return None
    rows: Counter[Row] = Counter()
    for response in answers:
        assert isinstance(response.result, Rows), response
        rows.update(response.result.rows)
    return rows


def step_once(runtime: Workers, rng: random.Random) -> None:
    woken = [worker for worker, flag in enumerate(runtime.woken) if flag]
    if woken:
        runtime.step(rng.choice(woken))


def test_a_budgeted_scan_resumes_across_steps_while_the_dataflow_keeps_stepping() -> None:
    runtime = indexed(2, (0,), YIELDING)
    data = runtime.shards.shard("data")
    data.write(0, [(i, "x") for i in range(40)])
    runtime.settle()
    runtime.apply(Peek(1, 1001, 0))
    rng = random.Random(0)
    steps, ts, moved = 0, 1, 0
    while answer(runtime, 1) is None:
        moved = runtime.frontier(1001) or 0  # how far the index got, the scan unfinished
        data.write(ts, [(1000 + ts, "new"), (ts, "x")])  # later times keep coming
        ts += 1
        step_once(runtime, rng)
        steps += 1
        assert steps < 1000
    # One update looked at per step: each worker stepped once per row of its part.
    parts = [len(runtime.part_rows(1001, worker, 0)) for worker in range(2)]
    assert steps >= max(parts) > 0
    assert moved > 10  # the dataflow kept stepping meanwhile
    assert answer(runtime, 1) == Counter((i, "x") for i in range(40))


@pytest.mark.parametrize("workers", [1, 2, 3])
@pytest.mark.parametrize("work", [1, 2, 7])
def test_a_budgeted_peek_answers_what_an_unbudgeted_one_does(workers: int, work: int) -> None:
    budgeted = indexed(workers, (1,), budget(work))
    plain = indexed(workers, (1,))
    rng = random.Random(workers * 10 + work)
    history: list[Update] = []
    peeks = {
        1: (3, None),
        2: (5, ((0,), (2,), (0,))),
        3: (0, ((9,),)),
        4: (7, ((1,),)),
    }
    for ts in range(12):
        updates: list[Update] = [((rng.randint(0, 20), rng.randint(0, 3)), ts, 1) for _ in range(4)]
        for row, count in accumulate(history, ts).items():
            if rng.random() < 0.2:
                updates.append((row, ts, -count))
        history += updates
        for runtime in (budgeted, plain):
            runtime.shards.shard("data").append(updates, ts, ts + 1)
        if ts in (1, 4):  # some peeks come before their time is complete
            for uuid, (at, literals) in peeks.items():
                if (at < 3) == (ts == 1):
                    for runtime in (budgeted, plain):
                        runtime.apply(Peek(uuid, 1001, at, literals))
        for _ in range(3):
            step_once(budgeted, rng)
        plain.settle(rng)
    budgeted.settle(rng)
    for uuid, (at, literals) in peeks.items():
        expected = accumulate(history, at)
        if literals is not None:
            expected = Counter({r: n for r, n in expected.items() if key_of(r, (1,)) in literals})
        assert answer(plain, uuid) == expected, uuid
        assert answer(budgeted, uuid) == expected, uuid


def test_a_budgeted_peek_waits_for_its_time_then_scans() -> None:
    runtime = indexed(2, (0,), YIELDING)
    data = runtime.shards.shard("data")
    data.write(0, [(1, "a")])
    runtime.apply(Peek(1, 1001, 3))
    runtime.settle()
    assert runtime.answers(1) == []
    data.write(3, [(2, "a"), (3, "a")])
    data.write(4, [(4, "a")])
    runtime.settle()
    assert answer(runtime, 1) == Counter({(1, "a"): 1, (2, "a"): 1, (3, "a"): 1})


def test_literal_keys_are_sorted_and_deduped_by_the_replica() -> None:
    runtime = indexed(1, (0,), YIELDING)
    runtime.shards.shard("data").write(0, [(1, "a"), (2, "b"), (3, "c")])
    runtime.apply(Peek(1, 1001, 0, ((3,), (1,), (3,), (1,))))
    (reading,) = runtime.states[0].peeks.values()
    assert reading.peek.literals == ((1,), (3,))
    runtime.settle()
    assert answer(runtime, 1) == Counter({(1, "a"): 1, (3, "c"): 1})


def test_repeated_literals_do_not_repeat_rows_without_a_budget() -> None:
    runtime = indexed(3)
    runtime.shards.shard("data").write(0, [(1, "a"), (1, "b"), (2, "c")])
    runtime.settle()
    runtime.apply(Peek(1, 1001, 0, ((1,), (1,), (1,), (7,))))
    assert answer(runtime, 1) == Counter({(1, "a"): 1, (1, "b"): 1})


@pytest.mark.parametrize("configuration", [(), (YIELDING,)])
def test_no_literals_select_nothing(configuration: tuple[UpdateConfiguration, ...]) -> None:
    runtime = indexed(2, (0,), *configuration)
    runtime.shards.shard("data").write(0, [(1, "a"), (2, "b")])
    runtime.settle()
    runtime.apply(Peek(1, 1001, 0, ()))
    runtime.settle()
    assert runtime.answers(1) == [PeekResponse(1, Rows(()))] * 2


def test_a_literal_peek_looks_only_at_the_updates_of_its_keys() -> None:
    runtime = indexed(1, (0,), YIELDING)
    runtime.shards.shard("data").write(0, [(i % 50, i) for i in range(500)])
    runtime.settle()
    runtime.apply(Peek(1, 1001, 0, ((7,),)))
    steps = runtime.settle()
    assert answer(runtime, 1) == Counter({(7, i): 1 for i in range(7, 500, 50)})
    assert steps <= 10 + 1  # the 10 updates of key 7, one per step


async def test_a_replica_with_peek_yielding_answers_as_one_without() -> None:
    rows = [(i, f"r{i % 7}") for i in range(60)]
    answers: dict[str, list[list[Row]]] = {}
    for name, configuration in (("plain", ()), ("yielding", YIELDING.params)):
        shards = ShardCatalog()
        async with (
            open_replica(ReplicaConfig(processes=2, workers=2), shards=shards) as replica,
            open_controller(replica) as controller,
        ):
            await controller.send(CreateInstance())
            await controller.send(UpdateConfiguration(configuration))
            await controller.send(InitializationComplete())
            shards.shard("data").write(0, rows)
            await controller.send(CreateDataflow(index_of(1000, "data", 1001, (1,))))
            await controller.send(Schedule(1001))
            first = await controller.peek(1001, 0)
            shards.shard("data").write(1, [(100, "r1")])
            answers[name] = [
                first,
                await controller.peek(1001, 1, (("r1",), ("r3",), ("r1",))),
                await controller.peek(1001, 1, ()),
            ]
    expected = [
        sorted(rows, key=row_order),
        sorted([r for r in [*rows, (100, "r1")] if r[1] in ("r1", "r3")], key=row_order),
        [],
    ]
    assert answers == {"plain": expected, "yielding": expected}
