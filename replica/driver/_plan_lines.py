"""A build's plan (DRIVER_COMPAT.md, Dataflows): written as
``mz-expr-parser`` writes MIR, one operator a line, its inputs on the lines
below it indented exactly two more::

    Join on=(#0 = #2)
      Get u1000
      Get u1001

read into :class:`PlanNode` syntax by :func:`parse_plan` and resolved into
:mod:`replica._plan` plans, with their rows' types, by :func:`resolve`.

Operators: ``Get <id>``; ``Project (#0, #1)``; ``Map (expr, ..)``;
``Filter predicate [AND predicate ..]``; ``Reduce [group_by=[#0]]
aggregates=[count(*), sum(#1), min(distinct #2), ..] [monotonic]
[exp_group_size=N]`` (the last two are hints to the real renderer, and
change no result; ``aggregates=[]`` is a distinct), ``Distinct
[project=[#0]]`` (the same); ``Join on=(#a = #b [AND #c = #d])`` over two
inputs or more, its columns those of the inputs concatenated (an equality
within one input filters it), and ``CrossJoin``, a join with no
equalities. Each line is read as Rust tokens, so spacing between them is
free (:mod:`._mir`), and each operator's keywords come in the order
``mz-expr-parser`` reads them.
"""

from __future__ import annotations

import enum
import itertools
import re
from collections.abc import Callable, Mapping

import attrs

from replica._ids import GlobalId
from replica._plan import Filter, Get, Join, Map, Plan, PlanError, Project, Reduce, check
from replica._scalar import ScalarFunc

from ._data import ColumnType, ScalarType
from ._headers import InputError
from ._mir import (
    AggregateSyntax,
    Apply,
    Cursor,
    Expr,
    MirError,
    Ref,
    comma_separated,
    lex,
    lower,
    lower_aggregate,
    parse_aggregate,
    parse_expr,
    parse_operand,
)

RelationType = tuple[ColumnType, ...]


@attrs.frozen
class BodyLine:
    """A body line: its number in the file, its indentation (leading ASCII
    spaces) and its text without them."""

    number: int
    indent: int
    text: str


class Operator(enum.StrEnum):
    GET = "Get"
    PROJECT = "Project"
    REDUCE = "Reduce"
    JOIN = "Join"
    CROSS_JOIN = "CrossJoin"
    DISTINCT = "Distinct"
    FILTER = "Filter"
    MAP = "Map"


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


_GET = re.compile(r"Get +(\S+)")
_INPUTS = {
    Operator.GET: (0, 0),
    Operator.PROJECT: (1, 1),
    Operator.REDUCE: (1, 1),
    Operator.DISTINCT: (1, 1),
    Operator.FILTER: (1, 1),
    Operator.MAP: (1, 1),
}


# Wider than any plan here needs, narrow enough that a row's columns cost
# little to build and to check.
MAX_PLAN_COLUMNS = 4096


def _too_wide(columns: int) -> str:
    return f"a plan's rows have at most {MAX_PLAN_COLUMNS} columns (these have {columns})"


# Deeper than any plan Materialize prints, shallow enough that resolving,
# checking, building and encoding a plan stay within Python's recursion limit.
MAX_PLAN_DEPTH = 64


def parse_plan(lines: list[BodyLine]) -> PlanNode:
    node, end = _node(lines, 0, 1)
    if end < len(lines):
        raise InputError(
            lines[end].number,
            "a build holds one plan, and this line is not an input of it "
            "(an input is indented 2 more than its operator)",
        )
    return node


def _node(lines: list[BodyLine], start: int, depth: int) -> tuple[PlanNode, int]:
    line = lines[start]
    if depth > MAX_PLAN_DEPTH:
        raise InputError(line.number, f"a plan nests more than {MAX_PLAN_DEPTH} operators deep")
    node = _operator(line)
    inputs: list[PlanNode] = []
    at = start + 1
    while at < len(lines) and lines[at].indent > line.indent:
        if lines[at].indent != line.indent + 2:
            raise InputError(
                lines[at].number,
                f"an input of {node.operator} (line {line.number}) is indented "
                f"{line.indent + 2} spaces, 2 more than it, not {lines[at].indent}",
            )
        child, at = _node(lines, at, depth + 1)
        inputs.append(child)
    least, most = _INPUTS.get(node.operator, (2, None))
    if len(inputs) < least or (most is not None and len(inputs) > most):
        wanted = {0: "no input", 1: "one input", 2: "two inputs or more"}[least]
        raise InputError(line.number, f"{node.operator} takes {wanted}, not {len(inputs)}")
    return attrs.evolve(node, inputs=tuple(inputs)), at


def _operator(line: BodyLine) -> PlanNode:
    text, number = line.text, line.number
    word = text.split(" ", 1)[0]
    if word == Operator.GET:
        match = _GET.fullmatch(text)
        if match is None:
            raise InputError(number, "Get names one collection: Get u1000")
        try:
            id = GlobalId.parse(match[1])
        except ValueError as error:
            raise InputError(number, f"Get: {error}") from None
        return PlanNode(number, Operator.GET, id=id)
    try:
        tokens = lex(text)
    except MirError as error:
        raise InputError(number, str(error)) from None
    word = tokens[0].text
    parse = _PARSERS.get(word)
    if parse is None:
        raise InputError(
            number,
            f"unknown plan operator {word!r} "
            "(Get, Project, Map, Filter, Reduce, Distinct, Join or CrossJoin)",
        )
    cursor = Cursor(tokens, 1)
    try:
        node = parse(number, cursor)
        cursor.finish()
    except MirError as error:
        raise InputError(number, f"{word}: {error}") from None
    return node


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


def _key(cursor: Cursor) -> int:
    expr = parse_expr(cursor)
    if not isinstance(expr, Ref):
        raise MirError("a group key is a list of columns here (#0, #1)")
    return expr.index


def _reduce(number: int, cursor: Cursor) -> PlanNode:
    group: list[int] = []
    if cursor.eat("group_by"):
        cursor.expect("=")
        group = comma_separated(cursor.group("["), _key)
    if not cursor.eat("aggregates"):
        raise InputError(number, "Reduce needs aggregates=[count(*)] (or [] for none)")
    cursor.expect("=")
    aggregates = comma_separated(cursor.group("["), parse_aggregate)
    _hints(cursor)
    return PlanNode(number, Operator.REDUCE, columns=tuple(group), aggregates=tuple(aggregates))


def _distinct(number: int, cursor: Cursor) -> PlanNode:
    group: list[int] = []
    if cursor.eat("project"):
        cursor.expect("=")
        group = comma_separated(cursor.group("["), _key)
    _hints(cursor)
    return PlanNode(number, Operator.REDUCE, columns=tuple(group))


def _hints(cursor: Cursor) -> None:
    """``monotonic`` and ``exp_group_size=N``, in that order: hints to the
    real renderer that change no result."""
    cursor.eat("monotonic")
    if cursor.eat("exp_group_size"):
        cursor.expect("=")
        cursor.integer("a group size")


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


_PARSERS: dict[str, Callable[[int, Cursor], PlanNode]] = {
    Operator.PROJECT: _project,
    Operator.REDUCE: _reduce,
    Operator.DISTINCT: _distinct,
    Operator.JOIN: _join,
    Operator.CROSS_JOIN: _cross_join,
    Operator.FILTER: _filter,
    Operator.MAP: _map,
}


def resolve(
    node: PlanNode, types: Mapping[GlobalId, RelationType], optimize: bool
) -> tuple[Plan, RelationType]:
    """The plan ``node`` writes, over the collections ``types`` gives a type
    for, and its rows' type; :class:`InputError` at the line at fault."""
    resolved = [resolve(input, types, optimize) for input in node.inputs]
    inputs = tuple(plan for plan, _ in resolved)
    input_types = [relation for _, relation in resolved]
    if node.operator in (Operator.JOIN, Operator.CROSS_JOIN) and not optimize:
        raise InputError(
            node.line,
            f"{node.operator} needs the optimize flag on create-dataflow "
            "(the real driver cannot lower a join the optimizer did not plan)",
        )
    try:
        plan, computed = _resolve(node, inputs, input_types)
        width = check(plan, {id: len(relation) for id, relation in types.items()})
    except (PlanError, MirError) as error:
        raise InputError(node.line, str(error)) from None
    if width > MAX_PLAN_COLUMNS:
        raise InputError(node.line, _too_wide(width))
    match plan:
        case Get(id):
            return plan, types[id]
        case Project(columns, _):
            return plan, tuple(input_types[0][column] for column in columns)
        case Reduce(_, _, group_key):
            return plan, tuple(input_types[0][column] for column in group_key) + computed
        case Join():
            return plan, tuple(column for relation in input_types for column in relation)
        case _:
            return plan, computed


def _resolve(
    node: PlanNode, inputs: tuple[Plan, ...], input_types: list[RelationType]
) -> tuple[Plan, RelationType]:
    """The plan, and the types of the columns it computes (a Reduce's
    aggregates, a Filter's or a Map's columns)."""
    match node.operator:
        case Operator.GET:
            assert node.id is not None
            return Get(node.id), ()
        case Operator.PROJECT:
            return Project(node.columns, inputs[0]), ()
        case Operator.REDUCE:
            lowered = [lower_aggregate(a, input_types[0]) for a in node.aggregates]
            aggregates = tuple(aggregate for aggregate, _ in lowered)
            return Reduce(inputs[0], aggregates, node.columns), tuple(t for _, t in lowered)
        case Operator.FILTER:
            predicates = []
            for expr in node.scalars:
                predicate, type = lower(expr, input_types[0])
                if type.scalar is not ScalarType.BOOLEAN:
                    raise MirError(f"a predicate is a boolean, not {type.scalar}")
                predicates.append(predicate)
            return Filter(tuple(predicates), inputs[0]), input_types[0]
        case Operator.MAP:
            columns = list(input_types[0])
            if len(columns) + len(node.scalars) > MAX_PLAN_COLUMNS:
                raise MirError(_too_wide(len(columns) + len(node.scalars)))
            scalars = []
            for expr in node.scalars:
                scalar, type = lower(expr, tuple(columns))
                scalars.append(scalar)
                columns.append(type)
            return Map(tuple(scalars), inputs[0]), tuple(columns)
        case Operator.JOIN | Operator.CROSS_JOIN:
            columns = [column for relation in input_types for column in relation]
            for a, b in node.equalities:
                if max(a, b) < len(columns) and columns[a].scalar != columns[b].scalar:
                    raise MirError(
                        f"a join equality (#{a} = #{b}) compares "
                        f"{columns[a].scalar} with {columns[b].scalar}"
                    )
            return Join(inputs, node.equalities), ()
    raise AssertionError(f"no plan for {node.operator}")
