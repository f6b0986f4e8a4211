"""Joins: an equi-join of two inputs, each arranged by its key, and the
arrangement of a stream (``ArrangeBy``)."""

from __future__ import annotations

import attrs

from ..model._rows import Row, Update
from ._arrangement import Arrangement
from ._reduce import _by_time, _completed
from ._stream import Errors, Operator, Queue, RowLimit, Stream


@attrs.define(eq=False)
class JoinOperator(Operator):
    """The equi-join of two inputs, each exchanged by its join columns: new
    updates of each side meet everything the other side had, once their
    times are complete, a time at a time (what a time emits is all at it).
    Each time's output is counted before it is built, one look-up a new
    update: past :data:`MAX_OPERATOR_ROWS` the join is over (:class:`RowLimit`)
    and forgets both sides."""

    left: Stream
    left_queue: Queue
    left_key: tuple[int, ...]
    right: Stream
    right_queue: Queue
    right_key: tuple[int, ...]
    errors: Errors = attrs.field(factory=Errors)
    out: Stream = attrs.field(factory=Stream)
    left_pending: list[Update] = attrs.field(factory=list)
    right_pending: list[Update] = attrs.field(factory=list)
    left_state: dict[Row, list[Update]] = attrs.field(factory=dict)
    right_state: dict[Row, list[Update]] = attrs.field(factory=dict)
    limit: RowLimit = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        self.limit = RowLimit("join", self.errors)

    def step(self) -> None:
        self.left_pending.extend(self.left_queue.take())
        self.right_pending.extend(self.right_queue.take())
        if self.limit.over:
            self.left_pending, self.right_pending = [], []
        if self.left.frontier is None or self.right.frontier is None:
            return
        frontier = min(self.left.frontier, self.right.frontier)
        new_left, self.left_pending = _completed(self.left_pending, frontier)
        new_right, self.right_pending = _completed(self.right_pending, frontier)
        if new_left or new_right:
            lefts = {time: list(updates) for time, updates in _by_time(new_left)}
            rights = {time: list(updates) for time, updates in _by_time(new_right)}
            output: list[Update] = []
            for time in sorted(lefts.keys() | rights.keys()):
                if not self._join_time(time, lefts.get(time, []), rights.get(time, []), output):
                    break
            self.out.push(output)
        self.out.frontier = frontier

    def _join_time(
        self, time: int, new_left: list[Update], new_right: list[Update], output: list[Update]
    ) -> bool:
        """Add to ``output`` what one completed time's new updates give: new
        left x (old right + new right), then old left x new right, all at
        ``time`` (the state holds earlier times only). False, with nothing
        added and both sides forgotten, when that does not fit the limit."""
        left_state, right_state = self.left_state, self.right_state
        left_key, right_key = self.left_key, self.right_key
        _arrange(right_state, new_right, right_key)
        lefts = [
            (row, diff, right_state.get(tuple(row[c] for c in left_key), []))
            for row, _, diff in new_left
        ]
        rights = [
            (other, diff, left_state.get(tuple(other[c] for c in right_key), []))
            for other, _, diff in new_right
        ]
        size = sum(len(matches) for _, _, matches in lefts)
        size += sum(len(matches) for _, _, matches in rights)
        if not self.limit.fits(size):
            self.limit.leave_out(time)
            self.left_state, self.right_state = {}, {}
            return False
        for row, diff, others in lefts:
            output.extend(
                ((*row, *other), time, diff * other_diff) for other, _, other_diff in others
            )
        for other, other_diff, rows in rights:
            output.extend(((*row, *other), time, diff * other_diff) for row, _, diff in rows)
        _arrange(left_state, new_left, left_key)
        return True


def _arrange(state: dict[Row, list[Update]], updates: list[Update], key: tuple[int, ...]) -> None:
    for update in updates:
        state.setdefault(tuple(update[0][c] for c in key), []).append(update)


@attrs.define(eq=False)
class Arrange(Operator):
    """An index export's part at this worker: its input (exchanged by the
    index key) goes into the arrangement readers share."""

    input: Stream
    queue: Queue
    arrangement: Arrangement
    out: Stream = attrs.field(factory=Stream)

    def step(self) -> None:
        frontier = self.input.frontier
        self.arrangement.update(self.queue.take(), frontier)
        self.out.frontier = frontier
