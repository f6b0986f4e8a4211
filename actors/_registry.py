"""The service registry: typed keys under which actors offer a service (Akka's
receptionist), and listings delivered to subscribers when a key's actors
change.

An entry lives as long as its actor: it leaves when the actor ends for good
(a restart keeps it, as it keeps the actor's address). Listings are framework
messages, like ``Down``: they never wait for room in a subscriber's mailbox.
A listing waiting beyond a full mailbox is replaced by the next one of its
key, so a subscriber that does not keep up holds one per key, not one per
change.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, Generic, TypeVar, cast, final

import attrs

from ._core import _footprint
from ._core._cell import _Cell
from ._core._mailbox import ActorRef
from ._core._monitors import ExitReason

M = TypeVar("M")


@final
@attrs.frozen
class ServiceKey(Generic[M]):
    """The name of a service, typed by the messages its actors accept:
    ``COUNTERS = ServiceKey[Add | Total]("counters")``.

    Keys compare by name, so declare each once (a module constant) and use
    that: two keys of one name and different types are one key at run time,
    which no type checker can see."""

    name: str = attrs.field()

    @name.validator
    def _check_name(self, attribute: attrs.Attribute[str], value: str) -> None:
        if not isinstance(value, str):
            raise TypeError(f"a service key's name must be a str, not {value!r}")

    def __repr__(self) -> str:
        return f"ServiceKey({self.name!r})"


@final
@attrs.frozen
class Listing(Generic[M]):
    """The actors registered under ``key`` now, in registration order: what
    :meth:`ActorSystem.find <actors.ActorSystem.find>` returns, and what a
    subscriber receives on subscribing and after each change."""

    key: ServiceKey[M]
    refs: tuple[ActorRef[M], ...]


def _listing_of(key: ServiceKey[Any], message: object) -> bool:
    """Whether ``message`` is a listing of ``key`` (the next one supersedes it)."""
    return isinstance(message, Listing) and message.key == key


def _refs(cells: dict[_Cell[Any], None]) -> tuple[ActorRef[Any], ...]:
    return tuple(cast("ActorRef[Any]", ActorRef._create(cell)) for cell in cells)


@attrs.define(eq=False)
class _Registry:
    """A system's registry: made on first use."""

    # Dicts as ordered sets: registration order, and a deterministic order of
    # notifications whatever the hash seed.
    _entries: dict[ServiceKey[Any], dict[_Cell[Any], None]] = attrs.field(factory=dict)
    _subscribers: dict[ServiceKey[Any], dict[_Cell[Any], None]] = attrs.field(factory=dict)
    # Per actor, the keys it is registered under and subscribed to.
    _registered: dict[_Cell[Any], dict[ServiceKey[Any], None]] = attrs.field(factory=dict)
    _subscribed: dict[_Cell[Any], dict[ServiceKey[Any], None]] = attrs.field(factory=dict)
    # Functions called after each change of a key's entries (the nodes'
    # watches: actors.net), by key, in the order they came.
    _watchers: dict[ServiceKey[Any], dict[Callable[[], None], None]] = attrs.field(factory=dict)

    def register(self, key: ServiceKey[Any], cell: _Cell[Any]) -> None:
        _footprint.touch(self)
        entries = self._entries.setdefault(key, {})
        if cell in entries:
            return
        entries[cell] = None
        self._watch(cell)
        self._registered[cell][key] = None
        self._notify(key)

    def deregister(self, key: ServiceKey[Any], cell: _Cell[Any]) -> bool:
        _footprint.touch(self)
        entries = self._entries.get(key)
        if entries is None or cell not in entries:
            return False
        del entries[cell]
        del self._registered[cell][key]
        self._notify(key)
        return True

    def find(self, key: ServiceKey[M]) -> tuple[ActorRef[M], ...]:
        _footprint.touch(self)
        return _refs(self._entries.get(key, {}))

    def subscribe(self, key: ServiceKey[Any], cell: _Cell[Any]) -> None:
        _footprint.touch(self)
        subscribers = self._subscribers.setdefault(key, {})
        if cell not in subscribers:
            subscribers[cell] = None
            self._watch(cell)
            self._subscribed[cell][key] = None
        cell.post_latest(Listing(key, self.find(key)), functools.partial(_listing_of, key))

    def unsubscribe(self, key: ServiceKey[Any], cell: _Cell[Any]) -> bool:
        _footprint.touch(self)
        subscribers = self._subscribers.get(key)
        if subscribers is None or cell not in subscribers:
            return False
        del subscribers[cell]
        del self._subscribed[cell][key]
        return True

    def watch(self, key: ServiceKey[Any], changed: Callable[[], None]) -> None:
        """Call ``changed()`` after each change of ``key``'s entries, until
        :meth:`unwatch`."""
        _footprint.touch(self)
        self._watchers.setdefault(key, {})[changed] = None

    def unwatch(self, key: ServiceKey[Any], changed: Callable[[], None]) -> None:
        _footprint.touch(self)
        watchers = self._watchers.get(key)
        if watchers is not None:
            watchers.pop(changed, None)
            if not watchers:
                del self._watchers[key]

    def _watch(self, cell: _Cell[Any]) -> None:
        """Forget ``cell``'s entries and subscriptions when it ends."""
        if cell not in self._registered:
            self._registered[cell] = {}
            self._subscribed[cell] = {}
            cell.linked().on_end.append(functools.partial(self._ended, cell))

    def _ended(self, cell: _Cell[Any], reason: ExitReason) -> None:
        _footprint.touch(self)
        for key in self._subscribed.pop(cell):
            del self._subscribers[key][cell]
        for key in self._registered.pop(cell):
            del self._entries[key][cell]
            self._notify(key)

    def _notify(self, key: ServiceKey[Any]) -> None:
        _footprint.touch(self)
        subscribers = self._subscribers.get(key)
        if subscribers:
            listing = Listing(key, self.find(key))
            supersedes = functools.partial(_listing_of, key)
            for subscriber in subscribers:
                subscriber.post_latest(listing, supersedes)
        for changed in list(self._watchers.get(key, ())):
            changed()
