"""Scalar expressions over a row, as a plan's ``Filter`` and ``Map`` and a
``Reduce``'s aggregates hold them: column references, literals and the
comparisons and logic of SQL, evaluated with SQL's three-valued logic
(``None`` is NULL: ``#0 = null`` is NULL, and a filter keeps a row only when
every predicate is true).

Each is a frozen value, so plans holding them compare equal when their
expressions do.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import attrs

if TYPE_CHECKING:
    from ._protocol import Datum, Row


class ScalarFunc(enum.StrEnum):
    EQ = "="
    NOT_EQ = "!="
    LT = "<"
    LTE = "<="
    GT = ">"
    GTE = ">="
    AND = "AND"
    OR = "OR"
    NOT = "NOT"
    IS_NULL = "IS NULL"
    IS_TRUE = "IS TRUE"
    IS_FALSE = "IS FALSE"


COMPARISONS = frozenset(
    {
        ScalarFunc.EQ,
        ScalarFunc.NOT_EQ,
        ScalarFunc.LT,
        ScalarFunc.LTE,
        ScalarFunc.GT,
        ScalarFunc.GTE,
    }
)


@attrs.frozen
class Column:
    """The row's column ``index``."""

    index: int


def _typed(value: Datum) -> tuple[type, Datum]:
    return type(value), value


@attrs.frozen
class Literal:
    """A constant (``None``: NULL). Literals compare by type and value:
    Python holds ``1 == True``, SQL does not, and a plan with ``1`` must not
    stand in for one with ``true`` when a reconnect compares them."""

    value: Datum = attrs.field(eq=_typed)


@attrs.frozen
class Call:
    """``func`` applied to ``args``: two for a comparison, one for ``NOT``
    and the ``IS`` tests, two or more for ``AND`` and ``OR``."""

    func: ScalarFunc
    args: tuple[Scalar, ...]


Scalar = Column | Literal | Call


def columns(expr: Scalar) -> list[int]:
    """The columns ``expr`` reads."""
    match expr:
        case Column(index):
            return [index]
        case Literal():
            return []
        case Call(_, args):
            return [column for arg in args for column in columns(arg)]


def _ordered(value: Datum) -> tuple[bool, Datum]:
    """``value`` as SQL orders it: NaN equals NaN and sorts above every
    other number (Materialize's ordered floats), where Python's NaN compares
    false with everything."""
    nan = value != value  # true for NaN only
    return nan, 0.0 if nan else value


def same(a: Datum, b: Datum) -> bool:
    """Whether ``a`` and ``b`` are one datum, as a join's equality matches
    them: NaN is NaN (as it is when rows meet by key), NULL is NULL."""
    return _ordered(a) == _ordered(b)


_COMPARE: dict[ScalarFunc, Callable[[Datum, Datum], bool]] = {
    ScalarFunc.EQ: lambda a, b: _ordered(a) == _ordered(b),
    ScalarFunc.NOT_EQ: lambda a, b: _ordered(a) != _ordered(b),
    ScalarFunc.LT: lambda a, b: _ordered(a) < _ordered(b),
    ScalarFunc.LTE: lambda a, b: _ordered(a) <= _ordered(b),
    ScalarFunc.GT: lambda a, b: _ordered(a) > _ordered(b),
    ScalarFunc.GTE: lambda a, b: _ordered(a) >= _ordered(b),
}


def evaluate(expr: Scalar, row: Sequence[Datum]) -> Datum:
    """``expr``'s value on ``row``. Comparisons assume operands of one type
    (the driver checks it before a plan is built)."""
    match expr:
        case Column(index):
            return row[index]
        case Literal(value):
            return value
        case Call(func, args):
            values = [evaluate(arg, row) for arg in args]
            if func in _COMPARE:
                a, b = values
                return None if a is None or b is None else _COMPARE[func](a, b)
            if func is ScalarFunc.AND:
                if any(value is False for value in values):
                    return False
                return None if any(value is None for value in values) else True
            if func is ScalarFunc.OR:
                if any(value is True for value in values):
                    return True
                return None if any(value is None for value in values) else False
            (value,) = values
            if func is ScalarFunc.NOT:
                return None if value is None else not value
            if func is ScalarFunc.IS_NULL:
                return value is None
            if func is ScalarFunc.IS_TRUE:
                return value is True
            assert func is ScalarFunc.IS_FALSE, f"no evaluation for {func}"
            return value is False


def holds(predicates: tuple[Scalar, ...], row: Row) -> bool:
    """Whether every predicate is true on ``row`` (false and NULL are not)."""
    return all(evaluate(predicate, row) is True for predicate in predicates)
