"""Reconciliation as a plain function: what a new connection keeps, drops and
creates (DESIGN.md §2.6), and what a worker's state does with bad commands."""

from __future__ import annotations

import attrs
import pytest

from replica import (
    AllowCompaction,
    Canceled,
    CancelPeek,
    Command,
    CommandRejected,
    ComputeState,
    CreateDataflow,
    CreateInstance,
    DataflowDescription,
    Frontier,
    Frontiers,
    GlobalId,
    IndexExport,
    InstanceConfig,
    Peek,
    PeekError,
    PeekResponse,
    Rows,
    Running,
    Schedule,
    ShardCatalog,
    SourceImport,
    plan_reconcile,
)

U = GlobalId.user


def index(as_of: int = 0, key: tuple[int, ...] = (0,), id: int = 1001) -> DataflowDescription:
    return DataflowDescription.index(1000, "data", id, key, as_of)


def running(*dataflows: DataflowDescription, since: int | None = None) -> ComputeState:
    state = ComputeState(0, 1, ShardCatalog(), wake=lambda: None)
    state.apply(CreateInstance())
    for dataflow in dataflows:
        state.apply(CreateDataflow(dataflow))
        state.apply(Schedule(dataflow.exports[0]))
        if since is not None:
            state.apply(AllowCompaction(dataflow.exports[0], Frontier.at(since)))
    state.drain()
    return state


def test_an_identical_dataflow_is_kept_and_compacted_to_the_new_as_of() -> None:
    state = running(index(as_of=0))
    plan = plan_reconcile(state.instance, state.running(), [CreateDataflow(index(as_of=0))])
    assert plan.retained == {U(1001)}
    assert plan.dropped == frozenset()
    assert plan.compactions == (AllowCompaction(1001, Frontier.at(0)),)
    assert plan.rest == ()


def test_a_later_as_of_still_keeps_the_dataflow() -> None:
    state = running(index(as_of=0))
    plan = plan_reconcile(state.instance, state.running(), [CreateDataflow(index(as_of=4))])
    assert plan.retained == {U(1001)}
    assert plan.compactions == (AllowCompaction(1001, Frontier.at(4)),)


def test_an_earlier_as_of_rebuilds_the_dataflow() -> None:
    state = running(index(as_of=3))
    new = CreateDataflow(index(as_of=1))
    plan = plan_reconcile(state.instance, state.running(), [new])
    assert plan.dropped == {U(1001)}
    assert plan.compactions == (AllowCompaction(1001, Frontier.empty()),)
    assert plan.rest == (new,)


def test_a_different_key_at_the_same_as_of_drops_then_creates() -> None:
    state = running(index(as_of=0, key=(0,)))
    new = CreateDataflow(index(as_of=0, key=(1,)))
    plan = plan_reconcile(state.instance, state.running(), [new, Schedule(1001)])
    assert plan.compactions == (AllowCompaction(1001, Frontier.empty()),)
    assert plan.rest == (new, Schedule(1001))


def test_a_dataflow_compacted_past_the_new_as_of_is_rebuilt() -> None:
    state = running(index(as_of=0), since=5)
    new = CreateDataflow(index(as_of=2))
    plan = plan_reconcile(state.instance, state.running(), [new])
    assert plan.dropped == {U(1001)}
    assert plan.rest == (new,)


def test_history_is_reduced_before_comparing() -> None:
    # as_of 0 compacted to 5 is, for reconciliation, a dataflow built as of 5.
    state = running(index(as_of=0), since=5)
    plan = plan_reconcile(state.instance, state.running(), [CreateDataflow(index(as_of=5))])
    assert plan.retained == {U(1001)}


def test_a_dataflow_the_new_controller_does_not_mention_is_dropped() -> None:
    state = running(index(id=1001), index(id=2001))
    plan = plan_reconcile(state.instance, state.running(), [CreateDataflow(index(id=2001))])
    assert plan.retained == {U(2001)}
    assert plan.dropped == {U(1001)}
    assert plan.compactions == (
        AllowCompaction(2001, Frontier.at(0)),
        AllowCompaction(1001, Frontier.empty()),
    )


def test_other_commands_keep_their_order_after_the_compactions() -> None:
    state = running(index())
    new: list[Command] = [
        CreateInstance(),
        CreateDataflow(index()),
        Schedule(1001),
        Peek(1, 1001, 0),
    ]
    plan = plan_reconcile(state.instance, state.running(), new)
    assert plan.rest == (Schedule(1001), Peek(1, 1001, 0))


def test_a_different_instance_configuration_is_rejected() -> None:
    state = running()
    other = CreateInstance(InstanceConfig((("workers", "9"),)))
    plan = plan_reconcile(state.instance, state.running(), [other])
    assert plan.rejected == (
        CommandRejected(other, "instance configuration differs from the running instance"),
    )


def test_the_drop_phase_forgets_old_peeks_and_reports_nothing_for_drops() -> None:
    state = running(index(id=1001), index(id=2001))
    state.apply(Peek(9, 1001, 50))
    state.step()
    state.drain()
    plan = plan_reconcile(state.instance, state.running(), [CreateDataflow(index(id=2001))])
    state.begin_reconcile(plan)
    assert state.peeks == {}
    assert state.drain() == []
    assert set(state.collections) == {U(2001)}
    state.step()
    assert state.drain() == [Frontiers(2001, Frontier.at(0))]  # reported afresh


@pytest.mark.parametrize(
    ("command", "reason"),
    [
        (Schedule(7), "schedule of collection u7: collection ID does not exist"),
        (
            AllowCompaction(7, Frontier.at(1)),
            "allow compaction of collection u7: collection ID does not exist",
        ),
        (
            AllowCompaction(1001, Frontier.at(1)),
            "allow compaction of collection u1001 to 1 is before its compaction frontier 3",
        ),
        (CreateDataflow(index()), "collection u1001 already exists"),
        (
            CreateInstance(InstanceConfig((("a", "b"),))),
            "instance configuration differs from the running instance",
        ),
    ],
)
def test_a_bad_command_is_rejected_and_changes_nothing(
    command: CreateDataflow | Schedule | AllowCompaction | CreateInstance, reason: str
) -> None:
    state = running(index(), since=3)
    before = (
        state.instance,
        dict(state.collections),
        state.collections[U(1001)].since,
        state.builds,
    )
    state.apply(command)
    assert state.drain() == [CommandRejected(command, reason)]
    assert (
        state.instance,
        state.collections,
        state.collections[U(1001)].since,
        state.builds,
    ) == before


def test_peeks_answer_errors_rows_and_cancellation() -> None:
    state = running(index(as_of=2))
    state.shards.shard("data").write(2, [(5,), (6,)])
    state.step()
    state.drain()
    state.apply(Peek(1, 7, 2))
    state.apply(Peek(2, 1001, 1))
    state.apply(Peek(3, 1001, 2))
    state.apply(Peek(4, 1001, 3))
    state.apply(CancelPeek(4))
    state.apply(CancelPeek(4))
    assert state.drain() == [
        PeekResponse(1, PeekError("collection ID does not exist")),
        PeekResponse(2, PeekError("read at ts 1 is before the compaction frontier 2")),
        PeekResponse(3, Rows(((5,), (6,)))),
        PeekResponse(4, Canceled()),
    ]


def test_a_pending_peek_answers_once_the_frontier_passes_it() -> None:
    state = running(index())
    state.apply(Peek(1, 1001, 1))
    state.step()
    assert [r for r in state.drain() if isinstance(r, PeekResponse)] == []
    state.shards.shard("data").write(1, [(1,)])
    state.step()
    assert PeekResponse(1, Rows(((1,),))) in state.drain()


def test_compaction_past_a_pending_peek_fails_it_and_a_drop_fails_the_rest() -> None:
    state = running(index())
    state.apply(Peek(1, 1001, 3))
    state.apply(Peek(2, 1001, 9))
    state.apply(AllowCompaction(1001, Frontier.at(5)))
    state.apply(AllowCompaction(1001, Frontier.empty()))
    assert state.drain() == [
        PeekResponse(1, PeekError("read at ts 3 is before the compaction frontier 5")),
        PeekResponse(2, PeekError("collection ID does not exist")),
        Frontiers(1001, Frontier.empty()),
    ]


def test_an_id_dropped_on_this_connection_is_not_reused() -> None:
    state = running(index())
    state.apply(AllowCompaction(1001, Frontier.empty()))
    state.drain()
    again = CreateDataflow(index(key=(1,)))
    state.apply(again)
    assert state.drain() == [
        CommandRejected(
            again, "collection u1001 was dropped on this connection; ids are not reused"
        )
    ]
    assert state.collections == {}
    state.retired.clear()  # what a new connection does
    state.apply(again)
    assert set(state.collections) == {U(1001)}


def two_indexes(as_of: int = 0) -> DataflowDescription:
    """One dataflow exporting two indexes of the same shard."""
    return DataflowDescription(
        as_of=as_of,
        source_imports=(SourceImport(1000, "data"),),
        index_exports=(IndexExport(1001, 1000, (0,)), IndexExport(1002, 1000, (1,))),
    )


def test_a_dataflow_with_one_export_compacted_past_the_new_as_of_is_rebuilt() -> None:
    # The other export (never compacted) does not make the dataflow
    # "uncompacted": every export must be.
    state = running(two_indexes())
    state.apply(AllowCompaction(1001, Frontier.at(2)))
    plan = plan_reconcile(state.instance, state.running(), [CreateDataflow(two_indexes(1))])
    assert plan.retained == frozenset()
    assert plan.dropped == {U(1001), U(1002)}


def test_a_dataflow_with_one_export_dropped_is_rebuilt_whole() -> None:
    state = running(two_indexes())
    state.apply(AllowCompaction(1002, Frontier.empty()))
    plan = plan_reconcile(state.instance, state.running(), [CreateDataflow(two_indexes())])
    assert plan.retained == frozenset()
    assert plan.dropped == {U(1001)}
    assert plan.rest == (CreateDataflow(two_indexes()),)


def test_running_follows_compactions_and_drops_since_it_was_last_asked() -> None:
    description = two_indexes()
    state = running(description)
    assert state.running() == [Running(description, (U(1001), U(1002)), 0)]
    state.apply(AllowCompaction(1001, Frontier.at(3)))
    assert state.running() == [Running(description, (U(1001), U(1002)), 3)]
    state.apply(AllowCompaction(1002, Frontier.empty()))
    (only,) = state.running()
    assert (only.exports, only.since, only.whole) == ((U(1001),), 3, False)
    state.apply(AllowCompaction(1001, Frontier.empty()))
    assert state.running() == []


def test_an_identical_description_compacted_past_the_new_as_of_is_not_kept() -> None:
    description = index(as_of=0)
    state = running(description, since=4)
    plan = plan_reconcile(state.instance, state.running(), [CreateDataflow(description)])
    assert plan.retained == frozenset()
    assert plan.dropped == {U(1001)}
    plan = plan_reconcile(state.instance, state.running(), [CreateDataflow(index(as_of=4))])
    assert plan.retained == {U(1001)}


def test_a_kept_collection_reported_afresh_at_its_upper_sends_its_last_report_again() -> None:
    shards = ShardCatalog()
    shards.shard("data").write(0, [(1,)])
    state = ComputeState(0, 1, shards, wake=lambda: None)
    state.apply(CreateInstance())
    state.apply(CreateDataflow(index()))
    state.apply(Schedule(1001))
    state.step()
    (first,) = state.drain()
    assert first == Frontiers(1001, Frontier.at(1))
    state.begin_reconcile(
        plan_reconcile(state.instance, state.running(), [CreateDataflow(index())])
    )
    state.step()
    (again,) = state.drain()
    assert again is first
    shards.shard("data").write(1, [(2,)])
    state.step()
    assert state.drain() == [Frontiers(1001, Frontier.at(2))]
    state.apply(AllowCompaction(1001, Frontier.empty()))
    assert state.drain() == [Frontiers(1001, Frontier.empty())]
    state.new_connection()
    state.apply(CreateDataflow(index()))
    state.apply(Schedule(1001))
    state.step()
    assert state.drain() == [Frontiers(1001, Frontier.at(2))]


def test_a_kept_dataflows_compaction_is_the_one_the_constructor_builds() -> None:
    # The plan writes these slots and no others: a new field must be added there.
    assert [field.name for field in attrs.fields(AllowCompaction)] == ["id", "frontier"]
    state = running(index(as_of=0))
    (compaction,) = plan_reconcile(
        state.instance, state.running(), [CreateDataflow(index(as_of=2))]
    ).compactions
    built = AllowCompaction(1001, Frontier.at(2))
    assert (compaction, hash(compaction), repr(compaction)) == (built, hash(built), repr(built))
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        compaction.frontier = Frontier.at(3)  # type: ignore[misc]
