"""Frontiers: the first time that is not yet complete, or empty (closed).

Time is an integer. A frontier is one integer, the first time that is not yet
complete, or empty: closed, nothing will ever change again.
"""

from __future__ import annotations

import functools

import attrs


@functools.total_ordering
@attrs.frozen
class Frontier:
    """A frontier: ``time`` is the first incomplete time, or ``None`` when empty.

    Frontiers are ordered: ``[3] < [5] < []``. A frontier *has reached* ``ts``
    when every time before ``ts`` is complete (``time >= ts``, or empty).
    """

    time: int | None

    @classmethod
    def at(cls, time: int) -> Frontier:
        return cls(time)

    @classmethod
    def empty(cls) -> Frontier:
        return cls(None)

    @property
    def is_empty(self) -> bool:
        return self.time is None

    def reached(self, ts: int) -> bool:
        """Whether every time before ``ts`` is complete."""
        return self.time is None or self.time >= ts

    def beyond(self, ts: int) -> bool:
        """Whether ``ts`` itself is complete (the frontier is past it)."""
        return self.time is None or self.time > ts

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, Frontier):
            return NotImplemented
        if self.time is None:
            return False
        return other.time is None or self.time < other.time

    def __str__(self) -> str:
        return "[]" if self.time is None else f"[{self.time}]"
