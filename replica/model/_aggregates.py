"""A ``Reduce``'s aggregates other than ``count(*)``: ``count``, ``sum``,
``min``, ``max``, ``any`` and ``all`` of a scalar expression, each maybe over
the distinct values only, with the results Materialize's reduce gives.

A group's result depends on its values' multiset and its row count (the
``total``): ``count`` counts non-null values; every other aggregate is NULL
when the group holds only NULLs; ``any`` is true if some value is, false if
all are false, NULL otherwise (``all`` the other way round). A sum is an
integer (Materialize's ``numeric``, printed bare). ``distinct`` counts each
value once (and the group's total is then its distinct values).

:func:`aggregate` computes a result from scratch; :class:`GroupState` keeps
one group's values incrementally (the reduce operator's state), and gives
the same results.
"""

from __future__ import annotations

import enum
import heapq
from collections.abc import Mapping
from typing import Any

import attrs

from ._rows import Datum, Reversed
from ._scalar import Scalar


class AggregateFunc(enum.StrEnum):
    COUNT = "count"
    SUM = "sum"
    MIN = "min"
    MAX = "max"
    ANY = "any"
    ALL = "all"


@attrs.frozen
class AggregateExpr:
    """``func`` of ``expr``'s values in a group (``distinct``: each value once)."""

    func: AggregateFunc
    expr: Scalar
    distinct: bool = False


def aggregate(func: AggregateFunc, values: Mapping[Datum, int], distinct: bool) -> Datum:
    """``func`` over a group whose values occur as often as ``values`` says
    (every count positive; at least one value)."""
    if distinct:
        values = dict.fromkeys(values, 1)
    total = sum(values.values())
    non_null = {value: n for value, n in values.items() if value is not None}
    if func is AggregateFunc.COUNT:
        return sum(non_null.values())
    if not non_null:
        return None
    if func is AggregateFunc.SUM:
        return sum(value * n for value, n in non_null.items())  # type: ignore[misc]
    if func is AggregateFunc.MIN:
        return min(non_null)
    if func is AggregateFunc.MAX:
        return max(non_null)
    trues, falses = non_null.get(True, 0), non_null.get(False, 0)
    if func is AggregateFunc.ANY:
        return True if trues else (False if falses == total else None)
    return False if falses else (True if trues == total else None)


@attrs.define(eq=False)
class GroupState:
    """One aggregate's state for one group: the multiset of its values (with
    the derived counts kept up to date), and for ``min`` or ``max`` a heap
    of the values present, stale entries dropped when they surface. An
    update costs O(log n) amortized; a result O(1) amortized."""

    func: AggregateFunc
    distinct: bool
    # Invariant: every count is positive (a value whose count reaches zero
    # is removed).
    values: dict[Datum, int] = attrs.field(factory=dict)
    total: int = 0  # rows, or distinct values when distinct
    non_nulls: int = 0
    trues: int = 0
    falses: int = 0
    sum: int = 0
    heap: list[Any] = attrs.field(factory=list)

    def update(self, value: Datum, diff: int) -> None:
        old = self.values.get(value, 0)
        new = old + diff
        if new:
            self.values[value] = new
        else:
            del self.values[value]
        if self.distinct:
            diff = (new > 0) - (old > 0)
            if not diff:
                return
        self.total += diff
        if value is None:
            return
        self.non_nulls += diff
        if value is True:
            self.trues += diff
        elif value is False:
            self.falses += diff
        if self.func is AggregateFunc.SUM:
            assert isinstance(value, int), "a sum of integers"
            self.sum += value * diff
        if old <= 0 < new and self.func is AggregateFunc.MIN:
            heapq.heappush(self.heap, value)
        elif old <= 0 < new and self.func is AggregateFunc.MAX:
            heapq.heappush(self.heap, Reversed(value))

    def result(self) -> Datum:
        func = self.func
        if func is AggregateFunc.COUNT:
            return self.non_nulls
        if not self.non_nulls:
            return None
        if func is AggregateFunc.SUM:
            return self.sum
        if func is AggregateFunc.ANY:
            return True if self.trues else (False if self.falses == self.total else None)
        if func is AggregateFunc.ALL:
            return False if self.falses else (True if self.trues == self.total else None)
        return self._extreme()

    def _extreme(self) -> Datum:
        heap, values = self.heap, self.values
        if len(heap) > 2 * len(values) + 8:
            # Mostly stale: rebuild from the values present.
            present = [value for value in values if value is not None]
            heap[:] = present if self.func is AggregateFunc.MIN else map(Reversed, present)
            heapq.heapify(heap)
        while True:
            top = heap[0] if self.func is AggregateFunc.MIN else heap[0].value
            if values.get(top, 0) > 0:
                return top  # type: ignore[no-any-return]
            heapq.heappop(heap)
