"""Union, Negate, Threshold, TopK, Constant and FlatMap (and bigint
arithmetic in a Map), rendered at 1 to 3 workers stepped in random orders over random
writes and retractions, give at every time below the frontier what a
from-scratch evaluation gives; and each does work in proportion to the
change, not to the collection."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from replica import Get, Plan, Project, Row, Update
from replica.engine._stream import Stream
from replica.engine._top_k import TopKOperator
from replica.model import (
    Call,
    Column,
    Constant,
    FlatMap,
    Literal,
    Map,
    Negate,
    ScalarFunc,
    Threshold,
    TopK,
    Union,
    top_k_rows,
)

from .test_properties import PROPERTY, A, B, check_plan


@st.composite
def set_plans(draw: st.DrawFn, depth: int = 2) -> Plan:
    """A two-column plan over ``A`` and ``B`` whose collection never holds
    a row a negative number of times (Negate only under a Threshold)."""
    if depth == 0 or draw(st.integers(0, 3)) == 0:
        return Get(draw(st.sampled_from([A, B])))
    kind = draw(
        st.sampled_from(["union", "except", "threshold", "top_k", "constant", "map", "flat_map"])
    )
    input = draw(set_plans(depth - 1))
    if kind == "union":
        return Union((input, draw(set_plans(depth - 1))))
    if kind == "except":
        return Threshold(Union((input, Negate(draw(set_plans(depth - 1))))))
    if kind == "threshold":
        return Threshold(input)
    if kind == "constant":
        rows = draw(
            st.lists(
                st.tuples(st.tuples(st.integers(0, 2), st.integers(0, 2)), st.integers(1, 2)),
                max_size=3,
            )
        )
        return Union((input, Constant(tuple(rows), 2)))
    if kind == "map":
        func = draw(st.sampled_from([ScalarFunc.ADD, ScalarFunc.MUL, ScalarFunc.MOD]))
        right = Literal(draw(st.integers(1, 3)))
        # Replace the second column by an arithmetic of both (no zero divisor).
        return _project_last(Map((Call(func, (Column(0), right)),), input))
    if kind == "flat_map":
        if draw(st.booleans()):
            series = (Column(0), Column(1), Literal(draw(st.sampled_from([1, 2, -1]))))
            return Project((0, 2), FlatMap("generate_series", series, input))
        return Project(
            (2, 3), FlatMap("wrap2", (Column(1), Column(0), Column(0), Column(0)), input)
        )
    group = tuple(draw(st.lists(st.integers(0, 1), max_size=1)))
    order = tuple(
        draw(st.lists(st.tuples(st.integers(0, 1), st.booleans(), st.booleans()), max_size=2))
    )
    limit = draw(st.none() | st.integers(0, 3))
    offset = draw(st.integers(0, 2))
    return TopK(input, group, order, None if limit is None else Literal(limit), offset)


def _project_last(plan: Map) -> Plan:
    return Project((0, 2), plan)


@PROPERTY
@given(data=st.data(), workers=st.integers(1, 3), plan=set_plans(), through_index=st.booleans())
def test_set_operators_match_a_from_scratch_evaluation(
    data: st.DataObject, workers: int, plan: Plan, through_index: bool
) -> None:
    check_plan(data, workers, plan, 2, through_index)


def test_top_k_orders_as_materialize_compares_columns() -> None:
    rows: dict[Row, int] = {(1, None): 1, (2, 5): 2, (3, 7): 1, (4, 5): 1}
    # Descending, NULLs last: 7, 5, 5, 5 (ties by the whole row), then NULL.
    assert top_k_rows(rows, ((1, True, True),), 3, 0) == {(3, 7): 1, (2, 5): 2}
    assert top_k_rows(rows, ((1, True, False),), 1, 0) == {(1, None): 1}
    assert top_k_rows(rows, ((1, False, True),), None, 1) == {
        (2, 5): 1,
        (4, 5): 1,
        (3, 7): 1,
        (1, None): 1,
    }
    assert top_k_rows(rows, (), 0, 0) == {}
    assert top_k_rows({(1,): -1, (2,): 1}, (), None, 0) == {(2,): 1}


def test_a_top_k_does_work_for_the_groups_a_change_touches() -> None:
    """A change to one group recomputes that group alone."""
    source = Stream()
    operator = TopKOperator(source, source.subscribe(), (0,), ((1, True, True),), Literal(1), 0)
    out = operator.out.subscribe()
    source.push([((group, value), 0, 1) for group in range(100) for value in range(3)])
    source.frontier = 1
    operator.step()
    assert len(out.take()) == 100
    recomputed: list[Row] = []
    original = operator._regroup

    def regroup(group: Row, time: int, output: list[Update]) -> None:
        recomputed.append(group)
        original(group, time, output)

    operator._regroup = regroup  # type: ignore[method-assign]
    source.push([((7, 9), 1, 1)])
    source.frontier = 2
    operator.step()
    assert recomputed == [(7,)]
    assert sorted(out.take()) == [((7, 2), 1, -1), ((7, 9), 1, 1)]


class _CountingReads(dict[Row, int]):
    reads = 0

    def __getitem__(self, row: Row) -> int:
        type(self).reads += 1
        return super().__getitem__(row)


def test_a_top_k_reads_the_first_places_of_a_group_not_all_of_it() -> None:
    source = Stream()
    operator = TopKOperator(source, source.subscribe(), (), ((0, False, True),), Literal(2), 1)
    out = operator.out.subscribe()
    source.push([((value,), 0, 1) for value in range(10_000)])
    source.frontier = 1
    operator.step()
    assert sorted(out.take()) == [((1,), 0, 1), ((2,), 0, 1)]
    counts, order = operator.groups[()]
    operator.groups[()] = (_CountingReads(counts), order)
    source.push([((-1,), 1, 1)])
    source.frontier = 2
    operator.step()
    assert sorted(out.take()) == [((0,), 1, 1), ((2,), 1, -1)]
    assert _CountingReads.reads <= 4
