"""A plan's operator lines, each read into a :class:`PlanNode` (its inputs,
on the lines below it, are :mod:`._plan_syntax`'s).

Operators: ``Get <id>``; ``Project (#0, #1)``; ``Map (expr, ..)``;
``Filter predicate [AND predicate ..]``; ``Reduce [group_by=[#0]]
aggregates=[count(*), sum(#1), min(distinct #2), ..] [monotonic]
[exp_group_size=N]`` (the last two are hints to the real renderer, and
change no result; ``aggregates=[]`` is a distinct), ``Distinct
[project=[#0]]`` (the same); ``Join on=(#a = #b [AND #c = #d])`` over two
inputs or more, its columns those of the inputs concatenated (an equality
within one input filters it), and ``CrossJoin``, a join with no
equalities; ``Union``, ``Negate``, ``Threshold``; ``TopK [group_by=[..]]
[order_by=[#n [asc|desc] [nulls_first|nulls_last], ..]] [limit=expr]
[offset=N]``; ``ArrangeBy keys=[[..], ..]``; ``Constant`` with its types
(``// { types: "(bigint, text?)" }``) or ``<empty>``; ``FlatMap
func(expr, ..)``. Each line is read as Rust tokens, so spacing between them
is free (:mod:`._tokens`), and each operator's keywords come in the order
``mz-expr-parser`` reads them.
"""

from __future__ import annotations

import enum
import itertools
from collections.abc import Callable

import attrs

from replica.model import GlobalId, ScalarFunc
from replica.model._plan import TABLE_FUNCTIONS

from ._data import ColumnType
from ._expressions import (
    AggregateSyntax,
    Apply,
    Const,
    Expr,
    Ref,
    parse_aggregate,
    parse_expr,
    parse_operand,
    parse_types,
)
from ._headers import InputError
from ._tokens import Cursor, MirError, comma_separated


class Operator(enum.StrEnum):
    GET = "Get"
    PROJECT = "Project"
    REDUCE = "Reduce"
    JOIN = "Join"
    CROSS_JOIN = "CrossJoin"
    DISTINCT = "Distinct"
    FILTER = "Filter"
    MAP = "Map"
    UNION = "Union"
    NEGATE = "Negate"
    THRESHOLD = "Threshold"
    TOP_K = "TopK"
    ARRANGE_BY = "ArrangeBy"
    CONSTANT = "Constant"
    FLAT_MAP = "FlatMap"


@attrs.frozen
class PlanNode:
    """One plan line and its inputs. ``columns`` is a ``Project``'s columns
    or a ``Reduce``'s group key; ``scalars`` a ``Filter``'s predicates or a
    ``Map``'s expressions."""

    line: int
    operator: Operator
    inputs: tuple[PlanNode, ...] = ()
    id: GlobalId | None = None
    columns: tuple[int, ...] = ()
    aggregates: tuple[AggregateSyntax, ...] = ()
    scalars: tuple[Expr, ...] = ()
    equalities: tuple[tuple[int, int], ...] = ()
    # A TopK's order key, limit and offset; a Constant's types and rows; an
    # ArrangeBy's keys.
    order: tuple[tuple[int, bool, bool], ...] = ()
    limit: Expr | None = None
    offset: int = 0
    types: tuple[ColumnType, ...] = ()
    rows: tuple[tuple[tuple[Const, ...], int, int], ...] = ()  # (datums, diff, line)
    keys: tuple[tuple[Expr, ...], ...] = ()
    func: str = ""  # a FlatMap's table function
    local: str = ""  # a Get of a cte (`Get l0`)
    # A Reduce's, a Distinct's or a TopK's hints to the renderer (``explain``
    # prints them; no result depends on them).
    monotonic: bool = False
    group_size: int | None = None


def _project(number: int, cursor: Cursor) -> PlanNode:
    if not cursor.is_("("):
        raise InputError(number, "Project lists its columns: Project (#0, #1)")
    columns = comma_separated(cursor.group("("), _column)
    return PlanNode(number, Operator.PROJECT, columns=tuple(columns))


def _column(cursor: Cursor) -> int:
    if not cursor.is_("#"):
        written = []
        while not cursor.done() and not cursor.is_(","):
            token = cursor.peek()
            assert token is not None
            written.append(token.text)
            cursor.at += 1
        raise MirError(f"a column is written #0, not {' '.join(written)!r}")
    return cursor.column()


def _group(number: int, exprs: list[Expr], aggregates: list[AggregateSyntax]) -> PlanNode:
    """A Reduce of group key ``exprs``: columns (``#0``), or expressions,
    which a Map computes first."""
    if all(isinstance(expr, Ref) for expr in exprs):
        columns = tuple(expr.index for expr in exprs if isinstance(expr, Ref))
        return PlanNode(number, Operator.REDUCE, columns=columns, aggregates=tuple(aggregates))
    return PlanNode(number, Operator.REDUCE, keys=(tuple(exprs),), aggregates=tuple(aggregates))


def _reduce(number: int, cursor: Cursor) -> PlanNode:
    group: list[Expr] = []
    if cursor.eat("group_by"):
        cursor.expect("=")
        group = comma_separated(cursor.group("["), parse_expr)
    if not cursor.eat("aggregates"):
        raise InputError(number, "Reduce needs aggregates=[count(*)] (or [] for none)")
    cursor.expect("=")
    aggregates = comma_separated(cursor.group("["), parse_aggregate)
    return _hints(cursor, _group(number, group, aggregates))


def _distinct(number: int, cursor: Cursor) -> PlanNode:
    group: list[Expr] = []
    if cursor.eat("project"):
        cursor.expect("=")
        group = comma_separated(cursor.group("["), parse_expr)
    return _hints(cursor, _group(number, group, []))


def _hints(cursor: Cursor, node: PlanNode) -> PlanNode:
    """``node`` with the hints after it: ``monotonic`` and
    ``exp_group_size=N``, in that order, hints to the real renderer that
    change no result."""
    monotonic = cursor.eat("monotonic")
    group_size = None
    if cursor.eat("exp_group_size"):
        cursor.expect("=")
        group_size = cursor.integer("a group size")
    return attrs.evolve(node, monotonic=monotonic, group_size=group_size)


def _join(number: int, cursor: Cursor) -> PlanNode:
    if cursor.done():
        return PlanNode(number, Operator.JOIN)
    cursor.expect("on")
    cursor.expect("=")
    inner = cursor.group("(")
    pairs: list[tuple[int, int]] = []
    while not inner.done():
        members: list[Expr] = []
        while True:
            operands = [parse_operand(inner)]
            while operands:
                operand = operands.pop()
                if isinstance(operand, Apply) and operand.func is ScalarFunc.EQ:
                    operands.extend(reversed(operand.args))
                else:
                    members.append(operand)
            if not inner.eat("="):
                break
        refs = []
        for member in members:
            if not isinstance(member, Ref):
                raise MirError("a join equivalence holds columns only here (#0 = #2)")
            refs.append(member.index)
        pairs.extend(itertools.pairwise(refs))
        inner.eat("AND")
    return PlanNode(number, Operator.JOIN, equalities=tuple(pairs))


def _cross_join(number: int, cursor: Cursor) -> PlanNode:
    if not cursor.done():
        raise InputError(number, "CrossJoin takes nothing after it (its inputs are below it)")
    return PlanNode(number, Operator.CROSS_JOIN)


def _filter(number: int, cursor: Cursor) -> PlanNode:
    expr = parse_expr(cursor)
    predicates = expr.args if isinstance(expr, Apply) and expr.func is ScalarFunc.AND else (expr,)
    return PlanNode(number, Operator.FILTER, scalars=predicates)


def _map(number: int, cursor: Cursor) -> PlanNode:
    scalars = comma_separated(cursor.group("("), parse_expr)
    return PlanNode(number, Operator.MAP, scalars=tuple(scalars))


def _bare(operator: Operator) -> Callable[[int, Cursor], PlanNode]:
    def parse(number: int, cursor: Cursor) -> PlanNode:
        if not cursor.done():
            raise InputError(number, f"{operator} takes nothing after it (its inputs are below it)")
        return PlanNode(number, operator)

    return parse


def _top_k(number: int, cursor: Cursor) -> PlanNode:
    group: list[int] = []
    order: list[tuple[int, bool, bool]] = []
    limit: Expr | None = None
    offset = 0
    if cursor.eat("group_by"):
        cursor.expect("=")
        group = comma_separated(cursor.group("["), _column)
    if cursor.eat("order_by"):
        cursor.expect("=")
        order = comma_separated(cursor.group("["), _column_order)
    if cursor.eat("limit"):
        cursor.expect("=")
        limit = parse_expr(cursor)
    if cursor.eat("offset"):
        cursor.expect("=")
        offset = cursor.integer("an offset")
    node = PlanNode(
        number,
        Operator.TOP_K,
        columns=tuple(group),
        order=tuple(order),
        limit=limit,
        offset=offset,
    )
    return _hints(cursor, node)


def _column_order(cursor: Cursor) -> tuple[int, bool, bool]:
    """``#n [asc|desc] [nulls_first|nulls_last]``: descending and nulls last
    unless it says otherwise (the real parser's defaults)."""
    column = cursor.column()
    descending = cursor.eat("desc") or not cursor.eat("asc")
    nulls_last = cursor.eat("nulls_last") or not cursor.eat("nulls_first")
    return column, descending, nulls_last


def _arrange_by(number: int, cursor: Cursor) -> PlanNode:
    cursor.expect("keys")
    cursor.expect("=")
    keys = comma_separated(
        cursor.group("["), lambda key: tuple(comma_separated(key.group("["), parse_expr))
    )
    return PlanNode(number, Operator.ARRANGE_BY, keys=tuple(keys))


def _constant(number: int, cursor: Cursor) -> PlanNode:
    empty = cursor.is_("<") and cursor.is_("empty", 1) and cursor.is_(">", 2)
    if empty:
        cursor.at += 3
    types: tuple[ColumnType, ...] | None = None
    if cursor.eat("::"):
        analyses = cursor.group("{")
        while not analyses.done():
            token = analyses.peek()
            assert token is not None
            if token.text != "types":
                raise MirError(f"unexpected analysis type `{token.text}`")
            analyses.at += 1
            analyses.expect(":")
            written = analyses.peek()
            if written is None or written.kind != "string":
                raise MirError(f"expected a string of types, found {analyses.describe()}")
            analyses.at += 1
            types = parse_types(written.text[1:-1])
    if types is None:
        raise MirError('a Constant says its types: Constant // { types: "(bigint, text)" }')
    # An empty constant marks itself with a row count of -1 until its rows
    # (none) are read.
    return PlanNode(number, Operator.CONSTANT, types=types, offset=-1 if empty else 0)


def _flat_map(number: int, cursor: Cursor) -> PlanNode:
    token = cursor.peek()
    if token is None or token.kind != "ident":
        raise MirError(f"expected a table function, found {cursor.describe()}")
    name = token.text.lower()
    if name in ("unnest_list", "unnest_array", "jsonb_object_keys"):
        raise MirError(f"{name}(..) is not supported here (no lists, arrays or jsonb)")
    if name not in TABLE_FUNCTIONS:
        raise MirError(
            f"unsupported function name {token.text!r} (generate_series, wrap1, wrap2 or wrap3)"
        )
    cursor.at += 1
    exprs = comma_separated(cursor.group("("), parse_expr)
    return PlanNode(number, Operator.FLAT_MAP, scalars=tuple(exprs), func=name)


# Each operator's reader of the tokens after its name (a Get's line, which is
# not read as tokens, is read by :mod:`._plan_syntax`).
OPERATOR_READERS: dict[str, Callable[[int, Cursor], PlanNode]] = {
    Operator.PROJECT: _project,
    Operator.REDUCE: _reduce,
    Operator.DISTINCT: _distinct,
    Operator.JOIN: _join,
    Operator.CROSS_JOIN: _cross_join,
    Operator.FILTER: _filter,
    Operator.MAP: _map,
    Operator.UNION: _bare(Operator.UNION),
    Operator.NEGATE: _bare(Operator.NEGATE),
    Operator.THRESHOLD: _bare(Operator.THRESHOLD),
    Operator.TOP_K: _top_k,
    Operator.ARRANGE_BY: _arrange_by,
    Operator.CONSTANT: _constant,
    Operator.FLAT_MAP: _flat_map,
}
