"""A plan's syntax (:mod:`._plan_syntax`) resolved by :func:`resolve` into
the model's plans (:mod:`replica.model._plan`), with the types of their
rows: each expression lowered and typed (:mod:`._expressions`), each
operator's columns and types checked against its inputs'. A plan's rows have
at most :data:`MAX_PLAN_COLUMNS` columns.
"""

from __future__ import annotations

from collections.abc import Mapping

import attrs

from replica.model import Datum, GlobalId
from replica.model._lir import NodeHint, Path
from replica.model._plan import (
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
from replica.model._scalar import columns as scalar_columns

from ._data import ColumnType, ScalarType
from ._expressions import Const, lower, lower_aggregate
from ._headers import InputError
from ._plan_operators import Operator, PlanNode
from ._tokens import MirError

RelationType = tuple[ColumnType, ...]


# Wider than any plan here needs, narrow enough that a row's columns cost
# little to build and to check.
MAX_PLAN_COLUMNS = 4096


def _too_wide(columns: int) -> str:
    return f"a plan's rows have at most {MAX_PLAN_COLUMNS} columns (these have {columns})"


def resolve(
    node: PlanNode,
    types: Mapping[GlobalId, RelationType],
    optimize: bool,
    hints: dict[Path, NodeHint] | None = None,
    path: Path = (),
) -> tuple[Plan, RelationType]:
    """The plan ``node`` writes, over the collections ``types`` gives a type
    for, and its rows' type; :class:`InputError` at the line at fault.
    ``hints``, when given, gathers what the plan says that the model's plans
    do not keep (an ``ArrangeBy``, a ``monotonic`` hint), at the path of the
    model's node it is about (:mod:`replica.model._lowering`)."""
    resolved = [
        resolve(input, types, optimize, hints, _input_path(node, path, number))
        for number, input in enumerate(node.inputs)
    ]
    inputs = tuple(plan for plan, _ in resolved)
    input_types = [relation for _, relation in resolved]
    if hints is not None:
        _hint(node, input_types, hints, path)
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


def _input_path(node: PlanNode, path: Path, number: int) -> Path:
    """Where input ``number`` of ``node`` is in the model's plan: an
    ArrangeBy is not there (its input takes its place), and a Reduce by
    expressions reads its input through a Map."""
    if node.operator is Operator.ARRANGE_BY:
        return path
    if node.operator is Operator.REDUCE and node.keys:
        return (*path, 0, 0)
    return (*path, number)


def _hint(
    node: PlanNode, input_types: list[RelationType], hints: dict[Path, NodeHint], path: Path
) -> None:
    hint = hints.get(path, NodeHint())
    if node.operator is Operator.ARRANGE_BY:
        try:
            keys = tuple(tuple(lower(expr, input_types[0])[0] for expr in key) for key in node.keys)
        except MirError as error:
            raise InputError(node.line, str(error)) from None
        hints[path] = attrs.evolve(hint, arrangements=(*hint.arrangements, keys))
    elif node.monotonic or node.group_size is not None:
        hints[path] = attrs.evolve(hint, monotonic=node.monotonic, group_size=node.group_size)


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
