"""Exchanges: how the workers of one runtime move updates between them.

An operator that needs all updates of a key at one worker (a reduce, a join,
an index export) routes them through an :class:`Exchange` shared by the
runtime's workers: each worker sends what it has to the worker each update
belongs to, and says up to which time it has sent everything. A worker's
input from the exchange is complete below the minimum of what every worker
said (:meth:`Exchange.frontier`), so it processes exactly the times no worker
can still send.

Every worker builds the same dataflows in the same order (they apply the same
commands in the same order), so the n-th dataflow a worker builds is the same
on every worker; its exchanges are found in the runtime's :class:`Fabric` by
``(n, k)``, the dataflow's number and the exchange's place in it, as timely
dataflow identifies channels by construction order.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable

import attrs

from ..model._rows import Row, Update
from ._arrangement import column_router, key_function, stable_hash
from ._stream import Operator, Queue, Stream

CLOSED = 2**64
"""A frontier past every time: nothing more will come."""


@attrs.define(eq=False)
class Exchange:
    """The channel between the ``workers`` workers of one operator."""

    workers: int
    queues: list[list[Update]] = attrs.field()
    # What each worker said it has sent everything before; None until it
    # started (it holds everyone back), CLOSED once it left.
    sent: list[int | None] = attrs.field()
    wakes: list[Callable[[], None] | None] = attrs.field()
    joined: int = 0

    @queues.default
    def _queues(self) -> list[list[Update]]:
        return [[] for _ in range(self.workers)]

    @sent.default
    def _sent(self) -> list[int | None]:
        return [None] * self.workers

    @wakes.default
    def _wakes(self) -> list[Callable[[], None] | None]:
        return [None] * self.workers

    def join(self, worker: int, wake: Callable[[], None]) -> None:
        self.wakes[worker] = wake
        self.joined += 1

    def leave(self, worker: int) -> None:
        """``worker`` dropped the dataflow: it holds nobody back any more."""
        self.wakes[worker] = None
        self.queues[worker] = []
        self._say(worker, CLOSED)

    def send(self, worker: int, batches: dict[int, list[Update]]) -> None:
        """Deliver each batch to the worker it is keyed by (dropped if that
        worker left); wake those."""
        for destination, updates in batches.items():
            if not updates or self.sent[destination] == CLOSED:
                continue
            self.queues[destination].extend(updates)
            wake = self.wakes[destination]
            if destination != worker and wake is not None:
                wake()

    def say(self, worker: int, frontier: int) -> None:
        """``worker`` has sent everything before ``frontier``."""
        self._say(worker, frontier)

    def _say(self, worker: int, frontier: int) -> None:
        previous = self.sent[worker]
        if previous is not None and frontier <= previous:
            return
        self.sent[worker] = frontier
        for other, wake in enumerate(self.wakes):
            if other != worker and wake is not None:
                wake()

    def take(self, worker: int) -> list[Update]:
        """What has arrived for ``worker``, and nothing twice."""
        arrived = self.queues[worker]
        if arrived:
            self.queues[worker] = []
        return arrived

    def frontier(self) -> int | None:
        """Every update before this has arrived, at every worker."""
        known = [sent for sent in self.sent if sent is not None]
        return min(known) if len(known) == self.workers else None


@attrs.define(eq=False)
class Fabric:
    """The exchanges of one runtime's workers, by (dataflow number, place)."""

    workers: int
    _exchanges: dict[tuple[int, int], Exchange] = attrs.field(factory=dict)

    def exchange(self, dataflow: int, place: int) -> Exchange:
        key = (dataflow, place)
        exchange = self._exchanges.get(key)
        if exchange is None:
            exchange = self._exchanges[key] = Exchange(self.workers)
        return exchange

    def release(self, dataflow: int, place: int, worker: int) -> None:
        """``worker`` is done with the exchange; it goes once all are."""
        key = (dataflow, place)
        exchange = self._exchanges.get(key)
        if exchange is None:
            return
        exchange.leave(worker)
        if all(sent == CLOSED for sent in exchange.sent):
            del self._exchanges[key]

    def __len__(self) -> int:
        return len(self._exchanges)


@attrs.define(eq=False)
class Exchanged(Operator):
    """Sends each update to the worker ``route`` says, and passes on what
    arrives for this worker; its frontier is the exchange's."""

    input: Stream
    queue: Queue
    exchange: Exchange
    worker: int
    route: Callable[[Row], int]
    out: Stream = attrs.field(factory=Stream)

    def step(self) -> None:
        updates = self.queue.take()
        if updates:
            route = self.route
            batches: dict[int, list[Update]] = defaultdict(list)
            for destination, update in zip([route(u[0]) for u in updates], updates, strict=True):
                batches[destination].append(update)
            self.exchange.send(self.worker, batches)
        if self.input.frontier is not None:
            self.exchange.say(self.worker, self.input.frontier)
        self.out.push(self.exchange.take(self.worker))
        self.out.frontier = self.exchange.frontier()


def router(key: tuple[int, ...], workers: int) -> Callable[[Row], int]:
    """Routes rows by the stable hash of their ``key`` columns."""
    if workers == 1:
        return lambda row: 0
    if not key:
        everything = stable_hash(()) % workers
        return lambda row: everything
    if len(key) == 1:
        return column_router(key[0], workers)
    key_of_row = key_function(key)
    return lambda row: stable_hash(key_of_row(row)) % workers
