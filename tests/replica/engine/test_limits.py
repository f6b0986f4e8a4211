"""The operators that can multiply rows, at :data:`MAX_OPERATOR_ROWS` and past
it (a limit of 6 here): at it every row comes out; past it the time that
would pass it emits nothing, nor does any later one, and the collection
holds the limit's error from the least time of what was left out."""

from __future__ import annotations

import pytest

from replica.engine import _stream
from replica.engine._join import JoinOperator
from replica.engine._linear import FlatMapRows
from replica.engine._stream import Errors, Stream
from replica.engine._top_k import TopKOperator
from replica.engine._union import UnionOperator
from replica.model import Column, Literal, Update

LIMIT = 6


@pytest.fixture(autouse=True)
def small_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_stream, "MAX_OPERATOR_ROWS", LIMIT)


def message(what: str) -> str:
    return f"{what} produced more than {LIMIT} rows at one worker (this replica's limit)"


def cross_join() -> tuple[Stream, Stream, JoinOperator]:
    left, right = Stream(), Stream()
    return left, right, JoinOperator(left, left.subscribe(), (), right, right.subscribe(), ())


def pairs(lefts: range, rights: range, time: int) -> list[Update]:
    return [((a, b), time, 1) for a in lefts for b in rights]


def test_a_join_at_the_limit_emits_every_row() -> None:
    left, right, join = cross_join()
    out = join.out.subscribe()
    left.push([((a,), 0, 1) for a in range(2)])
    right.push([((b,), 0, 1) for b in range(3)])
    left.frontier = right.frontier = 1
    join.step()
    assert sorted(out.take()) == pairs(range(2), range(3), 0)
    assert join.errors.counts == {}


def test_a_join_past_the_limit_emits_nothing_more_and_is_an_error_from_that_time() -> None:
    left, right, join = cross_join()
    out = join.out.subscribe()
    left.push([((a,), 0, 1) for a in range(2)])
    right.push([((b,), 0, 1) for b in range(3)])
    left.frontier = right.frontier = 1
    join.step()
    assert len(out.take()) == LIMIT
    # Three more rows at time 1 would make nine: none comes out.
    left.push([((2,), 1, 1)])
    left.frontier = right.frontier = 2
    join.step()
    assert out.take() == []
    assert join.errors.counts == {(message("join"), 1): 1}
    assert (join.errors.at(0), join.errors.at(1)) == (None, message("join"))
    # Over for good: later times emit nothing, and neither side is kept.
    right.push([((3,), 2, 1)])
    left.frontier = right.frontier = 3
    join.step()
    assert out.take() == []
    assert join.out.frontier == 3
    assert (join.left_state, join.right_state) == ({}, {})
    assert join.errors.counts == {(message("join"), 1): 1}


def test_a_join_counts_each_completed_time_of_a_step_apart() -> None:
    # Times 0 and 1 complete in one step: time 0's six rows fit and come
    # out, time 1's would pass the limit, and the error is from time 1.
    left, right, join = cross_join()
    out = join.out.subscribe()
    left.push([((a,), 0, 1) for a in range(2)] + [((2,), 1, 1)])
    right.push([((b,), 0, 1) for b in range(3)])
    left.frontier = right.frontier = 2
    join.step()
    assert sorted(out.take()) == pairs(range(2), range(3), 0)
    assert join.errors.counts == {(message("join"), 1): 1}


def flat_map() -> tuple[Stream, FlatMapRows]:
    source = Stream()
    series = (Column(0), Column(1))
    return source, FlatMapRows(source, source.subscribe(), "generate_series", series, Errors())


def test_a_flat_map_at_the_limit_emits_every_row() -> None:
    source, operator = flat_map()
    out = operator.out.subscribe()
    source.push([((1, 3), 0, 1), ((1, 3), 1, 1)])
    operator.step()
    assert len(out.take()) == LIMIT
    assert operator.errors.counts == {}


def test_a_flat_map_past_the_limit_is_an_error_from_the_least_time_it_left_out() -> None:
    source, operator = flat_map()
    out = operator.out.subscribe()
    source.push([((1, 3), 0, 1), ((1, 2), 0, 1), ((1, 2), 5, 1)])
    operator.step()
    assert sorted(out.take()) == [
        ((1, 2, 1), 0, 1),
        ((1, 2, 2), 0, 1),
        ((1, 3, 1), 0, 1),
        ((1, 3, 2), 0, 1),
        ((1, 3, 3), 0, 1),
    ]
    assert operator.errors.counts == {(message("flat map"), 5): 1}
    # Updates come in any order of time: one left out at time 3 moves the
    # error back to it; one at time 7 leaves it at 3, and a row that gives
    # no rows leaves nothing out.
    source.push([((1, 1), 3, 1), ((1, 1), 7, 1), ((2, 1), 1, 1)])
    operator.step()
    assert out.take() == []
    assert operator.errors.counts == {(message("flat map"), 3): 1}


def test_a_union_at_the_limit_emits_every_row_and_past_it_none() -> None:
    first, second = Stream(), Stream()
    union = UnionOperator((first, second), (first.subscribe(), second.subscribe()))
    out = union.out.subscribe()
    first.push([((value,), 0, 1) for value in range(4)])
    second.push([((value,), 1, 1) for value in range(2)])
    union.step()
    assert len(out.take()) == LIMIT
    assert union.errors.counts == {}
    first.push([((9,), 4, 1)])
    second.push([((8,), 2, 1)])
    union.step()
    assert out.take() == []
    assert union.errors.counts == {(message("union"), 2): 1}


def top_k(limit: int | None = None) -> tuple[Stream, TopKOperator]:
    source = Stream()
    places = None if limit is None else Literal(limit)
    order = ((0, False, True),)
    return source, TopKOperator(source, source.subscribe(), (), order, places, 0)


def test_a_top_k_at_the_limit_emits_every_row() -> None:
    source, operator = top_k()
    out = operator.out.subscribe()
    source.push([((value,), 0, 1) for value in range(LIMIT)])
    source.frontier = 1
    operator.step()
    assert len(out.take()) == LIMIT
    assert operator.errors.counts == {}


def test_a_top_k_whose_one_row_pushes_many_places_out_is_past_the_limit() -> None:
    source, operator = top_k(limit=3)
    out = operator.out.subscribe()
    source.push([((value,), 0, 1) for value in range(3)])
    source.frontier = 1
    operator.step()
    assert len(out.take()) == 3
    # One row counted three times, first in the order, takes the three
    # places: it in and three rows out would be four updates for one.
    source.push([((-1,), 1, 3)])
    source.frontier = 2
    operator.step()
    assert out.take() == []
    assert operator.errors.counts == {(message("top-k"), 1): 1}
    assert operator.groups == {}
