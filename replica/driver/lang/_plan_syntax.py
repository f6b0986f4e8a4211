"""A build's plan, written as ``mz-expr-parser`` writes MIR: one operator a
line, its inputs on the lines below it indented exactly two more::

    Join on=(#0 = #2)
      Get u1000
      Get u1001

read into a tree of :class:`~._plan_operators.PlanNode` by :func:`parse_plan`,
each line by its operator's reader (:mod:`._plan_operators`). A
``Constant``'s rows are the lines below it; a let plan (``With`` over its
``cte lN =`` bindings, each over its plan, and ``Return`` over the plan that
reads them) puts each cte's plan in place of each ``Get lN``. The tree is
resolved into the model's plans by :mod:`._plan_resolution`. The language is
README.md's (The ``trio-reconcile`` command).

A plan nests at most :data:`MAX_PLAN_DEPTH` operators deep and holds at most
:data:`MAX_PLAN_NODES` once its ctes are in place.
"""

from __future__ import annotations

import re

import attrs

from replica.model import GlobalId

from ._expressions import Const, parse_constant_row
from ._headers import InputError
from ._plan_operators import OPERATOR_READERS, Operator, PlanNode
from ._tokens import Cursor, MirError, lex


@attrs.frozen
class BodyLine:
    """A body line: its number in the file, its indentation (leading ASCII
    spaces) and its text without them."""

    number: int
    indent: int
    text: str


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


# Deeper than any plan Materialize prints, shallow enough that resolving,
# checking, building and encoding a plan stay within Python's recursion limit.
MAX_PLAN_DEPTH = 64


def parse_plan(lines: list[BodyLine]) -> PlanNode:
    """A build's plan lines read into its tree; :class:`InputError` at the
    line at fault."""
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
    parse = OPERATOR_READERS.get(word)
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
