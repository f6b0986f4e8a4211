"""A dataflow's plans lowered into the plan the replica would render: what is
a raw stream and what is arranged (and by which key), where the lowering adds
an arrangement, how each operator is implemented, and which maps, filters
and projections it fuses into the operator below them.

This follows Materialize's lowering of MIR into LIR,
``src/compute-types/src/plan/lowering.rs`` (and ``plan/reduce.rs``,
``plan/top_k.rs``, ``plan/threshold.rs`` for the operators' plans), and the
join implementation its optimizer picks, ``src/transform/src/
join_implementation.rs``; the facts carry over, the code is ours. The text
of a lowered plan is ``replica.driver.lang._explain``'s.

The rules, as the model keeps them:

- A source import is a raw stream; an imported index's collection is
  arranged by the index's key and has no raw stream; a build is what its
  lowering says (a reduce, a distinct and a threshold are arranged by their
  output's key columns; everything else is raw).
- The maps, filters and projections on top of an operator become one
  :class:`Mfp`. A ``Get`` fuses it (reading an arrangement, if its
  collection has one, else the stream), a ``FlatMap`` fuses it after its
  table function, a differential join fuses it after its last lookup, an
  ``ArrangeBy`` fuses the one below it; anywhere else it is an :class:`LMfp`
  node of its own.
- A join (every join needs the optimizer: unoptimized, its implementation is
  unplanned and lowering fails with ``unimplemented join``) is a delta join
  when it has three inputs or more and every lookup of every path finds an
  arrangement its input already has; otherwise a differential join of the
  inputs in order, each arranged by its key (the lowering adds the
  arrangement an input lacks). An equality of two columns of one input
  filters that input, as the optimizer's predicate pushdown does.
- An index export is an object of its own, its collection arranged by the
  index's key (no new arrangement when the collection has it).
- A single-time dataflow (``until`` one past ``as_of``) renders min/max and
  top-k as consolidating monotonic operators; a union with a negated input
  consolidates its output.

A plan here is the model's plan plus what the driver's language says about
its nodes and the model's plans do not keep (:class:`NodeHint`: an
``ArrangeBy`` around a node, a ``monotonic`` hint, an expected group size),
each given at the node's path (the child indexes from the build's root).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import attrs

from ._aggregates import AggregateExpr, AggregateFunc
from ._dataflow import DataflowDescription
from ._ids import GlobalId
from ._lir import (
    RAW,
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
    LoweringError,
    LReduce,
    LThreshold,
    LTopK,
    LUnion,
    Mfp,
    Node,
    NodeHint,
    Path,
    ReduceKind,
    TopKKind,
    columns_key,
)
from ._plan import (
    TABLE_FUNCTIONS,
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
    arity,
    inputs,
)
from ._scalar import Call, Column, Literal, ScalarFunc


def expected_buckets(group_size: int | None) -> tuple[int, ...]:
    """A bucketed min/max's buckets: powers of 16 below the expected group
    size (4,000,000,000 when none is given), largest first."""
    limit = 4_000_000_000 if group_size is None else group_size
    buckets, current = [], 16
    while current < limit:
        buckets.append(current)
        current *= 16
    return tuple(reversed(buckets))


def lower_dataflow(
    dataflow: DataflowDescription,
    hints: Mapping[GlobalId, Mapping[Path, NodeHint]] | None = None,
    *,
    optimized: bool,
) -> LoweredDataflow:
    """``dataflow`` lowered; ``hints`` gives each build's node hints, and
    ``optimized`` says whether the optimizer planned its joins. Raises
    :class:`LoweringError`."""
    arities: dict[GlobalId, int] = {}
    forms: dict[GlobalId, Forms] = {}
    for source in dataflow.source_imports:
        arities[source.id], forms[source.id] = source.arity, RAW
    for index in dataflow.index_imports:
        arities[index.on] = index.arity
        known = forms.get(index.on, Forms(False))
        forms[index.on] = attrs.evolve(known, arranged=(*known.arranged, columns_key(index.key)))
    single_time = dataflow.until is not None and dataflow.until == dataflow.as_of + 1
    objects: list[tuple[GlobalId, Node]] = []
    for build in dataflow.objects_to_build:
        lowering = _Lowering(
            arities, forms, (hints or {}).get(build.id, {}), optimized, single_time
        )
        node, available = lowering.lower(build.plan, ())
        objects.append((build.id, node))
        arities[build.id], forms[build.id] = arity(build.plan, arities), available
    for export in dataflow.index_exports:
        get = LGet(export.on, forms[export.on], Mfp(arities[export.on]))
        node, _ = _arrange(get, forms[export.on], (columns_key(export.key),), None)
        objects.append((export.id, node))
    return LoweredDataflow(tuple(objects), tuple(sorted(s.id for s in dataflow.source_imports)))


def _arrange(
    input: Node, available: Forms, keys: tuple[Key, ...], input_mfp: Mfp | None
) -> tuple[Node, Forms]:
    """``input`` arranged by ``keys``: only the arrangements it lacks are
    new; none new and no mfp to fuse, it is passed on."""
    if input_mfp is not None and not input_mfp.is_identity:
        new = tuple(dict.fromkeys(keys))
        kept = Forms(False)
    else:
        new = tuple(k for k in dict.fromkeys(keys) if available.key_like(k) is None)
        kept = available
    if not keys:
        if available.raw:
            return input, available
        mfp = input_mfp or Mfp(0)
        return LArrangeBy(input, RAW, mfp), attrs.evolve(available, raw=True)
    if not new:
        return input, available
    mfp = input_mfp if input_mfp is not None else Mfp(0)
    return LArrangeBy(input, Forms(False, new), mfp), attrs.evolve(
        kept, arranged=(*kept.arranged, *new)
    )


@attrs.define
class _Lowering:
    arities: dict[GlobalId, int]
    forms: dict[GlobalId, Forms]
    hints: Mapping[Path, NodeHint]
    optimized: bool
    single_time: bool

    def hint(self, path: Path) -> NodeHint:
        return self.hints.get(path, NodeHint())

    def lower(self, plan: Plan, path: Path, layers: int | None = None) -> tuple[Node, Forms]:
        """``plan`` at ``path`` under its innermost ``layers`` ArrangeBys
        (all of them when None)."""
        arrangements = self.hint(path).arrangements
        layers = len(arrangements) if layers is None else layers
        if layers:
            keys = arrangements[layers - 1]
            if layers > 1:
                input, available = self.lower(plan, path, layers - 1)
                return _arrange(input, available, keys, None)
            base, base_path, mfp = self.extract(plan, path)
            if mfp is None:
                input, available = self.lower_operator(base, base_path)
                return _arrange(input, available, keys, None)
            input, available = self.lower(base, base_path)
            return _arrange(input, available, keys, mfp)
        base, base_path, mfp = self.extract(plan, path)
        if mfp is None:
            return self.lower_operator(base, base_path)
        if self.hint(base_path).arrangements:
            input, available = self.lower(base, base_path)
            return _wrap(input, available, mfp)
        match base:
            case Get(id):
                return self.lower_get(id, mfp)
            case FlatMap(func, exprs, input_plan):
                input, _ = self.lower(input_plan, (*base_path, 0))
                return LFlatMap(func, exprs, mfp, input), RAW
            case Join():
                return self.lower_join(base, base_path, mfp)
        input, available = self.lower_operator(base, base_path)
        return _wrap(input, available, mfp)

    def extract(self, plan: Plan, path: Path) -> tuple[Plan, Path, Mfp | None]:
        """The operator under the maps, filters and projections on top of
        ``plan`` (stopping at an ArrangeBy), its path, and them as one."""
        chain: list[Project | Filter | Map] = []
        while isinstance(plan, Project | Filter | Map):
            chain.append(plan)
            plan, path = plan.input, (*path, 0)
            if self.hint(path).arrangements:
                break
        if not chain:
            return plan, path, None
        mfp = Mfp(arity(plan, self.arities))
        for step in reversed(chain):
            mfp = mfp.then(step)
        return plan, path, mfp

    def lower_get(self, id: GlobalId, mfp: Mfp) -> tuple[Node, Forms]:
        available = self.forms[id]
        if mfp.is_identity:
            return LGet(id, available, mfp), available
        key = available.arranged[0] if available.arranged else None
        return LGet(id, available, mfp, key), RAW

    def lower_operator(self, plan: Plan, path: Path) -> tuple[Node, Forms]:
        def child(number: int = 0) -> tuple[Node, Forms]:
            return self.lower(inputs(plan)[number], (*path, number))

        hint = self.hint(path)
        match plan:
            case Get(id):
                return self.lower_get(id, Mfp(self.arities[id]))
            case Constant(rows, _):
                totals: dict[object, int] = {}
                for row, diff in rows:
                    totals[row] = totals.get(row, 0) + diff
                return LConstant(sum(1 for total in totals.values() if total)), RAW
            case FlatMap(func, exprs, input_plan):
                width = arity(input_plan, self.arities) + TABLE_FUNCTIONS[func]
                return LFlatMap(func, exprs, Mfp(width), child()[0]), RAW
            case Reduce():
                return self.lower_reduce(plan, child()[0], hint)
            case Join():
                return self.lower_join(plan, path, None)
            case Union(_):
                lowered = [child(n)[0] for n in range(len(plan.inputs))]
                consolidate = any(isinstance(node, LNegate) for node in lowered)
                return LUnion(tuple(lowered), consolidate), RAW
            case Negate():
                return LNegate(child()[0]), RAW
            case Threshold(input_plan):
                key = columns_key(range(arity(input_plan, self.arities)))
                input, _ = _arrange(*child(), (key,), None)
                return LThreshold(input, key), Forms(False, (key,))
            case TopK(_, group_key, order_key, limit, offset):
                kind, consolidate = TopKKind.BASIC, False
                if (hint.monotonic or self.single_time) and offset == 0:
                    one = limit == Literal(1)
                    kind = TopKKind.MONOTONIC_TOP1 if one else TopKKind.MONOTONIC_TOPK
                    consolidate = not hint.monotonic
                    limit = None if one else limit
                node = LTopK(child()[0], kind, group_key, order_key, limit, offset, consolidate)
                return node, RAW
        raise AssertionError(f"no lowering for {type(plan).__name__}")

    def lower_reduce(self, plan: Reduce, input: Node, hint: NodeHint) -> tuple[Node, Forms]:
        width = arity(plan.input, self.arities)
        key_plan = attrs.evolve(Mfp(width), projection=plan.group_key)
        simple: list[AggregateExpr] = []
        distinct: list[AggregateExpr] = []
        hierarchical: list[AggregateExpr] = []
        for aggregate in plan.aggregates:
            expr = AggregateExpr(AggregateFunc.COUNT, Literal(True))
            if isinstance(aggregate, AggregateExpr):
                expr = aggregate
            elif aggregate is not Aggregate.COUNT:
                raise AssertionError(f"no aggregate {aggregate}")
            if expr.func in (AggregateFunc.MIN, AggregateFunc.MAX):
                hierarchical.append(expr)
            else:
                (distinct if expr.distinct else simple).append(expr)
        monotonic = hint.monotonic or self.single_time
        kind = ReduceKind.DISTINCT
        if hierarchical and (simple or distinct):
            kind = ReduceKind.COLLATION
        elif hierarchical:
            kind = ReduceKind.MONOTONIC if monotonic else ReduceKind.BUCKETED
        elif simple or distinct:
            kind = ReduceKind.ACCUMULABLE
        buckets = () if monotonic else expected_buckets(hint.group_size)
        node = LReduce(
            input,
            kind,
            key_plan,
            tuple(simple),
            tuple(distinct),
            tuple(hierarchical),
            buckets,
            must_consolidate=monotonic and not hint.monotonic,
        )
        return node, Forms(False, (columns_key(range(len(plan.group_key))),))

    def lower_join(self, plan: Join, path: Path, mfp: Mfp | None) -> tuple[Node, Forms]:
        if not self.optimized:
            raise LoweringError("unimplemented join")
        widths = [arity(input, self.arities) for input in plan.inputs]
        starts = [sum(widths[:n]) for n in range(len(widths))]
        owner = [n for n, width in enumerate(widths) for _ in range(width)]
        classes = _classes(plan.equalities)
        lowered: list[Node] = []
        available: list[Forms] = []
        for number, input_plan in enumerate(plan.inputs):
            node, forms = self.lower(input_plan, (*path, number))
            local = [
                [member - starts[number] for member in group if owner[member] == number]
                for group in classes
            ]
            predicates = tuple(
                Call(ScalarFunc.EQ, (Column(g[0]), Column(other))) for g in local for other in g[1:]
            )
            if predicates:
                node, forms = _wrap(node, forms, Mfp(widths[number], predicates=predicates))
            lowered.append(node)
            available.append(forms)
        names = [_name(input) for input in plan.inputs]

        def key(number: int, joined: set[int]) -> Key:
            """Input ``number``'s columns equal to a column of ``joined``."""
            found = []
            for group in classes:
                mine = [m for m in group if owner[m] == number]
                if mine and any(owner[m] in joined for m in group):
                    found.append(mine[0] - starts[number])
            return columns_key(found)

        def path_from(source: int) -> tuple[Lookup, ...]:
            rest = [n for n in range(len(widths)) if n != source]
            order = [Lookup(source, names[source], key(source, {rest[0]}))]
            for number, lookup in enumerate(rest):
                joined = {source, *rest[:number]}
                order.append(Lookup(lookup, names[lookup], key(lookup, joined)))
            return tuple(order)

        if len(widths) >= 3:
            paths = tuple(path_from(source) for source in range(len(widths)))
            covered = all(
                available[step.relation].key_like(step.key) is not None
                for delta_path in paths
                for step in delta_path[1:]
            )
            if covered:
                node = LJoin(tuple(lowered), True, paths)
                return _wrap(node, RAW, mfp) if mfp is not None else (node, RAW)
        linear = path_from(0)
        arranged = []
        for step in linear:
            node, _ = _arrange(lowered[step.relation], available[step.relation], (step.key,), None)
            arranged.append(node)
        after = None if mfp is None or mfp.is_identity else mfp
        return LJoin(tuple(arranged), False, (linear,), after), RAW


def _wrap(input: Node, available: Forms, mfp: Mfp | None) -> tuple[Node, Forms]:
    """``input`` through ``mfp``: fused into a ``Get`` that passes its input
    on, else an :class:`LMfp` node."""
    if mfp is None or mfp.is_identity:
        return input, available
    if isinstance(input, LGet) and input.mfp.is_identity:
        key = available.arranged[0] if available.arranged else None
        return LGet(input.id, input.forms, mfp, key), RAW
    return LMfp(input, mfp), RAW


def _name(plan: Plan) -> GlobalId | None:
    """The collection a join's input reads, under maps, filters and
    projections."""
    while isinstance(plan, Project | Filter | Map):
        plan = plan.input
    return plan.id if isinstance(plan, Get) else None


def _classes(equalities: Sequence[tuple[int, int]]) -> list[list[int]]:
    """The equivalence classes of columns the equalities make, each sorted,
    in the order of their least member."""
    parent: dict[int, int] = {}

    def find(column: int) -> int:
        while parent.setdefault(column, column) != column:
            column = parent[column]
        return column

    for a, b in equalities:
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)
    groups: dict[int, list[int]] = {}
    for column in sorted(parent):
        groups.setdefault(find(column), []).append(column)
    return sorted((g for g in groups.values() if len(g) > 1), key=lambda g: g[0])
