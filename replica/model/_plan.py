"""The plans a dataflow builds: a small relational language over rows.

A plan is a tree of operators over the collections a dataflow imports (and
the objects it built before): ``Get`` reads one, ``Project`` keeps columns,
``Reduce`` aggregates (``count(*)`` for now, over or the aggregates of
``replica.model._aggregates``, over the whole input or per group; with no
aggregates it is a distinct of its group key), ``Join`` joins its inputs on
equalities between columns of their concatenation (an equality of two
columns of one input filters that input), ``Filter`` keeps the rows its
predicates hold for, ``Map`` appends computed columns, ``Constant`` is
fixed rows, ``Union`` adds its inputs up, ``Negate`` flips each update's
sign, ``Threshold`` keeps each row's positive count, and ``TopK`` keeps the
first rows of each group in an order. Each is a frozen
value, so two descriptions compare equal when their plans do
(reconciliation relies on it). :func:`check` says why a plan is malformed,
before any replica sees it.

Adding an operator means a class here, a case in :func:`arity`,
:func:`check` and :func:`inputs`, and an operator of ``replica.engine``
(and the class in ``replica.procs._wire``, to cross processes).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import TYPE_CHECKING

import attrs

from . import _scalar
from ._aggregates import AggregateExpr, AggregateFunc
from ._errors import ComputeError
from ._ids import GlobalId, as_id
from ._scalar import Literal, Scalar

if TYPE_CHECKING:
    from ._rows import Row


class PlanError(ComputeError, ValueError):
    """A malformed plan: a column out of range, a ``Get`` of nothing imported."""


class Aggregate(enum.StrEnum):
    """``count(*)``: a Reduce whose aggregates are all this counts rows, the
    fast way. Any other aggregate is an :class:`AggregateExpr`."""

    COUNT = "count(*)"


COUNT_ALL = AggregateExpr(AggregateFunc.COUNT, Literal(True))
"""``count(*)`` among other aggregates: the count of a value every row has."""


@attrs.frozen
class Get:
    """The collection ``id``: an import's collection or an earlier build."""

    id: GlobalId = attrs.field(converter=as_id)


@attrs.frozen
class Project:
    """The columns ``columns`` of ``input``, in that order (repeats allowed)."""

    columns: tuple[int, ...]
    input: Plan


@attrs.frozen
class Reduce:
    """One row per group of ``group_key`` (the whole input when empty): the
    group's key columns, then each aggregate (none: a distinct). An empty
    group yields no row."""

    input: Plan
    aggregates: tuple[Aggregate | AggregateExpr, ...] = (Aggregate.COUNT,)
    group_key: tuple[int, ...] = ()


@attrs.frozen
class Join:
    """The rows of ``inputs``' product (columns concatenated) whose columns
    are equal for each pair in ``equalities``. A pair names columns of the
    concatenation; a pair of columns of one input filters that input (its
    rows whose two columns are equal, NULL equal to NULL, as a join's
    equalities compare)."""

    inputs: tuple[Plan, ...]
    equalities: tuple[tuple[int, int], ...]


@attrs.frozen
class Filter:
    """The rows of ``input`` for which every predicate is true."""

    predicates: tuple[Scalar, ...]
    input: Plan


@attrs.frozen
class Map:
    """The rows of ``input``, each followed by ``scalars``' values; a scalar
    may read the columns the ones before it added."""

    scalars: tuple[Scalar, ...]
    input: Plan


@attrs.frozen
class Constant:
    """Fixed rows, each with its multiplicity (a negative one retracts), of
    ``width`` columns: complete at every time, from the dataflow's as_of."""

    rows: tuple[tuple[Row, int], ...] = attrs.field(eq=_scalar.exact_rows)
    width: int


@attrs.frozen
class Union:
    """Every update of each of ``inputs`` (rows of one width): multiplicities
    add up."""

    inputs: tuple[Plan, ...]


@attrs.frozen
class Negate:
    """``input`` with each multiplicity negated."""

    input: Plan


@attrs.frozen
class Threshold:
    """Each row of ``input`` as many times as its multiplicity, when that
    is positive; not at all otherwise."""

    input: Plan


@attrs.frozen
class TopK:
    """Per group of ``group_key``: its rows in ``order_key``'s order (each a
    ``(column, descending, nulls_last)``; ties broken by the whole row,
    ascending), the first ``offset`` skipped, then at most ``limit`` (an
    expression of the group's columns; ``None`` or NULL: no limit). A row
    counted ``n`` times takes ``n`` places."""

    input: Plan
    group_key: tuple[int, ...] = ()
    order_key: tuple[tuple[int, bool, bool], ...] = ()
    limit: Scalar | None = None
    offset: int = 0


TABLE_FUNCTIONS = {"generate_series": 1, "wrap1": 1, "wrap2": 2, "wrap3": 3}
"""The table functions a ``FlatMap`` knows, with their rows' widths."""


@attrs.frozen
class FlatMap:
    """Each row of ``input`` followed by each row the table function
    ``func`` gives for it (none: the row is gone): ``generate_series(start,
    stop[, step])`` counts (bigints), ``wrapN(..)`` cuts its values into
    rows of ``N``."""

    func: str
    exprs: tuple[Scalar, ...]
    input: Plan


Plan = (
    Get
    | Project
    | Reduce
    | Join
    | Filter
    | Map
    | Constant
    | Union
    | Negate
    | Threshold
    | TopK
    | FlatMap
)

PLAN_CLASSES = (
    Get,
    Project,
    Reduce,
    Join,
    Filter,
    Map,
    Constant,
    Union,
    Negate,
    Threshold,
    TopK,
    FlatMap,
)
"""Every kind of plan (what crosses between processes must know them all)."""


def inputs(plan: Plan) -> tuple[Plan, ...]:
    """The plans ``plan`` reads."""
    match plan:
        case Get() | Constant():
            return ()
        case Project(_, input) | Reduce(input, _, _) | Filter(_, input) | Map(_, input):
            return (input,)
        case Negate(input) | Threshold(input) | TopK(input) | FlatMap(_, _, input):
            return (input,)
        case Join(inputs_, _) | Union(inputs_):
            return inputs_


def gets(plan: Plan) -> list[GlobalId]:
    """The collections ``plan`` reads, in order, with repeats."""
    if isinstance(plan, Get):
        return [plan.id]
    return [id for input in inputs(plan) for id in gets(input)]


def arity(plan: Plan, arities: Mapping[GlobalId, int]) -> int:
    """How many columns ``plan``'s rows have; ``arities`` gives each
    collection a ``Get`` may read. Assumes :func:`check` passed."""
    match plan:
        case Get(id):
            return arities[id]
        case Project(columns, _):
            return len(columns)
        case Reduce(_, aggregates, group_key):
            return len(group_key) + len(aggregates)
        case Join(inputs, _):
            return sum(arity(input, arities) for input in inputs)
        case Filter(_, input):
            return arity(input, arities)
        case Map(scalars, input):
            return arity(input, arities) + len(scalars)
        case Constant(_, width):
            return width
        case Union(inputs):
            return arity(inputs[0], arities)
        case Negate(input) | Threshold(input) | TopK(input):
            return arity(input, arities)
        case FlatMap(func, _, input):
            return arity(input, arities) + TABLE_FUNCTIONS[func]


def check(plan: Plan, arities: Mapping[GlobalId, int]) -> int:
    """Check ``plan`` against the collections it may read; return its arity.
    Raises :class:`PlanError` naming the first problem."""
    match plan:
        case Get(id):
            if id not in arities:
                raise PlanError(f"Get {id}: the dataflow imports or builds no such collection")
            return arities[id]
        case Project(columns, input):
            width = check(input, arities)
            _columns("Project", columns, width)
            return len(columns)
        case Reduce(input, aggregates, group_key):
            width = check(input, arities)
            _columns("Reduce group key", group_key, width)
            for aggregate in aggregates:
                if isinstance(aggregate, AggregateExpr):
                    read = tuple(_scalar.columns(aggregate.expr))
                    _columns(f"Reduce {aggregate.func}", read, width)
            return len(group_key) + len(aggregates)
        case Join(inputs, equalities):
            if len(inputs) < 2:
                raise PlanError(f"Join: needs at least two inputs, got {len(inputs)}")
            total = sum(check(input, arities) for input in inputs)
            for pair in equalities:
                _columns("Join", pair, total)
            return total
        case Filter(predicates, input):
            width = check(input, arities)
            for predicate in predicates:
                _columns("Filter", tuple(_scalar.columns(predicate)), width)
            return width
        case Map(scalars, input):
            width = check(input, arities)
            for scalar in scalars:
                _columns("Map", tuple(_scalar.columns(scalar)), width)
                width += 1
            return width
        case Constant(rows, width):
            for row, _ in rows:
                if len(row) != width:
                    raise PlanError(f"Constant: a row of {len(row)} columns among {width}")
            return width
        case Union(inputs):
            if not inputs:
                raise PlanError("Union: needs at least one input")
            widths = {check(input, arities) for input in inputs}
            if len(widths) != 1:
                raise PlanError(f"Union: inputs of different widths {sorted(widths)}")
            return widths.pop()
        case Negate(input) | Threshold(input):
            return check(input, arities)
        case FlatMap(func, exprs, input):
            width = check(input, arities)
            if func not in TABLE_FUNCTIONS:
                raise PlanError(f"FlatMap: no table function {func!r}")
            for expr in exprs:
                _columns("FlatMap", tuple(_scalar.columns(expr)), width)
            return width + TABLE_FUNCTIONS[func]
        case TopK(input, group_key, order_key, limit, offset):
            width = check(input, arities)
            _columns("TopK group key", group_key, width)
            _columns("TopK order key", tuple(column for column, _, _ in order_key), width)
            if limit is not None:
                _columns("TopK limit", tuple(_scalar.columns(limit)), width)
            if offset < 0:
                raise PlanError(f"TopK: a negative offset {offset}")
            return width


def input_of(column: int, widths: list[int]) -> int:
    """Which input a column of a join's concatenation comes from."""
    for number, width in enumerate(widths):
        if column < width:
            return number
        column -= width
    raise PlanError(f"column #{column} is past the join's inputs")


def _columns(what: str, columns: tuple[int, ...], width: int) -> None:
    for column in columns:
        if not 0 <= column < width:
            raise PlanError(f"{what}: column #{column} out of range for a {width}-column input")
