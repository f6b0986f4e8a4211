"""What relational operations mean, as plain functions: top-k's places
of a group, a table function's rows, a threshold's count, and the frontier
of a collection complete at every time. The engine's operators and the
driver's reference model both use them, so the two cannot disagree on a
definition (they still compute independently: the engine incrementally, the
model from scratch)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from ._rows import Datum, Reversed, Row
from ._scalar import EvalError, ordered

COMPLETE = 2**64 - 1
"""The frontier of a collection complete at every time a script can name (a
``Constant``): u64's last, short of the exchange's ``CLOSED``, which says a
worker left it."""


def threshold_count(count: int) -> int:
    """How many times ``Threshold`` keeps a row counted ``count`` times."""
    return count if count > 0 else 0


def _sort_key(
    order_key: tuple[tuple[int, bool, bool], ...],
) -> Callable[[Row], tuple[object, ...]]:
    """A row's place in ``order_key``'s order, ties broken by the whole row."""

    def key(row: Row) -> tuple[object, ...]:
        parts: list[object] = []
        for column, descending, nulls_last in order_key:
            value = row[column]
            if value is None:
                parts.append((1 if nulls_last else -1,))
            else:
                order = ordered(value)
                parts.append((0, Reversed(order) if descending else order))
        # Ties by the whole row (NULL first; NaN as Materialize orders it).
        parts.append(tuple((0,) if value is None else (1, ordered(value)) for value in row))
        return tuple(parts)

    return key


def top_k_rows(
    rows: dict[Row, int],
    order_key: tuple[tuple[int, bool, bool], ...],
    limit: int | None,
    offset: int,
) -> dict[Row, int]:
    """A ``TopK`` of one group's rows (each with its count): sorted by
    ``order_key`` (``(column, descending, nulls_last)``), ties by the whole
    row ascending, ``offset`` places skipped, then ``limit`` places kept (a
    row counted ``n`` times takes ``n`` places; a count below one none)."""
    ordered_rows = sorted(rows, key=_sort_key(order_key))
    return _first_places(ordered_rows, rows, limit, offset)


def _first_places(
    ordered_rows: Iterable[Row], counts: dict[Row, int], limit: int | None, offset: int
) -> dict[Row, int]:
    """The rows of places ``offset`` to ``offset + limit`` of ``ordered_rows``,
    each taking as many places as its count (none if below one)."""
    if limit is not None and limit <= 0:
        return {}
    kept: dict[Row, int] = {}
    skip = offset
    room = limit
    for row in ordered_rows:
        count = counts[row]
        if count <= 0:
            continue
        taken = min(count, skip)
        skip -= taken
        count -= taken
        if room is not None:
            count = min(count, room)
            room -= count
        if count:
            kept[row] = count
        if room == 0:
            break
    return kept


STEP_ZERO = "step size cannot equal zero"


# A row's series stays within what a spec may write in all.
MAX_SERIES = 1_000_000


def table_rows(func: str, values: Sequence[Datum]) -> list[Row]:
    """The rows table function ``func`` gives for argument ``values``;
    :class:`~replica.model._scalar.EvalError` when it has none."""
    if func == "generate_series":
        start, stop, step = (*values, 1) if len(values) == 2 else values
        if start is None or stop is None or step is None:
            return []
        assert isinstance(start, int), "generate_series counts bigints"
        assert isinstance(stop, int), "generate_series counts bigints"
        assert isinstance(step, int), "generate_series counts bigints"
        if step == 0:
            raise EvalError(STEP_ZERO)
        # Its length by arithmetic: len() of a range longer than the
        # machine's word (-2**63 to 2**63 - 1) raises OverflowError.
        length = max(0, (stop - start) // step + 1)
        if length > MAX_SERIES:
            raise EvalError(
                f"generate_series of more than {MAX_SERIES} rows (this replica's limit)"
            )
        return [(value,) for value in range(start, stop + (1 if step > 0 else -1), step)]
    width = int(func.removeprefix("wrap"))
    return [tuple(values[at : at + width]) for at in range(0, len(values), width)]
