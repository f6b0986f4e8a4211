"""A replica's metrics: counters by name (``mz_...``, as the real replica
names them), which the ``metrics`` directive and the controller read."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

import attrs

from ._listeners import Listeners


@attrs.define(eq=False)
class Metrics:
    """Counters of a whole replica, by name; listeners are woken on change."""

    values: Counter[str] = attrs.field(factory=Counter)
    _listeners: Listeners = attrs.field(factory=lambda: Listeners("the metrics"))

    def add(self, name: str, amount: int) -> None:
        if amount:
            self.values[name] += amount
            self._listeners.notify()

    def value(self, name: str) -> int:
        return self.values.get(name, 0)

    def listen(self, wake: Callable[[], None]) -> Callable[[], None]:
        """Call ``wake`` after every change; return the function that stops it."""
        return self._listeners.listen(wake)
