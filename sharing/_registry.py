"""The sharing registry, without Trio (docs/protocol.md).

One registry per (process, local ordinal). Slots are keyed by incarnation,
``(index id, as_of)``. The maintenance runtime *publishes* its worker's part of
an index into the slot; the interactive runtime records a *peer* that binds
the slot's current publisher, or parks until one is published. A binding is
to a publisher, not to the slot: a peer never moves to a later publisher. When
a publisher is dropped, the peers bound to it keep reading what it last
published, forever: a frozen view. A slot lives while a publisher or a peer
holds it.

Peer holds (the design of record's, docs/protocol.md "Read holds"): the
publishing side registers a :class:`PeerHold` in the slot when it publishes
(:meth:`Registry.register_hold`), before it applies any compaction of its own;
the reading side takes it over when it records its peer
(:meth:`Peer.take_hold`). Within a slot a hold waits for its peer, or (when
the peer came first) a peer's hold waits for its publication, which then
registers none of its own. A hold nobody takes dies with the publication that
registered it (or with its slot). What a hold pins is the publisher's
business: it attaches a :class:`Pin` to it (:meth:`PeerHold.attach`).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Hashable
from typing import Any, Generic, Protocol, TypeVar

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


class Pin(Protocol):
    """What a peer hold pins once attached: a read hold on a trace."""

    def downgrade(self, time: int) -> None: ...

    def release(self) -> None: ...


@attrs.define(eq=False)
class PeerHold:
    """A logical read hold at ``time`` on one slot's publication.

    Registered by the publisher (``waiting`` for its peer) or by a peer that
    came first (waiting for its publication); ``taken`` once a peer owns it.
    ``time`` only moves forward; the pin attached to it follows."""

    incarnation: Incarnation
    time: int
    _slot: _Slot[Any] | None
    taken: bool = False
    released: bool = False
    _pin: Pin | None = None

    @property
    def attached(self) -> bool:
        return self._pin is not None

    def attach(self, pin: Callable[[int], Pin]) -> None:
        """Pin what the hold holds (once; nothing for a released hold)."""
        if self._pin is None and not self.released:
            self._pin = pin(self.time)

    def downgrade(self, time: int) -> None:
        """Move the hold forward to ``time`` (never back)."""
        if time > self.time and not self.released:
            self.time = time
            if self._pin is not None:
                self._pin.downgrade(time)

    def release(self) -> None:
        """Let go: idempotent; a waiting hold leaves its slot."""
        if self.released:
            return
        self.released = True
        slot, self._slot = self._slot, None
        if slot is not None:
            for queue in (slot.waiting, slot.prepaid):
                if self in queue:
                    queue.remove(self)
        if self._pin is not None:
            self._pin.release()
            self._pin = None


@attrs.frozen
class RegistryStatistics:
    """A snapshot of a registry: its slots, and for each its current
    publisher's serial (``None`` when it has none) and how many peers hold it."""

    slots: tuple[tuple[Incarnation, int | None, int], ...]
    # Peer holds registered and not taken yet, over every slot.
    waiting_holds: int = 0


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

    def take_hold(self, time: int) -> PeerHold:
        """:meth:`Registry.take_hold` of this peer's slot."""
        return self._slot.registry.take_hold(self.incarnation, time)

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
    # Holds a publication registered that no peer took yet, oldest first.
    waiting: list[PeerHold] = attrs.field(factory=list)
    # Holds peers took before the publication they hold came, oldest first.
    prepaid: list[PeerHold] = attrs.field(factory=list)


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

    def register_hold(self, incarnation: Incarnation, time: int) -> PeerHold:
        """The publishing side registers the peer hold of a publication of
        ``incarnation`` (before it applies any compaction of the index),
        at ``time`` (the as_of of the index's create): a hold waiting for its
        peer, or the oldest hold a peer already took for this publication to
        come. The publisher attaches what it pins once it has it, and
        releases the hold if it drops before a peer took it."""
        slot = self._slot(incarnation)
        if slot.prepaid:
            return slot.prepaid.pop(0)
        hold = PeerHold(incarnation, time, slot)
        slot.waiting.append(hold)
        return hold

    def take_hold(self, incarnation: Incarnation, time: int) -> PeerHold:
        """The reading side takes over the oldest hold the slot's
        publications registered and no peer took (moved forward to ``time``);
        if there is none, it registers its own at ``time``, and (with no live
        publication) marks the publication to come as already held: that
        one registers none. The caller pins a hold of a live publication."""
        slot = self._slot(incarnation)
        if slot.waiting:
            hold = slot.waiting.pop(0)
            hold.downgrade(time)
        else:
            hold = PeerHold(incarnation, time, slot)
            if slot.current is None:
                slot.prepaid.append(hold)
        hold.taken = True
        return hold

    def _slot(self, incarnation: Incarnation) -> _Slot[T]:
        slot = self._slots.get(incarnation)
        if slot is None:
            slot = self._slots[incarnation] = _Slot(incarnation, self)
        return slot

    def _collect(self, slot: _Slot[T]) -> None:
        if slot.current is None and not slot.peers:
            self._slots.pop(slot.incarnation, None)
            # A hold nobody takes dies with its slot.
            for hold in slot.waiting + slot.prepaid:
                hold.release()

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
            ),
            sum(len(slot.waiting) for slot in self._slots.values()),
        )
