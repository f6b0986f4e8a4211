"""The compute protocol: commands a controller sends, responses a replica sends
back (DESIGN.md §2.4), and the frontier they speak in.

Time is an integer. A frontier is one integer, the first time that is not yet
complete, or empty: closed, nothing will ever change again.
"""

from __future__ import annotations

import functools

import attrs

from ._ids import GlobalId, as_id
from ._plan import Plan

Datum = int | str | bool | float | None
"""A value in a row: ``bigint``, ``integer``, ``smallint`` (int), ``text``
(str), ``boolean`` (bool), ``double`` (float), or NULL (None)."""

Row = tuple[Datum, ...]
"""A row: a tuple of datums."""

MAX_RESULT_ROWS = 4_000_000
"""The most rows a read answers with, a row counted k times counting k (as
many as a spec may write in all): a ``Constant`` row counted 10**18 times, or
a join that multiplies, would otherwise be expanded row by row until the
process hangs or runs out of memory. Past it a read is
:data:`RESULT_TOO_LARGE`, as Materialize's reads past ``max_result_size``."""

RESULT_TOO_LARGE = f"result exceeds max size of {MAX_RESULT_ROWS} rows"


class ResultTooLargeError(ValueError):
    """A read whose rows, with their multiplicities, are more than
    :data:`MAX_RESULT_ROWS`."""


def rows_of_counts(counts: dict[Row, int]) -> list[Row]:
    """Each row of ``counts`` as many times as its count (none below one);
    :class:`ResultTooLargeError` when that is more than
    :data:`MAX_RESULT_ROWS`, before any is expanded."""
    if sum(count for count in counts.values() if count > 0) > MAX_RESULT_ROWS:
        raise ResultTooLargeError(RESULT_TOO_LARGE)
    return [row for row, count in counts.items() for _ in range(count)]


Update = tuple[Row, int, int]
"""A change to a collection: ``(row, time, diff)``."""


def _datum_order(value: Datum) -> tuple[int, float, str]:
    if value is None:
        return (0, 0, "")
    if isinstance(value, bool):
        return (1, int(value), "")
    if isinstance(value, int | float):
        return (2, value, "")
    return (3, 0, value)


def row_order(row: Row) -> tuple[tuple[int, float, str], ...]:
    """The sort key of a row: by value, column by column; nulls first, then
    booleans, numbers (numerically), strings (by code point)."""
    return tuple(_datum_order(value) for value in row)


@functools.total_ordering
@attrs.frozen
class Frontier:
    """A frontier: ``time`` is the first incomplete time, or ``None`` when empty.

    Frontiers are ordered: ``[3] < [5] < []``. A frontier *has reached* ``ts``
    when every time before ``ts`` is complete (``time >= ts``, or empty).
    """

    time: int | None

    @classmethod
    def at(cls, time: int) -> Frontier:
        return cls(time)

    @classmethod
    def empty(cls) -> Frontier:
        return cls(None)

    @property
    def is_empty(self) -> bool:
        return self.time is None

    def reached(self, ts: int) -> bool:
        """Whether every time before ``ts`` is complete."""
        return self.time is None or self.time >= ts

    def beyond(self, ts: int) -> bool:
        """Whether ``ts`` itself is complete (the frontier is past it)."""
        return self.time is None or self.time > ts

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, Frontier):
            return NotImplemented
        if self.time is None:
            return False
        return other.time is None or self.time < other.time

    def __str__(self) -> str:
        return "[]" if self.time is None else f"[{self.time}]"


@attrs.frozen
class InstanceConfig:
    """What a ``CreateInstance`` configures. Reconnects must repeat it unchanged."""

    settings: tuple[tuple[str, str], ...] = ()


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


@attrs.frozen
class DataflowDescription:
    """A dataflow: what it imports, the plans it builds, what it exports, and
    the times it covers (``as_of`` up to, not including, ``until``)."""

    as_of: int
    source_imports: tuple[SourceImport, ...] = ()
    index_imports: tuple[IndexImport, ...] = ()
    objects_to_build: tuple[Build, ...] = ()
    index_exports: tuple[IndexExport, ...] = ()
    sink_exports: tuple[SinkExport, ...] = ()
    until: int | None = None
    name: str = attrs.field(default="", eq=False)
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


@attrs.frozen
class Hello:
    nonce: int


@attrs.frozen
class CreateInstance:
    config: InstanceConfig = InstanceConfig()


@attrs.frozen
class InitializationComplete:
    pass


@attrs.frozen
class UpdateConfiguration:
    params: tuple[tuple[str, str], ...] = ()


@attrs.frozen
class CreateDataflow:
    dataflow: DataflowDescription


@attrs.frozen
class Schedule:
    id: GlobalId = attrs.field(converter=as_id)


@attrs.frozen
class AllowWrites:
    """Let materialized-view sink ``id`` write its shard (until now it only
    computes what it would write)."""

    id: GlobalId = attrs.field(converter=as_id)


@attrs.frozen
class AllowCompaction:
    """Allow reads before ``frontier`` to be merged; the empty frontier drops ``id``."""

    id: GlobalId = attrs.field(converter=as_id)
    frontier: Frontier


@attrs.frozen
class Peek:
    """Read index ``id`` at ``timestamp``: every row, or with ``literals`` only
    the rows whose key is one of them (the replica sorts and dedupes them)."""

    uuid: int
    id: GlobalId = attrs.field(converter=as_id)
    timestamp: int
    literals: tuple[Row, ...] | None = None


@attrs.frozen
class CancelPeek:
    uuid: int


Command = (
    Hello
    | CreateInstance
    | InitializationComplete
    | UpdateConfiguration
    | CreateDataflow
    | Schedule
    | AllowWrites
    | AllowCompaction
    | Peek
    | CancelPeek
)


@attrs.frozen
class Rows:
    rows: tuple[Row, ...]


@attrs.frozen
class PeekError:
    message: str


@attrs.frozen
class Canceled:
    pass


PeekResult = Rows | PeekError | Canceled


@attrs.frozen
class Frontiers:
    """The upper of collection ``id``: never regresses; empty once dropped."""

    id: GlobalId = attrs.field(converter=as_id)
    upper: Frontier


@attrs.frozen
class PeekResponse:
    """The answer to peek ``uuid``: exactly one per peek."""

    uuid: int
    result: PeekResult


@attrs.frozen
class CommandRejected:
    """A command the replica refused as out of protocol; it changed nothing."""

    command: Command
    reason: str


@attrs.frozen
class SubscribeBatch:
    """Updates of subscribe ``id`` at times in ``[lower, upper)``; ``upper``
    empty once the subscribe reached its ``up_to``."""

    id: GlobalId = attrs.field(converter=as_id)
    lower: int
    upper: Frontier
    updates: tuple[Update, ...]


Response = Frontiers | PeekResponse | SubscribeBatch | CommandRejected
