"""The sharing registry, without Trio (docs/protocol.md).

One registry per (process, local ordinal). Slots are keyed by incarnation,
``(index id, as_of)``. The maintenance runtime *publishes* its worker's part of
an index into the slot; the interactive runtime records a *peer* that binds
the slot's current publisher, or parks until one is published. A binding is
to a publisher, not to the slot: a peer never moves to a later publisher. When
a publisher is dropped, the peers bound to it keep reading what it last
published, forever: a frozen view. A slot lives while a publisher or a peer
holds it.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

import attrs

T = TypeVar("T")


class SharingError(Exception):
    """Base class of the errors of the ``sharing`` package."""


class SlotTakenError(SharingError):
    """A publish into a slot that already has a live publisher."""


@attrs.frozen
class Incarnation:
    """Which index, built as of when: the key of a registry slot. The index
    id is whatever names indexes where the registry is used (a number, or a
    replica's ``GlobalId``): hashable, and shown by ``str``."""

    index_id: Hashable
    as_of: int

    def __str__(self) -> str:
        return f"{self.index_id}@{self.as_of}"


@attrs.frozen
class RegistryStatistics:
    """A snapshot of a registry: its slots, and for each its current
    publisher's serial (``None`` when it has none) and how many peers hold it."""

    slots: tuple[tuple[Incarnation, int | None, int], ...]


@attrs.define(eq=False)
class Publisher(Generic[T]):
    """One published incarnation's part; ``serial`` tells publishers apart."""

    incarnation: Incarnation
    serial: int
    value: T
    _slot: _Slot[T]
    dropped: bool = False
    # The wake-ups of the peers bound to this publisher.
    _readers: dict[int, Callable[[], None]] = attrs.field(factory=dict)

    def __str__(self) -> str:
        return f"publisher #{self.serial} of {self.incarnation}"

    def changed(self) -> None:
        """The published part moved on: wake every peer bound to it."""
        for wake in list(self._readers.values()):
            wake()

    def drop(self) -> None:
        """Stop publishing. Bound peers keep its last state: a frozen view.
        Idempotent."""
        if self.dropped:
            return
        self.dropped = True
        slot = self._slot
        if slot.current is self:
            slot.current = None
        slot.registry._collect(slot)
        self.changed()


@attrs.define(eq=False)
class Peer(Generic[T]):
    """A reader of one incarnation: bound to one publisher for good, or parked."""

    incarnation: Incarnation
    serial: int
    _wake: Callable[[], None]
    _slot: _Slot[T]
    publisher: Publisher[T] | None = None
    released: bool = False

    @property
    def bound(self) -> bool:
        return self.publisher is not None

    @property
    def frozen(self) -> bool:
        """Bound to a publisher that was dropped: what it reads never changes."""
        return self.publisher is not None and self.publisher.dropped

    def _bind(self, publisher: Publisher[T]) -> None:
        assert self.publisher is None, "a peer never moves to a later publisher"
        self.publisher = publisher
        publisher._readers[self.serial] = self._wake
        self._wake()

    def release(self) -> None:
        """Stop reading; the slot may go. Idempotent."""
        if self.released:
            return
        self.released = True
        if self.publisher is not None:
            self.publisher._readers.pop(self.serial, None)
        slot = self._slot
        slot.peers.pop(self.serial, None)
        slot.registry._collect(slot)


@attrs.define(eq=False)
class _Slot(Generic[T]):
    incarnation: Incarnation
    registry: Registry[T]
    current: Publisher[T] | None = None
    peers: dict[int, Peer[T]] = attrs.field(factory=dict)


@attrs.define(eq=False)
class Registry(Generic[T]):
    """The slots of one (process, local ordinal), keyed by incarnation."""

    name: str = "registry"
    _slots: dict[Incarnation, _Slot[T]] = attrs.field(factory=dict)
    _publishers: itertools.count[int] = attrs.field(factory=lambda: itertools.count(1))
    _peers: itertools.count[int] = attrs.field(factory=lambda: itertools.count(1))

    def publish(self, incarnation: Incarnation, value: T) -> Publisher[T]:
        """Publish ``value`` as ``incarnation``; every parked peer of the slot
        binds to it. Raises :class:`SlotTakenError` (changing nothing) if the
        slot already has a live publisher."""
        slot = self._slot(incarnation)
        if slot.current is not None:
            raise SlotTakenError(
                f"{self.name}: slot {incarnation} is already published by {slot.current}"
            )
        publisher = Publisher(incarnation, next(self._publishers), value, slot)
        slot.current = publisher
        for peer in list(slot.peers.values()):
            if peer.publisher is None:
                peer._bind(publisher)
        return publisher

    def bind(self, incarnation: Incarnation, wake: Callable[[], None]) -> Peer[T]:
        """A peer of ``incarnation``: bound to the slot's current publisher now,
        or parked until one is published. ``wake`` is called whenever what the
        peer reads may have changed (bound, published part advanced, dropped)."""
        slot = self._slot(incarnation)
        peer = Peer(incarnation, next(self._peers), wake, slot)
        slot.peers[peer.serial] = peer
        if slot.current is not None:
            peer._bind(slot.current)
        return peer

    def _slot(self, incarnation: Incarnation) -> _Slot[T]:
        slot = self._slots.get(incarnation)
        if slot is None:
            slot = self._slots[incarnation] = _Slot(incarnation, self)
        return slot

    def _collect(self, slot: _Slot[T]) -> None:
        if slot.current is None and not slot.peers:
            self._slots.pop(slot.incarnation, None)

    def __contains__(self, incarnation: object) -> bool:
        return incarnation in self._slots

    def statistics(self) -> RegistryStatistics:
        return RegistryStatistics(
            tuple(
                (
                    incarnation,
                    None if slot.current is None else slot.current.serial,
                    len(slot.peers),
                )
                for incarnation, slot in sorted(
                    self._slots.items(), key=lambda item: (str(item[0].index_id), item[0].as_of)
                )
            )
        )
