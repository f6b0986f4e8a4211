"""Dataflow descriptions: what a dataflow imports (shards, indexes), the
plans it builds, what it exports (indexes, sinks), and the times it covers.
"""

from __future__ import annotations

import enum

import attrs

from ._ids import GlobalId, as_id
from ._plan import Plan


@attrs.frozen
class SourceImport:
    """Shard ``shard``, read as collection ``id`` (rows of ``arity`` columns)."""

    id: GlobalId = attrs.field(converter=as_id)
    shard: str
    arity: int = 2


@attrs.frozen
class IndexImport:
    """Index ``id``, an arrangement of collection ``on`` by ``key``: the
    dataflow reads it as ``Get on``, sharing the arrangement, not copying it."""

    id: GlobalId = attrs.field(converter=as_id)
    on: GlobalId = attrs.field(converter=as_id)
    key: tuple[int, ...]
    arity: int = 2


@attrs.frozen
class Build:
    """Collection ``id``: what ``plan`` computes."""

    id: GlobalId = attrs.field(converter=as_id)
    plan: Plan


@attrs.frozen
class IndexExport:
    """Index ``id``: collection ``on`` (a build, or an imported index's
    collection, which re-exports that arrangement) arranged by ``key``.
    ``transient`` (or a ``t`` id) makes it a query dataflow's export."""

    id: GlobalId = attrs.field(converter=as_id)
    on: GlobalId = attrs.field(converter=as_id)
    key: tuple[int, ...]
    transient: bool = False

    @property
    def is_transient(self) -> bool:
        return self.transient or self.id.is_transient


@attrs.frozen
class MaterializedView:
    """A sink that keeps shard ``shard`` equal to its collection."""

    shard: str


@attrs.frozen
class Subscribe:
    """A sink that streams its collection's updates to the controller, up to
    (not including) ``up_to``."""

    up_to: int | None = None


@attrs.frozen
class SinkExport:
    """Sink ``id`` of collection ``on``."""

    id: GlobalId = attrs.field(converter=as_id)
    on: GlobalId = attrs.field(converter=as_id)
    connection: MaterializedView | Subscribe

    @property
    def is_transient(self) -> bool:
        return self.id.is_transient


class DataflowClass(enum.StrEnum):
    """Which kind of work a dataflow is, which decides the runtime that renders
    it (docs/protocol.md, "Placement by class"): the interactive runtime
    renders one-shot reads, maintenance everything else; Solo renders both."""

    MAINTAINED = "Maintained"
    """Long-lived work: indexes, materialized views, subscribes (the default)."""
    ONE_SHOT_READ = "OneShotRead"
    """A peek dataflow: every export transient, a single-time read
    (``until = as_of + 1``), no subscribe."""


@attrs.frozen
class DataflowDescription:
    """A dataflow: what it imports, the plans it builds, what it exports, and
    the times it covers (``as_of`` up to, not including, ``until``).

    ``dataflow_class`` places it (see :class:`DataflowClass`); it is fixed when
    the dataflow is created, so equality (and reconciliation's comparison)
    ignores it."""

    as_of: int
    source_imports: tuple[SourceImport, ...] = ()
    index_imports: tuple[IndexImport, ...] = ()
    objects_to_build: tuple[Build, ...] = ()
    index_exports: tuple[IndexExport, ...] = ()
    sink_exports: tuple[SinkExport, ...] = ()
    until: int | None = None
    name: str = attrs.field(default="", eq=False)
    dataflow_class: DataflowClass = attrs.field(
        default=DataflowClass.MAINTAINED, converter=DataflowClass, eq=False
    )
    # Derived once: reconciliation and routing ask for them per command
    # (``exports`` a plain attribute: read without a call).
    exports: tuple[GlobalId, ...] = attrs.field(init=False, eq=False, repr=False)
    """The ids of every index and sink it exports."""
    _transient: bool = attrs.field(init=False, eq=False, repr=False)

    def __attrs_post_init__(self) -> None:
        exports = tuple(e.id for e in self.index_exports) + tuple(s.id for s in self.sink_exports)
        flags = [e.is_transient for e in self.index_exports]
        flags += [s.is_transient for s in self.sink_exports]
        object.__setattr__(self, "exports", exports)
        object.__setattr__(self, "_transient", bool(flags) and all(flags))

    @classmethod
    def index(
        cls,
        source: GlobalId | int,
        shard: str,
        index: GlobalId | int,
        key: tuple[int, ...],
        as_of: int,
        *,
        arity: int = 2,
    ) -> DataflowDescription:
        """An index of a shard: import ``shard`` as ``source``, export index
        ``index`` of it keyed by ``key`` (the driver's ``define-index``)."""
        source, index = as_id(source), as_id(index)
        return cls(
            as_of=as_of,
            source_imports=(SourceImport(source, shard, arity),),
            index_exports=(IndexExport(index, source, key),),
            name=f"index {index}",
        )

    @property
    def is_transient(self) -> bool:
        """A query dataflow: it exports something, and only transient things."""
        return self._transient

    def shape_misfits(self) -> list[str]:
        """How this dataflow misses the shape of a one-shot read (empty when it
        fits): every export transient, ``until`` one step past ``as_of``, no
        subscribe and no materialized view. The compute controller checks it
        for each ``OneShotRead`` dataflow it sends."""
        misfits: list[str] = []
        if not self.exports:
            misfits.append("it exports nothing")
        else:
            lasting = [str(e.id) for e in self.index_exports if not e.is_transient]
            lasting += [str(e.id) for e in self.sink_exports if not e.is_transient]
            if lasting:
                misfits.append(f"export {', '.join(lasting)} is not transient")
        if self.until != self.as_of + 1:
            until = "empty" if self.until is None else self.until
            misfits.append(f"until {until} is not as_of + 1 = {self.as_of + 1}")
        for sink in self.sink_exports:
            kind = "subscribe" if isinstance(sink.connection, Subscribe) else "materialized view"
            misfits.append(f"sink {sink.id} is a {kind}")
        return misfits

    def compatible_with(self, new: DataflowDescription, *, as_of: int | None = None) -> bool:
        """Whether this running dataflow (read as of ``as_of``, by default its
        own) can stand in for ``new``: the same imports, plans, exports and
        ``until`` (the name aside), and an ``as_of`` not after the new one."""
        return (
            (self.as_of if as_of is None else as_of) <= new.as_of
            and self.index_exports == new.index_exports
            and self.source_imports == new.source_imports
            and self.index_imports == new.index_imports
            and self.objects_to_build == new.objects_to_build
            and self.sink_exports == new.sink_exports
            and self.until == new.until
        )
