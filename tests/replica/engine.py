"""A runtime's workers stepped by hand, for the dataflow engine's tests.

:class:`Workers` builds ``W`` :class:`~replica.ComputeState` s sharing one
:class:`~replica._exchange.Fabric`, one shard catalog and one set of metrics,
as a runtime's workers do, and lets a test choose which worker applies a
command and which steps next. A worker's ``wake`` marks it woken; ``settle``
steps woken workers (in an order the test picks) until none is, which is what
the worker loop does, so a missing wake shows up as a frontier that stays
behind. Also: a brute-force evaluation of plans on row multisets.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence

import attrs

from replica import (
    Command,
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
from replica._exchange import Fabric
from replica._operators import Operator, Queue, table_rows, top_k_rows
from replica._plan import (
    Constant,
    Filter,
    FlatMap,
    Get,
    Join,
    Map,
    Negate,
    Plan,
    Project,
    Reduce,
    Threshold,
    TopK,
    Union,
)
from replica._scalar import evaluate as scalar_value
from replica._scalar import holds, same
from replica._state import ComputeState
from replica.driver._model import reduce_rows

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
    """Updates summed by ``(row, time)``, zero sums left out."""
    sums: Counter[tuple[Row, int]] = Counter()
    for row, time, diff in updates:
        sums[row, time] += diff
    return {key: diff for key, diff in sums.items() if diff}


def accumulate(updates: Iterable[Update], ts: int) -> Counter[Row]:
    """The collection at ``ts``: every update at or before it, summed (rows
    whose sum is zero left out)."""
    rows: Counter[Row] = Counter()
    for row, time, diff in updates:
        if time <= ts:
            rows[row] += diff
    return Counter({row: count for row, count in rows.items() if count})


def evaluate(plan: Plan, inputs: Mapping[GlobalId, Counter[Row]]) -> Counter[Row]:
    """``plan`` evaluated from scratch on row multisets (``inputs`` by id)."""
    match plan:
        case Get(id):
            return Counter(inputs[id])
        case Project(columns, input):
            out: Counter[Row] = Counter()
            for row, count in evaluate(input, inputs).items():
                out[tuple(row[column] for column in columns)] += count
            return Counter({row: count for row, count in out.items() if count})
        case Reduce(input, aggregates, group_key):
            return reduce_rows(evaluate(input, inputs), aggregates, group_key)
        case Filter(predicates, input):
            rows = evaluate(input, inputs)
            return Counter({row: count for row, count in rows.items() if holds(predicates, row)})
        case Map(scalars, input):
            mapped: Counter[Row] = Counter()
            for row, count in evaluate(input, inputs).items():
                for scalar in scalars:
                    row = (*row, scalar_value(scalar, row))
                mapped[row] += count
            return mapped
        case Join(inputs_, equalities):
            joined: Counter[Row] = Counter({(): 1})
            for input in inputs_:
                side = evaluate(input, inputs)
                joined = Counter(
                    {(*a, *b): m * n for a, m in joined.items() for b, n in side.items()}
                )
            return Counter(
                {
                    row: count
                    for row, count in joined.items()
                    if all(same(row[a], row[b]) for a, b in equalities)
                }
            )
        case Constant(rows, _):
            constant: Counter[Row] = Counter()
            for row, diff in rows:
                constant[row] += diff
            return constant
        case Union(inputs_):
            union: Counter[Row] = Counter()
            for input in inputs_:
                for row, n in evaluate(input, inputs).items():
                    union[row] += n
            return union
        case Negate(input):
            return Counter({row: -n for row, n in evaluate(input, inputs).items()})
        case FlatMap(func, exprs, input):
            flat: Counter[Row] = Counter()
            for row, n in evaluate(input, inputs).items():
                values = [scalar_value(expr, row) for expr in exprs]
                for extra in table_rows(func, values):
                    flat[(*row, *extra)] += n
            return flat
        case Threshold(input):
            return Counter({row: n for row, n in evaluate(input, inputs).items() if n > 0})
        case TopK(input, group_key, order_key, limit, offset):
            groups: dict[Row, dict[Row, int]] = {}
            for row, n in evaluate(input, inputs).items():
                groups.setdefault(tuple(row[c] for c in group_key), {})[row] = n
            top: Counter[Row] = Counter()
            for members in groups.values():
                rows_ = {row: n for row, n in members.items() if n}
                most = (
                    None if limit is None or not rows_ else scalar_value(limit, next(iter(rows_)))
                )
                assert most is None or isinstance(most, int)
                top.update(top_k_rows(rows_, order_key, most, offset))
            return top


def index_of(
    source: int, shard: str, index: int, key: tuple[int, ...], as_of: int = 0
) -> DataflowDescription:
    return DataflowDescription.index(source, shard, index, key, as_of)
