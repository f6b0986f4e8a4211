"""The ``explain`` directive's text: a lowered dataflow
(:mod:`replica.model._lowering`) in Materialize's EXPLAIN text format, as the
real driver prints it.

The format follows Materialize's ``src/compute-types/src/explain/text.rs``
(``Plan::fmt_default_text``, the ``→`` lines of each LIR node), the
multi-plan layout of ``src/expr/src/explain/text.rs`` (an ``ID:`` paragraph
per object, its plan indented two spaces, a blank line between paragraphs)
and, for the join line, the newest form the real scripts pin
(``→Differential Join %0:u1000[#0] » %1:u1001[#0]``). After the paragraphs,
a blank line and a ``Source uN`` line per source import in id order (the real
EXPLAIN prints only sources with a pushed-down map or filter; the real driver
prints them all). Columns print as ``#n`` (no names: the driver has no
catalog to humanize them), three or more consecutive ones as ``#a..=#b``.
"""

from __future__ import annotations

from collections.abc import Sequence

from replica.model import AggregateExpr, AggregateFunc, Call, Column, Literal, Scalar, ScalarFunc
from replica.model._lir import (
    Forms,
    Key,
    LArrangeBy,
    LConstant,
    LFlatMap,
    LGet,
    LJoin,
    LMfp,
    LNegate,
    Lookup,
    LoweredDataflow,
    LReduce,
    LThreshold,
    LTopK,
    LUnion,
    Mfp,
    Node,
    ReduceKind,
    TopKKind,
)

from ._data import render_datum

INDENT = "  "
CROSS = "\u00d7"
"""The key of a join input that no equality constrains (a cross join's)."""

_INFIX = frozenset(
    {
        ScalarFunc.EQ,
        ScalarFunc.NOT_EQ,
        ScalarFunc.LT,
        ScalarFunc.LTE,
        ScalarFunc.GT,
        ScalarFunc.GTE,
        ScalarFunc.ADD,
        ScalarFunc.MUL,
        ScalarFunc.DIV,
        ScalarFunc.MOD,
    }
)
_POSTFIX = frozenset({ScalarFunc.IS_NULL, ScalarFunc.IS_TRUE, ScalarFunc.IS_FALSE})


def explain_lines(dataflow: LoweredDataflow) -> list[str]:
    """The lines ``explain`` prints for ``dataflow``: the last object built
    first."""
    lines: list[str] = []
    for number, (id, node) in enumerate(reversed(dataflow.objects)):
        if number:
            lines.append("")
        lines.append(f"{id}:")
        _node(node, 1, lines)
    if dataflow.sources:
        lines.append("")
        lines.extend(f"Source {id}" for id in dataflow.sources)
    return lines


def scalar_text(expr: Scalar) -> str:
    """A scalar expression as MIR prints it: ``#0``, ``5``, ``"a"``,
    ``(#0 + 1)``, ``(#0) IS NULL``, ``NOT(#1)``, ``greatest(#0, #1)``."""
    match expr:
        case Column(index):
            return f"#{index}"
        case Literal(value):
            return render_datum(value)
        case Call(func, args):
            shown = [scalar_text(arg) for arg in args]
            if func in _INFIX:
                return f"({shown[0]} {func} {shown[1]})"
            if func in (ScalarFunc.AND, ScalarFunc.OR):
                return "(" + f" {func} ".join(shown) + ")"
            if func in _POSTFIX:
                return f"({shown[0]}) {func}"
            if func is ScalarFunc.NOT:
                return f"NOT({shown[0]})"
            return f"{func}({', '.join(shown)})"


def compact(exprs: Sequence[Scalar]) -> str:
    """``CompactScalars``: expressions separated by ``, ``, a run of three
    or more consecutive columns written ``#a..=#b``."""
    parts: list[str] = []
    run: list[int] = []

    def flush() -> None:
        if len(run) >= 3:
            parts.append(f"#{run[0]}..=#{run[-1]}")
        else:
            parts.extend(f"#{column}" for column in run)
        run.clear()

    for expr in exprs:
        if isinstance(expr, Column) and (not run or expr.index == run[-1] + 1):
            run.append(expr.index)
            continue
        flush()
        if isinstance(expr, Column):
            run.append(expr.index)
        else:
            parts.append(scalar_text(expr))
    flush()
    return ", ".join(parts)


def _columns(columns: Sequence[int]) -> str:
    return compact([Column(column) for column in columns]) if columns else "()"


def _key(key: Key) -> str:
    return f"({compact(key)})" if key else "(empty key)"


def aggregate_text(aggregate: AggregateExpr) -> str:
    """``count(*)``, ``sum(#1)``, ``min(distinct #2)``."""
    if aggregate.func is AggregateFunc.COUNT and aggregate.expr == Literal(True):
        return "count(*)"
    distinct = "distinct " if aggregate.distinct else ""
    return f"{aggregate.func}({distinct}{scalar_text(aggregate.expr)})"


def _mfp(mfp: Mfp, indent: int, lines: list[str]) -> None:
    """A ``MapFilterProject``'s lines: ``Project:`` unless it keeps every
    column in order, ``Filter:`` and ``Map:`` when it has some."""
    at = INDENT * indent
    if mfp.outputs != tuple(range(mfp.input_arity)):
        lines.append(f"{at}Project: {_columns(mfp.outputs)}")
    if mfp.predicates:
        lines.append(f"{at}Filter: " + " AND ".join(scalar_text(p) for p in mfp.predicates))
    if mfp.expressions:
        lines.append(f"{at}Map: " + ", ".join(scalar_text(e) for e in mfp.expressions))


def _lookup(step: Lookup) -> str:
    name = "" if step.name is None else f":{step.name}"
    return f"%{step.relation}{name}[{compact(step.key) if step.key else CROSS}]"


def _fused_child(mfp: Mfp, indent: int, lines: list[str]) -> int:
    """The ``→Fused with Child Map/Filter/Project`` lines; the indent of the
    operator under them."""
    lines.append(f"{INDENT * indent}→Fused with Child Map/Filter/Project")
    _mfp(mfp, indent + 1, lines)
    return indent + 2


def _node(node: Node, indent: int, lines: list[str]) -> None:
    at = INDENT * indent

    def line(text: str, deeper: int = 0) -> None:
        lines.append(f"{INDENT * (indent + deeper)}{text}")

    match node:
        case LConstant(rows):
            line(f"→Constant ({rows} row{'' if rows == 1 else 's'})")
        case LGet(id, forms, mfp, key):
            if mfp.is_identity:
                only_raw = forms.raw and not forms.arranged
                line(f"→Stream {id}" if only_raw else f"→Arranged {id}")
                return
            under = _fused_child(mfp, indent, lines)
            if key is None:
                lines.append(f"{INDENT * under}→Read {id}")
                return
            lines.append(f"{INDENT * under}→Arranged {id}")
            lines.append(f"{INDENT * (under + 1)}Key: ({compact(key)})")
        case LMfp(input, mfp):
            line("→Map/Filter/Project")
            _mfp(mfp, indent + 1, lines)
            _node(input, indent + (1 if mfp.is_identity else 2), lines)
        case LFlatMap(func, exprs, mfp_after, input):
            under = indent
            if mfp_after.expressions or mfp_after.predicates:
                under = _fused_child(mfp_after, indent, lines)
            lines.append(f"{INDENT * under}→Table Function {func}({compact(exprs)})")
            _node(input, under + 1, lines)
        case LJoin(inputs, delta, paths, after):
            if delta:
                shown = " ".join("[" + " » ".join(map(_lookup, path)) + "]" for path in paths)
                line(f"→Delta Join {shown}")
            else:
                line("→Differential Join " + " » ".join(map(_lookup, paths[0])))
                if after is not None:
                    line(f"after %{paths[0][-1].relation}:", 1)
                    _mfp(after, indent + 2, lines)
            for input in inputs:
                _node(input, indent + 1, lines)
        case LReduce():
            _reduce(node, indent, lines)
        case LTopK():
            _top_k(node, indent, lines)
        case LNegate(input):
            line("→Negate Diffs")
            _node(input, indent + 1, lines)
        case LThreshold(input, key):
            line(f"→Threshold Diffs {compact(key) if key else '(empty key)'}")
            _node(input, indent + 1, lines)
        case LUnion(inputs, consolidate):
            line(f"→{'Consolidating ' if consolidate else ''}Union")
            for input in inputs:
                _node(input, indent + 1, lines)
        case LArrangeBy(input, forms, input_mfp):
            line(_arrange_text(forms))
            if input_mfp.is_identity:
                _node(input, indent + 1, lines)
                return
            lines.append(f"{at}{INDENT}→Fused with Parent Map/Filter/Project")
            _mfp(input_mfp, indent + 2, lines)
            _node(input, indent + 2, lines)


def _arrange_text(forms: Forms) -> str:
    if forms.raw and not forms.arranged:
        return "→Unarranged Raw Stream"
    return "→Arrange" + "".join(f" {_key(key)}" for key in forms.arranged)


def _accumulable(node: LReduce, indent: int, lines: list[str]) -> None:
    at = INDENT * indent
    if node.simple:
        lines.append(f"{at}Simple aggregates: " + ", ".join(map(aggregate_text, node.simple)))
    if node.distinct:
        lines.append(f"{at}Distinct aggregates: " + ", ".join(map(aggregate_text, node.distinct)))


def _hierarchical(node: LReduce, indent: int, lines: list[str]) -> None:
    names = ", ".join(str(aggregate.func) for aggregate in node.hierarchical)
    lines.append(f"{INDENT * indent}Aggregations: {names}")


def _reduce(node: LReduce, indent: int, lines: list[str]) -> None:
    at, inner = INDENT * indent, indent + 1
    consolidating = "Consolidating " if node.must_consolidate else ""
    match node.kind:
        case ReduceKind.DISTINCT:
            lines.append(f"{at}→Distinct GroupAggregate")
        case ReduceKind.ACCUMULABLE:
            lines.append(f"{at}→Accumulable GroupAggregate")
            _accumulable(node, inner, lines)
        case ReduceKind.BUCKETED:
            buckets = "".join(f" {bucket}" for bucket in node.buckets)
            lines.append(f"{at}→Bucketed Hierarchical GroupAggregate (buckets: {buckets})")
            _hierarchical(node, inner, lines)
        case ReduceKind.MONOTONIC:
            lines.append(f"{at}→{consolidating}Monotonic GroupAggregate")
            _hierarchical(node, inner, lines)
        case ReduceKind.COLLATION:
            lines.append(f"{at}→Collated Multi-GroupAggregate")
            lines.append(f"{at}{INDENT}Accumulable sub-aggregation")
            _accumulable(node, inner + 1, lines)
            lines.append(f"{at}{INDENT}Hierarchical sub-aggregation")
            _hierarchical(node, inner + 1, lines)
    if not node.key_plan.is_identity:
        lines.append(f"{at}{INDENT}Key:")
        _mfp(node.key_plan, inner + 1, lines)
    _node(node.input, inner, lines)


def _top_k(node: LTopK, indent: int, lines: list[str]) -> None:
    at, deeper = INDENT * indent, INDENT * (indent + 1)
    if node.kind is TopKKind.BASIC:
        lines.append(f"{at}→{node.kind.value}")
    else:
        lines.append(f"{at}→{'Consolidating ' if node.must_consolidate else ''}{node.kind.value}")
    if node.group_key:
        lines.append(f"{deeper}Group By {_columns(node.group_key)}")
    if node.order_key:
        order = ", ".join(
            f"#{column} {'desc' if descending else 'asc'} "
            f"{'nulls_last' if nulls_last else 'nulls_first'}"
            for column, descending, nulls_last in node.order_key
        )
        lines.append(f"{deeper}Order By {order}")
    if node.limit is not None:
        lines.append(f"{deeper}Limit {scalar_text(node.limit)}")
    if node.kind is TopKKind.BASIC and node.offset:
        lines.append(f"{deeper}Offset {node.offset}")
    _node(node.input, indent + 1, lines)
