"""The compute protocol: commands a controller sends, responses a replica sends
back (DESIGN.md §2.4), and the frontier they speak in.

Time is an integer. A frontier is one integer, the first time that is not yet
complete, or empty: closed, nothing will ever change again.
"""

from __future__ import annotations

import functools

import attrs

Row = tuple[int | str, ...]
"""A row: integer and string fields."""


def row_order(row: Row) -> tuple[tuple[int, int, str], ...]:
    """The sort key of a row: by value, column by column; integers numerically
    and before strings; strings by code point."""
    return tuple((0, value, "") if isinstance(value, int) else (1, 0, value) for value in row)


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
class DataflowDescription:
    """An index dataflow: import shard ``shard`` as source ``source_id``, export
    index ``index_id`` keyed by the columns ``key``, built ``as_of``."""

    source_id: int
    shard: str
    index_id: int
    key: tuple[int, ...]
    as_of: int

    @property
    def imports(self) -> tuple[tuple[int, str], ...]:
        return ((self.source_id, self.shard),)

    @property
    def exports(self) -> tuple[int, ...]:
        return (self.index_id,)

    @property
    def plan(self) -> tuple[str, tuple[int, ...]]:
        return ("arrange", self.key)

    def compatible_with(self, new: DataflowDescription) -> bool:
        """Whether this running dataflow can stand in for ``new``: the same
        imports, exports and plan, and an ``as_of`` not after the new one."""
        return (
            self.imports == new.imports
            and self.exports == new.exports
            and self.plan == new.plan
            and self.as_of <= new.as_of
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
    id: int


@attrs.frozen
class AllowCompaction:
    """Allow reads before ``frontier`` to be merged; the empty frontier drops ``id``."""

    id: int
    frontier: Frontier


@attrs.frozen
class Peek:
    uuid: int
    id: int
    timestamp: int


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

    id: int
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


Response = Frontiers | PeekResponse | CommandRejected
