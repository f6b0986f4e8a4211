"""Merging the parts' responses (``PartitionedState``), without Trio:
frontiers, peeks and rejections."""

from __future__ import annotations

from replica import (
    Canceled,
    CommandRejected,
    Frontier,
    Frontiers,
    PartitionedState,
    PeekError,
    PeekResponse,
    Rows,
    Schedule,
)


def test_a_merged_frontier_waits_for_every_part_and_then_takes_the_minimum() -> None:
    state = PartitionedState(2)
    assert state.absorb(0, Frontiers(7, Frontier.at(5))) is None
    assert state.absorb(1, Frontiers(7, Frontier.at(3))) == Frontiers(7, Frontier.at(3))
    assert state.absorb(1, Frontiers(7, Frontier.at(4))) == Frontiers(7, Frontier.at(4))
    assert state.absorb(1, Frontiers(7, Frontier.at(9))) == Frontiers(7, Frontier.at(5))
    assert state.absorb(0, Frontiers(7, Frontier.at(6))) == Frontiers(7, Frontier.at(6))


def test_a_dropped_collection_can_be_reported_afresh_under_the_same_id() -> None:
    state = PartitionedState(1)
    assert state.absorb(0, Frontiers(7, Frontier.at(5))) == Frontiers(7, Frontier.at(5))
    assert state.absorb(0, Frontiers(7, Frontier.empty())) == Frontiers(7, Frontier.empty())
    assert state.absorb(0, Frontiers(7, Frontier.at(1))) == Frontiers(7, Frontier.at(1))


def test_a_part_that_regresses_a_frontier_is_recorded_and_ignored() -> None:
    found: list[str] = []
    state = PartitionedState(1, found)
    state.absorb(0, Frontiers(7, Frontier.at(5)))
    assert state.absorb(0, Frontiers(7, Frontier.at(4))) is None
    assert found == ["part 0 regressed collection u7 from [5] to [4]"]
    assert state.absorb(0, Frontiers(7, Frontier.at(6))) == Frontiers(7, Frontier.at(6))


def test_a_merged_peek_waits_for_every_part() -> None:
    state = PartitionedState(3)
    assert state.absorb(2, PeekResponse(1, Rows(((3,),)))) is None
    assert state.absorb(0, PeekResponse(1, Rows(((1,),)))) is None
    assert state.absorb(1, PeekResponse(1, Rows(()))) == PeekResponse(1, Rows(((1,), (3,))))


def test_a_merged_peek_fails_if_any_part_failed_and_is_canceled_if_any_was() -> None:
    state = PartitionedState(2)
    state.absorb(0, PeekResponse(1, Canceled()))
    assert state.absorb(1, PeekResponse(1, PeekError("no"))) == PeekResponse(1, PeekError("no"))
    state.absorb(0, PeekResponse(2, Canceled()))
    assert state.absorb(1, PeekResponse(2, Rows(()))) == PeekResponse(2, Canceled())


def test_a_rejection_is_reported_once_however_many_parts_reject() -> None:
    state = PartitionedState(2)
    rejected = CommandRejected(Schedule(1), "no")
    assert state.absorb(0, rejected) == rejected
    assert state.absorb(1, rejected) is None


def test_the_same_command_rejected_again_is_reported_again() -> None:
    state = PartitionedState(2)
    rejected = CommandRejected(Schedule(1), "no")
    assert state.absorb(1, rejected) == rejected
    assert state.absorb(0, rejected) is None
    assert state.absorb(0, rejected) == rejected  # part 0 is first to reject it twice
    assert state.absorb(1, rejected) is None
