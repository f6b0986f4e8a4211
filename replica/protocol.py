"""The compute protocol: commands a controller sends, responses a replica sends
back (docs/protocol.md), speaking of the frontiers, rows and dataflow
descriptions of :mod:`replica.model`.
"""

from __future__ import annotations

import attrs

from .model._dataflow import DataflowDescription
from .model._errors import ComputeError
from .model._frontier import Frontier
from .model._ids import GlobalId, as_id
from .model._rows import Row, Update


class ProtocolError(ComputeError):
    """A command the API refuses before sending, or one the replica rejected."""


@attrs.frozen
class InstanceConfig:
    """What a ``CreateInstance`` configures. Reconnects must repeat it unchanged."""

    settings: tuple[tuple[str, str], ...] = ()


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
