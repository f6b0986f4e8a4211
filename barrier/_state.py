"""The barrier's state, without Trio: each side's latest arrival, and the
waiters parked until the other side catches up."""

from __future__ import annotations

import enum

import attrs


class BarrierError(Exception):
    """Base class of the errors of the ``barrier`` package."""


class ArrivalRegressionError(BarrierError):
    """A side arrived at a position below its own latest arrival."""


class BarrierBrokenError(BarrierError):
    """The barrier stopped (or failed) while a side waited at it."""


class Side(enum.StrEnum):
    """The two runtimes that meet at a barrier."""

    MAINTENANCE = "maintenance"
    INTERACTIVE = "interactive"

    @property
    def other(self) -> Side:
        return Side.INTERACTIVE if self is Side.MAINTENANCE else Side.MAINTENANCE


@attrs.frozen
class BarrierStatistics:
    """A snapshot: each side's latest arrival (``None`` before its first) and
    which sides have a waiter parked."""

    maintenance: int | None
    interactive: int | None
    waiting: tuple[Side, ...]


@attrs.define(eq=False)
class BarrierState:
    """Each side's latest arrival: an arrival overwrites the side's older one.

    A waiter at position ``p`` passes once the other side's latest arrival is
    ``>= p``: the same connection, or a later one.
    """

    # Invariant: a side's latest arrival never decreases.
    _latest: dict[Side, int] = attrs.field(factory=dict)

    def latest(self, side: Side) -> int | None:
        return self._latest.get(side)

    def arrive(self, side: Side, position: int) -> None:
        """Record ``side``'s arrival at ``position``, overwriting its older one.
        An arrival below the side's latest is refused and changes nothing."""
        latest = self._latest.get(side)
        if latest is not None and position < latest:
            raise ArrivalRegressionError(
                f"{side} arrived at position {position} after position {latest}"
            )
        self._latest[side] = position

    def passes(self, side: Side, position: int) -> bool:
        """Whether a waiter of ``side`` at ``position`` may pass now."""
        other = self._latest.get(side.other)
        return other is not None and other >= position

    def statistics(self, waiting: tuple[Side, ...] = ()) -> BarrierStatistics:
        return BarrierStatistics(
            maintenance=self._latest.get(Side.MAINTENANCE),
            interactive=self._latest.get(Side.INTERACTIVE),
            waiting=waiting,
        )
