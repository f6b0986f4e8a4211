"""The replica's values on the wire: commands, responses, updates and the
plans inside them, as MessagePack, with no pickling, through the codec of
``actors.net`` (:class:`~actors.net.Values`, which :func:`._links.codec`
carries): this module registers the
replica's classes (:data:`CLASSES`, :data:`ENUMS`, :class:`~replica.GlobalId`)
and the items the nodes exchange (:mod:`._items`). Decoding calls the class
(its converters and validators run) and knows only the registered classes:
anything else is a :class:`~replica.procs.WireError`.
"""

from __future__ import annotations

import enum
from typing import Final

from actors.net import Values

from .. import protocol as _protocol
from ..model import _aggregates, _dataflow, _frontier, _plan, _scalar
from ..model._ids import GlobalId
from ..runtime._worker import SequencedCommand
from ._errors import WireError
from ._items import ITEMS

CLASSES: Final[tuple[type, ...]] = (
    _frontier.Frontier,
    _protocol.InstanceConfig,
    _dataflow.SourceImport,
    _dataflow.IndexImport,
    _dataflow.Build,
    _dataflow.IndexExport,
    _dataflow.MaterializedView,
    _dataflow.Subscribe,
    _dataflow.SinkExport,
    _dataflow.DataflowDescription,
    _protocol.Hello,
    _protocol.CreateInstance,
    _protocol.InitializationComplete,
    _protocol.UpdateConfiguration,
    _protocol.CreateDataflow,
    _protocol.Schedule,
    _protocol.AllowWrites,
    _protocol.AllowCompaction,
    _protocol.Peek,
    _protocol.CancelPeek,
    _protocol.Rows,
    _protocol.PeekError,
    _protocol.Canceled,
    _protocol.Frontiers,
    _protocol.PeekResponse,
    _protocol.CommandRejected,
    _protocol.SubscribeBatch,
    *_plan.PLAN_CLASSES,
    _scalar.Column,
    _scalar.Literal,
    _scalar.Call,
    _aggregates.AggregateExpr,
    SequencedCommand,
)
ENUMS: Final[tuple[type[enum.Enum], ...]] = (
    _plan.Aggregate,
    _aggregates.AggregateFunc,
    _scalar.ScalarFunc,
    _dataflow.DataflowClass,
)


# How deep a value may nest on the wire (a plan of the driver's deepest, 64
# operators over expressions 64 deep, takes about 260 levels): deeper is a
# WireError whatever the interpreter's recursion limit (which a peer's bytes
# must never reach).


def values() -> Values:
    """The replica's values, and the nodes' items, registered."""
    result = Values(error=WireError, where="replica processes")
    for cls in (*CLASSES, *ENUMS, GlobalId):
        result.register(cls)
    for item in ITEMS:
        result.register(item, name=item.channel)
    return result


VALUES: Final = values()
"""The values of one process, for what is encoded apart from a batch (each
command on its own, a shard's push measured)."""
encode: Final = VALUES.encode
decode: Final = VALUES.decode
split: Final = VALUES.split
join: Final = Values.join
to_builtins: Final = VALUES.to_builtins
from_builtins: Final = VALUES.from_builtins
