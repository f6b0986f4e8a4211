"""The body of a ``create-dataflow`` (DRIVER_COMPAT.md, Dataflows): its
``import``, ``build`` and ``export`` sub-commands, and the plan each build
holds, read into syntax here and resolved into :mod:`replica._plan` plans by
:func:`resolve`.

The body is grouped by indentation as the real driver groups it: lines at the
body's least indentation are sub-commands, each owning the more-indented lines
after it. A plan is written as ``mz-expr-parser`` writes MIR: one operator a
line, its inputs on the lines below it indented exactly two more::

    Join on=(#0 = #2)
      Get u1000
      Get u1001

Operators: ``Get <id>``; ``Project (#0, #1)``; ``Reduce [group_by=[#0]]
aggregates=[count(*), ..] [monotonic] [exp_group_size=N]`` (the last two are
hints to the real renderer, and change no result; ``aggregates=[]`` is a
distinct), ``Distinct [project=[#0]]`` (the same); ``Join on=(#a = #b [AND
#c = #d])`` over two inputs or more, its columns those of the inputs
concatenated, and ``CrossJoin``, a join with no equalities.
"""

from __future__ import annotations

import enum
import itertools
import re
from collections.abc import Mapping, Sequence

import attrs

from replica._ids import GlobalId
from replica._plan import Aggregate, Get, Join, Plan, PlanError, Project, Reduce, check
from replica._protocol import MaterializedView, Subscribe

from ._data import ColumnType, ScalarType
from ._headers import (
    BUILD,
    EXPORTS,
    IMPORT_INDEX,
    IMPORT_SOURCE,
    Arguments,
    InputError,
    Signature,
    as_id,
    as_int,
    as_list,
    as_str,
    parse_arguments,
    tokenize,
    whole,
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


@attrs.frozen
class PlanNode:
    """One plan line and its inputs. ``columns`` is a ``Project``'s columns
    or a ``Reduce``'s group key."""

    line: int
    operator: Operator
    inputs: tuple[PlanNode, ...] = ()
    id: GlobalId | None = None
    columns: tuple[int, ...] = ()
    aggregates: tuple[Aggregate, ...] = ()
    equalities: tuple[tuple[int, int], ...] = ()


@attrs.frozen
class SourceImportLine:
    line: int
    id: GlobalId
    shard: str
    schema: str | None


@attrs.frozen
class IndexImportLine:
    line: int
    id: GlobalId


@attrs.frozen
class BuildLine:
    line: int
    id: GlobalId
    plan: PlanNode


@attrs.frozen
class IndexExportLine:
    line: int
    id: GlobalId
    on: GlobalId
    key: tuple[int, ...]
    transient: bool


@attrs.frozen
class SinkExportLine:
    line: int
    id: GlobalId
    on: GlobalId
    schema: str | None
    connection: MaterializedView | Subscribe


@attrs.frozen
class DataflowBody:
    """A ``create-dataflow`` body's sub-commands, each kind in its order."""

    imports: tuple[SourceImportLine | IndexImportLine, ...]
    builds: tuple[BuildLine, ...]
    exports: tuple[IndexExportLine | SinkExportLine, ...]


def parse_dataflow_body(lines: Sequence[BodyLine]) -> DataflowBody:
    """The sub-commands of a body; :class:`InputError` at the line at fault."""
    imports: list[SourceImportLine | IndexImportLine] = []
    builds: list[BuildLine] = []
    exports: list[IndexExportLine | SinkExportLine] = []
    for header, inner in _groups(lines):
        try:
            tokens = tokenize(header.text)
        except ValueError as error:
            raise InputError(header.number, f"create-dataflow: {error}") from None
        verb, rest = tokens[0], tokens[1:]
        if verb == "build":
            if not inner:
                raise InputError(
                    header.number, "create-dataflow: build needs a plan on the lines below it"
                )
            args = _arguments(header, "build", rest, BUILD).args
            builds.append(BuildLine(header.number, as_id(args["id"]), _plan(inner)))
            continue
        if inner:
            raise InputError(inner[0].number, f"create-dataflow: {verb} takes no indented lines")
        if verb == "import":
            imports.append(_import(header, rest))
        elif verb == "export":
            exports.append(_export(header, rest))
        else:
            raise InputError(
                header.number,
                f"create-dataflow: unknown sub-command {verb!r} (import, build or export)",
            )
    return DataflowBody(tuple(imports), tuple(builds), tuple(exports))


def _groups(lines: Sequence[BodyLine]) -> list[tuple[BodyLine, list[BodyLine]]]:
    if not lines:
        return []
    base = min(line.indent for line in lines)
    groups: list[tuple[BodyLine, list[BodyLine]]] = []
    for line in lines:
        if line.text[0].isspace():
            raise InputError(line.number, "create-dataflow: indent with spaces only")
        if line.indent == base:
            groups.append((line, []))
        elif not groups:
            raise InputError(
                line.number,
                "create-dataflow: this line is indented more than the sub-commands "
                "(import, build, export) after it",
            )
        else:
            groups[-1][1].append(line)
    return groups


def _arguments(header: BodyLine, verb: str, tokens: list[str], signature: Signature) -> Arguments:
    try:
        return parse_arguments(f"create-dataflow: {verb}", tokens, signature)
    except ValueError as error:
        raise InputError(header.number, str(error)) from None


def _import(header: BodyLine, tokens: list[str]) -> SourceImportLine | IndexImportLine:
    if any(token.startswith("index=") for token in tokens):
        args = _arguments(header, "import", tokens, IMPORT_INDEX).args
        return IndexImportLine(header.number, as_id(args["index"]))
    args = _arguments(header, "import", tokens, IMPORT_SOURCE).args
    schema = args.get("schema")
    return SourceImportLine(
        header.number,
        as_id(args["source"]),
        as_str(args["shard"]),
        None if schema is None else as_str(schema),
    )


def _export(header: BodyLine, tokens: list[str]) -> IndexExportLine | SinkExportLine:
    kind = next((token[5:] for token in tokens if token.startswith("kind=")), "index")
    if kind == "copy-to":
        raise InputError(header.number, "create-dataflow: copy-to export is not implemented")
    signature = EXPORTS.get(kind)
    if signature is None:
        raise InputError(
            header.number,
            f"create-dataflow: unknown export kind {kind!r} "
            "(index, materialized-view or subscribe)",
        )
    arguments = _arguments(header, "export", tokens, signature)
    args = arguments.args
    on = as_id(args["on"])
    if kind == "index":
        transient = "transient" in arguments.flags
        key = as_list(args["key"])
        return IndexExportLine(header.number, as_id(args["index"]), on, key, transient)
    schema = args.get("schema")
    connection: MaterializedView | Subscribe
    if kind == "materialized-view":
        connection = MaterializedView(as_str(args["shard"]))
    else:
        up_to = args.get("up-to")
        connection = Subscribe(None if up_to is None else as_int(up_to))
    return SinkExportLine(
        header.number,
        as_id(args["sink"]),
        on,
        None if schema is None else as_str(schema),
        connection,
    )


# Plans.

_GET = re.compile(r"Get +(\S+)")
_PROJECT = re.compile(r"Project *\((.*)\)")
_JOIN = re.compile(r"Join(?: +on=\((.*)\))?")
_COLUMN = re.compile(r" *#([0-9]+) *")
_WHOLE = re.compile(r"[0-9]+")
# `count(*)` as mz-expr-parser reads it: a case-insensitive name, free spacing.
_COUNT_ALL = re.compile(r" *(?i:count) *\( *\* *\) *")
_INPUTS = {
    Operator.GET: (0, 0),
    Operator.PROJECT: (1, 1),
    Operator.REDUCE: (1, 1),
    Operator.DISTINCT: (1, 1),
}


def _plan(lines: list[BodyLine]) -> PlanNode:
    node, end = _node(lines, 0)
    if end < len(lines):
        raise InputError(
            lines[end].number,
            "a build holds one plan, and this line is not an input of it "
            "(an input is indented 2 more than its operator)",
        )
    return node


def _node(lines: list[BodyLine], start: int) -> tuple[PlanNode, int]:
    line = lines[start]
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
        child, at = _node(lines, at)
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
    if word == Operator.PROJECT:
        match = _PROJECT.fullmatch(text)
        if match is None:
            raise InputError(number, "Project lists its columns: Project (#0, #1)")
        columns = _refs(number, match[1]) if match[1].strip(" ") else ()
        return PlanNode(number, Operator.PROJECT, columns=columns)
    if word in (Operator.REDUCE, Operator.DISTINCT):
        return _reduce(number, text, Operator(word))
    if word == Operator.JOIN:
        match = _JOIN.fullmatch(text)
        if match is None:
            raise InputError(number, "Join is written Join on=(#0 = #2 AND #1 = #3)")
        return PlanNode(number, Operator.JOIN, equalities=_equalities(number, match[1] or ""))
    if word == Operator.CROSS_JOIN:
        if text != Operator.CROSS_JOIN:
            raise InputError(number, "CrossJoin takes nothing after it (its inputs are below it)")
        return PlanNode(number, Operator.CROSS_JOIN)
    raise InputError(
        number,
        f"unknown plan operator {word!r} (Get, Project, Reduce, Distinct, Join or CrossJoin)",
    )


# A Reduce's keys, and a Distinct's (a Reduce of no aggregates: one row per
# distinct group key), as mz-expr-parser reads them.
_REDUCE_KEYS = {Operator.REDUCE: ("group_by", "aggregates"), Operator.DISTINCT: ("project",)}


def _reduce(number: int, text: str, operator: Operator) -> PlanNode:
    group_name, *aggregate_name = _REDUCE_KEYS[operator]
    usage = (
        "Reduce [group_by=[..]] aggregates=[..]" if aggregate_name else "Distinct [project=[..]]"
    )
    try:
        tokens = tokenize(text)[1:]
    except ValueError as error:
        raise InputError(number, f"{operator}: {error}") from None
    parts: dict[str, str] = {}
    for token in tokens:
        key, equals, value = token.partition("=")
        if token == "monotonic" or (key == "exp_group_size" and _WHOLE.fullmatch(value)):
            continue  # rendering hints of the real replica: the rows are the same
        if not equals or key not in _REDUCE_KEYS[operator] or key in parts:
            raise InputError(
                number,
                f"{operator}: unexpected {token!r} ({usage} [monotonic] [exp_group_size=N])",
            )
        if not (value.startswith("[") and value.endswith("]")):
            raise InputError(number, f"{operator}: {key} is a list in brackets")
        parts[key] = value[1:-1]
    aggregates = []
    if aggregate_name:
        if "aggregates" not in parts:
            raise InputError(number, "Reduce needs aggregates=[count(*)] (or [] for none)")
        names = parts["aggregates"].split(",") if parts["aggregates"].strip(" ") else []
        for name in names:
            if not _COUNT_ALL.fullmatch(name):
                raise InputError(number, f"Reduce: unsupported aggregate {name.strip(' ')!r}")
            aggregates.append(Aggregate.COUNT)
    group = parts.get(group_name, "")
    group_key = _refs(number, group) if group.strip(" ") else ()
    return PlanNode(number, Operator.REDUCE, columns=group_key, aggregates=tuple(aggregates))


def _refs(number: int, text: str) -> tuple[int, ...]:
    refs = []
    for part in text.split(","):
        match = _COLUMN.fullmatch(part)
        if match is None:
            raise InputError(number, f"a column is written #0, not {part.strip(' ')!r}")
        try:
            refs.append(whole(match[1], "a column"))
        except ValueError as error:
            raise InputError(number, str(error)) from None
    return tuple(refs)


def _equalities(number: int, text: str) -> tuple[tuple[int, int], ...]:
    pairs: list[tuple[int, int]] = []
    for condition in text.split(" AND ") if text.strip(" ") else ():
        refs = _refs(number, condition.replace("=", ","))
        if len(refs) < 2:
            raise InputError(number, f"Join: {condition.strip(' ')!r} is not #a = #b")
        pairs.extend(itertools.pairwise(refs))
    return tuple(pairs)


def resolve(
    node: PlanNode, types: Mapping[GlobalId, RelationType], optimize: bool
) -> tuple[Plan, RelationType]:
    """The plan ``node`` writes, over the collections ``types`` gives a type
    for, and its rows' type; :class:`InputError` at the line at fault."""
    resolved = [resolve(input, types, optimize) for input in node.inputs]
    inputs = tuple(plan for plan, _ in resolved)
    input_types = [relation for _, relation in resolved]
    plan: Plan
    match node.operator:
        case Operator.GET:
            assert node.id is not None
            plan = Get(node.id)
        case Operator.PROJECT:
            plan = Project(node.columns, inputs[0])
        case Operator.REDUCE:
            plan = Reduce(inputs[0], node.aggregates, node.columns)
        case Operator.JOIN | Operator.CROSS_JOIN:
            if not optimize:
                raise InputError(
                    node.line,
                    f"{node.operator} needs the optimize flag on create-dataflow "
                    "(the real driver cannot lower a join the optimizer did not plan)",
                )
            plan = Join(inputs, node.equalities)
    try:
        check(plan, {id: len(relation) for id, relation in types.items()})
    except PlanError as error:
        raise InputError(node.line, str(error)) from None
    match plan:
        case Get(id):
            return plan, types[id]
        case Project(columns, _):
            return plan, tuple(input_types[0][column] for column in columns)
        case Reduce(_, aggregates, group_key):
            counts = tuple(ColumnType(ScalarType.BIGINT) for _ in aggregates)
            return plan, tuple(input_types[0][column] for column in group_key) + counts
        case Join():
            return plan, tuple(column for relation in input_types for column in relation)
        case _:
            raise AssertionError(f"no plan line reads as {plan!r}")
