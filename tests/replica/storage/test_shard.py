"""Shards, without Trio: writes set the upper and wake listeners; a write below
the upper, or an upper moved back, is refused and changes nothing."""

from __future__ import annotations

import pytest

from replica import (
    Shard,
    UpperRegressionError,
    WriteBelowUpperError,
)


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
