"""Arithmetic and the functions ``mz-expr-parser`` knows, as the engine
evaluates them, and evaluation errors as a collection of their own."""

from __future__ import annotations

import pytest

from replica.driver.lang._data import ColumnType, ScalarType
from replica.driver.lang._expressions import lower, parse_expr
from replica.driver.lang._tokens import Cursor, MirError, lex
from replica.engine._linear import MapRows
from replica.engine._stream import Errors, Stream, first_error
from replica.model._scalar import (
    BIGINT_OUT_OF_RANGE,
    DIVISION_BY_ZERO,
    INT64_MAX,
    INT64_MIN,
    Call,
    Column,
    EvalError,
    Literal,
    ScalarFunc,
    evaluate,
)


def call(func: ScalarFunc, *args: object) -> object:
    return evaluate(Call(func, tuple(Literal(arg) for arg in args)), ())  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("func", "a", "b", "result"),
    [
        (ScalarFunc.ADD, 2, 3, 5),
        (ScalarFunc.MUL, -4, 3, -12),
        (ScalarFunc.DIV, 7, 2, 3),
        (ScalarFunc.DIV, -7, 2, -3),  # toward zero
        (ScalarFunc.DIV, 7, -2, -3),
        (ScalarFunc.MOD, -7, 2, -1),  # the dividend's sign
        (ScalarFunc.MOD, 7, -2, 1),
        (ScalarFunc.MOD, INT64_MIN, -1, 0),
        (ScalarFunc.ADD, None, 3, None),
        (ScalarFunc.DIV, None, 0, None),
    ],
)
def test_bigint_arithmetic_is_rusts(func: ScalarFunc, a: int, b: int, result: int) -> None:
    assert call(func, a, b) == result


@pytest.mark.parametrize(
    ("func", "args", "message"),
    [
        (ScalarFunc.DIV, (1, 0), DIVISION_BY_ZERO),
        (ScalarFunc.MOD, (1, 0), DIVISION_BY_ZERO),
        (ScalarFunc.ADD, (INT64_MAX, 1), BIGINT_OUT_OF_RANGE),
        (ScalarFunc.MUL, (INT64_MIN, -1), BIGINT_OUT_OF_RANGE),
        (ScalarFunc.DIV, (INT64_MIN, -1), BIGINT_OUT_OF_RANGE),
        (ScalarFunc.ABS, (INT64_MIN,), BIGINT_OUT_OF_RANGE),
    ],
)
def test_a_failing_evaluation_raises_materializes_message(
    func: ScalarFunc, args: tuple[int, ...], message: str
) -> None:
    with pytest.raises(EvalError, match=f"^{message}$"):
        call(func, *args)


def test_functions() -> None:
    assert call(ScalarFunc.ABS, -3) == 3
    assert call(ScalarFunc.ABS, None) is None
    assert call(ScalarFunc.GREATEST, 1, None, 3, 2) == 3
    assert call(ScalarFunc.GREATEST, None, None) is None
    assert call(ScalarFunc.GREATEST, 1.0, float("nan")) != 1.0  # NaN sorts above
    assert call(ScalarFunc.GREATEST, "b", "ab") == "b"
    assert call(ScalarFunc.LTRIM, "xxyhi", "yx") == "hi"
    assert call(ScalarFunc.LTRIM, "hi", "") == "hi"
    assert call(ScalarFunc.LTRIM, None, "x") is None


def expr(text: str) -> object:
    cursor = Cursor(lex(text))
    parsed = parse_expr(cursor)
    cursor.finish()
    return parsed


def test_arithmetic_binds_as_the_real_parser_ranks_it() -> None:
    types = (ColumnType(ScalarType.BIGINT),)
    scalar, type = lower(expr("#0 + 2 * 3 % 4 = 8 AND #0 IS NOT NULL"), types)  # type: ignore[arg-type]
    assert type.scalar is ScalarType.BOOLEAN
    assert evaluate(scalar, (6,)) is True  # (6 + ((2 * 3) % 4)) = 8
    scalar, _ = lower(expr("(#0 + 2) * 3"), types)  # type: ignore[arg-type]
    assert evaluate(scalar, (1,)) == 9


@pytest.mark.parametrize(
    ("text", "value"),
    [("1.5", 1.5), ("-2.5", -2.5), ("1e3", 1000.0), ("2f64", 2.0), ("1_0.2_5", 10.25)],
)
def test_float_literals_are_doubles(text: str, value: float) -> None:
    scalar, type = lower(expr(text), ())  # type: ignore[arg-type]
    assert type == ColumnType(ScalarType.DOUBLE)
    assert evaluate(scalar, ()) == value


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("#0 - 1", "`-` is not an operator"),
        ("coalesce(#0)", "unsupported function name 'coalesce'"),
        ("abs()", "abs(..) takes one argument, not 0"),
        ("greatest()", "greatest(..) takes one argument or more, not 0"),
        ("ltrim(#0)", "ltrim(..) takes 2 arguments, not 1"),
    ],
)
def test_what_the_real_parser_refuses_is_refused(text: str, message: str) -> None:
    with pytest.raises(MirError, match=message.replace("(", r"\(").replace(")", r"\)")):
        expr(text)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("#0 + 1.5", "takes bigints .* not double"),
        ("abs(#1)", "`abs` takes bigints"),
        ("ltrim(#0, #1)", "`ltrim` takes text, not bigint"),
        ("greatest(#0, #1)", "`greatest` compares bigint with text"),
    ],
)
def test_a_type_mismatch_is_refused(text: str, message: str) -> None:
    types = (ColumnType(ScalarType.BIGINT), ColumnType(ScalarType.TEXT))
    with pytest.raises(MirError, match=message):
        lower(expr(text), types)  # type: ignore[arg-type]


def test_errors_are_a_collection_a_retraction_clears() -> None:
    errors = Errors()
    errors.add("division by zero", 3, 1)
    assert errors.at(2) is None
    assert errors.at(3) == "division by zero"
    errors.add("division by zero", 5, -1)
    assert errors.at(4) == "division by zero"
    assert errors.at(5) is None
    other = Errors()
    other.add("bigint out of range", 0, 1)
    assert first_error([errors, other], 3) == "bigint out of range"


def test_a_map_sends_the_rows_it_fails_on_to_its_errors() -> None:
    source = Stream()
    errors = Errors()
    divide = Call(ScalarFunc.DIV, (Column(0), Column(1)))
    operator = MapRows(
        source, source.subscribe(), lambda row: (*row, evaluate(divide, row)), errors=errors
    )
    sink = operator.out.subscribe()
    source.push([((6, 3), 0, 1), ((1, 0), 1, 1), ((8, 2), 1, 1)])
    source.frontier = 2
    operator.step()
    assert list(sink.take()) == [((6, 3, 2), 0, 1), ((8, 2, 4), 1, 1)]
    assert errors.at(1) == DIVISION_BY_ZERO
    source.push([((1, 0), 2, -1)])
    operator.step()
    assert list(sink.take()) == []
    assert errors.at(2) is None


def test_and_or_are_decided_by_a_deciding_argument_even_beside_an_error() -> None:
    divide = Call(ScalarFunc.GT, (Call(ScalarFunc.DIV, (Column(0), Column(1))), Literal(1)))
    nonzero = Call(ScalarFunc.NOT_EQ, (Column(1), Literal(0)))
    assert evaluate(Call(ScalarFunc.AND, (divide, nonzero)), (5, 0)) is False
    assert evaluate(Call(ScalarFunc.OR, (divide, Literal(True))), (5, 0)) is True
    with pytest.raises(EvalError, match=DIVISION_BY_ZERO):
        evaluate(Call(ScalarFunc.AND, (divide, Literal(None))), (5, 0))
    assert evaluate(Call(ScalarFunc.AND, (Literal(None), Literal(True))), ()) is None
    assert evaluate(Call(ScalarFunc.OR, (Literal(None), Literal(False))), ()) is None
