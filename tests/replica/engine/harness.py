"""A runtime's workers stepped by hand, for the dataflow engine's tests.

:class:`Workers` builds ``W`` :class:`~replica.ComputeState` s sharing one
:class:`~replica.engine._exchange.Fabric`, one shard catalog and one set of metrics,
as a runtime's workers do, and lets a test choose which worker applies a
command and which steps next. A worker's ``wake`` marks it woken; ``settle``
steps woken workers (in an order the test picks) until none is, which is what
the worker loop does, so a missing wake shows up as a frontier that stays
behind. The brute-force evaluation of plans on row multisets the tests check
the engine against is the reference model's (:func:`evaluate`, from
:mod:`replica.driver.oracle._evaluate`).
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterable, Sequence

import attrs

from replica import (
    Command,
    ComputeState,
    CreateInstance,
    DataflowDescription,
    GlobalId,
    IndexPart,
    Metrics,
    PeekResponse,
    Response,
    Row,
    ShardCatalog,
    SinkPart,
    SubscribeBatch,
    Update,
)
from replica.driver.oracle._evaluate import evaluate as evaluate
from replica.engine._exchange import Fabric
from replica.engine._stream import Operator, Queue
from replica.model._rows import accumulate as model_accumulate
from replica.model._rows import consolidate as model_consolidate

U = GlobalId.user

STEP_LIMIT = 10_000
"""Steps ``settle`` takes at most: more means a worker keeps waking itself."""


@attrs.define(eq=False)
class Workers:
    """``W`` workers of one runtime, stepped by the test."""

    states: list[ComputeState]
    shards: ShardCatalog
    metrics: Metrics
    fabric: Fabric
    woken: list[bool]
    # Every response each worker sent, in order.
    responses: list[list[Response]]

    @classmethod
    def start(cls, workers: int, *, shards: ShardCatalog | None = None) -> Workers:
        """``workers`` workers that applied ``CreateInstance``."""
        shards = ShardCatalog() if shards is None else shards
        metrics, fabric = Metrics(), Fabric(workers)
        woken = [False] * workers
        states = [
            ComputeState(
                worker,
                workers,
                shards,
                wake=_waker(woken, worker),
                fabric=fabric,
                metrics=metrics,
            )
            for worker in range(workers)
        ]
        runtime = cls(states, shards, metrics, fabric, woken, [[] for _ in states])
        runtime.apply(CreateInstance())
        return runtime

    @property
    def count(self) -> int:
        return len(self.states)

    def apply(self, command: Command, workers: Iterable[int] | None = None) -> None:
        """Every worker (or those named) applies ``command``."""
        for worker in range(self.count) if workers is None else workers:
            self.states[worker].apply(command)
            self.responses[worker].extend(self.states[worker].drain())

    def step(self, worker: int) -> None:
        self.woken[worker] = False
        self.states[worker].step()
        self.responses[worker].extend(self.states[worker].drain())

    def settle(self, rng: random.Random | None = None) -> int:
        """Step woken workers (the first woken one, or one ``rng`` picks)
        until none is woken; return how many steps that took."""
        steps = 0
        while any(self.woken):
            woken = [worker for worker, flag in enumerate(self.woken) if flag]
            self.step(woken[0] if rng is None else rng.choice(woken))
            steps += 1
            assert steps < STEP_LIMIT, "the workers never stop waking each other"
        return steps

    def index(self, id: GlobalId | int, worker: int) -> IndexPart:
        part = self.states[worker].collections[_id(id)]
        assert isinstance(part, IndexPart), f"{id} is an index at worker {worker}"
        return part

    def sink(self, id: GlobalId | int, worker: int) -> SinkPart:
        part = self.states[worker].collections[_id(id)]
        assert isinstance(part, SinkPart), f"{id} is a sink at worker {worker}"
        return part

    def frontier(self, id: GlobalId | int) -> int | None:
        """Index ``id``'s upper: the least over the workers' parts (None
        while a part knows none)."""
        uppers = [self.index(id, worker).frontier for worker in range(self.count)]
        if any(upper is None or upper.time is None for upper in uppers):
            return None
        return min(upper.time for upper in uppers if upper is not None and upper.time is not None)

    def part_rows(self, id: GlobalId | int, worker: int, ts: int) -> Counter[Row]:
        """Worker ``worker``'s part of index ``id`` at ``ts``, read at once."""
        scan = self.index(id, worker).scan(ts, None)
        scan.run()
        return Counter(scan.rows())

    def rows(self, id: GlobalId | int, ts: int) -> Counter[Row]:
        """Index ``id`` at ``ts``: every worker's part."""
        total: Counter[Row] = Counter()
        for worker in range(self.count):
            total.update(self.part_rows(id, worker, ts))
        return total

    def answers(self, uuid: int) -> list[PeekResponse]:
        """Each worker's answer to peek ``uuid`` so far."""
        return [
            response
            for sent in self.responses
            for response in sent
            if isinstance(response, PeekResponse) and response.uuid == uuid
        ]

    def batches(self, id: GlobalId | int, worker: int) -> list[SubscribeBatch]:
        return [
            response
            for response in self.responses[worker]
            if isinstance(response, SubscribeBatch) and response.id == _id(id)
        ]

    def operators(self, id: GlobalId | int) -> list[list[Operator]]:
        """Each worker's operators of the dataflow exporting ``id``."""
        found: list[list[Operator]] = []
        for state in self.states:
            export = state.collections[_id(id)]
            assert isinstance(export, IndexPart | SinkPart), f"{id} is rendered here"
            found.append(export.dataflow.operators)
        return found


def _waker(woken: list[bool], worker: int) -> _Wake:
    return _Wake(woken, worker)


@attrs.frozen
class _Wake:
    woken: list[bool]
    worker: int

    def __call__(self) -> None:
        self.woken[self.worker] = True


def _id(id: GlobalId | int) -> GlobalId:
    return id if isinstance(id, GlobalId) else U(id)


def tap(operators: Sequence[Operator]) -> list[Queue]:
    """A queue on each operator's output: what it pushed from now on."""
    return [operator.out.subscribe() for operator in operators]


def taken(queues: Iterable[Queue]) -> int:
    """How many updates the tapped operators pushed since the last call."""
    return sum(len(queue.take()) for queue in queues)


def consolidate(updates: Iterable[Update]) -> dict[tuple[Row, int], int]:
    """Updates summed by ``(row, time)``, zero sums left out, as a mapping."""
    return {(row, time): diff for row, time, diff in model_consolidate(updates)}


def accumulate(updates: Iterable[Update], ts: int) -> Counter[Row]:
    """The collection at ``ts``, rows whose sum is zero left out."""
    return Counter({row: n for row, n in model_accumulate(updates, ts).items() if n})


def index_of(
    source: int, shard: str, index: int, key: tuple[int, ...], as_of: int = 0
) -> DataflowDescription:
    return DataflowDescription.index(source, shard, index, key, as_of)
