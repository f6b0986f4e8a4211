"""Properties of the dataflow engine (Hypothesis, derandomized): random plans
over small random shards, rendered at 1 to 3 workers that apply the commands
and step in random orders, give at every time below the frontier what a
from-scratch evaluation of the plan gives."""

from __future__ import annotations

import itertools
from collections import Counter

import attrs
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from replica import (
    AllowWrites,
    Build,
    Command,
    CreateDataflow,
    DataflowDescription,
    Frontier,
    Get,
    GlobalId,
    IndexExport,
    IndexImport,
    Join,
    MaterializedView,
    Plan,
    Project,
    Reduce,
    Row,
    Schedule,
    SinkExport,
    SourceImport,
    Subscribe,
    Update,
    partition_of,
)
from replica.engine._sinks import DELETIONS, INSERTIONS, MaterializedViewSink
from replica.model import AggregateExpr, AggregateFunc
from replica.model._plan import Aggregate, Filter, Map, gets
from replica.model._scalar import COMPARISONS, Call, Column, Literal, Scalar, ScalarFunc

from .harness import U, Workers, accumulate, evaluate

PROPERTY = settings(
    max_examples=300,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
A, B = U(1), U(2)
SHARDS = {A: "a", B: "b"}
TIMES = 6


@st.composite
def plans(draw: st.DrawFn, depth: int = 2) -> tuple[Plan, int]:
    """A plan over sources ``A`` and ``B`` (two columns each), and its arity."""
    if depth == 0 or draw(st.integers(0, 3)) == 0:
        return Get(draw(st.sampled_from([A, B]))), 2
    kind = draw(st.sampled_from(["project", "reduce", "distinct", "join"]))
    input, width = draw(plans(depth - 1))
    if kind == "project":
        columns = tuple(draw(st.lists(st.integers(0, width - 1), min_size=1, max_size=3)))
        return Project(columns, input), len(columns)
    if kind == "reduce":
        group = tuple(draw(st.lists(st.integers(0, width - 1), max_size=2, unique=True)))
        return Reduce(input, group_key=group), len(group) + 1
    if kind == "distinct":
        group = tuple(
            draw(st.lists(st.integers(0, width - 1), min_size=1, max_size=2, unique=True))
        )
        return Reduce(input, (), group), len(group)
    other, other_width = draw(plans(depth - 1))
    pairs = draw(
        st.lists(
            st.tuples(st.integers(0, width - 1), st.integers(width, width + other_width - 1)),
            max_size=2,
        )
    )
    return Join((input, other), tuple(pairs)), width + other_width


@st.composite
def scalars(draw: st.DrawFn, kinds: tuple[str, ...]) -> tuple[Scalar, str]:
    """A scalar over columns of ``kinds`` ("int" or "bool"), and its kind."""
    shape = draw(st.sampled_from(["column", "literal", "null", "compare", "logic"]))
    if shape == "column":
        column = draw(st.integers(0, len(kinds) - 1))
        return Column(column), kinds[column]
    if shape == "literal":
        return Literal(draw(st.integers(0, 2))), "int"
    if shape == "null":
        return Literal(None), "int"
    ints = [c for c, kind in enumerate(kinds) if kind == "int"]
    left = Column(draw(st.sampled_from(ints)))
    right: Scalar = draw(st.sampled_from([Literal(draw(st.integers(0, 2))), Literal(None)]))
    right = Column(draw(st.sampled_from(ints))) if draw(st.booleans()) else right
    func = draw(st.sampled_from(sorted(COMPARISONS)))
    compare = Call(func, (left, right))
    if shape == "compare":
        return compare, "bool"
    other, _ = draw(scalars(kinds).filter(lambda drawn: drawn[1] == "bool"))
    logic = draw(st.sampled_from([ScalarFunc.AND, ScalarFunc.OR]))
    tested = Call(draw(st.sampled_from([ScalarFunc.IS_NULL, ScalarFunc.NOT])), (other,))
    return Call(logic, (compare, tested)), "bool"


@st.composite
def typed_plans(draw: st.DrawFn, depth: int = 2) -> tuple[Plan, tuple[str, ...]]:
    """A plan with filters, maps and any aggregates over ``A`` and ``B``,
    and the kinds of its columns."""
    if depth == 0 or draw(st.integers(0, 3)) == 0:
        return Get(draw(st.sampled_from([A, B]))), ("int", "int")
    kind = draw(st.sampled_from(["filter", "map", "aggregate", "join"]))
    input, kinds = draw(typed_plans(depth - 1))
    if kind == "filter":
        predicate, _ = draw(scalars(kinds).filter(lambda drawn: drawn[1] == "bool"))
        return Filter((predicate,), input), kinds
    if kind == "map":
        scalar, added = draw(scalars(kinds))
        return Map((scalar,), input), (*kinds, added)
    if kind == "aggregate":
        group = tuple(draw(st.lists(st.integers(0, len(kinds) - 1), max_size=2, unique=True)))
        aggregates: list[Aggregate | AggregateExpr] = []
        results: list[str] = []
        # No aggregates (a distinct) needs a group key: a row has a column.
        for _ in range(draw(st.integers(0 if group else 1, 3))):
            column = draw(st.integers(0, len(kinds) - 1))
            funcs = [AggregateFunc.COUNT]
            funcs += (
                [AggregateFunc.ANY, AggregateFunc.ALL]
                if kinds[column] == "bool"
                else [AggregateFunc.SUM, AggregateFunc.MIN, AggregateFunc.MAX]
            )
            func = draw(st.sampled_from(funcs))
            if draw(st.integers(0, 4)) == 0:
                aggregates.append(Aggregate.COUNT)
            else:
                aggregates.append(AggregateExpr(func, Column(column), draw(st.booleans())))
            results.append("bool" if func in (AggregateFunc.ANY, AggregateFunc.ALL) else "int")
        plan = Reduce(input, tuple(aggregates), group)
        return plan, (*(kinds[c] for c in group), *results)
    other, other_kinds = draw(typed_plans(depth - 1))
    width = len(kinds) + len(other_kinds)
    pairs = draw(
        st.lists(st.tuples(st.integers(0, width - 1), st.integers(0, width - 1)), max_size=2)
    )
    return Join((input, other), tuple(pairs)), (*kinds, *other_kinds)


def reads(plan: Plan) -> set[GlobalId]:
    return set(gets(plan))


def write(
    data: st.DataObject, runtime: Workers, history: dict[GlobalId, list[Update]], ts: int
) -> None:
    """Maybe write shards ``a`` and ``b`` at ``ts``: new rows, and
    retractions of rows they hold."""
    for id, name in SHARDS.items():
        if not data.draw(st.booleans(), label=f"write {name}"):
            continue
        rows = data.draw(
            st.lists(st.tuples(st.integers(0, 2), st.integers(0, 2)), max_size=3), label="rows"
        )
        updates: list[Update] = [(row, ts, 1) for row in rows]
        for row in sorted(accumulate(history[id], ts)):
            if data.draw(st.integers(0, 3), label="retract") == 0:
                updates.append((row, ts, -1))
        shard = runtime.shards.shard(name)
        shard.append(updates, shard.upper, ts + 1)
        history[id] += updates


def step_some(data: st.DataObject, runtime: Workers) -> None:
    """Step woken workers, as many times and in the order drawn."""
    for _ in range(data.draw(st.integers(0, 4), label="steps")):
        woken = [worker for worker, flag in enumerate(runtime.woken) if flag]
        if woken:
            runtime.step(data.draw(st.sampled_from(woken), label="worker"))


def apply_some(
    data: st.DataObject, runtime: Workers, commands: list[Command], applied: list[int]
) -> None:
    """Each worker applies the next few of ``commands`` (workers apply the
    same commands in the same order, each at its own pace)."""
    for worker in range(runtime.count):
        upto = data.draw(st.integers(applied[worker], len(commands)), label=f"apply at {worker}")
        for command in commands[applied[worker] : upto]:
            runtime.apply(command, [worker])
        applied[worker] = upto


def inputs(history: dict[GlobalId, list[Update]], ts: int) -> dict[GlobalId, Counter[Row]]:
    return {id: accumulate(updates, ts) for id, updates in history.items()}


def check_index(
    runtime: Workers,
    history: dict[GlobalId, list[Update]],
    plan: Plan,
    key: tuple[int, ...],
    as_of: int,
) -> int:
    """Index 20 at every time below its frontier is the plan's result, and
    each row sits at the worker its key says; return the frontier."""
    frontier = runtime.frontier(20)
    if frontier is None:
        return as_of
    for ts in range(as_of, frontier):
        parts = [runtime.part_rows(20, worker, ts) for worker in range(runtime.count)]
        for worker, part in enumerate(parts):
            assert all(partition_of(row, key, runtime.count) == worker for row in part)
        found = sum(parts, Counter())
        assert found == evaluate(plan, inputs(history, ts)), f"at {ts}"
    return frontier


@PROPERTY
@given(data=st.data(), workers=st.integers(1, 3), drawn=plans(), through_index=st.booleans())
def test_random_plans_at_several_workers_match_a_from_scratch_evaluation(
    data: st.DataObject,
    workers: int,
    drawn: tuple[Plan, int],
    through_index: bool,
) -> None:
    plan, width = drawn
    check_plan(data, workers, plan, width, through_index)


@PROPERTY
@given(data=st.data(), workers=st.integers(1, 3), drawn=typed_plans(), through_index=st.booleans())
def test_random_filters_maps_and_aggregates_match_a_from_scratch_evaluation(
    data: st.DataObject,
    workers: int,
    drawn: tuple[Plan, tuple[str, ...]],
    through_index: bool,
) -> None:
    """Filters (and joins' equalities within one input), maps, and every
    aggregate, min and max among them under retractions."""
    plan, kinds = drawn
    check_plan(data, workers, plan, len(kinds), through_index)


def check_plan(
    data: st.DataObject, workers: int, plan: Plan, width: int, through_index: bool
) -> None:
    as_of = data.draw(st.integers(0, 2), label="as_of")
    until = data.draw(st.none() | st.integers(as_of, TIMES + 1), label="until")
    key = tuple(data.draw(st.lists(st.integers(0, width - 1), max_size=2, unique=True)))
    runtime = Workers.start(workers)
    description = DataflowDescription(
        as_of=as_of,
        source_imports=(SourceImport(A, "a"), SourceImport(B, "b")),
        objects_to_build=(Build(10, plan),),
        index_exports=(IndexExport(20, 10, key),),
        until=until,
    )
    commands: list[Command] = []
    if through_index:
        # Shard a is read through an index of it (its parts at each worker).
        index_key = tuple(data.draw(st.lists(st.integers(0, 1), max_size=2, unique=True)))
        index_as_of = data.draw(st.integers(0, as_of), label="index as_of")
        commands += [
            CreateDataflow(DataflowDescription.index(1, "a", 1001, index_key, index_as_of)),
            Schedule(1001),
        ]
        description = attrs.evolve(
            description,
            source_imports=(SourceImport(B, "b"),),
            index_imports=(IndexImport(1001, A, index_key),),
        )
    commands += [CreateDataflow(description), Schedule(20)]
    applied = [0] * workers
    history: dict[GlobalId, list[Update]] = {A: [], B: []}
    for ts in range(TIMES):
        write(data, runtime, history, ts)
        apply_some(data, runtime, commands, applied)
        step_some(data, runtime)
        if all(count == len(commands) for count in applied):
            check_index(runtime, history, plan, key, as_of)
    for worker in range(workers):
        for command in commands[applied[worker] :]:
            runtime.apply(command, [worker])
    runtime.settle()
    frontier = check_index(runtime, history, plan, key, as_of)
    expected = max(min(runtime.shards.shard(SHARDS[id]).upper for id in reads(plan)), as_of)
    assert frontier == (expected if until is None else min(expected, until))


@PROPERTY
@given(data=st.data(), workers=st.integers(1, 3), key=st.sampled_from([(), (0,), (1,), (1, 0)]))
def test_an_index_of_a_shard_holds_the_shard_at_every_time_below_its_frontier(
    data: st.DataObject, workers: int, key: tuple[int, ...]
) -> None:
    as_of = data.draw(st.integers(0, 2), label="as_of")
    until = data.draw(st.none() | st.integers(as_of, TIMES + 1), label="until")
    runtime = Workers.start(workers)
    description = DataflowDescription(
        as_of=as_of,
        source_imports=(SourceImport(A, "a"),),
        index_exports=(IndexExport(20, A, key),),
        until=until,
    )
    commands: list[Command] = [CreateDataflow(description), Schedule(20)]
    applied = [0] * workers
    history: dict[GlobalId, list[Update]] = {A: [], B: []}
    for ts in range(TIMES):
        write(data, runtime, history, ts)
        apply_some(data, runtime, commands, applied)
        step_some(data, runtime)
        if all(count == len(commands) for count in applied):
            check_index(runtime, history, Get(A), key, as_of)
    for worker in range(workers):
        for command in commands[applied[worker] :]:
            runtime.apply(command, [worker])
    runtime.settle()
    frontier = check_index(runtime, history, Get(A), key, as_of)
    expected = max(runtime.shards.shard("a").upper, as_of)
    assert frontier == (expected if until is None else min(expected, until))


@PROPERTY
@given(data=st.data(), workers=st.integers(1, 3), drawn=plans(depth=1))
def test_random_plans_sink_and_subscribe_what_a_from_scratch_evaluation_gives(
    data: st.DataObject, workers: int, drawn: tuple[Plan, int]
) -> None:
    plan, _ = drawn
    as_of = data.draw(st.integers(0, 2), label="as_of")
    up_to = data.draw(st.integers(as_of + 1, TIMES), label="up_to")
    writable_at = data.draw(st.integers(0, TIMES - 1), label="writable at")
    runtime = Workers.start(workers)
    description = DataflowDescription(
        as_of=as_of,
        source_imports=(SourceImport(A, "a"), SourceImport(B, "b")),
        objects_to_build=(Build(10, plan),),
        sink_exports=(
            SinkExport(21, 10, MaterializedView("mv")),
            SinkExport(22, 10, Subscribe(up_to)),
        ),
    )
    runtime.apply(CreateDataflow(description))
    runtime.apply(Schedule(21))
    mv = runtime.shards.shard("mv")
    history: dict[GlobalId, list[Update]] = {A: [], B: []}
    began: int | None = None
    for ts in range(TIMES):
        write(data, runtime, history, ts)
        if ts == writable_at:
            runtime.apply(AllowWrites(21))
            began = mv.upper
        step_some(data, runtime)
        if began is None:
            assert mv.updates == [], "read-only: it appends nothing"
        sinks = [runtime.sink(21, worker).operator for worker in range(workers)]
        size = sum(sink.size for sink in sinks if isinstance(sink, MaterializedViewSink))
        metrics = runtime.metrics
        assert metrics.value(INSERTIONS) - metrics.value(DELETIONS) == size
    for name in SHARDS.values():
        runtime.shards.shard(name).advance(TIMES)
    runtime.settle()
    assert began is not None
    assert mv.upper == TIMES
    for ts in range(max(began, as_of), TIMES):
        assert accumulate(mv.updates, ts) == evaluate(plan, inputs(history, ts)), f"at {ts}"
    changes: list[Update] = []
    for worker in range(workers):
        batches = runtime.batches(22, worker)
        assert batches[-1].upper == Frontier.empty()
        for before, after in itertools.pairwise(batches):
            assert before.upper.time == after.lower
        changes += [update for batch in batches for update in batch.updates]
    for ts in range(as_of, up_to):
        assert accumulate(changes, ts) == evaluate(plan, inputs(history, ts)), f"at {ts}"
