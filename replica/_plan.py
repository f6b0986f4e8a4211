"""The plans a dataflow builds: a small relational language over rows.

A plan is a tree of operators over the collections a dataflow imports (and
the objects it built before): ``Get`` reads one, ``Project`` keeps columns,
``Reduce`` aggregates (``count(*)`` for now, over the whole input or per
group; with no aggregates it is a distinct of its group key), ``Join`` joins
its inputs on equalities between columns of their concatenation. Each is a
frozen value, so two descriptions compare equal when their plans do
(reconciliation relies on it). :func:`check` says why a plan is malformed,
before any replica sees it.

Adding an operator (``Filter``, ``Map``) means a class here, a case in
:func:`arity` and :func:`check`, and an operator in ``replica._operators``.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping

import attrs

from ._ids import GlobalId, as_id


class PlanError(ValueError):
    """A malformed plan: a column out of range, a ``Get`` of nothing imported."""


class Aggregate(enum.StrEnum):
    COUNT = "count(*)"


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
    aggregates: tuple[Aggregate, ...] = (Aggregate.COUNT,)
    group_key: tuple[int, ...] = ()


@attrs.frozen
class Join:
    """The rows of ``inputs``' product (columns concatenated) whose columns
    are equal for each pair in ``equalities``. A pair names columns of the
    concatenation; each pair must join two different inputs."""

    inputs: tuple[Plan, ...]
    equalities: tuple[tuple[int, int], ...]


Plan = Get | Project | Reduce | Join


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
            return len(group_key) + len(aggregates)
        case Join(inputs, equalities):
            if len(inputs) < 2:
                raise PlanError(f"Join: needs at least two inputs, got {len(inputs)}")
            widths = [check(input, arities) for input in inputs]
            total = sum(widths)
            for left, right in equalities:
                _columns("Join", (left, right), total)
                if input_of(left, widths) == input_of(right, widths):
                    raise PlanError(f"Join: #{left} and #{right} are columns of the same input")
            return total


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
