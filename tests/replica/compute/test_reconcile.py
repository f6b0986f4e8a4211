"""Reconciliation of whole dataflows (DESIGN.md §2.6, ``plan_reconcile``): a
dataflow is kept only if compatible, uncompacted, subscribe-free and every
index it imports is kept; what is not replayed is dropped; creates keep their
sent order."""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Sequence

import attrs
from hypothesis import given, settings
from hypothesis import strategies as st

from replica import (
    AllowCompaction,
    Build,
    Command,
    CommandRejected,
    CreateDataflow,
    DataflowDescription,
    Frontier,
    Get,
    GlobalId,
    IndexExport,
    IndexImport,
    Peek,
    PeekError,
    PeekResponse,
    Project,
    ReconcilePlan,
    Reduce,
    Schedule,
    SinkExport,
    SourceImport,
    Subscribe,
    plan_reconcile,
)

from ..engine.harness import U, Workers, index_of

T = GlobalId.transient


def counting(
    id: int, imported: int, as_of: int = 0, *, grouped: bool = False
) -> DataflowDescription:
    """Index ``id``: a count over index ``imported`` (of collection
    ``imported - 1``, keyed by column 0)."""
    plan = Reduce(Get(imported - 1), group_key=(0,) if grouped else ())
    return DataflowDescription(
        as_of=as_of,
        index_imports=(IndexImport(imported, imported - 1, (0,)),),
        objects_to_build=(Build(id - 1, plan),),
        index_exports=(IndexExport(id, id - 1, (0,)),),
    )


def subscribed(id: int, as_of: int = 0) -> DataflowDescription:
    return DataflowDescription(
        as_of=as_of,
        source_imports=(SourceImport(id - 2, "data"),),
        objects_to_build=(Build(id - 1, Get(id - 2)),),
        sink_exports=(SinkExport(id, id - 1, Subscribe(9)),),
    )


def query(id: GlobalId, imported: int) -> DataflowDescription:
    """A query dataflow: a transient index of a projection of an index."""
    return DataflowDescription(
        as_of=0,
        index_imports=(IndexImport(imported, imported - 1, (0,)),),
        objects_to_build=(Build(T(id.value - 1), Project((0,), Get(imported - 1))),),
        index_exports=(IndexExport(id, T(id.value - 1), (0,)),),
    )


def running(*descriptions: DataflowDescription, workers: int = 1) -> Workers:
    runtime = Workers.start(workers)
    for description in descriptions:
        runtime.apply(CreateDataflow(description))
        runtime.apply(Schedule(description.exports[0]))
    runtime.settle()
    return runtime


def plan(runtime: Workers, new: Sequence[Command]) -> ReconcilePlan:
    """What worker 0 would do to reconcile a connection that sent ``new``."""
    state = runtime.states[0]
    return plan_reconcile(state.instance, state.running(), list(new))


INDEX = index_of(1000, "data", 1001, (0,))
COUNT = counting(2001, 1001)
COUNT_OF_COUNT = counting(3001, 2001)


def test_a_compatible_uncompacted_dataflow_is_kept_for_its_new_as_of() -> None:
    runtime = running(INDEX, COUNT)
    later = counting(2001, 1001, as_of=3)
    reconciled = plan(runtime, [CreateDataflow(INDEX), CreateDataflow(later)])
    assert reconciled.kept == {U(1001): 0, U(2001): 3}
    assert reconciled.compactions == (
        AllowCompaction(1001, Frontier.at(0)),
        AllowCompaction(2001, Frontier.at(3)),
    )
    assert reconciled.rest == ()


def test_a_dataflow_with_another_plan_is_dropped_and_created_again() -> None:
    runtime = running(INDEX, COUNT)
    other = CreateDataflow(counting(2001, 1001, grouped=True))
    reconciled = plan(runtime, [CreateDataflow(INDEX), other])
    assert reconciled.kept == {U(1001): 0}
    assert reconciled.dropped == {U(2001)}
    assert reconciled.rest == (other,)


def test_a_dataflow_compacted_past_the_new_as_of_is_not_kept() -> None:
    runtime = running(INDEX, COUNT)
    runtime.apply(AllowCompaction(2001, Frontier.at(4)))
    again = CreateDataflow(counting(2001, 1001, as_of=2))
    reconciled = plan(runtime, [CreateDataflow(INDEX), again])
    assert reconciled.dropped == {U(2001)}
    assert reconciled.rest == (again,)
    # Compacted to 4, it does stand in for a dataflow built as of 4.
    at_4 = [CreateDataflow(INDEX), CreateDataflow(counting(2001, 1001, as_of=4))]
    assert plan(runtime, at_4).kept == {U(1001): 0, U(2001): 4}


def test_a_dataflow_with_a_subscribe_is_never_kept() -> None:
    runtime = running(INDEX, subscribed(5001))
    same = CreateDataflow(subscribed(5001))
    reconciled = plan(runtime, [CreateDataflow(INDEX), same])
    assert reconciled.kept == {U(1001): 0}
    assert reconciled.dropped == {U(5001)}
    assert reconciled.rest == (same,)


def test_a_dataflow_whose_imported_index_is_not_kept_is_not_kept_either() -> None:
    runtime = running(INDEX, COUNT, COUNT_OF_COUNT)
    rebuilt = CreateDataflow(index_of(1000, "data", 1001, (1,)))  # another key
    new: list[Command] = [rebuilt, CreateDataflow(COUNT), CreateDataflow(COUNT_OF_COUNT)]
    reconciled = plan(runtime, new)
    # The count would read the old arrangement of 1001, and the count of the
    # count the old count: neither is kept.
    assert reconciled.kept == {}
    assert reconciled.dropped == {U(1001), U(2001), U(3001)}
    assert reconciled.rest == tuple(new)


def test_a_dataflow_whose_imported_index_is_kept_is_kept() -> None:
    runtime = running(INDEX, COUNT, COUNT_OF_COUNT)
    other = CreateDataflow(counting(3001, 2001, grouped=True))
    reconciled = plan(runtime, [CreateDataflow(INDEX), CreateDataflow(COUNT), other])
    assert reconciled.kept == {U(1001): 0, U(2001): 0}
    assert reconciled.dropped == {U(3001)}


def test_a_query_dataflow_not_replayed_is_dropped() -> None:
    runtime = running(INDEX, query(T(4001), 1001))
    reconciled = plan(runtime, [CreateDataflow(INDEX), Peek(1, 1001, 0)])
    assert reconciled.kept == {U(1001): 0}
    assert reconciled.dropped == {T(4001)}
    assert AllowCompaction(T(4001), Frontier.empty()) in reconciled.compactions
    assert reconciled.rest == (Peek(1, 1001, 0),)


def test_creates_keep_their_sent_order_and_come_before_the_other_commands() -> None:
    runtime = running(INDEX)
    second, third = index_of(1000, "data", 2001, (1,)), subscribed(5001)
    new: list[Command] = [
        CreateDataflow(COUNT),
        Schedule(2001),
        CreateDataflow(INDEX),
        CreateDataflow(second),
        Peek(7, 1001, 0),
        CreateDataflow(third),
        Schedule(5001),
    ]
    reconciled = plan(runtime, new)
    assert reconciled.compactions == (AllowCompaction(1001, Frontier.at(0)),)
    assert reconciled.rest == (
        CreateDataflow(COUNT),
        CreateDataflow(second),
        CreateDataflow(third),
        Schedule(2001),
        Peek(7, 1001, 0),
        Schedule(5001),
    )


def test_a_kept_dataflow_keeps_its_arrangement_and_reads_as_of_the_new_as_of() -> None:
    runtime = running(INDEX, COUNT, workers=2)
    runtime.shards.shard("data").write(0, [(1, "a"), (2, "b")])
    runtime.shards.shard("data").write(3, [(3, "c")])
    runtime.settle()
    kept = [runtime.index(2001, worker).arrangement for worker in range(2)]
    reconciled = plan(runtime, [CreateDataflow(INDEX), CreateDataflow(counting(2001, 1001, 2))])
    for state in runtime.states:
        state.begin_reconcile(reconciled)
        for command in reconciled.rest:
            state.apply(command)
    runtime.settle()
    assert [runtime.index(2001, worker).arrangement for worker in range(2)] == kept
    assert [state.builds for state in runtime.states] == [2, 2]
    assert runtime.rows(2001, 3) == Counter({(3,): 1})
    runtime.apply(Peek(1, 2001, 1))
    assert (
        runtime.answers(1)
        == [PeekResponse(1, PeekError("read at ts 1 is before the compaction frontier 2"))] * 2
    )


def test_a_create_sent_twice_on_a_new_connection_is_rejected_not_a_crash() -> None:
    # On the first connection the second create is rejected; on a later one
    # reconciliation must not fail on it either.
    runtime = running(INDEX)
    twice: list[Command] = [CreateDataflow(INDEX), CreateDataflow(INDEX)]
    runtime.apply(twice[1])
    assert runtime.responses[0][-1] == CommandRejected(twice[1], "collection u1001 already exists")
    reconciled = plan(runtime, twice)
    assert reconciled.kept == {U(1001): 0}
    state = runtime.states[0]
    state.begin_reconcile(reconciled)
    for command in reconciled.rest:
        state.apply(command)
    assert state.drain() == [CommandRejected(twice[1], "collection u1001 already exists")]


# A property: kept is the largest set of replayed, compatible, uncompacted,
# subscribe-free dataflows closed under imports.


@st.composite
def histories(
    draw: st.DrawFn,
) -> tuple[list[DataflowDescription], dict[GlobalId, int], list[DataflowDescription]]:
    """Running dataflows (indexes of a shard, and counts over earlier
    indexes), the compaction of some, and what a new connection replays."""
    old: list[DataflowDescription] = []
    for number in range(draw(st.integers(1, 5))):
        id = 1001 + 1000 * number
        if number == 0 or draw(st.booleans()):
            old.append(index_of(id - 1, "data", id, (0,), draw(st.integers(0, 2))))
        elif draw(st.integers(0, 4)) == 0:
            old.append(subscribed(id, draw(st.integers(0, 2))))
        else:
            source = draw(st.sampled_from([d for d in old if d.index_exports]))
            # Never before its import's as_of: a dataflow built on an import
            # compacted past its as_of is a panic (shared fate), not history.
            as_of = draw(st.integers(source.as_of, 2))
            old.append(counting(id, source.exports[0].value, as_of))
    compacted = {d.exports[0]: draw(st.integers(0, 4)) for d in old if draw(st.integers(0, 3)) == 0}
    new: list[DataflowDescription] = []
    for description in old:
        change = draw(st.sampled_from(["same", "same", "later", "earlier", "other", "gone"]))
        match change:
            case "same":
                new.append(description)
            case "later" | "earlier":
                step = 1 if change == "later" else -1
                as_of = max(description.as_of + step * draw(st.integers(1, 2)), 0)
                new.append(_with_as_of(description, as_of))
            case "other" if description.index_exports:
                export = description.index_exports[0]
                new.append(_with_key(description, (*export.key, 1)))
            case _:
                pass
    return old, compacted, draw(st.permutations(new))


def _with_as_of(description: DataflowDescription, as_of: int) -> DataflowDescription:
    return attrs.evolve(description, as_of=as_of)


def _with_key(description: DataflowDescription, key: tuple[int, ...]) -> DataflowDescription:
    export = attrs.evolve(description.index_exports[0], key=key)
    return attrs.evolve(description, index_exports=(export,))


def _candidate(old: DataflowDescription, since: int, new: DataflowDescription) -> bool:
    """Kept but for its imports: replayed unchanged but for a later as_of
    not before its compaction, and no subscribe."""
    if any(isinstance(sink.connection, Subscribe) for sink in new.sink_exports):
        return False
    return attrs.evolve(old, as_of=new.as_of) == new and max(old.as_of, since) <= new.as_of


@settings(max_examples=200, deadline=None, derandomize=True, database=None)
@given(history=histories())
def test_the_kept_dataflows_are_the_largest_set_closed_under_imports(
    history: tuple[list[DataflowDescription], dict[GlobalId, int], list[DataflowDescription]],
) -> None:
    old, compacted, new = history
    runtime = running(*old)
    for id, since in compacted.items():
        runtime.apply(AllowCompaction(id, Frontier.at(since)))
    reconciled = plan(runtime, [CreateDataflow(description) for description in new])
    replayed = {description.exports: description for description in new}
    # A compaction before a dataflow's as_of is rejected: its since stays.
    sinces = {d.exports: max(compacted.get(d.exports[0], 0), d.as_of) for d in old}
    candidates = [
        d
        for d in old
        if d.exports in replayed and _candidate(d, sinces[d.exports], replayed[d.exports])
    ]
    # Brute force: every subset of the candidates whose imports it exports;
    # the largest (their union is one too, so it is unique).
    closed = [
        subset
        for size in range(len(candidates) + 1)
        for subset in itertools.combinations(candidates, size)
        if all(
            index.id in {id for d in subset for id in d.exports}
            for d in subset
            for index in d.index_imports
        )
    ]
    largest = max(closed, key=len)
    assert reconciled.kept == {d.exports[0]: replayed[d.exports].as_of for d in largest}
    assert reconciled.dropped == {d.exports[0] for d in old} - set(reconciled.kept)
    creates = [c for c in reconciled.rest if isinstance(c, CreateDataflow)]
    assert creates == [CreateDataflow(d) for d in new if d.exports[0] not in reconciled.kept]
