"""Values of registered classes as MessagePack (msgspec), with no pickling:
the payloads a :class:`~actors.net.Codec` carries inside its messages when a
message's fields cannot say the types (a batch of items of many kinds).

A value travels as MessagePack's builtins: ``None``, ``bool``, ``int`` (within
64 bits; a larger one as its digits), ``float``, ``str`` and ``bytes`` as
themselves; everything else as an array whose first item is a tag: a tuple, a
list, a dict, an instance of a registered tuple subclass, a member of a
registered enum, or an instance of a registered attrs class (by its
registered name, then its ``__init__`` fields in order). Decoding calls the
class (its converters and validators run) and knows only the registered
classes: anything else is the codec's error (:class:`CodecError`, or the
subclass the owner names), as are bytes nested deeper than ``max_depth``
whatever the interpreter's recursion limit (which a peer's bytes must never
reach).
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from typing import Any, Final, final

import attrs
import msgspec

from ._errors import CodecError

_TUPLE: Final = 0
_LIST: Final = 1
_NAMED_TUPLE: Final = 2
_ENUM: Final = 3
_OBJECT: Final = 4
_DICT: Final = 5
_BIG: Final = 6
_INT_MIN: Final = -(2**63)
_INT_MAX: Final = 2**64 - 1

PRIMITIVES: Final = frozenset({type(None), bool, int, float, str, bytes})
"""The types that travel as themselves (and come back so)."""

MAX_DEPTH: Final = 320
"""How deep a value may nest by default."""


@final
class Values:
    """The classes whose values travel, by stable name (the class's own
    ``__name__`` by default), and their encoding (see the module's
    docstring). ``error`` is the class of what a refused value raises (a
    :class:`CodecError`); ``where`` names where a value that is not one
    cannot travel, in that error."""

    __slots__ = (
        "_arity",
        "_by_name",
        "_decoder",
        "_encoder",
        "_enum_names",
        "_enums",
        "_fields",
        "_tuple_names",
        "_tuples",
        "error",
        "max_depth",
        "where",
    )

    def __init__(
        self,
        classes: Sequence[type] = (),
        *,
        error: type[CodecError] = CodecError,
        max_depth: int = MAX_DEPTH,
        where: str = "nodes",
    ) -> None:
        self.error = error
        self.max_depth = max_depth
        self.where = where
        # attrs classes: their registered name and __init__ fields; by name,
        # the class and the number of values its __init__ takes.
        self._fields: dict[type, tuple[str, tuple[str, ...]]] = {}
        self._arity: dict[str, tuple[type, int]] = {}
        self._enums: dict[type, str] = {}
        self._enum_names: dict[str, type[enum.Enum]] = {}
        self._tuples: dict[type, str] = {}
        self._tuple_names: dict[str, type] = {}
        self._by_name: dict[str, type] = {}
        self._encoder = msgspec.msgpack.Encoder()
        self._decoder = msgspec.msgpack.Decoder()
        for cls in classes:
            self.register(cls)

    def __repr__(self) -> str:
        return f"<Values of {len(self._by_name)} classes>"

    @property
    def classes(self) -> tuple[type, ...]:
        """The registered classes, in registration order."""
        return tuple(self._by_name.values())

    def register(self, cls: type, *, name: str | None = None) -> None:
        """Let the values of ``cls`` travel under ``name`` (default: its
        ``__name__``): an attrs class (its ``__init__`` fields), an enum (a
        member by its value) or a subclass of ``tuple`` (its items, passed
        to the class as arguments). Registering the same class under the same
        name again changes nothing. Raises :class:`TypeError` for another
        kind of class, :class:`ValueError` for a name taken by another
        class or a class registered under another name; either changes
        nothing."""
        if not isinstance(cls, type):
            raise TypeError(f"values of classes travel, not of {cls!r}")
        if name is None:
            name = cls.__name__
        if not isinstance(name, str) or not name:
            raise TypeError(f"a class's name must be a non-empty str, not {name!r}")
        known = self._by_name.get(name)
        if known is cls:
            return
        if known is not None:
            raise ValueError(f"the name {name!r} is already registered for {known.__qualname__}")
        if cls in self._fields or cls in self._enums or cls in self._tuples:
            raise ValueError(f"{cls.__qualname__} is already registered under another name")
        if issubclass(cls, enum.Enum):
            self._enums[cls] = name
            self._enum_names[name] = cls
        elif attrs.has(cls):
            fields = tuple(field.name for field in attrs.fields(cls) if field.init)
            self._fields[cls] = (name, fields)
            self._arity[name] = (cls, len(fields))
        elif issubclass(cls, tuple) and cls is not tuple:
            self._tuples[cls] = name
            self._tuple_names[name] = cls
        else:
            raise TypeError(
                f"{cls.__qualname__}: values of attrs classes, enums and tuple subclasses travel"
            )
        self._by_name[name] = cls

    def to_builtins(self, value: object) -> Any:
        """``value`` as MessagePack's builtins (see the module's docstring)."""
        kind = type(value)
        if kind is int:
            number: int = value  # type: ignore[assignment]
            return value if _INT_MIN <= number <= _INT_MAX else [_BIG, str(number)]
        if kind in PRIMITIVES:
            return value
        if kind is tuple:
            items: tuple[Any, ...] = value  # type: ignore[assignment]
            return [_TUPLE, *[self.to_builtins(v) for v in items]]
        if kind is list:
            return [_LIST, *[self.to_builtins(v) for v in value]]  # type: ignore[attr-defined]
        if kind is dict:
            pairs: dict[Any, Any] = value  # type: ignore[assignment]
            return [_DICT, *[self.to_builtins(x) for pair in pairs.items() for x in pair]]
        registered = self._fields.get(kind)
        if registered is not None:
            name, fields = registered
            return [_OBJECT, name, *[self.to_builtins(getattr(value, f)) for f in fields]]
        tuple_name = self._tuples.get(kind)
        if tuple_name is not None:
            assert isinstance(value, tuple)
            return [_NAMED_TUPLE, tuple_name, *[self.to_builtins(v) for v in value]]
        enum_name = self._enums.get(kind)
        if enum_name is not None:
            assert isinstance(value, enum.Enum)
            return [_ENUM, enum_name, value.value]
        raise self.error(f"a {kind.__qualname__} cannot travel between {self.where}")

    def from_builtins(self, data: Any, depth: int = 0) -> Any:
        """The value :meth:`to_builtins` made. Raises the codec's error."""
        if type(data) is not list:
            if type(data) in PRIMITIVES:
                return data
            raise self.error(f"unexpected {type(data).__name__} on the wire")
        if not data:
            raise self.error("an empty array on the wire")
        if depth > self.max_depth:
            raise self._too_deep()
        depth += 1
        tag = data[0]
        try:
            # The most common first: objects, then tuples (rows, updates).
            if tag == _OBJECT:
                cls, count = self._arity[data[1]]
                return self._construct(cls, count, data[2:], depth)
            if tag == _TUPLE:
                return tuple(
                    v if type(v) in PRIMITIVES else self.from_builtins(v, depth) for v in data[1:]
                )
            if tag == _NAMED_TUPLE:
                named = self._tuple_names[data[1]]
                return named(
                    *[
                        v if type(v) in PRIMITIVES else self.from_builtins(v, depth)
                        for v in data[2:]
                    ]
                )
            if tag == _LIST:
                return [
                    v if type(v) in PRIMITIVES else self.from_builtins(v, depth) for v in data[1:]
                ]
            if tag == _BIG:
                _, text = data
                return int(text)
            if tag == _DICT:
                flat = [self.from_builtins(v, depth) for v in data[1:]]
                return dict(zip(flat[::2], flat[1::2], strict=True))
            if tag == _ENUM:
                _, name, member = data
                return self._enum_names[name](member)
        except self.error:
            raise
        except (KeyError, TypeError, ValueError) as error:
            raise self.error(f"a malformed value on the wire: {error!r}") from None
        raise self.error(f"unknown tag {tag!r} on the wire")

    def _construct(self, cls: type, count: int, values: list[Any], depth: int) -> Any:
        if len(values) != count:
            raise self.error(f"{cls.__name__} takes {count} values")
        for i, v in enumerate(values):
            if type(v) not in PRIMITIVES:
                values[i] = self.from_builtins(v, depth)
        return cls(*values)

    def encode(self, value: object) -> bytes:
        """``value`` as MessagePack bytes."""
        return self._encoder.encode(self.to_builtins(value))

    def decode(self, data: bytes) -> Any:
        """The value :meth:`encode` made. Raises the codec's error."""
        builtins = self._builtins(data)
        try:
            return self.from_builtins(builtins)
        except RecursionError:
            raise self._too_deep() from None

    @staticmethod
    def join(encoded: Sequence[bytes]) -> bytes:
        """One run of values, from each one's :meth:`encode` bytes, as it is
        sent: MessagePack's header of an array of ``len(encoded)`` items, then
        the bytes as they are (nothing is encoded again). :meth:`split` gives
        the values back, with one call to the decoder for the whole run."""
        count = len(encoded)
        if count < 16:
            header = bytes((0x90 | count,))
        elif count < 1 << 16:
            header = b"\xdc" + count.to_bytes(2, "big")
        else:
            header = b"\xdd" + count.to_bytes(4, "big")
        return header + b"".join(encoded)

    def split(self, data: bytes) -> list[Any]:
        """The values :meth:`join` put in ``data``, in order. Raises the
        codec's error."""
        values = self._builtins(data)
        if type(values) is not list:
            raise self.error(f"a run of values is an array (not {type(values).__name__})")
        try:
            return [v if type(v) in PRIMITIVES else self.from_builtins(v) for v in values]
        except RecursionError:
            raise self._too_deep() from None

    def _too_deep(self) -> CodecError:
        # Arrays msgspec decodes (its limit is the interpreter's) but nested
        # past max_depth, or past what from_builtins (two or three frames a
        # level) can rebuild on the stack it was called on: a peer's bytes.
        return self.error("a value nested too deeply on the wire")

    def _builtins(self, data: bytes) -> Any:
        try:
            return self._decoder.decode(data)
        except (msgspec.DecodeError, RecursionError) as error:
            raise self.error(f"undecodable bytes: {error}") from None
