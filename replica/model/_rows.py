"""Rows, the datums in them, and updates: a collection's data.

A row is a tuple of datums; an update ``(row, time, diff)`` changes a
collection's count of a row at a time. Rows order by value, column by
column (:func:`row_order`), as the real replica prints them.
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Iterable
from typing import Any

import attrs

from ._errors import ComputeError

Datum = int | str | bool | float | None
"""A value in a row: ``bigint``, ``integer``, ``smallint`` (int), ``text``
(str), ``boolean`` (bool), ``double`` (float), or NULL (None)."""

Row = tuple[Datum, ...]
"""A row: a tuple of datums."""

MAX_RESULT_ROWS = 4_000_000
"""The most rows a read answers with, a row counted k times counting k (as
many as a spec may write in all): a ``Constant`` row counted 10**18 times, or
a join that multiplies, would otherwise be expanded row by row until the
process hangs or runs out of memory. Past it a read is
:data:`RESULT_TOO_LARGE`, as Materialize's reads past ``max_result_size``."""

RESULT_TOO_LARGE = f"result exceeds max size of {MAX_RESULT_ROWS} rows"


class ResultTooLargeError(ComputeError, ValueError):
    """A read whose rows, with their multiplicities, are more than
    :data:`MAX_RESULT_ROWS`."""


def rows_of_counts(counts: dict[Row, int]) -> list[Row]:
    """Each row of ``counts`` as many times as its count (none below one);
    :class:`ResultTooLargeError` when that is more than
    :data:`MAX_RESULT_ROWS`, before any is expanded."""
    if sum(count for count in counts.values() if count > 0) > MAX_RESULT_ROWS:
        raise ResultTooLargeError(RESULT_TOO_LARGE)
    return [row for row, count in counts.items() for _ in range(count)]


Update = tuple[Row, int, int]
"""A change to a collection: ``(row, time, diff)``."""


def typed(values: Row) -> tuple[tuple[type, Datum], ...]:
    """``values`` with each datum's type: equal only where SQL holds them
    equal (Python holds ``True == 1``; a boolean key never equals a bigint
    literal)."""
    return tuple((type(value), value) for value in values)


def key_of(row: Row, key: tuple[int, ...]) -> Row:
    """The key columns of ``row`` (a column the row lacks is null)."""
    return tuple(row[column] if column < len(row) else None for column in key)


def consolidate(
    updates: Iterable[Update], into: dict[tuple[Row, int], int] | None = None
) -> list[Update]:
    """``updates`` summed by ``(row, time)``, those that sum to zero left out,
    in the order each ``(row, time)`` first came: differential's
    consolidation, the one every part of the replica calls. ``into`` holds
    the sums of a consolidation done in slices (an arrangement's compaction:
    :func:`sum_into` each slice, then consolidate the last)."""
    sums: dict[tuple[Row, int], int] = {} if into is None else into
    sum_into(updates, sums)
    return [(row, time, diff) for (row, time), diff in sums.items() if diff]


def sum_into(updates: Iterable[Update], sums: dict[tuple[Row, int], int]) -> None:
    """Add ``updates`` to ``sums`` by ``(row, time)``: a slice of
    :func:`consolidate`."""
    for row, time, diff in updates:
        key = (row, time)
        sums[key] = sums.get(key, 0) + diff


def accumulate(
    updates: Iterable[Update], ts: int, into: Counter[Row] | None = None
) -> Counter[Row]:
    """The collection at ``ts``: each row's count summed over the updates at
    or before ``ts`` (into ``into``, if given, as a scan does in slices).
    Counts of zero or below stay in: :func:`rows_of_counts` reads past them."""
    counts: Counter[Row] = Counter() if into is None else into
    for row, time, diff in updates:
        if time <= ts:
            counts[row] += diff
    return counts


def _datum_order(value: Datum) -> tuple[int, float, str]:
    if value is None:
        return (0, 0, "")
    if isinstance(value, bool):
        return (1, int(value), "")
    if isinstance(value, int | float):
        return (2, value, "")
    return (3, 0, value)


def row_order(row: Row) -> tuple[tuple[int, float, str], ...]:
    """The sort key of a row: by value, column by column; nulls first, then
    booleans, numbers (numerically), strings (by code point)."""
    return tuple(_datum_order(value) for value in row)


@functools.total_ordering
@attrs.frozen
class Reversed:
    """A value ordered the other way round: a descending sort key, a
    max-heap's entry."""

    value: Any

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, Reversed):
            return NotImplemented
        return bool(other.value < self.value)
