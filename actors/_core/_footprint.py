"""Where the library tells the explorer's reduction what a step touches.

The schedule explorer's reduction (``actors.testing``, docs/actors.md
"Reduction") treats the steps of two tasks as independent unless they touch
a common object. Trio's channels, events, locks and parking lots, wake-ups,
spawns and cancellations are seen from outside; what only the library knows
(a message put in another actor's mailbox, a reply completed, a state read
across actors) it reports here. With no exploration recording (always, but
in the explorer's runs), each call is one global read.
"""

from __future__ import annotations

import contextvars
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

if TYPE_CHECKING:
    from ._envelope import Address

K = TypeVar("K")
V = TypeVar("V")

REWRITE = 3
"""The kind of access of a :class:`Table` whose entry is removed or given
another value: it keeps the order of the other keys, so two such of
distinct keys commute (each also writes its key's entry)."""


class Sink(Protocol):
    def touch(self, obj: object, kind: int = 0) -> None: ...

    def touch_actor(self, address: Address) -> None: ...

    def touch_item(self, table: object, key: object) -> None: ...

    def touch_whole(self, table: object) -> None: ...

    def set_item(self, table: object, key: object, value: object, held: object) -> None: ...

    def created(self, obj: object) -> None: ...


# The recorder of the run in progress, if it records.
sink: Sink | None = None


def touch(obj: object, kind: int = 0) -> None:
    """Record that the running step reads or writes ``obj`` (shared by
    tasks of more than one actor), or accesses it in a commuting ``kind``
    (such as :data:`REWRITE`)."""
    if sink is not None:
        sink.touch(obj, kind)


def touch_item(table: object, key: object) -> None:
    """Record that the running step reads or writes the entry ``key`` of
    ``table`` (and nothing else of it)."""
    if sink is not None:
        sink.touch_item(table, key)


def touch_whole(table: object) -> None:
    """Record that the running step reads or writes all of ``table`` (its
    order of keys and every entry)."""
    if sink is not None:
        sink.touch_whole(table)


def touch_actor(address: Address) -> None:
    """Record that the running step reads or writes the state of the actor
    at ``address`` (its mailbox, its cell)."""
    if sink is not None:
        sink.touch_actor(address)


# What every step of a task touches (see share).
standing: contextvars.ContextVar[tuple[object, ...]] = contextvars.ContextVar(
    "actors_shared", default=()
)


def share(*objects: object) -> None:
    """Record that every step of the calling task from now on (this one too)
    (and of the tasks it spawns from now on) reads or writes ``objects``."""
    standing.set((*standing.get(), *objects))
    for obj in objects:
        touch(obj)


# What the steps of a task outside every actor belong to (see belong).
owner: contextvars.ContextVar[object] = contextvars.ContextVar("actors_owner", default=None)


def belong(obj: object) -> None:
    """Record that the calling task (outside every actor), and the tasks it
    spawns from now on, keep their state in ``obj``: their steps touch it
    instead of the one object all tasks outside actors share (this step
    too)."""
    owner.set(obj)
    touch(obj)


_PLAIN = (str, bytes, type(None))
_NUMBERS = (int, bool)
# How deep a plain value's tuples and frozensets may nest (deeper: not plain).
_DEPTH = 16
NOT_PLAIN: Any = object()
"""What :func:`canon` gives for a value that is not plain."""


def canon(value: object, depth: int = 0) -> object:
    """``value``'s canonical form if it is plain (immutable and told apart
    by its type and equality alone: an integer, a string, bytes, ``None``,
    ``True``/``False``, or a tuple or frozenset of those, nested at most 16
    deep), else :data:`NOT_PLAIN`. Two plain values are the same exactly
    when their forms are equal: the form tags every number and container
    with its type (``1``, ``True``, ``(1,)`` and ``(True,)`` are four); not
    a float (0.0 and -0.0 are equal)."""
    kind = type(value)
    if kind in _PLAIN:
        return value
    if kind in _NUMBERS:
        return (kind, value)
    if (kind is tuple or kind is frozenset) and depth < _DEPTH:
        items = []
        for item in value:  # type: ignore[attr-defined]
            form = canon(item, depth + 1)
            if form is NOT_PLAIN:
                return NOT_PLAIN
            items.append(form)
        return (kind, tuple(items) if kind is tuple else frozenset(items))
    return NOT_PLAIN


def plain(value: object) -> bool:
    """Whether ``value`` is plain (see :func:`canon`)."""
    return canon(value) is not NOT_PLAIN


def same(held: object, value: object) -> bool:
    """Whether an entry holding ``held`` holds ``value`` already (the very
    object, or an equal plain value of the same types)."""
    if held is value:
        return True
    form = canon(value)
    return form is not NOT_PLAIN and canon(held) == form


def _whole(name: str) -> Any:
    """``dict``'s method ``name``, touching the whole table first."""
    method = getattr(dict, name)

    def whole(self: dict[Any, Any], *args: Any, **kwargs: Any) -> Any:
        touch_whole(self)
        return method(self, *args, **kwargs)

    whole.__name__ = whole.__qualname__ = name
    return whole


MISSING: Any = object()
"""What :meth:`Sink.set_item` is told an absent key held."""


class Table(dict[K, V]):
    """A dict shared by tasks of more than one actor whose uses the
    explorer's reduction records entry by entry, so that tasks using
    distinct keys stay independent:

    - a lookup (``in``, ``[]``, :meth:`get`) reads its key's entry;
    - setting a key to a plain value (an integer, a string, ``None``, or a
      tuple or frozenset of those) writes its entry in a kind of the
      value's (two settings to equal values commute); to any other value,
      writes it;
    - setting a key to a value it does not hold yet also touches the table:
      a new key (the order of keys, which iteration follows) in a kind of
      the key's and the value's (two settings of one new key to one value
      commute) for a plain value, else writes it; another value in the kind
      :data:`REWRITE` (the order of keys stays: two of distinct keys
      commute). A setting to a plain value held already is the kind of a
      new key's (it commutes with that one);
    - removing a key (``del``, :meth:`pop`) writes its entry and touches the
      table in the kind :data:`REWRITE`;
    - anything else (iteration, ``len``, a view, a bulk update, ``repr``)
      writes the whole table. A view is read when it is made: iterating one
      kept from an earlier step is not recorded.

    Outside an exploration's recorded runs it is a plain dict but for the
    cost of the calls."""

    __slots__ = ()

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if sink is not None:
            # Named by the step that makes it (two steps using distinct keys
            # first do not name it in the order they ran); run again on a
            # table, it writes the whole of it.
            sink.created(self)
            sink.touch_whole(self)
        super().__init__(*args, **kwargs)

    def __contains__(self, key: object) -> bool:
        touch_item(self, key)
        return super().__contains__(key)

    def __getitem__(self, key: K) -> V:
        touch_item(self, key)
        return super().__getitem__(key)

    def get(self, key: K, default: Any = None) -> Any:
        touch_item(self, key)
        return super().get(key, default)

    def __setitem__(self, key: K, value: V) -> None:
        if sink is not None:
            sink.set_item(self, key, value, super().get(key, MISSING))
        super().__setitem__(key, value)

    def __delitem__(self, key: K) -> None:
        self._removing(key)
        super().__delitem__(key)

    def pop(self, key: K, *default: Any) -> Any:
        self._removing(key)
        return super().pop(key, *default)

    def _removing(self, key: object) -> None:
        if sink is not None:
            sink.touch_item(self, key)
            if super().__contains__(key):
                sink.touch(self, REWRITE)

    __iter__ = _whole("__iter__")
    __reversed__ = _whole("__reversed__")
    __len__ = _whole("__len__")
    keys = _whole("keys")
    values = _whole("values")
    items = _whole("items")
    clear = _whole("clear")
    copy = _whole("copy")
    popitem = _whole("popitem")
    setdefault = _whole("setdefault")
    update = _whole("update")

    def __eq__(self, other: object) -> bool:
        touch_whole(self)
        if isinstance(other, Table):
            touch_whole(other)  # read by dict's own code, not through its methods
        return dict.__eq__(self, other)

    def __ne__(self, other: object) -> bool:
        touch_whole(self)
        if isinstance(other, Table):
            touch_whole(other)
        return dict.__ne__(self, other)

    __hash__ = None
    __or__ = _whole("__or__")
    __ior__ = _whole("__ior__")
    __repr__ = _whole("__repr__")
