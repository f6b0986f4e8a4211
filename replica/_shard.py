"""Shards: shared append-only logs of rows with an upper, like persist shards
(DESIGN.md §2.5). A write wakes every dataflow that reads the shard."""

from __future__ import annotations

from collections.abc import Callable, Iterable

import attrs

from ._errors import UpperRegressionError, WriteBelowUpperError
from ._protocol import Row


@attrs.define(eq=False)
class Shard:
    """An append-only log of ``(ts, row)`` updates; every time before ``upper`` is complete.

    A write at ``ts`` needs ``ts >= upper`` and sets ``upper = ts + 1``.
    """

    name: str
    # Invariant: every update's ts is below upper, and the ts are non-decreasing.
    upper: int = 0
    updates: list[tuple[int, Row]] = attrs.field(factory=list)
    _listeners: dict[int, Callable[[], None]] = attrs.field(factory=dict)
    _next_listener: int = 0

    def write(self, ts: int, rows: Iterable[Row]) -> int:
        """Append ``rows`` at ``ts``; return how many. Raises
        :class:`~replica.WriteBelowUpperError` (and writes nothing) if
        ``ts`` is below the upper."""
        if ts < self.upper:
            raise WriteBelowUpperError(f"write at ts {ts} is below the shard upper {self.upper}")
        batch = [(ts, row) for row in rows]
        self.updates.extend(batch)
        self.upper = ts + 1
        self._notify()
        return len(batch)

    def advance(self, upper: int) -> None:
        """Move the upper to ``upper`` without data. Raises
        :class:`~replica.UpperRegressionError` if that would move it back."""
        if upper < self.upper:
            raise UpperRegressionError(f"upper {upper} is below the shard upper {self.upper}")
        if upper > self.upper:
            self.upper = upper
            self._notify()

    def listen(self, wake: Callable[[], None]) -> Callable[[], None]:
        """Call ``wake`` after every change; return the function that stops it."""
        key = self._next_listener
        self._next_listener += 1
        self._listeners[key] = wake

        def stop() -> None:
            self._listeners.pop(key, None)

        return stop

    def _notify(self) -> None:
        for wake in list(self._listeners.values()):
            wake()


@attrs.define(eq=False)
class ShardCatalog:
    """The shards of a deployment, by name; a shard exists once it is named."""

    shards: dict[str, Shard] = attrs.field(factory=dict)

    def shard(self, name: str) -> Shard:
        shard = self.shards.get(name)
        if shard is None:
            shard = self.shards[name] = Shard(name)
        return shard
