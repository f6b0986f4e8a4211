"""Exchanges between the workers of one runtime across OS processes.

A process holds a :class:`NetFabric` per runtime: its view of every
exchange, with queues for its own workers only. An update for a worker of
another process, and every ``sent`` frontier one of this process's workers
says, go on the link to that process (:class:`~._items.ExchangeUpdates`,
:class:`~._items.ExchangeFrontier`), in
the order the worker sent and said them: one connection per link keeps that
order, so when a process learns that worker ``w`` has sent everything before
``t``, every update ``w`` sent it before ``t`` has already arrived. The
``sent`` frontier of each worker therefore means exactly what it means in
one process, and :meth:`Exchange.frontier` stays the minimum over every
worker of the runtime.
"""

from __future__ import annotations

from collections.abc import Callable

import attrs

from ..engine._exchange import CLOSED, Exchange, Fabric
from ..model._rows import Update
from ._items import ExchangeFrontier, ExchangeUpdates, Item


@attrs.define(eq=False)
class NetExchange(Exchange):
    """An exchange as one process sees it (see the module's docstring)."""

    fabric: NetFabric | None = None
    key: tuple[int, int] = (0, 0)

    def _remote(self) -> NetFabric:
        assert self.fabric is not None
        return self.fabric

    def send(self, worker: int, batches: dict[int, list[Update]]) -> None:
        fabric = self._remote()
        for destination, updates in batches.items():
            if not updates or self.sent[destination] == CLOSED:
                continue
            if fabric.is_local(destination):
                self.queues[destination].extend(updates)
                wake = self.wakes[destination]
                if destination != worker and wake is not None:
                    wake()
            else:
                dataflow, place = self.key
                fabric.put(
                    fabric.process_of(destination),
                    ExchangeUpdates(
                        fabric.epoch(), fabric.runtime, dataflow, place, destination, list(updates)
                    ),
                )

    def _say(self, worker: int, frontier: int) -> None:
        previous = self.sent[worker]
        if previous is not None and frontier <= previous:
            return
        super()._say(worker, frontier)
        fabric = self._remote()
        if fabric.is_local(worker):
            dataflow, place = self.key
            for process in fabric.others():
                fabric.put(
                    process,
                    ExchangeFrontier(
                        fabric.epoch(), fabric.runtime, dataflow, place, worker, frontier
                    ),
                )

    def arrive(self, destination: int, updates: list[Update]) -> None:
        """Updates another process's worker sent to ``destination`` (ours)."""
        if self.sent[destination] == CLOSED:
            return
        self.queues[destination].extend(updates)
        wake = self.wakes[destination]
        if wake is not None:
            wake()

    def heard(self, worker: int, frontier: int) -> None:
        """Another process's ``worker`` has sent everything before ``frontier``."""
        Exchange._say(self, worker, frontier)


@attrs.define(eq=False)
class NetFabric(Fabric):
    """The exchanges of one runtime, as process ``process`` sees them."""

    runtime: str = ""
    process: int = 0
    per_process: int = 1
    processes: int = 1
    # Puts an item on the link to a process.
    send_to: Callable[[int, Item], None] | None = None
    # The epoch the items carry (the generation's last controller reset).
    epoch: Callable[[], int] = lambda: 0

    def is_local(self, worker: int) -> bool:
        return worker // self.per_process == self.process

    def process_of(self, worker: int) -> int:
        return worker // self.per_process

    def others(self) -> range | list[int]:
        return [p for p in range(self.processes) if p != self.process]

    def put(self, process: int, item: Item) -> None:
        assert self.send_to is not None
        self.send_to(process, item)

    def exchange(self, dataflow: int, place: int) -> Exchange:
        return self.net_exchange(dataflow, place)

    def net_exchange(self, dataflow: int, place: int) -> NetExchange:
        key = (dataflow, place)
        exchange = self._exchanges.get(key)
        if exchange is None:
            exchange = self._exchanges[key] = NetExchange(self.workers, fabric=self, key=key)
        assert isinstance(exchange, NetExchange)
        return exchange

    def arrive(self, dataflow: int, place: int, destination: int, updates: list[Update]) -> None:
        self.net_exchange(dataflow, place).arrive(destination, updates)

    def heard(self, dataflow: int, place: int, worker: int, frontier: int) -> None:
        exchange = self.net_exchange(dataflow, place)
        exchange.heard(worker, frontier)
        if frontier == CLOSED and all(sent == CLOSED for sent in exchange.sent):
            del self._exchanges[dataflow, place]
