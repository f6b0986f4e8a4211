"""Peer holds in the sharing registry: registered by the publisher, taken
over by the peer; a hold waiting for its peer, a peer's hold waiting for its
publication; a hold nobody takes dies with its slot."""

from __future__ import annotations

from collections.abc import Callable

import attrs

from sharing import Incarnation, Registry

I1001 = Incarnation(1001, 0)


@attrs.define
class Pinned:
    """A pin that records what it was told."""

    times: list[int]
    released: bool = False

    def downgrade(self, time: int) -> None:
        self.times.append(time)

    def release(self) -> None:
        self.released = True


def pins() -> tuple[list[Pinned], Callable[[int], Pinned]]:
    made: list[Pinned] = []

    def pin(time: int) -> Pinned:
        made.append(Pinned([time]))
        return made[-1]

    return made, pin


def test_the_peer_takes_over_the_hold_its_publisher_registered() -> None:
    registry: Registry[str] = Registry()
    made, pin = pins()
    hold = registry.register_hold(I1001, 0)
    hold.attach(pin)
    registry.publish(I1001, "part")
    assert registry.statistics().waiting_holds == 1
    peer = registry.bind(I1001, lambda: None)
    taken = peer.take_hold(0)
    assert taken is hold
    assert taken.taken
    assert registry.statistics().waiting_holds == 0
    taken.downgrade(3)
    taken.downgrade(2)  # never back
    assert made[0].times == [0, 3]
    taken.release()
    assert made[0].released


def test_a_peer_that_comes_first_holds_the_publication_to_come() -> None:
    registry: Registry[str] = Registry()
    peer = registry.bind(I1001, lambda: None)
    early = peer.take_hold(0)
    early.downgrade(1)
    # The publication registers none of its own: it gets the peer's.
    hold = registry.register_hold(I1001, 0)
    assert hold is early
    assert hold.time == 1
    assert registry.statistics().waiting_holds == 0


def test_the_oldest_waiting_hold_is_taken_first() -> None:
    registry: Registry[str] = Registry()
    first = registry.register_hold(I1001, 0)
    second = registry.register_hold(I1001, 0)
    registry.publish(I1001, "part")
    peer = registry.bind(I1001, lambda: None)
    assert peer.take_hold(0) is first
    assert registry.statistics().waiting_holds == 1
    assert not second.taken


def test_a_hold_nobody_takes_dies_with_its_slot() -> None:
    registry: Registry[str] = Registry()
    made, pin = pins()
    hold = registry.register_hold(I1001, 0)
    hold.attach(pin)
    publisher = registry.publish(I1001, "part")
    publisher.drop()
    assert I1001 not in registry
    assert hold.released
    assert made[0].released


def test_a_released_hold_attaches_nothing_and_leaves_its_slot() -> None:
    registry: Registry[str] = Registry()
    made, pin = pins()
    hold = registry.register_hold(I1001, 0)
    hold.release()
    hold.attach(pin)
    assert made == []
    assert registry.statistics().waiting_holds == 0
    hold.release()  # idempotent
