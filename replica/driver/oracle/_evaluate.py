"""Plans evaluated from scratch: the one brute-force evaluator of the
project, which the reference model reads its collections with and the
engine's tests check the engine against.

A plan is evaluated over the row multisets of the collections it reads,
each operator by its definition on whole multisets (a ``Counter`` of rows,
a row's count its multiplicity): no state kept between times, no operator
of the engine. What the operators mean where the definition is not obvious
(a top-k's places, a table function's rows) is the model's
(:mod:`replica.model._relational`), shared with the engine, which computes
the same incrementally.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping

from replica.model import Datum, GlobalId, Row, table_rows, top_k_rows
from replica.model._aggregates import AggregateExpr, aggregate
from replica.model._plan import (
    COUNT_ALL,
    Aggregate,
    Constant,
    Filter,
    FlatMap,
    Get,
    Join,
    Map,
    Negate,
    Plan,
    Project,
    Reduce,
    Threshold,
    TopK,
    Union,
)
from replica.model._scalar import evaluate as evaluate_scalar
from replica.model._scalar import holds, same


def evaluate(plan: Plan, inputs: Mapping[GlobalId, Counter[Row]]) -> Counter[Row]:
    """``plan``'s rows, each with its count, evaluated from scratch over
    ``inputs``: the rows of each collection a ``Get`` of it reads (a
    ``KeyError`` for one it does not give). Raises the model's
    :class:`~replica.model._scalar.EvalError` for an expression that fails
    on a row."""
    match plan:
        case Get(id):
            return Counter(inputs[id])
        case Project(columns, input):
            out: Counter[Row] = Counter()
            for row, count in evaluate(input, inputs).items():
                out[tuple(row[column] for column in columns)] += count
            return Counter({row: count for row, count in out.items() if count})
        case Reduce(input, aggregates, group_key):
            return reduce_rows(evaluate(input, inputs), aggregates, group_key)
        case Filter(predicates, input):
            rows = evaluate(input, inputs)
            return Counter({row: count for row, count in rows.items() if holds(predicates, row)})
        case Map(scalars, input):
            mapped: Counter[Row] = Counter()
            for row, count in evaluate(input, inputs).items():
                for scalar in scalars:
                    row = (*row, evaluate_scalar(scalar, row))
                mapped[row] += count
            return mapped
        case Join(inputs_, equalities):
            joined: Counter[Row] = Counter({(): 1})
            for input in inputs_:
                side = evaluate(input, inputs)
                joined = Counter(
                    {(*a, *b): m * n for a, m in joined.items() for b, n in side.items()}
                )
            return Counter(
                {
                    row: count
                    for row, count in joined.items()
                    if all(same(row[a], row[b]) for a, b in equalities)
                }
            )
        case Constant(rows, _):
            constant: Counter[Row] = Counter()
            for row, diff in rows:
                constant[row] += diff
            return constant
        case Union(inputs_):
            union: Counter[Row] = Counter()
            for input in inputs_:
                for row, n in evaluate(input, inputs).items():
                    union[row] += n
            return union
        case Negate(input):
            return Counter({row: -n for row, n in evaluate(input, inputs).items()})
        case FlatMap(func, exprs, input):
            flat: Counter[Row] = Counter()
            for row, n in evaluate(input, inputs).items():
                values = [evaluate_scalar(expr, row) for expr in exprs]
                for extra in table_rows(func, values):
                    flat[(*row, *extra)] += n
            return flat
        case Threshold(input):
            return Counter({row: n for row, n in evaluate(input, inputs).items() if n > 0})
        case TopK(input, group_key, order_key, limit, offset):
            groups: dict[Row, dict[Row, int]] = {}
            for row, n in evaluate(input, inputs).items():
                groups.setdefault(tuple(row[c] for c in group_key), {})[row] = n
            top: Counter[Row] = Counter()
            for members in groups.values():
                rows_ = {row: n for row, n in members.items() if n}
                most = (
                    None
                    if limit is None or not rows_
                    else evaluate_scalar(limit, next(iter(rows_)))
                )
                assert most is None or isinstance(most, int), "a TopK's limit is a bigint"
                top.update(top_k_rows(rows_, order_key, most, offset))
            return top


def reduce_rows(
    rows: Counter[Row],
    aggregates: tuple[Aggregate | AggregateExpr, ...],
    group_key: tuple[int, ...],
) -> Counter[Row]:
    """A Reduce from scratch: each group's rows, then its aggregates over
    the multiset of their values."""
    groups: dict[Row, list[tuple[Row, int]]] = {}
    for row, n in rows.items():
        if n:
            groups.setdefault(tuple(row[c] for c in group_key), []).append((row, n))
    out: Counter[Row] = Counter()
    for group, members in groups.items():
        if sum(n for _, n in members) == 0:
            continue
        results = []
        for entry in aggregates:
            expr = COUNT_ALL if entry is Aggregate.COUNT else entry
            assert isinstance(expr, AggregateExpr)
            values: Counter[Datum] = Counter()
            for row, n in members:
                values[evaluate_scalar(expr.expr, row)] += n
            results.append(aggregate(expr.func, +values, expr.distinct))
        out[(*group, *results)] = 1
    return out
