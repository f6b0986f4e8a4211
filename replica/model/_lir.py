"""The lowered plan: what Materialize's compute layer renders (LIR, its
``PlanNode`` variants in ``src/compute-types/src/plan.rs``), as far as the
model's plans reach. :mod:`._lowering` makes one from a dataflow's plans;
``replica.driver.lang._explain`` prints it.

Each node says how its operator is implemented and in which forms
(:class:`Forms`: a raw stream, arrangements by keys) it reads and leaves its
collection; an :class:`Mfp` is a ``MapFilterProject``, the maps, filters and
projections an operator fuses.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence

import attrs

from ._aggregates import AggregateExpr
from ._errors import ComputeError
from ._ids import GlobalId
from ._plan import Filter, Map, Project
from ._scalar import Call, Column, Literal, Scalar

Key = tuple[Scalar, ...]
Path = tuple[int, ...]


class LoweringError(ComputeError):
    """A plan the lowering cannot lower (``unimplemented join``)."""


@attrs.frozen
class NodeHint:
    """What the language says about the node at a path: the ``ArrangeBy``
    layers around it (each a tuple of keys, innermost first), a ``monotonic``
    hint and an ``exp_group_size`` of a ``Reduce`` or a ``TopK``."""

    arrangements: tuple[tuple[Key, ...], ...] = ()
    monotonic: bool = False
    group_size: int | None = None


@attrs.frozen
class Forms:
    """The forms a collection is available in (``AvailableCollections``)."""

    raw: bool
    arranged: tuple[Key, ...] = ()

    def key_like(self, key: Key) -> Key | None:
        """An arrangement whose key holds the same expressions as ``key``."""
        return next((k for k in self.arranged if set(k) == set(key)), None)


RAW = Forms(True)


def _substitute(expr: Scalar, outputs: Sequence[int]) -> Scalar:
    match expr:
        case Column(index):
            return Column(outputs[index])
        case Literal():
            return expr
        case Call(func, args):
            return Call(func, tuple(_substitute(arg, outputs) for arg in args))


@attrs.frozen
class Mfp:
    """A ``MapFilterProject``: ``expressions`` appended to the input's
    columns (each reading the input and the ones before it), then the rows
    that ``predicates`` hold for, then the columns ``projection`` (``None``:
    all of them)."""

    input_arity: int
    expressions: tuple[Scalar, ...] = ()
    predicates: tuple[Scalar, ...] = ()
    projection: tuple[int, ...] | None = None

    @property
    def outputs(self) -> tuple[int, ...]:
        if self.projection is not None:
            return self.projection
        return tuple(range(self.input_arity + len(self.expressions)))

    @property
    def is_identity(self) -> bool:
        return (
            not self.expressions
            and not self.predicates
            and self.outputs == tuple(range(self.input_arity))
        )

    def then(self, plan: Project | Filter | Map) -> Mfp:
        """This followed by ``plan`` (whose input is this one's output)."""
        outputs = self.outputs
        match plan:
            case Project(columns, _):
                return attrs.evolve(self, projection=tuple(outputs[c] for c in columns))
            case Filter(predicates, _):
                added = tuple(_substitute(p, outputs) for p in predicates)
                return attrs.evolve(self, predicates=self.predicates + added)
            case Map(scalars, _):
                return self._map(scalars, outputs)

    def _map(self, scalars: tuple[Scalar, ...], outputs: tuple[int, ...]) -> Mfp:
        expressions, columns = list(self.expressions), list(outputs)
        for scalar in scalars:
            expressions.append(_substitute(scalar, columns))
            columns.append(self.input_arity + len(expressions) - 1)
        return attrs.evolve(self, expressions=tuple(expressions), projection=tuple(columns))


# The lowered plan's nodes (LIR's ``PlanNode`` variants).


@attrs.frozen
class LGet:
    """Collection ``id`` (available as ``forms``), through ``mfp``: passed
    on as it is (identity), read from arrangement ``key``, or from the
    stream (``key`` None)."""

    id: GlobalId
    forms: Forms
    mfp: Mfp
    key: Key | None = None


@attrs.frozen
class LMfp:
    input: Node
    mfp: Mfp


@attrs.frozen
class LFlatMap:
    func: str
    exprs: tuple[Scalar, ...]
    mfp_after: Mfp
    input: Node


@attrs.frozen
class Lookup:
    """One step of a join's order: input ``relation`` (named ``name`` when
    it reads a collection), by ``key`` in its own columns."""

    relation: int
    name: GlobalId | None
    key: Key


@attrs.frozen
class LJoin:
    """A differential join (one path: ``paths[0]``, its closure ``after``)
    or a delta join (a path from each input)."""

    inputs: tuple[Node, ...]
    delta: bool
    paths: tuple[tuple[Lookup, ...], ...]
    after: Mfp | None = None


class ReduceKind(enum.Enum):
    DISTINCT = "Distinct"
    ACCUMULABLE = "Accumulable"
    BUCKETED = "Bucketed"
    MONOTONIC = "Monotonic"
    COLLATION = "Collation"


@attrs.frozen
class LReduce:
    """A reduce: ``simple`` and ``distinct`` accumulable aggregates and
    ``hierarchical`` ones (min, max), planned as ``kind``; ``key_plan``
    computes the group key from the input."""

    input: Node
    kind: ReduceKind
    key_plan: Mfp
    simple: tuple[AggregateExpr, ...] = ()
    distinct: tuple[AggregateExpr, ...] = ()
    hierarchical: tuple[AggregateExpr, ...] = ()
    buckets: tuple[int, ...] = ()
    must_consolidate: bool = False


class TopKKind(enum.Enum):
    BASIC = "Non-monotonic TopK"
    MONOTONIC_TOP1 = "Monotonic Top1"
    MONOTONIC_TOPK = "Monotonic TopK"


@attrs.frozen
class LTopK:
    input: Node
    kind: TopKKind
    group_key: tuple[int, ...]
    order_key: tuple[tuple[int, bool, bool], ...]
    limit: Scalar | None
    offset: int
    must_consolidate: bool = False


@attrs.frozen
class LNegate:
    input: Node


@attrs.frozen
class LThreshold:
    input: Node
    key: Key


@attrs.frozen
class LUnion:
    inputs: tuple[Node, ...]
    consolidate: bool = False


@attrs.frozen
class LArrangeBy:
    """``input`` (through ``input_mfp``) arranged as ``forms`` says."""

    input: Node
    forms: Forms
    input_mfp: Mfp


@attrs.frozen
class LConstant:
    rows: int


Node = (
    LGet
    | LMfp
    | LFlatMap
    | LJoin
    | LReduce
    | LTopK
    | LNegate
    | LThreshold
    | LUnion
    | LArrangeBy
    | LConstant
)


@attrs.frozen
class LoweredDataflow:
    """Each object to build, in the order the dataflow builds them (its
    builds, then an object for each index export), and its source imports
    in id order."""

    objects: tuple[tuple[GlobalId, Node], ...]
    sources: tuple[GlobalId, ...]


def columns_key(columns: Sequence[int]) -> Key:
    return tuple(Column(column) for column in columns)
