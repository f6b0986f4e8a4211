"""The reduce family: operators that hold each group's state and emit, for a
completed time, what changed in each group it touched (``Reduce`` with a
count or aggregates, and the base the threshold and top-k build on)."""

from __future__ import annotations

import itertools
import operator
from collections import defaultdict
from collections.abc import Iterator

import attrs

from ..model._aggregates import AggregateExpr, GroupState
from ..model._rows import Datum, Row, Update
from ..model._scalar import EvalError, evaluate
from ._stream import Errors, Operator, Queue, Stream


def _completed(pending: list[Update], frontier: int) -> tuple[list[Update], list[Update]]:
    """Split into the updates before ``frontier`` (sorted by time) and the rest."""
    done = sorted((u for u in pending if u[1] < frontier), key=lambda u: u[1])
    return done, [u for u in pending if u[1] >= frontier]


def _by_time(done: list[Update]) -> Iterator[tuple[int, Iterator[Update]]]:
    """Updates sorted by time (see :func:`_completed`), a time at a time."""
    return itertools.groupby(done, key=operator.itemgetter(1))


@attrs.define(eq=False)
class _Reduce(Operator):
    """A reduce per group of ``group_key``, its input exchanged by the key:
    each completed time's updates (in time order) change the groups they
    touch, and a group whose row changed retracts the old row and inserts
    the new (:meth:`_changes` says which; an operator whose output is not a
    row per group says what a time changes in :meth:`_apply_time` instead)."""

    input: Stream
    queue: Queue
    group_key: tuple[int, ...]
    out: Stream = attrs.field(init=False, factory=Stream)
    pending: list[Update] = attrs.field(init=False, factory=list)

    def step(self) -> None:
        self.pending.extend(self.queue.take())
        frontier = self.input.frontier
        if frontier is None:
            return
        if self.pending:
            done, self.pending = _completed(self.pending, frontier)
            output: list[Update] = []
            for time, updates in _by_time(done):
                self._apply_time(time, updates, output)
            self.out.push(output)
        self.out.frontier = frontier

    def _apply_time(self, time: int, updates: Iterator[Update], output: list[Update]) -> None:
        """Apply one completed time's ``updates``, adding what the output
        gains and loses at ``time`` to ``output``: by default each changed
        group's old row out and new row in (:meth:`_changes`)."""
        for old, new in self._changes(updates):
            if old is not None:
                output.append((old, time, -1))
            if new is not None:
                output.append((new, time, 1))

    def _changes(self, updates: Iterator[Update]) -> Iterator[tuple[Row | None, Row | None]]:
        """Apply one time's ``updates``; each group's row before and after,
        for the groups whose row changed (``None``: no row)."""
        raise NotImplementedError


@attrs.define(eq=False)
class CountReduce(_Reduce):
    """``count(*)`` per group of ``group_key``: one row per non-empty group,
    its key columns then the count, once for each of the Reduce's
    ``aggregates`` (``aggregates=[count(*), count(*)]`` has two count
    columns; none is ``Distinct``, the group alone)."""

    aggregates: int = 1
    counts: dict[Row, int] = attrs.field(factory=dict)

    def _changes(self, updates: Iterator[Update]) -> Iterator[tuple[Row | None, Row | None]]:
        key, counts, aggregates = self.group_key, self.counts, self.aggregates
        deltas: dict[Row, int] = defaultdict(int)
        for row, _, diff in updates:
            deltas[tuple(row[column] for column in key)] += diff
        for group, delta in deltas.items():
            old = counts.get(group, 0)
            new = old + delta
            if new:
                counts[group] = new
            elif old:
                del counts[group]
            if new == old or (not aggregates and old and new):
                continue  # (no aggregates: a distinct group stays one row)
            yield (
                (*group, *(old,) * aggregates) if old else None,
                (*group, *(new,) * aggregates) if new else None,
            )


@attrs.define(eq=False)
class AggregateReduce(_Reduce):
    """Any aggregates per group of ``group_key``: one row per non-empty
    group, its key columns then each aggregate's result. Each group keeps
    its row count and a :class:`~replica.model._aggregates.GroupState` per
    aggregate."""

    aggregates: tuple[AggregateExpr, ...] = ()
    # Where a row an aggregate's expression fails on goes (it joins no group).
    errors: Errors = attrs.field(factory=Errors)
    # Invariant: a group is here exactly while its row count is not zero.
    groups: dict[Row, tuple[list[int], list[GroupState]]] = attrs.field(factory=dict)

    def _changes(self, updates: Iterator[Update]) -> Iterator[tuple[Row | None, Row | None]]:
        before: dict[Row, Row | None] = {}
        for row, time, diff in updates:
            try:
                inputs = [evaluate(aggregate.expr, row) for aggregate in self.aggregates]
            except EvalError as error:
                self.errors.add(str(error), time, diff)
                continue
            group = tuple(row[column] for column in self.group_key)
            state = self._group(group, before)
            state[0][0] += diff
            for value, values in zip(inputs, state[1], strict=True):
                values.update(value, diff)
        for group, old in before.items():
            new = self._row(group)
            if new != old:
                yield old, new

    def _group(
        self, group: Row, before: dict[Row, Row | None]
    ) -> tuple[list[int], list[GroupState]]:
        if group not in before:
            before[group] = self._row(group)
        state = self.groups.get(group)
        if state is None:
            state = ([0], [GroupState(a.func, a.distinct) for a in self.aggregates])
            self.groups[group] = state
        return state

    def _row(self, group: Row) -> Row | None:
        state = self.groups.get(group)
        if state is None:
            return None
        if not state[0][0]:
            del self.groups[group]
            return None
        results: list[Datum] = [values.result() for values in state[1]]
        return (*group, *results)
