"""Supervision strategies, restart types, the restart budget and back-off, as
plain values and state machines (no Trio needed); the supervisor that applies
them is in :mod:`._supervision`.

The names and rules are Erlang/OTP's (``supervisor.erl``):

* :class:`OneForOne`: restart only the child that ended.
* :class:`OneForAll`: restart every child of the scope: the others are
  cancelled, last started first, then all start again in start order.
* :class:`RestForOne`: restart the child that ended and those started after
  it, the same way; those started before it are untouched.
* :class:`Escalate` (the default, and Trio's own way, not an OTP strategy): a
  failure cancels the scope and propagates to whoever opened it.

Whether a child that ended is restarted depends on its :class:`Restart` type;
each restart counts against the scope's budget (:class:`RestartBudget`: at most
``intensity`` restarts within any ``period`` seconds), and the restart that
would exceed it escalates instead. A :class:`Backoff` on the strategy spaces
the restarts of a child that keeps ending.
"""

from __future__ import annotations

import collections
import enum
import random
from typing import ClassVar

import attrs

from ._core._monitors import ExitReason


class Restart(enum.StrEnum):
    """When a supervisor restarts a child that ended (OTP's restart types)."""

    PERMANENT = "permanent"
    """Always, whatever the end: a return, ``ref.stop()``, a failure, a kill."""
    TRANSIENT = "transient"
    """Only after an abnormal end (it failed or was killed)."""
    TEMPORARY = "temporary"
    """Never; and a one-for-all or rest-for-one restart ends it for good."""

    def wants(self, reason: ExitReason) -> bool:
        """Whether a child of this type is restarted after ending for ``reason``."""
        if self is Restart.PERMANENT:
            return True
        return self is Restart.TRANSIENT and reason.abnormal


@attrs.frozen
class Backoff:
    """Space out the restarts of a child that keeps ending.

    The ``n``-th restart in a row waits ``min(maximum, minimum * multiplier**n)``
    seconds (``n`` from 0), shortened by a random part of up to ``jitter`` of
    itself, drawn from the system's seeded ``random``: so never more than
    ``maximum``, and the same for the same seed. The count starts again at 0
    once a restarted child ran ``reset_after`` seconds (default ``maximum``)
    without ending. The child's mailbox keeps accepting messages while it
    waits; a one-for-all or rest-for-one restart waits once, for the child that
    ended, before the whole group starts again.
    """

    minimum: float = attrs.field(default=0.1, validator=attrs.validators.gt(0))
    maximum: float = attrs.field(default=10.0)
    multiplier: float = attrs.field(default=2.0, validator=attrs.validators.ge(1))
    jitter: float = attrs.field(
        default=0.2, validator=[attrs.validators.ge(0), attrs.validators.le(1)]
    )
    reset_after: float = attrs.field(
        default=attrs.Factory(lambda self: self.maximum, takes_self=True),
        validator=attrs.validators.ge(0),
    )

    @maximum.validator
    def _check_maximum(self, attribute: attrs.Attribute[float], value: float) -> None:
        if not value >= self.minimum:
            raise ValueError(f"'maximum' must be >= minimum {self.minimum!r}: {value!r}")

    def delay(self, streak: int, rng: random.Random) -> float:
        """The wait before the ``streak``-th restart in a row (from 0)."""
        try:
            base = min(self.maximum, self.minimum * self.multiplier ** min(streak, 1024))
        except OverflowError:  # a streak long past the maximum
            base = self.maximum
        return base * (1 - self.jitter * rng.random())


@attrs.frozen
class Escalate:
    """A failure cancels every sibling in the scope and propagates to whoever
    opened it (Trio's nursery rule; the default). Nothing is restarted; an
    actor whose behaviour returns, is stopped or is killed just ends."""


@attrs.frozen
class _Restarting:
    kind: ClassVar[str]
    intensity: int = attrs.field(default=1, validator=attrs.validators.ge(0))
    period: float = attrs.field(default=5.0, validator=attrs.validators.gt(0))
    backoff: Backoff | None = None


@attrs.frozen
class OneForOne(_Restarting):
    """Restart only the child that ended: at most ``intensity`` restarts in
    ``period`` seconds (OTP's defaults, 1 in 5), each after ``backoff`` if
    given (default: at once, as OTP)."""

    kind: ClassVar[str] = "one-for-one"


@attrs.frozen
class OneForAll(_Restarting):
    """Restart every child of the scope when one ends (and is to be
    restarted): cancel the others, last started first, then start them all
    again in start order. Temporary children are not restarted. The budget and
    back-off as :class:`OneForOne`."""

    kind: ClassVar[str] = "one-for-all"


@attrs.frozen
class RestForOne(_Restarting):
    """Restart the child that ended and every child started after it, as
    :class:`OneForAll` does for all; those started before it are untouched."""

    kind: ClassVar[str] = "rest-for-one"


Strategy = Escalate | OneForOne | OneForAll | RestForOne
"""How a supervisor's scope answers the end of a child."""

RestartingStrategy = OneForOne | OneForAll | RestForOne


@attrs.define(eq=False)
class RestartBudget:
    """OTP's restart intensity as a plain state machine (no Trio needed).

    A restart at time ``now`` is allowed when, counting it, no more than
    ``intensity`` restarts happened in ``[now - period, now]``: OTP's
    ``add_restart`` in ``supervisor.erl``, which keeps the restarts at or after
    ``now - period`` and allows the new one if they number at most
    ``intensity``. OTP counts in whole seconds (``erlang:monotonic_time(1)``);
    this counts on Trio's clock, in fractions of a second, and agrees with OTP
    whenever the times are whole.
    """

    intensity: int
    period: float
    # Invariant: the times are non-decreasing (Trio's clock never goes back).
    _restarts: collections.deque[float] = attrs.field(factory=collections.deque)

    @classmethod
    def for_strategy(cls, strategy: RestartingStrategy) -> RestartBudget:
        return cls(strategy.intensity, strategy.period)

    def try_restart(self, now: float) -> bool:
        assert not self._restarts or now >= self._restarts[-1], "time went backwards"
        threshold = now - self.period
        while self._restarts and self._restarts[0] < threshold:
            self._restarts.popleft()
        self._restarts.append(now)
        return len(self._restarts) <= self.intensity

    @property
    def recent(self) -> int:
        """How many restarts the window holds (the last one counted included)."""
        return len(self._restarts)
