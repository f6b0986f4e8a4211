"""The replica's plain parts, without Trio: frontiers, shards, partitioning,
response merging."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from replica import (
    Canceled,
    CommandRejected,
    ConnectionOrder,
    Frontier,
    Frontiers,
    PartitionedState,
    PeekError,
    PeekResponse,
    ProtocolError,
    Rows,
    Schedule,
    Shard,
    UpperRegressionError,
    WriteBelowUpperError,
    partition_of,
)


def test_frontiers_are_ordered_with_the_empty_frontier_last() -> None:
    assert Frontier.at(3) < Frontier.at(5) < Frontier.empty()
    assert min(Frontier.empty(), Frontier.at(2)) == Frontier.at(2)
    assert not Frontier.empty() < Frontier.empty()
    assert (str(Frontier.at(4)), str(Frontier.empty())) == ("[4]", "[]")


def test_a_frontier_reaches_ts_once_every_earlier_time_is_complete() -> None:
    assert Frontier.at(1).reached(1)
    assert not Frontier.at(1).reached(2)
    assert Frontier.empty().reached(10**9)
    assert Frontier.at(2).beyond(1)
    assert not Frontier.at(2).beyond(2)


def test_a_shard_write_sets_the_upper_and_wakes_listeners() -> None:
    shard = Shard("data")
    woken: list[str] = []
    stop = shard.listen(lambda: woken.append("a"))
    assert shard.write(0, [(1,), (2,)]) == 2
    assert shard.upper == 1
    assert shard.write(4, [(3,)]) == 1
    assert shard.upper == 5
    stop()
    shard.advance(9)
    assert woken == ["a", "a"]
    assert shard.updates == [((1,), 0, 1), ((2,), 0, 1), ((3,), 4, 1)]


def test_a_write_below_the_upper_is_refused_and_writes_nothing() -> None:
    shard = Shard("data")
    shard.write(3, [(1,)])
    with pytest.raises(WriteBelowUpperError, match=r"^write at ts 2 is below the shard upper 4$"):
        shard.write(2, [(9,)])
    assert (shard.upper, len(shard.updates)) == (4, 1)


def test_an_advance_that_would_move_the_upper_back_is_refused() -> None:
    shard = Shard("data")
    shard.advance(5)
    with pytest.raises(UpperRegressionError, match=r"^upper 4 is below the shard upper 5$"):
        shard.advance(4)
    assert shard.upper == 5


PINNED = "[0, 1, 3, 0, 2, 3, 0, 2] [3, 3, 1, 3, 3, 3]"
PARTITIONS = (
    "from replica import partition_of; "
    "print([partition_of((i, 'x'), (0,), 4) for i in range(8)], "
    "[partition_of(('k%d' % i, 1), (0,), 4) for i in range(6)])"
)


def test_partitioning_is_a_stable_hash_of_the_key_columns() -> None:
    assert partition_of((1, "a"), (1,), 4) == partition_of((2, "a"), (1,), 4)
    assert partition_of((1,), (3,), 4) == partition_of((2,), (3,), 4)  # missing key column


@pytest.mark.parametrize("seed", ["0", "1", "4242"])
def test_partitions_are_the_same_whatever_the_hash_seed(seed: str) -> None:
    # Pinned values: these must not change between runs or processes
    # (Python salts the hash of strings; the partitioning must not depend on it).
    result = subprocess.run(
        [sys.executable, "-c", PARTITIONS],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONHASHSEED": seed},
    )
    assert result.stdout.strip() == PINNED


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


def test_a_connection_order_numbers_hellos_as_they_arrive() -> None:
    order = ConnectionOrder()
    assert [order.record(nonce) for nonce in (50, 7, 99)] == [0, 1, 2]
    assert order.position(7) == 1
    assert 99 in order
    assert 3 not in order
    with pytest.raises(ProtocolError, match=r"^connection 3 never said hello here$"):
        order.position(3)
    with pytest.raises(ProtocolError, match=r"^connection 7 said hello twice$"):
        order.record(7)
    assert len(order) == 3
