"""``TopK``: each group's first places of an order, kept as the group moves."""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterator

import attrs

from ..model._relational import _first_places, _sort_key
from ..model._rows import Datum, Row, Update
from ..model._scalar import EvalError, Scalar, evaluate
from ._reduce import _Reduce
from ._stream import Errors, RowLimit


@attrs.define(eq=False)
class TopKOperator(_Reduce):
    """``TopK`` per group of ``group_key``, its input exchanged by the key:
    each completed time's updates change their groups' rows, kept in order
    (a row in or out costs a search and a move), and each changed group's
    output moves from its old first places to its new ones, read from the
    front of its order (work for ``offset + limit`` places, not the group).
    A time whose changes pass :data:`MAX_OPERATOR_ROWS` emits nothing, the
    TopK then over (:class:`RowLimit`) and its groups forgotten."""

    order_key: tuple[tuple[int, bool, bool], ...] = ()
    limit: Scalar | None = None
    offset: int = 0
    errors: Errors = attrs.field(factory=Errors)
    # Invariant: a group is here exactly while it holds a row; its order
    # holds (sort key, row) for each of its rows, sorted.
    groups: dict[Row, tuple[dict[Row, int], list[tuple[tuple[object, ...], Row]]]] = attrs.field(
        factory=dict
    )
    outputs: dict[Row, dict[Row, int]] = attrs.field(factory=dict)
    # The error each group's limit fails with, while it holds a row (the
    # group's one error in the errors: retracted when the group empties or
    # its limit no longer fails, as a from-scratch evaluation would have it).
    failed: dict[Row, str] = attrs.field(factory=dict)
    key: Callable[[Row], tuple[object, ...]] = attrs.field(init=False)
    row_limit: RowLimit = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        self.key = _sort_key(self.order_key)
        self.row_limit = RowLimit("top-k", self.errors)

    def _apply_time(self, time: int, updates: Iterator[Update], output: list[Update]) -> None:
        if self.row_limit.over:
            return
        start = len(output)
        touched: set[Row] = set()
        for row, _, diff in updates:
            group = tuple(row[column] for column in self.group_key)
            self._count(group, row, diff)
            touched.add(group)
        for group in touched:
            self._regroup(group, time, output)
        if not self.row_limit.fits(len(output) - start):
            del output[start:]
            self.row_limit.leave_out(time)
            self.groups, self.outputs, self.failed = {}, {}, {}

    def _count(self, group: Row, row: Row, diff: int) -> None:
        counts, order = self.groups.setdefault(group, ({}, []))
        old = counts.get(row, 0)
        count = old + diff
        if count and not old:
            key = self.key(row)
            order.insert(bisect.bisect_left(order, (key,)), (key, row))
        elif old and not count:
            del order[bisect.bisect_left(order, (self.key(row),))]
        if count:
            counts[row] = count
        else:
            counts.pop(row, None)

    def _regroup(self, group: Row, time: int, output: list[Update]) -> None:
        counts, order = self.groups.get(group, ({}, []))
        if not counts:
            self.groups.pop(group, None)
        old = self.outputs.pop(group, {})
        limit = self._limit(group, counts, time)
        new = _first_places((row for _, row in order), counts, limit, self.offset)
        if new:
            self.outputs[group] = new
        for row in old.keys() | new.keys():
            change = new.get(row, 0) - old.get(row, 0)
            if change:
                output.append((row, time, change))

    def _limit(self, group: Row, rows: dict[Row, int], time: int) -> int | None:
        """The group's limit (it reads the group's key only); 0 when it
        fails, the failure then being the group's error at ``time`` on."""
        limit: Datum = None
        error: str | None = None
        if self.limit is not None and rows:
            try:
                limit = evaluate(self.limit, next(iter(rows)))
            except EvalError as failure:
                error, limit = str(failure), 0
        old = self.failed.pop(group, None)
        if error is not None:
            self.failed[group] = error
        if old != error:
            if old is not None:
                self.errors.add(old, time, -1)
            if error is not None:
                self.errors.add(error, time, 1)
        assert limit is None or isinstance(limit, int), "a TopK's limit is a bigint"
        return limit
