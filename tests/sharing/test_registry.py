"""The sharing registry: slots keyed by incarnation, publishers, peers,
bindings that never move, frozen views; and the race, at the registry."""

from __future__ import annotations

import pytest

from sharing import Incarnation, Registry, RegistryStatistics, SlotTakenError

I1001 = Incarnation(1001, 0)


def counter() -> tuple[list[int], object]:
    calls: list[int] = []
    return calls, lambda: calls.append(1)


def test_a_peer_binds_the_current_publisher() -> None:
    registry: Registry[str] = Registry()
    publisher = registry.publish(I1001, "part")
    woken: list[str] = []
    peer = registry.bind(I1001, lambda: woken.append("peer"))
    assert peer.publisher is publisher
    assert woken == ["peer"]
    publisher.changed()
    assert woken == ["peer", "peer"]


def test_a_peer_parks_until_a_publisher_arrives() -> None:
    registry: Registry[str] = Registry()
    woken: list[str] = []
    peer = registry.bind(I1001, lambda: woken.append("peer"))
    assert not peer.bound
    assert woken == []
    publisher = registry.publish(I1001, "part")
    assert peer.publisher is publisher
    assert woken == ["peer"]


def test_a_dropped_publisher_leaves_its_peers_a_frozen_view() -> None:
    registry: Registry[str] = Registry()
    old = registry.publish(I1001, "old part")
    peer = registry.bind(I1001, lambda: None)
    old.drop()
    assert peer.frozen
    assert peer.publisher is old
    assert peer.publisher.value == "old part"


def test_a_binding_never_moves_to_a_later_publisher() -> None:
    registry: Registry[str] = Registry()
    old = registry.publish(I1001, "old")
    peer = registry.bind(I1001, lambda: None)
    old.drop()
    new = registry.publish(I1001, "new")
    assert peer.publisher is old
    assert registry.bind(I1001, lambda: None).publisher is new
    assert (old.serial, new.serial) == (1, 2)


def test_a_slot_lives_while_a_publisher_or_a_peer_holds_it() -> None:
    registry: Registry[str] = Registry()
    publisher = registry.publish(I1001, "part")
    peer = registry.bind(I1001, lambda: None)
    publisher.drop()
    assert I1001 in registry  # the peer holds it
    peer.release()
    assert I1001 not in registry
    registry.bind(Incarnation(7, 1), lambda: None).release()
    assert registry.statistics() == RegistryStatistics(())


def test_incarnations_with_another_as_of_are_other_slots() -> None:
    registry: Registry[str] = Registry()
    registry.publish(I1001, "as of 0")
    later = registry.bind(Incarnation(1001, 5), lambda: None)
    assert not later.bound
    assert registry.statistics() == RegistryStatistics(
        ((Incarnation(1001, 0), 1, 0), (Incarnation(1001, 5), None, 1))
    )


def test_a_second_live_publisher_is_refused_and_changes_nothing() -> None:
    registry: Registry[str] = Registry(name="registry/p0/w0")
    first = registry.publish(I1001, "first")
    with pytest.raises(
        SlotTakenError,
        match=r"^registry/p0/w0: slot 1001@0 is already published by publisher #1 of 1001@0$",
    ):
        registry.publish(I1001, "second")
    assert registry.bind(I1001, lambda: None).publisher is first


def test_the_race_at_the_registry_binding_before_the_drop_freezes() -> None:
    # Interactive reconciles first: its new peer binds the incarnation that
    # maintenance is about to drop, and reads a frozen view ever after.
    registry: Registry[str] = Registry()
    old = registry.publish(I1001, "key [0]")
    old_peer = registry.bind(I1001, lambda: None)
    old_peer.release()  # interactive's drop phase
    new_peer = registry.bind(I1001, lambda: None)  # its create phase, too early
    old.drop()  # maintenance's drop phase
    registry.publish(I1001, "key [1]")  # maintenance's create phase
    assert new_peer.frozen
    assert new_peer.publisher is not None
    assert new_peer.publisher.value == "key [0]"


def test_the_fix_at_the_registry_binding_after_the_drop_sees_the_new_part() -> None:
    # With the barrier, interactive creates only after maintenance dropped.
    registry: Registry[str] = Registry()
    old = registry.publish(I1001, "key [0]")
    old_peer = registry.bind(I1001, lambda: None)
    old_peer.release()  # interactive's drop phase; then it waits at the barrier
    old.drop()  # maintenance's drop phase; then it arrives, and both pass
    new_peer = registry.bind(I1001, lambda: None)  # parks: no publisher yet
    assert not new_peer.bound
    registry.publish(I1001, "key [1]")
    assert new_peer.publisher is not None
    assert new_peer.publisher.value == "key [1]"
    assert not new_peer.frozen
