"""``Union``, ``Negate`` and ``Threshold``: a sum of collections, a
collection's negation, and its positive part."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator

import attrs

from ..model._relational import threshold_count
from ..model._rows import Row, Update
from ._reduce import _Reduce
from ._stream import Errors, Operator, Queue, RowLimit, Stream


@attrs.define(eq=False)
class UnionOperator(Operator):
    """Every update of each input; its frontier is the least of theirs. A
    step's updates past :data:`MAX_OPERATOR_ROWS` are left out, the union
    then over (:class:`RowLimit`)."""

    inputs: tuple[Stream, ...]
    queues: tuple[Queue, ...]
    errors: Errors = attrs.field(factory=Errors)
    out: Stream = attrs.field(factory=Stream)
    limit: RowLimit = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        self.limit = RowLimit("union", self.errors)

    def step(self) -> None:
        batches = [queue.take() for queue in self.queues]
        if self.limit.fits(sum(map(len, batches))):
            for batch in batches:
                self.out.push(batch)
        else:
            self.limit.leave_out(min(update[1] for batch in batches for update in batch))
        frontiers = [input.frontier for input in self.inputs]
        if all(frontier is not None for frontier in frontiers):
            self.out.frontier = min(frontiers)  # type: ignore[type-var]


@attrs.define(eq=False)
class NegateOperator(Operator):
    """Each update with its diff negated."""

    input: Stream
    queue: Queue
    out: Stream = attrs.field(factory=Stream)

    def step(self) -> None:
        self.out.push([(row, time, -diff) for row, time, diff in self.queue.take()])
        self.out.frontier = self.input.frontier


@attrs.define(eq=False)
class ThresholdOperator(_Reduce):
    """``Threshold``, its input exchanged by the whole row: a row's count
    moves, and its output moves by the change of the count's positive part."""

    counts: dict[Row, int] = attrs.field(factory=dict)

    def _apply_time(self, time: int, updates: Iterator[Update], output: list[Update]) -> None:
        counts = self.counts
        deltas: dict[Row, int] = defaultdict(int)
        for row, _, diff in updates:
            deltas[row] += diff
        for row, delta in deltas.items():
            old = counts.get(row, 0)
            new = old + delta
            if new:
                counts[row] = new
            else:
                counts.pop(row, None)
            change = threshold_count(new) - threshold_count(old)
            if change:
                output.append((row, time, change))
