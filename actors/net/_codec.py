"""The codec: which message classes a node accepts, under which stable names,
and how each travels (MessagePack, through msgspec).

A message is an attrs class (made with :func:`attrs.define` or
:func:`attrs.frozen`). It travels as its registered name and the tuple
of its field values, in field order; the receiving side decodes that tuple
against the field types (msgspec checks them, strictly: a ``str`` where an
``int`` is declared is refused, not converted) and calls the class, so its
validators run. A field typed ``Reply[...]`` (at most one) is the ask's
reply: it travels as nothing, and the receiving node puts its own reply
there, whose answer goes back over the connection.

A field typed ``ActorRef[...]`` (or ``ActorRef[...] | None``) carries a
reference: it travels as ``[kind, uid, name]`` and the receiving node makes
its own reference of it (see :class:`actors.net.Peer`). Only a node's
connection can do that, so such a message is encoded and decoded with the
connection's ``refs`` hooks (:data:`RefOut`, :data:`RefIn`).

A message's field may also carry a payload of values of many kinds (a
batch of items): :meth:`Codec.register_value` lets the values of a class
travel in such payloads, encoded by :attr:`Codec.values` (``_values``).
"""

from __future__ import annotations

import operator
import types
import typing
from collections.abc import Callable, Iterable
from typing import Any, final

import attrs
import msgspec
from msgspec import inspect as msgspec_inspect

from .._core._mailbox import ActorRef
from .._core._reply import Reply
from ._errors import CodecError
from ._values import Values


def _unsupported(info: msgspec_inspect.Type, seen: set[type]) -> type | None:
    """A type msgspec cannot decode without a hook, found in ``info``, or None."""
    if isinstance(info, msgspec_inspect.CustomType):
        return info.cls
    if isinstance(info, msgspec_inspect.DataclassType | msgspec_inspect.StructType):
        if info.cls in seen:
            return None
        seen.add(info.cls)
    for name in info.__struct_fields__:
        value = getattr(info, name)
        values = value if isinstance(value, tuple) else (value,)
        for item in values:
            if isinstance(item, msgspec_inspect.Field):
                item = item.type
            if isinstance(item, msgspec_inspect.Type):
                found = _unsupported(item, seen)
                if found is not None:
                    return found
    return None


WireRef = tuple[int, int, str]
"""A reference as it travels: its kind (whose actor it is, from the
sender's side), the actor's uid on its node, and its name there."""
RefOut = Callable[[ActorRef[Any]], WireRef]
"""How a connection sends a reference (it may export the actor to the peer)."""
RefIn = Callable[[WireRef], ActorRef[Any]]
"""How a connection makes a reference of one that came."""


def _is_ref(hint: object) -> tuple[bool, bool]:
    """Whether ``hint`` is ``ActorRef[...]``, and whether it may be None."""
    if hint is ActorRef or typing.get_origin(hint) is ActorRef:
        return True, False
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        arguments = typing.get_args(hint)
        others = [a for a in arguments if a is not type(None)]
        if len(arguments) == 2 and len(others) == 1:
            inner, _ = _is_ref(others[0])
            return inner, inner
    return False, False


def value_error(error: Exception) -> CodecError:
    """The error for a reply's value msgspec could not encode (``error``)."""
    return CodecError(f"cannot encode a reply's value: {error}")


@final
@attrs.frozen(eq=False)
class _Entry:
    """One registered class: its name, its fields, and the decoder of its
    values (every field but the reply)."""

    name: str
    cls: type
    fields: tuple[str, ...]
    reply_index: int | None
    decoder: msgspec.msgpack.Decoder[tuple[Any, ...]]
    # The values that travel (every field but the reply), as a tuple (or,
    # when ``single``, the one value), and the reply field's value: read in
    # C (operator.attrgetter).
    values_of: Callable[[object], Any]
    reply_of: Callable[[object], Any] | None
    single: bool
    # The reply is the last field (the ask convention): the decoded values
    # and the reply make the call's arguments without moving any.
    reply_last: bool
    # The positions, among the values that travel, of the references.
    refs: tuple[int, ...] = ()


@final
class Codec:
    """The message classes a node accepts, by stable name (the name on the
    wire; it defaults to the class's qualified name, so name them explicitly
    when the class may move).

    ``Codec([Add, Get])``, or ``codec.register(Get, name="counter.get")``.
    Both sides of a connection register the classes they exchange under the
    same names; a frame naming a class the receiver does not know is refused
    (answered with an error frame) and the connection goes on.
    """

    __slots__ = ("_by_class", "_by_name", "_encoder", "_in_use", "_reply_fields", "_values")

    def __init__(self, classes: Iterable[type] = (), *, values: Values | None = None) -> None:
        self._by_name: dict[str, _Entry] = {}
        self._by_class: dict[type, _Entry] = {}
        # The name of the reply field of each class that has one.
        self._reply_fields: dict[type, str] = {}
        # Set by the first connection made with the codec: its peers were
        # told its types then, so it takes no more.
        self._in_use = False
        self._encoder = msgspec.msgpack.Encoder()
        self._values = Values() if values is None else values
        for cls in classes:
            self.register(cls)

    def __repr__(self) -> str:
        return f"<Codec of {len(self._by_name)} message classes>"

    @property
    def names(self) -> tuple[str, ...]:
        """The registered names, in registration order."""
        return tuple(self._by_name)

    @property
    def values(self) -> Values:
        """The encoding of payloads of registered values (see
        :meth:`register_value`)."""
        return self._values

    def register_value(self, cls: type, *, name: str | None = None) -> None:
        """Let the values of ``cls`` (an attrs class, an enum or a tuple
        subclass) travel in payloads :attr:`values` encodes, under ``name``
        (default: its ``__name__``); decoding one calls the class. Raises as
        :meth:`Values.register` does."""
        self._values.register(cls, name=name)

    def register(self, cls: type, *, name: str | None = None) -> None:
        """Accept ``cls`` under ``name`` (default: its qualified name).

        Raises :class:`TypeError` if ``cls`` is not an attrs class
        (:func:`attrs.has`) whose fields (:func:`attrs.fields`) are all plain
        ``__init__`` parameters, or a field's type is
        one msgspec cannot carry (an arbitrary class; an ``ActorRef`` inside
        a container: a field of its own, ``ActorRef[M]`` or ``ActorRef[M] |
        None``, travels), or it has more than one ``Reply`` field; :class:`ValueError` if
        ``name`` is taken by another class or ``cls`` is registered under
        another name; :class:`RuntimeError` once a node was opened with the
        codec (its peers are told the types it accepts as they connect:
        register every class before opening the node). Registering the same class under
        the same name again changes nothing. Each error changes nothing."""
        if not (isinstance(cls, type) and attrs.has(cls)):
            raise TypeError(f"a codec registers attrs classes, not {cls!r}")
        if name is None:
            name = f"{cls.__module__}.{cls.__qualname__}"
        if not isinstance(name, str) or not name:
            raise TypeError(f"a message class's name must be a non-empty str, not {name!r}")
        known = self._by_class.get(cls)
        if known is not None:
            if known.name == name:
                return
            raise ValueError(f"{cls.__qualname__} is already registered as {known.name!r}")
        if name in self._by_name:
            raise ValueError(
                f"the name {name!r} is already registered for "
                f"{self._by_name[name].cls.__qualname__}"
            )
        if self._in_use:
            raise RuntimeError(
                f"the codec is in use by a node, so it registers no more classes ({name!r}): "
                "register every class before opening the node"
            )
        entry = self._entry(cls, name)
        self._by_name[name] = entry
        self._by_class[cls] = entry
        if entry.reply_index is not None:
            self._reply_fields[cls] = entry.fields[entry.reply_index]

    @staticmethod
    def _entry(cls: type, name: str) -> _Entry:
        hints = typing.get_type_hints(cls)
        reply_index: int | None = None
        value_types: list[Any] = []
        refs: list[int] = []
        fields = attrs.fields(cls)
        for index, field in enumerate(fields):
            if not field.init or field.kw_only:
                raise TypeError(
                    f"{cls.__qualname__}.{field.name}: a message's fields must all be "
                    "positional __init__ parameters"
                )
            hint = hints.get(field.name, Any)
            if hint is Reply or typing.get_origin(hint) is Reply:
                if reply_index is not None:
                    raise TypeError(f"{cls.__qualname__} has more than one Reply field")
                reply_index = index
                continue
            is_ref, optional = _is_ref(hint)
            if is_ref:
                refs.append(len(value_types))
                value_types.append(WireRef | None if optional else WireRef)
                continue
            unsupported = _unsupported(msgspec_inspect.type_info(hint), set())
            if unsupported is not None:
                raise TypeError(
                    f"{cls.__qualname__}.{field.name}: a value of type "
                    f"{unsupported.__qualname__} cannot travel between nodes"
                )
            value_types.append(hint)
        values_type: Any = tuple.__class_getitem__(tuple(value_types) if value_types else ((),))
        decoder: msgspec.msgpack.Decoder[tuple[Any, ...]] = msgspec.msgpack.Decoder(values_type)
        names = tuple(f.name for f in fields)
        travelling = [name for index, name in enumerate(names) if index != reply_index]
        values_of: Callable[[object], Any] = (
            operator.attrgetter(*travelling) if travelling else lambda message: ()
        )
        reply_of = None if reply_index is None else operator.attrgetter(names[reply_index])
        return _Entry(
            name,
            cls,
            names,
            reply_index,
            decoder,
            values_of,
            reply_of,
            single=len(travelling) == 1,
            reply_last=reply_index == len(names) - 1,
            refs=tuple(refs),
        )

    def encode(self, message: object) -> tuple[str, bytes, bool]:
        """``message`` as its registered name, its field values (MessagePack)
        and whether it carries a reply (an ask). Raises :class:`CodecError`
        if its class is not registered, a value cannot be encoded, or its
        class has a reply field holding no ``Reply`` (only an ask sends it)."""
        name, data, reply = self.encode_message(message)
        return name, data, reply is not None

    def encode_message(
        self, message: object, refs: RefOut | None = None
    ) -> tuple[str, bytes, Reply[Any] | None]:
        """As :meth:`encode`, with the reply ``message`` carries (an ask's)
        instead of whether it carries one; its references go out through
        ``refs`` (a connection's: without it, a message that carries one is a
        :class:`CodecError`)."""
        entry = self._by_class.get(type(message))
        if entry is None:
            raise CodecError(
                f"message class {type(message).__qualname__} is not registered in the codec"
            )
        reply = None
        if entry.reply_of is not None:
            reply = entry.reply_of(message)
            if type(reply) is not Reply:  # (Reply is final)
                raise CodecError(
                    f"message {entry.name!r} has a reply field, so it must be asked "
                    f"(its reply field holds {reply!r}, not a Reply)"
                )
        values = entry.values_of(message)
        if entry.refs:
            values = _refs_out(entry, [values] if entry.single else list(values), refs)
        elif entry.single:
            values = (values,)
        try:
            data = self._encoder.encode(values)
        except (TypeError, ValueError, OverflowError, RecursionError) as error:
            raise CodecError(f"cannot encode message {entry.name!r}: {error}") from None
        return entry.name, data, reply

    def decode(self, name: str, data: bytes, *, ask: bool, refs: RefIn | None = None) -> object:
        """The message of class ``name`` with the field values ``data``; an
        ``ask`` has ``None`` in its reply field, to be replaced with
        :meth:`attach_reply` before anyone sees it. Raises
        :class:`CodecError` for an unknown name, a tell of a class with a
        reply field, values that do not match
        the fields (or nested deeper than the interpreter can decode), the
        class refusing them (whatever its validators raise), or an ask of a
        class with no reply field."""
        entry = self._by_name.get(name)
        if entry is None:
            raise CodecError(f"unknown message type {name!r}")
        if ask and entry.reply_index is None:
            raise CodecError(f"message type {name!r} has no reply field, so it cannot be asked")
        if not ask and entry.reply_index is not None:
            # Its actor would find None where the class promises a Reply.
            raise CodecError(f"message type {name!r} has a reply field, so it must be asked")
        try:
            values: Any = entry.decoder.decode(data)
        except (msgspec.DecodeError, msgspec.ValidationError, RecursionError) as error:
            raise CodecError(f"message {name!r}: {error}") from None
        if entry.refs:
            values = _refs_in(entry, list(values), refs)
        try:
            if entry.reply_last:
                return entry.cls(*values, None)
            if entry.reply_index is not None:
                values = list(values)
                values.insert(entry.reply_index, None)
            return entry.cls(*values)
        except (TypeError, ValueError) as error:
            raise CodecError(f"message {name!r} refused by its class: {error}") from None
        except Exception as error:
            # What the peer sent must not end the node, whatever the class's
            # validators raise.
            raise CodecError(
                f"message {name!r} refused by its class: {type(error).__name__}: {error}"
            ) from None

    def attach_reply(self, message: object, reply: Reply[Any]) -> None:
        """Put ``reply`` in the reply field of ``message``, just decoded as an
        ask (its class is frozen: this is the decoder finishing its work,
        before the message is delivered)."""
        entry = self._by_class[type(message)]
        assert entry.reply_index is not None, "only an ask gets a reply"
        object.__setattr__(message, entry.fields[entry.reply_index], reply)

    def encode_value(self, value: object, refs: RefOut | None = None) -> tuple[str | None, bytes]:
        """A reply's value: a registered message class by name and fields,
        anything else as MessagePack's builtins (None, bool, int, float, str,
        bytes, list, dict: a tuple comes back as a list). Raises
        :class:`CodecError` for what msgspec cannot encode."""
        if type(value) in self._by_class:
            name, data, reply = self.encode_message(value, refs)
            if reply is not None:
                raise CodecError(f"a reply's value cannot carry a reply ({name!r})")
            return name, data
        try:
            return None, self._encoder.encode(value)
        except (TypeError, ValueError, OverflowError, RecursionError) as error:
            raise value_error(error) from None

    def decode_value(self, name: str | None, data: bytes, refs: RefIn | None = None) -> object:
        """The reply's value :meth:`encode_value` made. Raises
        :class:`CodecError` as :meth:`decode` does."""
        if name is not None:
            return self.decode(name, data, ask=False, refs=refs)
        try:
            return msgspec.msgpack.decode(data)
        except (msgspec.DecodeError, RecursionError) as error:
            raise CodecError(f"a reply's value: {error}") from None

    def reply_of(self, message: object) -> Reply[Any] | None:
        """The reply ``message`` carries (an ask's), or None."""
        entry = self._by_class.get(type(message))
        if entry is None or entry.reply_index is None:
            return None
        reply = getattr(message, entry.fields[entry.reply_index])
        return reply if isinstance(reply, Reply) else None


def _refs_out(entry: _Entry, values: list[Any], refs: RefOut | None) -> list[Any]:
    """``values`` with each reference as it travels."""
    if refs is None:
        raise CodecError(
            f"message {entry.name!r} carries a reference to an actor: it travels only "
            "over a node's connection"
        )
    for index in entry.refs:
        ref = values[index]
        if ref is not None:
            if not isinstance(ref, ActorRef):
                raise CodecError(
                    f"cannot encode message {entry.name!r}: a reference field holds {ref!r}"
                )
            values[index] = refs(ref)
    return values


def _refs_in(entry: _Entry, values: list[Any], refs: RefIn | None) -> list[Any]:
    """``values`` with each reference that came made a local one."""
    if refs is None:
        raise CodecError(
            f"message {entry.name!r} carries a reference to an actor: only a node's "
            "connection decodes it"
        )
    for index in entry.refs:
        if values[index] is not None:
            values[index] = refs(values[index])
    return values
