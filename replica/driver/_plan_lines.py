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
from replica._plan import (
    TABLE_FUNCTIONS,
    Constant,
    Filter,
    FlatMap,
    Get,
    Join,
    Map,
    Negate,
    Plan,
    PlanError,
    Project,
    Reduce,
    Threshold,
    TopK,
    Union,
    check,
)
from replica._protocol import Datum
from replica._scalar import ScalarFunc
from replica._scalar import columns as scalar_columns

from ._data import ColumnType, ScalarType
from ._headers import InputError
from ._mir import (
    AggregateSyntax,
    Apply,
    Const,
    Cursor,
    Expr,
    MirError,
    Ref,
    comma_separated,
    lex,
    lower,
    lower_aggregate,
    parse_aggregate,
    parse_constant_row,
    parse_expr,
    parse_operand,
    parse_types,
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


_GET = re.compile(r"Get +(\S+)")
_INPUTS = {
    Operator.GET: (0, 0),
    Operator.PROJECT: (1, 1),
    Operator.REDUCE: (1, 1),
    Operator.DISTINCT: (1, 1),
    Operator.FILTER: (1, 1),
    Operator.MAP: (1, 1),
    Operator.UNION: (1, None),
    Operator.NEGATE: (1, 1),
    Operator.THRESHOLD: (1, 1),
    Operator.TOP_K: (1, 1),
    Operator.ARRANGE_BY: (1, 1),
    Operator.CONSTANT: (0, 0),
    Operator.FLAT_MAP: (1, 1),
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
    if lines[0].text.split(" ", 1)[0] in ("With", "Return"):
        node = _let(lines)
    else:
        node, end = _node(lines, 0, 1)
        if end < len(lines):
            raise InputError(
                lines[end].number,
                "a build holds one plan, and this line is not an input of it "
                "(an input is indented 2 more than its operator)",
            )
    return _bind_locals(node, {})


# How many operators a plan holds once its ctes are in place (a cte read
# twice is there twice).
MAX_PLAN_NODES = 10_000

_CTE = re.compile(r"cte +(l[0-9]+) *=(?: *// *\{.*\})?")


def _let(lines: list[BodyLine]) -> PlanNode:
    """``With`` and its ``cte lN =`` bindings, each over its plan, and
    ``Return`` over the plan that reads them (``Get lN``), in either order;
    each cte reads the ctes of lower ids. A cte's plan stands in place of
    each ``Get`` of it."""
    top = lines[0].indent
    sections: dict[str, tuple[BodyLine, list[BodyLine]]] = {}
    for line in lines:
        if line.indent > top and sections:
            list(sections.values())[-1][1].append(line)
            continue
        word = line.text.split(" ", 1)[0]
        if line.indent < top or word not in ("With", "Return") or word in sections:
            raise InputError(
                line.number,
                "a let plan is With (its ctes below it) and Return (its plan below it)",
            )
        if word == "With" and line.text != "With":
            raise InputError(
                line.number, "With Mutually Recursive (a recursive let) is not supported here"
            )
        if word == "Return" and line.text != "Return":
            raise InputError(line.number, "Return takes nothing after it (its plan is below it)")
        sections[word] = (line, [])
    if len(sections) != 2:
        missing = "Return" if "With" in sections else "With"
        raise InputError(lines[-1].number, f"a let plan needs its {missing} too")
    with_line, bindings = sections["With"]
    return_line, body = sections["Return"]
    if not bindings:
        raise InputError(with_line.number, "At least one `let cte` binding expected")
    if not body:
        raise InputError(return_line.number, "Return has its plan below it")
    ctes: list[tuple[int, int, PlanNode]] = []  # (id, line, plan)
    at = 0
    while at < len(bindings):
        line = bindings[at]
        match = _CTE.fullmatch(line.text)
        if line.indent != top + 2 or match is None:
            raise InputError(line.number, "a cte is written `cte l0 =`, 2 more than With")
        value = bindings[at + 1 :]
        end = next((i for i, v in enumerate(value) if v.indent <= line.indent), len(value))
        if end == 0:
            raise InputError(line.number, f"cte {match[1]} has its plan below it")
        if value[0].indent != line.indent + 2:
            raise InputError(value[0].number, "a cte's plan is indented 2 more than it")
        plan, used = _node(value[:end], 0, 1)
        if used < end:
            raise InputError(value[used].number, "a cte holds one plan")
        ctes.append((int(match[1][1:]), line.number, plan))
        at += 1 + end
    ids = [id for id, _, _ in ctes]
    with_first = with_line.number < return_line.number
    if ids != sorted(ids, reverse=not with_first) or len(set(ids)) != len(ids):
        first, order = ("With", "ascending") if with_first else ("Return", "descending")
        raise InputError(
            with_line.number,
            f"seen {first} first, but the cte ids are not in {order} order: {ids}",
        )
    root, used = _node(body, 0, 1)
    if body[0].indent != top + 2:
        raise InputError(body[0].number, "Return's plan is indented 2 more than it")
    if used < len(body):
        raise InputError(body[used].number, "Return holds one plan")
    bound: dict[str, PlanNode] = {}
    for id, _, plan in sorted(ctes, key=lambda cte: cte[0]):
        bound[f"l{id}"] = _bind_locals(plan, bound)
    return _bind_locals(root, bound)


def _bind_locals(node: PlanNode, bound: dict[str, PlanNode]) -> PlanNode:
    """``node`` with each ``Get lN`` replaced by cte ``lN``'s plan."""
    count = [0]

    def bind(node: PlanNode, depth: int) -> PlanNode:
        count[0] += 1
        if count[0] > MAX_PLAN_NODES:
            raise InputError(
                node.line, f"a plan holds more than {MAX_PLAN_NODES} operators once its ctes are in"
            )
        if depth > MAX_PLAN_DEPTH:
            raise InputError(
                node.line,
                f"a plan nests more than {MAX_PLAN_DEPTH} operators deep once its ctes are in",
            )
        if node.operator is Operator.GET and node.local:
            value = bound.get(node.local)
            if value is None:
                raise InputError(node.line, f"Get {node.local}: no cte {node.local} is bound here")
            return bind(value, depth)
        if not node.inputs:
            return node
        return attrs.evolve(node, inputs=tuple(bind(input, depth + 1) for input in node.inputs))

    return bind(node, 1)


def _node(lines: list[BodyLine], start: int, depth: int) -> tuple[PlanNode, int]:
    line = lines[start]
    if depth > MAX_PLAN_DEPTH:
        raise InputError(line.number, f"a plan nests more than {MAX_PLAN_DEPTH} operators deep")
    node = _operator(line)
    inputs: list[PlanNode] = []
    at = start + 1
    if node.operator is Operator.CONSTANT:
        return _constant_rows(node, line, lines, at)
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
        if least == 1 and most is None:
            wanted = "one input or more"
        raise InputError(line.number, f"{node.operator} takes {wanted}, not {len(inputs)}")
    return attrs.evolve(node, inputs=tuple(inputs)), at


def _operator(line: BodyLine) -> PlanNode:
    text, number = line.text, line.number
    word = text.split(" ", 1)[0]
    if word == Operator.GET:
        match = _GET.fullmatch(text)
        if match is None:
            raise InputError(number, "Get names one collection: Get u1000")
        if re.fullmatch(r"l[0-9]+", match[1]):
            return PlanNode(number, Operator.GET, local=match[1])
        try:
            id = GlobalId.parse(match[1])
        except ValueError as error:
            raise InputError(number, f"Get: {error}") from None
        return PlanNode(number, Operator.GET, id=id)
    try:
        # As the real parser does: `// {` starts a line's analyses.
        tokens = lex(text.replace("// {", ":: {"))
    except MirError as error:
        raise InputError(number, str(error)) from None
    word = tokens[0].text
    parse = _PARSERS.get(word)
    if parse is None:
        raise InputError(
            number,
            f"unknown plan operator {word!r} "
            "(Get, Project, Map, Filter, Reduce, Distinct, Join, CrossJoin, Union, "
            "Negate, Threshold, TopK, ArrangeBy, Constant or FlatMap)",
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
    _hints(cursor)
    return _group(number, group, aggregates)


def _distinct(number: int, cursor: Cursor) -> PlanNode:
    group: list[Expr] = []
    if cursor.eat("project"):
        cursor.expect("=")
        group = comma_separated(cursor.group("["), parse_expr)
    _hints(cursor)
    return _group(number, group, [])


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
    _hints(cursor)
    return PlanNode(
        number,
        Operator.TOP_K,
        columns=tuple(group),
        order=tuple(order),
        limit=limit,
        offset=offset,
    )


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


def _constant_rows(
    node: PlanNode, line: BodyLine, lines: list[BodyLine], at: int
) -> tuple[PlanNode, int]:
    """A Constant's rows: the lines indented 2 more than it."""
    rows: list[tuple[tuple[Const, ...], int, int]] = []
    while at < len(lines) and lines[at].indent > line.indent:
        entry = lines[at]
        if node.offset == -1:
            raise InputError(entry.number, "a Constant <empty> has no rows")
        if entry.indent != line.indent + 2:
            raise InputError(
                entry.number,
                f"a row of the Constant (line {line.number}) is indented "
                f"{line.indent + 2} spaces, 2 more than it, not {entry.indent}",
            )
        try:
            datums, diff = parse_constant_row(entry.text)
        except MirError as error:
            raise InputError(entry.number, f"Constant row: {error}") from None
        rows.append((datums, diff, entry.number))
        at += 1
    if not rows and node.offset != -1:
        raise InputError(line.number, "a Constant lists its rows below it (or is Constant <empty>)")
    return attrs.evolve(node, rows=tuple(rows), offset=0), at


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


_PARSERS: dict[str, Callable[[int, Cursor], PlanNode]] = {
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
        case Reduce(_, _, group_key) if not node.keys:
            return plan, tuple(input_types[0][column] for column in group_key) + computed
        case Join():
            return plan, tuple(column for relation in input_types for column in relation)
        case Negate() | Threshold() | TopK():
            return plan, input_types[0]
        case FlatMap():
            return plan, input_types[0] + computed
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
            results = tuple(t for _, t in lowered)
            if not node.keys:
                return Reduce(inputs[0], aggregates, node.columns), results
            # Expressions in the group key: a Map computes them first.
            keys = [lower(expr, input_types[0]) for expr in node.keys[0]]
            width = len(input_types[0])
            mapped = Map(tuple(scalar for scalar, _ in keys), inputs[0])
            group = tuple(range(width, width + len(keys)))
            return Reduce(mapped, aggregates, group), tuple(t for _, t in keys) + results
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
        case Operator.UNION:
            return Union(inputs), _union_types(input_types)
        case Operator.NEGATE:
            return Negate(inputs[0]), ()
        case Operator.THRESHOLD:
            return Threshold(inputs[0]), ()
        case Operator.ARRANGE_BY:
            for key in node.keys:
                for expr in key:
                    lower(expr, input_types[0])
            return inputs[0], input_types[0]
        case Operator.TOP_K:
            return _resolve_top_k(node, inputs[0], input_types[0]), ()
        case Operator.CONSTANT:
            return _resolve_constant(node)
        case Operator.FLAT_MAP:
            return _resolve_flat_map(node, inputs[0], input_types[0])
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


def _union_types(input_types: list[RelationType]) -> RelationType:
    first = input_types[0]
    for number, relation in enumerate(input_types[1:], start=2):
        if len(relation) != len(first):
            raise MirError(
                f"input {number} of the Union has {len(relation)} columns, the first {len(first)}"
            )
        for column, (a, b) in enumerate(zip(first, relation, strict=True)):
            if a.scalar != b.scalar:
                raise MirError(
                    f"column #{column} of the Union's input {number} is {b.scalar}, "
                    f"of the first {a.scalar}"
                )
    return tuple(
        ColumnType(column[0].scalar, any(type.nullable for type in column))
        for column in zip(*input_types, strict=True)
    )


def _resolve_top_k(node: PlanNode, input: Plan, types: RelationType) -> TopK:
    for column in (*node.columns, *(column for column, _, _ in node.order)):
        if column >= len(types):
            raise MirError(f"column #{column} out of range for a {len(types)}-column input")
    limit = None
    if node.limit is not None:
        limit, type = lower(node.limit, types)
        if type.scalar is not ScalarType.BIGINT:
            raise MirError(f"a TopK's limit is a bigint, not {type.scalar}")
        outside = [column for column in scalar_columns(limit) if column not in node.columns]
        if outside:
            raise MirError(f"a TopK's limit reads its group's key columns only, not #{outside[0]}")
    return TopK(input, node.columns, node.order, limit, node.offset)


def _resolve_constant(node: PlanNode) -> tuple[Constant, RelationType]:
    rows = []
    for datums, diff, line in node.rows:
        if len(datums) != len(node.types):
            raise InputError(
                line,
                f"Constant row: {len(datums)} values, and the Constant's types "
                f"are {len(node.types)}",
            )
        values = []
        for column, (datum, type) in enumerate(zip(datums, node.types, strict=True)):
            try:
                values.append(_typed_datum(datum, type, column))
            except MirError as error:
                raise InputError(line, f"Constant row: {error}") from None
        rows.append((tuple(values), diff))
    return Constant(tuple(rows), len(node.types)), node.types


_INTEGER_RANGES = {
    ScalarType.BIGINT: 2**63,
    ScalarType.INTEGER: 2**31,
    ScalarType.SMALLINT: 2**15,
}


def _typed_datum(datum: Const, type: ColumnType, column: int) -> Datum:
    value = datum.value
    where = f"column #{column}"
    if value is None:
        if not type.nullable:
            raise MirError(f"{where} is null, and the type {type.scalar} is not nullable")
        return None
    given = datum.type.scalar
    if type.scalar in _INTEGER_RANGES and given is ScalarType.BIGINT:
        assert isinstance(value, int)
        bound = _INTEGER_RANGES[type.scalar]
        if not -bound <= value < bound:
            raise MirError(f"{where}: {value} is out of range for {type.scalar}")
        return value
    if given is not type.scalar:
        raise MirError(f"{where} is a {given} value, and the column is {type.scalar}")
    return value


def _resolve_flat_map(
    node: PlanNode, input: Plan, types: RelationType
) -> tuple[FlatMap, RelationType]:
    lowered = [lower(expr, types) for expr in node.scalars]
    scalars = tuple(scalar for scalar, _ in lowered)
    arg_types = [type for _, type in lowered]
    if node.func == "generate_series":
        if len(arg_types) not in (2, 3):
            raise MirError(
                f"generate_series(..) takes a start, a stop and maybe a step, not {len(arg_types)}"
            )
        for type in arg_types:
            if type.scalar is not ScalarType.BIGINT:
                raise MirError(f"generate_series(..) counts bigints, not {type.scalar}")
        return FlatMap(node.func, scalars, input), (ColumnType(ScalarType.BIGINT),)
    width = TABLE_FUNCTIONS[node.func]
    if not arg_types or len(arg_types) % width:
        raise MirError(
            f"{node.func}(..) cuts its values into rows of {width}: {len(arg_types)} values do not"
        )
    columns: list[ColumnType] = []
    for column in range(width):
        types_here = arg_types[column::width]
        first = types_here[0].scalar
        for type in types_here[1:]:
            if type.scalar != first:
                raise MirError(f"{node.func}(..) puts {first} and {type.scalar} in column {column}")
        columns.append(ColumnType(first, any(type.nullable for type in types_here)))
    return FlatMap(node.func, scalars, input), tuple(columns)
