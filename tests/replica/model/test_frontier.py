"""Frontiers, without Trio: their order, and when one has reached a time."""

from __future__ import annotations

from replica import (
    Frontier,
)


def test_frontiers_are_ordered_with_the_empty_frontier_last() -> None:
    assert Frontier.at(3) < Frontier.at(5) < Frontier.empty()
    assert min(Frontier.empty(), Frontier.at(2)) == Frontier.at(2)
    assert not Frontier.empty() < Frontier.empty()
    assert (str(Frontier.at(4)), str(Frontier.empty())) == ("[4]", "[]")


def test_a_frontier_reaches_ts_once_every_earlier_time_is_complete() -> None:
    assert Frontier.at(1).reached(1)
    assert not Frontier.at(1).reached(2)
    assert Frontier.empty().reached(10**9)
    assert Frontier.at(2).beyond(1)
    assert not Frontier.at(2).beyond(2)
