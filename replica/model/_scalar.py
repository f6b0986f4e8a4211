"""Scalar expressions over a row, as a plan's ``Filter`` and ``Map`` and a
``Reduce``'s aggregates hold them: column references, literals, the
comparisons and logic of SQL, evaluated with SQL's three-valued logic
(``None`` is NULL: ``#0 = null`` is NULL, and a filter keeps a row only when
every predicate is true), bigint arithmetic and the few functions
``mz-expr-parser`` knows (``abs``, ``greatest``, ``ltrim``). A function
given a NULL gives NULL (``greatest`` skips NULLs); an evaluation that fails
(a division by zero, a bigint overflow) raises :class:`EvalError`, which the
operators turn into the dataflow's errors rather than a row.

Each is a frozen value, so plans holding them compare equal when their
expressions do.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import attrs

from ._errors import ComputeError

if TYPE_CHECKING:
    from ._rows import Datum, Row


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
    ADD = "+"
    MUL = "*"
    DIV = "/"
    MOD = "%"
    ABS = "abs"
    GREATEST = "greatest"
    LTRIM = "ltrim"


ARITHMETIC = frozenset({ScalarFunc.ADD, ScalarFunc.MUL, ScalarFunc.DIV, ScalarFunc.MOD})

INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1


class EvalError(ComputeError, ValueError):
    """An expression that has no value for a row: the message is
    Materialize's (``division by zero``, ``bigint out of range``)."""


DIVISION_BY_ZERO = "division by zero"
BIGINT_OUT_OF_RANGE = "bigint out of range"


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


def exact(value: Datum) -> tuple[type, Datum, float]:
    """``value`` as plans compare it: by type and value, and a float by its
    sign too (``-0.0 == 0.0`` in Python, but the two render as ``-0`` and
    ``0``: a plan with one must not stand in for a plan with the other when
    a reconnect compares them)."""
    return type(value), value, math.copysign(1.0, value) if isinstance(value, float) else 1.0


def exact_rows(rows: tuple[tuple[Row, int], ...]) -> tuple[object, ...]:
    """A ``Constant``'s rows as plans compare them (see :func:`exact`)."""
    return tuple((tuple(exact(datum) for datum in row), diff) for row, diff in rows)


_typed = exact


@attrs.frozen
class Literal:
    """A constant (``None``: NULL). Literals compare by type and value (and
    a float's sign, see :func:`exact`): Python holds ``1 == True``, SQL does
    not, and a plan with ``1`` must not stand in for one with ``true`` when a
    reconnect compares them."""

    value: Datum = attrs.field(eq=_typed)


@attrs.frozen
class Call:
    """``func`` applied to ``args``: two for a comparison, arithmetic and
    ``ltrim``, one for ``NOT``, ``abs`` and the ``IS`` tests, two or more for
    ``AND`` and ``OR``, one or more for ``greatest``."""

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


ordered = _ordered


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


def _bigint(value: int) -> int:
    if not INT64_MIN <= value <= INT64_MAX:
        raise EvalError(BIGINT_OUT_OF_RANGE)
    return value


def _divide(a: int, b: int) -> int:
    """Rust's ``i64`` division: toward zero."""
    if b == 0:
        raise EvalError(DIVISION_BY_ZERO)
    quotient = abs(a) // abs(b)
    return _bigint(quotient if (a < 0) == (b < 0) else -quotient)


def _remainder(a: int, b: int) -> int:
    """Rust's ``i64`` remainder: the dividend's sign (``MIN % -1`` is 0)."""
    if b == 0:
        raise EvalError(DIVISION_BY_ZERO)
    remainder = abs(a) % abs(b)
    return remainder if a >= 0 else -remainder


_ARITHMETIC: dict[ScalarFunc, Callable[[int, int], int]] = {
    ScalarFunc.ADD: lambda a, b: _bigint(a + b),
    ScalarFunc.MUL: lambda a, b: _bigint(a * b),
    ScalarFunc.DIV: _divide,
    ScalarFunc.MOD: _remainder,
}


def evaluate(expr: Scalar, row: Sequence[Datum]) -> Datum:
    """``expr``'s value on ``row``; :class:`EvalError` when it has none.
    Comparisons and functions assume operands of the types they take (the
    driver checks them before a plan is built)."""
    match expr:
        case Column(index):
            return row[index]
        case Literal(value):
            return value
        case Call(func, args):
            if func is ScalarFunc.AND or func is ScalarFunc.OR:
                return _logic(func is ScalarFunc.OR, args, row)
            values = [evaluate(arg, row) for arg in args]
            if func in _COMPARE:
                a, b = values
                return None if a is None or b is None else _COMPARE[func](a, b)
            if func in _ARITHMETIC:
                a, b = values
                if a is None or b is None:
                    return None
                assert isinstance(a, int), "arithmetic on bigints"
                assert isinstance(b, int), "arithmetic on bigints"
                return _ARITHMETIC[func](a, b)
            if func is ScalarFunc.GREATEST:
                present = [value for value in values if value is not None]
                return max(present, key=_ordered) if present else None
            if func is ScalarFunc.LTRIM:
                text, characters = values
                if text is None or characters is None:
                    return None
                assert isinstance(text, str), "ltrim on text"
                assert isinstance(characters, str), "ltrim on text"
                return text.lstrip(characters)
            (value,) = values
            if func is ScalarFunc.ABS:
                if value is None:
                    return None
                assert isinstance(value, int), "abs of a bigint"
                return _bigint(abs(value))
            if func is ScalarFunc.NOT:
                return None if value is None else not value
            if func is ScalarFunc.IS_NULL:
                return value is None
            if func is ScalarFunc.IS_TRUE:
                return value is True
            assert func is ScalarFunc.IS_FALSE, f"no evaluation for {func}"
            return value is False


def _logic(deciding: bool, args: tuple[Scalar, ...], row: Sequence[Datum]) -> Datum:
    """``AND`` (``deciding`` False) or ``OR`` (True), as Materialize's: an
    argument equal to ``deciding`` decides, whatever the others (even one
    that fails); else a failing argument fails it, else a NULL makes it
    NULL."""
    failed: EvalError | None = None
    null = False
    for arg in args:
        try:
            value = evaluate(arg, row)
        except EvalError as error:
            failed = failed or error
            continue
        if value is deciding:
            return deciding
        null = null or value is None
    if failed is not None:
        raise failed
    return None if null else not deciding


def holds(predicates: tuple[Scalar, ...], row: Row) -> bool:
    """Whether every predicate is true on ``row`` (false and NULL are not)."""
    return all(evaluate(predicate, row) is True for predicate in predicates)
