"""A plan line's scalar expressions, a ``Constant``'s types and rows, and
aggregates, read from its tokens (:mod:`._tokens`) as ``mz-expr-parser``
reads them, and lowered to the model's expressions with their types.

Scalar expressions are parsed as the real parser parses them (precedence
climbing: ``OR`` < ``AND`` < ``=``, ``!=`` < ``<``, ``<=``, ``>``, ``>=``
< ``IS [NOT] NULL|TRUE|FALSE``; operands: ``#n``, integer literals as syn
reads them (``-1``, ``0x10``, ``1_000``, ``1i64``), string literals with
Rust's escapes, boolean literals, ``null::<type>``, ``NOT(..)``,
parentheses, float literals (``1.5``, ``2e3``, ``1f64``), and the
functions it knows: ``abs(..)``, ``not(..)``, ``ltrim(.., ..)``,
``greatest(..)``). Arithmetic is ``+`` < ``*``, ``/``, ``%``, all above
the ``IS`` tests, as the real parser ranks them; it reads each as its
bigint function (``AddInt64`` ..), so here they take bigints only, and
there is no binary ``-`` (the real parser has none: ``#0 + -1``).
``mz_environment_id()``, lists, arrays and ``error(..)`` literals are
refused here.
"""

from __future__ import annotations

import re

import attrs

from replica.model import Aggregate, AggregateExpr, AggregateFunc, Datum
from replica.model._scalar import ARITHMETIC, COMPARISONS, Call, Column, Literal, Scalar, ScalarFunc

from ._data import ColumnType, ScalarType
from ._tokens import MAX_EXPR_DEPTH, Cursor, MirError, comma_separated, lex

_STRING_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "0": "\0", "\\": "\\", '"': '"', "'": "'"}


# Typed expressions, as the plan text writes them.


@attrs.frozen
class Ref:
    index: int


@attrs.frozen
class Const:
    value: Datum
    type: ColumnType


@attrs.frozen
class Apply:
    func: ScalarFunc
    args: tuple[Expr, ...]


Expr = Ref | Const | Apply

_NULL_TYPES = {
    "bigint": ScalarType.BIGINT,
    "integer": ScalarType.INTEGER,
    "smallint": ScalarType.SMALLINT,
    "boolean": ScalarType.BOOLEAN,
    "text": ScalarType.TEXT,
}
_BINARY = {
    "=": ScalarFunc.EQ,
    "!=": ScalarFunc.NOT_EQ,
    ">=": ScalarFunc.GTE,
    ">": ScalarFunc.GT,
    "<=": ScalarFunc.LTE,
    "<": ScalarFunc.LT,
    "AND": ScalarFunc.AND,
    "OR": ScalarFunc.OR,
}
_IS = {"NULL": ScalarFunc.IS_NULL, "TRUE": ScalarFunc.IS_TRUE, "FALSE": ScalarFunc.IS_FALSE}
_ARITHMETIC = {
    "+": ScalarFunc.ADD,
    "*": ScalarFunc.MUL,
    "/": ScalarFunc.DIV,
    "%": ScalarFunc.MOD,
}
_FUNCTIONS = {
    "abs": (ScalarFunc.ABS, 1),
    "not": (ScalarFunc.NOT, 1),
    "ltrim": (ScalarFunc.LTRIM, 2),
    "greatest": (ScalarFunc.GREATEST, None),
}


def _precedence(func: ScalarFunc) -> int:
    if func is ScalarFunc.OR:
        return 1
    if func is ScalarFunc.AND:
        return 2
    if func in (ScalarFunc.EQ, ScalarFunc.NOT_EQ):
        return 4
    if func in COMPARISONS:
        return 5
    if func is ScalarFunc.ADD:
        return 14
    if func in ARITHMETIC:
        return 15
    return 13  # the IS tests


def parse_expr(cursor: Cursor) -> Expr:
    """An expression, up to the first token that is not an operator."""
    operators: list[tuple[ScalarFunc, bool]] = []  # (func, negated IS)
    postfix: list[Expr | tuple[ScalarFunc, bool]] = [parse_operand(cursor)]
    while not cursor.done():
        token = cursor.peek()
        assert token is not None
        if token.kind != "string" and token.text in _BINARY:
            cursor.at += 1
            op: tuple[ScalarFunc, bool] = (_BINARY[token.text], False)
            operand: Expr | None = parse_operand(cursor)
        elif token.kind == "punct" and token.text in _ARITHMETIC:
            cursor.at += 1
            op, operand = (_ARITHMETIC[token.text], False), parse_operand(cursor)
        elif cursor.is_("-"):
            raise MirError(
                "`-` is not an operator of the real parser's expressions "
                "(it has +, *, / and %: write #0 + -1)"
            )
        elif cursor.eat("IS"):
            negated = cursor.eat("NOT")
            name = cursor.peek()
            if name is None or name.text not in _IS:
                raise MirError(
                    f"expected one of `NULL`, `TRUE`, `FALSE`, found {cursor.describe()}"
                )
            cursor.at += 1
            op, operand = (_IS[name.text], negated), None
        else:
            break
        while operators and _precedence(operators[-1][0]) >= _precedence(op[0]):
            postfix.append(operators.pop())
        operators.append(op)
        if operand is not None:
            postfix.append(operand)
    postfix.extend(reversed(operators))
    stack: list[Expr] = []
    for entry in postfix:
        if not isinstance(entry, tuple):
            stack.append(entry)
            continue
        func, negated = entry
        if func in _IS.values():
            tested: Expr = Apply(func, (stack.pop(),))
            stack.append(Apply(ScalarFunc.NOT, (tested,)) if negated else tested)
            continue
        right, left = stack.pop(), stack.pop()
        if func in (ScalarFunc.AND, ScalarFunc.OR):
            args = tuple(
                arg
                for side in (left, right)
                for arg in (side.args if isinstance(side, Apply) and side.func is func else (side,))
            )
            stack.append(Apply(func, args))
        else:
            stack.append(Apply(func, (left, right)))
    (expr,) = stack
    return expr


def parse_operand(cursor: Cursor) -> Expr:
    token = cursor.peek()
    if token is None:
        raise MirError("expected an expression, found the end of the line")
    if cursor.is_("#"):
        return Ref(cursor.column())
    if cursor.is_("("):
        inner = cursor.group("(")
        expr = parse_expr(inner)
        inner.finish()
        return expr
    if token.kind == "string":
        cursor.at += 1
        return Const(_unquote(token.text), ColumnType(ScalarType.TEXT))
    if token.kind == "number" or cursor.is_("-"):
        # syn reads `-` before a number literal as a negative literal.
        negative = cursor.eat("-")
        real = cursor.float()
        if real is not None:
            return Const(-real if negative else real, ColumnType(ScalarType.DOUBLE))
        what = "a number literal after `-`" if negative else "a number literal"
        value = cursor.integer(what)
        value = -value if negative else value
        if value >= 2**63:
            raise MirError(f"number too large to fit in target type: {value}")
        if value < -(2**63):
            raise MirError(f"number too small to fit in target type: {value}")
        return Const(value, ColumnType(ScalarType.BIGINT))
    if token.kind == "ident" and token.text in ("true", "false"):
        cursor.at += 1
        return Const(token.text == "true", ColumnType(ScalarType.BOOLEAN))
    if token.kind == "ident" and token.text == "null":
        cursor.at += 1
        cursor.expect("::")
        return Const(None, ColumnType(_null_type(cursor), nullable=True))
    if token.kind == "ident" and cursor.is_("(", 1):
        return _apply(cursor)
    raise MirError(f"expected an expression, found {cursor.describe()}")


def _apply(cursor: Cursor) -> Expr:
    """A function call, its name read case-insensitively as the real parser
    reads it."""
    token = cursor.peek()
    assert token is not None
    name = token.text.lower()
    known = _FUNCTIONS.get(name)
    if known is None:
        if name == "mz_environment_id":
            raise MirError("mz_environment_id() has no value inside a dataflow")
        names = ", ".join(f"{function}(..)" for function in _FUNCTIONS)
        raise MirError(f"unsupported function name {token.text!r} (the functions are {names})")
    func, arity = known
    cursor.at += 1
    inner = cursor.group("(")
    args = comma_separated(inner, parse_expr)
    if arity is not None and len(args) != arity:
        wanted = "one argument" if arity == 1 else f"{arity} arguments"
        raise MirError(f"{name}(..) takes {wanted}, not {len(args)}")
    if not args:
        raise MirError(f"{name}(..) takes one argument or more, not 0")
    return Apply(func, tuple(args))


def _null_type(cursor: Cursor, where: str = "after `null::`") -> ScalarType:
    token = cursor.peek()
    name = None if token is None else token.text
    if name == "double" and cursor.is_("precision", 1):
        cursor.at += 2
        return ScalarType.DOUBLE
    if name == "character" and cursor.is_("varying", 1):
        cursor.at += 2
        return ScalarType.TEXT
    if name in _NULL_TYPES:
        cursor.at += 1
        return _NULL_TYPES[name]
    raise MirError(f"expected a type {where}, found {cursor.describe()}")


_ESCAPE = re.compile(r"\\(x[0-9A-Fa-f]{2}|u\{[0-9A-Fa-f][0-9A-Fa-f_]{0,7}\}|.)")


def _unquote(text: str) -> str:
    """A string literal's value, its escapes read as Rust reads them
    (``\\n``, ``\\x41`` up to ``\\x7f``, ``\\u{1F600}``); an escape Rust
    refuses is a :class:`MirError`."""
    return _ESCAPE.sub(_unescape, text[1:-1])


def _unescape(match: re.Match[str]) -> str:
    escape = match[1]
    if escape in _STRING_ESCAPES:
        return _STRING_ESCAPES[escape]
    if escape[0] == "x" and len(escape) == 3:
        if int(escape[1:], 16) > 0x7F:
            raise MirError(
                f"out of range hex escape `{match[0]}` (at most \\x7f) in a string literal"
            )
        return chr(int(escape[1:], 16))
    if escape[0] == "u" and len(escape) > 1:
        point = int(escape[2:-1].replace("_", ""), 16)
        if not (0 <= point < 0xD800 or 0xDFFF < point <= 0x10FFFF):
            raise MirError(f"invalid unicode character escape `{match[0]}` in a string literal")
        return chr(point)
    raise MirError(f"unknown character escape `\\{escape[0]}` in a string literal")


# A Constant's lines.


def parse_types(text: str) -> tuple[ColumnType, ...]:
    """A Constant's ``types`` analysis: ``(bigint, double precision, text?)``
    (``?``: nullable)."""
    cursor = Cursor(lex(text))
    inner = cursor.group("(")
    cursor.finish()

    def column_type(cursor: Cursor) -> ColumnType:
        scalar = _null_type(cursor, "in the types")
        return ColumnType(scalar, nullable=cursor.eat("?"))

    return tuple(comma_separated(inner, column_type))


def parse_constant_row(text: str) -> tuple[tuple[Const, ...], int]:
    """A Constant's row line: ``- (1, "a")``, or ``- ((1, "a") x -2)`` for a
    row counted -2 times; its datums and its count."""
    cursor = Cursor(lex(text))
    cursor.expect("-")
    inner = cursor.group("(")
    cursor.finish()
    diff = 1
    if inner.is_("("):
        datums = inner.group("(")
        inner.expect("x")
        negative = inner.eat("-")
        diff = inner.integer("a count after `x`")
        diff = -diff if negative else diff
        # A count is Materialize's Diff, an i64.
        if diff >= 2**63:
            raise MirError(f"number too large to fit in target type: {diff}")
        if diff < -(2**63):
            raise MirError(f"number too small to fit in target type: {diff}")
        inner.finish()
    else:
        datums = inner
    return tuple(comma_separated(datums, _datum)), diff


def _datum(cursor: Cursor) -> Const:
    token = cursor.peek()
    if token is not None and token.kind == "ident" and token.text == "null":
        cursor.at += 1
        return Const(None, ColumnType(ScalarType.BIGINT, nullable=True))
    literal = parse_operand(cursor) if token is not None and token.text != "#" else None
    if not isinstance(literal, Const):
        raise MirError(f'a row holds literals (1, 2.5, "a", true, null), not {cursor.describe()}')
    return literal


# Aggregates.


@attrs.frozen
class AggregateSyntax:
    """An aggregate as written: ``count(*)`` has no ``expr``."""

    func: AggregateFunc
    expr: Expr | None
    distinct: bool


def parse_aggregate(cursor: Cursor) -> AggregateSyntax:
    token = cursor.peek()
    if token is None or token.kind != "ident":
        raise MirError(f"expected an aggregate, found {cursor.describe()}")
    cursor.at += 1
    try:
        func = AggregateFunc(token.text.lower())
    except ValueError:
        raise MirError(
            f"unsupported aggregate {token.text!r} (count, sum, min, max, any or all)"
        ) from None
    inner = cursor.group("(")
    if func is AggregateFunc.COUNT and inner.eat("*"):
        inner.finish()
        return AggregateSyntax(func, None, False)
    distinct = inner.eat("distinct")
    expr = parse_expr(inner)
    inner.finish()
    return AggregateSyntax(func, expr, distinct)


# Types, and lowering to the model's expressions.

_INTEGERS = frozenset({ScalarType.SMALLINT, ScalarType.INTEGER, ScalarType.BIGINT})
_BOOLEAN = ColumnType(ScalarType.BOOLEAN)


def lower(expr: Expr, types: tuple[ColumnType, ...], depth: int = 0) -> tuple[Scalar, ColumnType]:
    """The engine's expression for ``expr`` over rows of ``types``, and its
    type; :class:`MirError` for a column out of range, mixed types, or an
    expression nested deeper than :data:`MAX_EXPR_DEPTH` (operators chain
    without brackets too: ``#0 IS NULL IS NULL ..``)."""
    if depth > MAX_EXPR_DEPTH:
        raise MirError(f"an expression nests more than {MAX_EXPR_DEPTH} deep")
    match expr:
        case Ref(index):
            if index >= len(types):
                raise MirError(f"column #{index} out of range for a {len(types)}-column input")
            return Column(index), types[index]
        case Const(value, type):
            return Literal(value), type
        case Apply(func, args):
            lowered = [lower(arg, types, depth + 1) for arg in args]
            scalars = tuple(scalar for scalar, _ in lowered)
            arg_types = [type for _, type in lowered]
            nullable = any(type.nullable for type in arg_types)
            if func in COMPARISONS:
                left, right = arg_types
                if left.scalar != right.scalar:
                    raise MirError(f"`{func}` compares {left.scalar} with {right.scalar}")
                return Call(func, scalars), ColumnType(ScalarType.BOOLEAN, nullable)
            if func in ARITHMETIC or func is ScalarFunc.ABS:
                for type in arg_types:
                    if type.scalar is not ScalarType.BIGINT:
                        what = "`abs`" if func is ScalarFunc.ABS else f"`{func}`"
                        raise MirError(
                            f"{what} takes bigints (the real parser reads it as its "
                            f"Int64 function), not {type.scalar}"
                        )
                return Call(func, scalars), ColumnType(ScalarType.BIGINT, nullable)
            if func is ScalarFunc.LTRIM:
                for type in arg_types:
                    if type.scalar is not ScalarType.TEXT:
                        raise MirError(f"`ltrim` takes text, not {type.scalar}")
                return Call(func, scalars), ColumnType(ScalarType.TEXT, nullable)
            if func is ScalarFunc.GREATEST:
                first = arg_types[0].scalar
                for type in arg_types[1:]:
                    if type.scalar != first:
                        raise MirError(f"`greatest` compares {first} with {type.scalar}")
                return Call(func, scalars), ColumnType(first, nullable)
            if func in (ScalarFunc.AND, ScalarFunc.OR, ScalarFunc.NOT, ScalarFunc.IS_TRUE):
                for type in arg_types:
                    if type.scalar is not ScalarType.BOOLEAN:
                        raise MirError(f"`{func}` takes booleans, not {type.scalar}")
            if func in (ScalarFunc.AND, ScalarFunc.OR, ScalarFunc.NOT):
                return Call(func, scalars), ColumnType(ScalarType.BOOLEAN, nullable)
            if func is ScalarFunc.IS_FALSE and arg_types[0].scalar is not ScalarType.BOOLEAN:
                raise MirError(f"`{func}` takes booleans, not {arg_types[0].scalar}")
            return Call(func, scalars), _BOOLEAN


def lower_aggregate(
    syntax: AggregateSyntax, types: tuple[ColumnType, ...]
) -> tuple[Aggregate | AggregateExpr, ColumnType]:
    """The engine's aggregate, and the type of its results."""
    func = syntax.func
    if syntax.expr is None:
        return Aggregate.COUNT, ColumnType(ScalarType.BIGINT)
    scalar, type = lower(syntax.expr, types)
    result = AggregateExpr(func, scalar, syntax.distinct)
    if func is AggregateFunc.COUNT:
        return result, ColumnType(ScalarType.BIGINT)
    wanted = {
        AggregateFunc.SUM: (_INTEGERS, ScalarType.NUMERIC),
        AggregateFunc.MIN: ({ScalarType.BIGINT}, ScalarType.BIGINT),
        AggregateFunc.MAX: ({ScalarType.BIGINT}, ScalarType.BIGINT),
        AggregateFunc.ANY: ({ScalarType.BOOLEAN}, ScalarType.BOOLEAN),
        AggregateFunc.ALL: ({ScalarType.BOOLEAN}, ScalarType.BOOLEAN),
    }
    accepted, output = wanted[func]
    if type.scalar not in accepted:
        names = " or ".join(sorted(accepted))
        raise MirError(f"{func}(..) takes {names} values, not {type.scalar}")
    return result, ColumnType(output, type.nullable)
