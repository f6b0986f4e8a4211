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
    # Gauges: the last value each source (a worker) set, by name.
    gauges: dict[str, dict[str, int]] = attrs.field(factory=dict)
    _listeners: Listeners = attrs.field(factory=lambda: Listeners("the metrics"))

    def add(self, name: str, amount: int) -> None:
        if amount:
            self.values[name] += amount
            self._listeners.notify()

    def set_gauge(self, name: str, source: str, value: int) -> None:
        """A gauge of one source (a worker) is now ``value``."""
        by_source = self.gauges.setdefault(name, {})
        if by_source.get(source, 0) != value:
            by_source[source] = value
            self._listeners.notify()

    def value(self, name: str) -> int:
        """A counter's sum, or a gauge's largest value over its sources."""
        by_source = self.gauges.get(name)
        if by_source is not None:
            return max(by_source.values(), default=0)
        return self.values.get(name, 0)

    def listen(self, wake: Callable[[], None]) -> Callable[[], None]:
        """Call ``wake`` after every change; return the function that stops it."""
        return self._listeners.listen(wake)
