"""The replica's values on the wire: commands, responses, updates and the
plans inside them, as MessagePack (msgspec), with no pickling.

A value travels as MessagePack's builtins: ``None``, ``bool``, ``int`` (within 64
bits; a larger one, such as a closed exchange's frontier, as its digits),
``float``, ``str`` and ``bytes`` as themselves; everything else as an array
whose first item is a tag: a tuple, a list, a dict, a :class:`~replica.GlobalId`,
an enum member, or an instance of one of the replica's protocol classes (by
class name, then its ``__init__`` fields in order). Decoding calls the class
(its converters and validators run) and knows only the classes listed in
:data:`CLASSES`: anything else is a :class:`WireError`.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from typing import Any, Final

import attrs
import msgspec

from .. import protocol as _protocol
from ..model import _aggregates, _dataflow, _frontier, _plan, _scalar
from ..model._ids import GlobalId
from ..runtime._worker import SequencedCommand
from ._errors import WireError

_TUPLE: Final = 0
_LIST: Final = 1
_ID: Final = 2
_ENUM: Final = 3
_OBJECT: Final = 4
_DICT: Final = 5
_BIG: Final = 6
_INT_MIN: Final = -(2**63)
_INT_MAX: Final = 2**64 - 1

_PRIMITIVES: Final = frozenset({type(None), bool, int, float, str, bytes})

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
)

_FIELDS: Final[dict[type, tuple[str, ...]]] = {
    cls: tuple(field.name for field in attrs.fields(cls) if field.init) for cls in CLASSES
}
_BY_NAME: Final[dict[str, type]] = {cls.__name__: cls for cls in CLASSES}
# Each class by name, with the number of values its ``__init__`` takes.
_ARITY: Final[dict[str, tuple[type, int]]] = {
    cls.__name__: (cls, len(fields)) for cls, fields in _FIELDS.items()
}
_ENUM_BY_NAME: Final[dict[str, type[enum.Enum]]] = {cls.__name__: cls for cls in ENUMS}
assert len(_BY_NAME) == len(CLASSES), "protocol class names must be unique"

_encoder: Final = msgspec.msgpack.Encoder()
_decoder: Final = msgspec.msgpack.Decoder()


def to_builtins(value: object) -> Any:
    """``value`` as MessagePack's builtins (see the module's docstring)."""
    kind = type(value)
    if kind is int:
        number: int = value  # type: ignore[assignment]
        return value if _INT_MIN <= number <= _INT_MAX else [_BIG, str(number)]
    if kind in _PRIMITIVES:
        return value
    if kind is tuple:
        items: tuple[Any, ...] = value  # type: ignore[assignment]
        return [_TUPLE, *[to_builtins(v) for v in items]]
    if kind is list:
        return [_LIST, *[to_builtins(v) for v in value]]  # type: ignore[attr-defined]
    if kind is dict:
        pairs: dict[Any, Any] = value  # type: ignore[assignment]
        return [_DICT, *[to_builtins(x) for pair in pairs.items() for x in pair]]
    if kind is GlobalId:
        assert isinstance(value, GlobalId)
        return [_ID, value[0], value[1]]
    if isinstance(value, enum.Enum) and kind in ENUMS:
        return [_ENUM, kind.__name__, value.value]
    fields = _FIELDS.get(kind)
    if fields is None:
        raise WireError(f"a {kind.__qualname__} cannot travel between replica processes")
    return [_OBJECT, kind.__name__, *[to_builtins(getattr(value, name)) for name in fields]]


# How deep a value may nest on the wire (a plan of the driver's deepest, 64
# operators over expressions 64 deep, takes about 260 levels): deeper is a
# WireError whatever the interpreter's recursion limit (which a peer's bytes
# must never reach).
MAX_DEPTH = 320


def from_builtins(data: Any, depth: int = 0) -> Any:
    """The value :func:`to_builtins` made. Raises :class:`WireError`."""
    if type(data) is not list:
        if type(data) in _PRIMITIVES:
            return data
        raise WireError(f"unexpected {type(data).__name__} on the wire")
    if not data:
        raise WireError("an empty array on the wire")
    if depth > MAX_DEPTH:
        raise _too_deep()
    depth += 1
    tag = data[0]
    try:
        # The most common first: objects, then tuples (rows, updates).
        if tag == _OBJECT:
            cls, count = _ARITY[data[1]]
            return _construct(cls, count, data[2:], depth)
        if tag == _TUPLE:
            return tuple(v if type(v) in _PRIMITIVES else from_builtins(v, depth) for v in data[1:])
        if tag == _ID:
            _, namespace, number = data
            return GlobalId(namespace, number)
        if tag == _LIST:
            return [v if type(v) in _PRIMITIVES else from_builtins(v, depth) for v in data[1:]]
        if tag == _BIG:
            _, text = data
            return int(text)
        if tag == _DICT:
            flat = [from_builtins(v, depth) for v in data[1:]]
            return dict(zip(flat[::2], flat[1::2], strict=True))
        if tag == _ENUM:
            _, name, member = data
            return _ENUM_BY_NAME[name](member)
    except WireError:
        raise
    except (KeyError, TypeError, ValueError) as error:
        raise WireError(f"a malformed value on the wire: {error!r}") from None
    raise WireError(f"unknown tag {tag!r} on the wire")


def _construct(cls: type, count: int, values: list[Any], depth: int) -> Any:
    if len(values) != count:
        raise WireError(f"{cls.__name__} takes {count} values")
    for i, v in enumerate(values):
        if type(v) not in _PRIMITIVES:
            values[i] = from_builtins(v, depth)
    return cls(*values)


def encode(value: object) -> bytes:
    """``value`` as MessagePack bytes."""
    return _encoder.encode(to_builtins(value))


def decode(data: bytes) -> Any:
    """The value :func:`encode` made. Raises :class:`WireError`."""
    builtins = _builtins(data)
    try:
        return from_builtins(builtins)
    except RecursionError:
        raise _too_deep() from None


def join(encoded: Sequence[bytes]) -> bytes:
    """One run of values, from each one's :func:`encode` bytes, as it is
    sent: MessagePack's header of an array of ``len(encoded)`` items, then
    the bytes as they are (nothing is encoded again). :func:`split` gives
    the values back, with one call to the decoder for the whole run."""
    count = len(encoded)
    if count < 16:
        header = bytes((0x90 | count,))
    elif count < 1 << 16:
        header = b"\xdc" + count.to_bytes(2, "big")
    else:
        header = b"\xdd" + count.to_bytes(4, "big")
    return header + b"".join(encoded)


def split(data: bytes) -> list[Any]:
    """The values :func:`join` put in ``data``, in order. Raises :class:`WireError`."""
    values = _builtins(data)
    if type(values) is not list:
        raise WireError(f"a run of values is an array (not {type(values).__name__})")
    try:
        return [v if type(v) in _PRIMITIVES else from_builtins(v) for v in values]
    except RecursionError:
        raise _too_deep() from None


def _too_deep() -> WireError:
    # Arrays msgspec decodes (its limit is the interpreter's) but nested past
    # MAX_DEPTH, or past what from_builtins (two or three frames a level)
    # can rebuild on the stack it was called on: a peer's bytes.
    return WireError("a value nested too deeply on the wire")


def _builtins(data: bytes) -> Any:
    try:
        return _decoder.decode(data)
    except (msgspec.DecodeError, RecursionError) as error:
        raise WireError(f"undecodable bytes: {error}") from None
