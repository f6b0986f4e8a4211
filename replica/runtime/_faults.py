"""Fault injection for simulation runs, driven by the run's seed; off by default.

Each site asks the plan whether to fault now, and the plan answers from its
own ``random.Random``, seeded from the replica's seed: the same seed (and the
same program) gives the same faults. The sites:

* ``delay_delivery``: the multiplexer delays what it forwards to one runtime
  for a random virtual time (everything forwarded meanwhile waits behind it,
  in order), so one runtime lags the other;
* ``lose_hello``: a reconnect's ``Hello`` never reaches a non-zero process, so
  that process serves the connection without recording it;
* ``delay_hello``: a reconnect's ``Hello`` reaches a non-zero process only
  after a random virtual delay;
* ``late_arrival``: a worker arrives at the reconcile barrier after a random
  virtual delay;
* ``reconnect``: the controller goes away in the middle of a reconciliation
  and reconnects, replaying what it had sent of it (the spec driver's site):
  the old connection's response sends fail, so its adapters leave it and drop
  the commands still queued for it.

Faults only delay or lose what the design says may be delayed or lost; once
they stop, every barrier wait passes and every read answers.
"""

from __future__ import annotations

import random

import attrs
import trio


@attrs.frozen
class FaultPlan:
    """How often each fault fires (a probability per chance), and how long a
    delay lasts at most (virtual seconds). ``FaultPlan()`` injects nothing."""

    rate: float = attrs.field(
        default=0.0, validator=[attrs.validators.ge(0), attrs.validators.le(1)]
    )
    max_delay: float = attrs.field(default=1.0, validator=attrs.validators.gt(0))

    @property
    def active(self) -> bool:
        return self.rate > 0


@attrs.define(eq=False)
class Faults:
    """A plan in a run: its decisions, and a count of the faults injected."""

    plan: FaultPlan
    random: random.Random
    injected: dict[str, int] = attrs.field(factory=dict)
    # Faults whose delay has not run out yet (a sleeping task each).
    pending: int = 0
    _quiet: trio.Event | None = None

    @classmethod
    def seeded(cls, plan: FaultPlan, seed: int) -> Faults:
        return cls(plan, random.Random(f"faults/{seed}"))

    def _fires(self, site: str) -> bool:
        if not self.plan.active or self.random.random() >= self.plan.rate:
            return False
        self.injected[site] = self.injected.get(site, 0) + 1
        return True

    def _delay(self) -> float:
        return round(self.random.uniform(0.001, self.plan.max_delay), 3)

    def delay_delivery(self) -> float | None:
        """A delay before forwarding to a runtime, or ``None``."""
        return self._delay() if self._fires("delay_delivery") else None

    def lose_hello(self, processes: int) -> frozenset[int]:
        """The non-zero processes whose ``Hello`` of a new connection is lost."""
        return frozenset(p for p in range(1, processes) if self._fires("lose_hello"))

    def delay_hello(self, processes: int) -> dict[int, float]:
        """The non-zero processes whose ``Hello`` arrives late, and how late."""
        return {p: self._delay() for p in range(1, processes) if self._fires("delay_hello")}

    def reconnect(self) -> bool:
        """Whether the controller goes away (and reconnects) now."""
        return self._fires("reconnect")

    def started(self) -> None:
        """A delaying fault began its wait."""
        self.pending += 1

    def finished(self) -> None:
        """A delaying fault's wait ended."""
        self.pending -= 1
        if self.pending == 0 and self._quiet is not None:
            self._quiet.set()
            self._quiet = None

    async def wait_quiet(self) -> None:
        """Return once no delaying fault is waiting (a checkpoint)."""
        if self.pending == 0:
            await trio.lowlevel.checkpoint()
            return
        if self._quiet is None:
            self._quiet = trio.Event()
        await self._quiet.wait()

    def late_arrival(self) -> float | None:
        """A delay before arriving at the barrier, or ``None``."""
        return self._delay() if self._fires("late_arrival") else None
