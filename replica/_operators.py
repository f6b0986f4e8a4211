"""The operators a dataflow is made of, at one worker.

Data moves as updates ``(row, time, diff)``; an operator's work is
proportional to the updates it receives (and the state it must look up),
never a recomputation from scratch. Each operator has an output
:class:`Stream`: the updates it produced, pushed to each consumer's
:class:`Queue`, and its frontier (every update before it has been pushed;
``None`` until it first learned one).

Stateless operators (``Project``, ``Map``, ``Filter``) pass updates on at once. Stateful ones
(``Reduce``, ``Join``, the sinks) hold updates until their input frontier
passes their time, then process the completed times in order, so what they
emit for a time never changes afterwards.

An expression that fails on a row (:class:`~replica._scalar.EvalError`)
puts the row's update into :class:`Errors` instead, as an error with the
update's time and diff: a retraction of the row retracts the error.
"""

from __future__ import annotations

import bisect
import functools
import itertools
import operator
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence

import attrs

from ._aggregates import AggregateExpr, GroupState
from ._arrangement import Arrangement, column_router, key_function, stable_hash
from ._exchange import Exchange
from ._protocol import Datum, Row, Update
from ._scalar import EvalError, Scalar, evaluate, ordered
from ._shard import Partitioned, Shard


@attrs.define(eq=False)
class Queue:
    """What one consumer has not taken yet of a stream."""

    items: list[Update] = attrs.field(factory=list)

    def take(self) -> Sequence[Update]:
        """What the consumer has not taken yet, and nothing twice (an empty
        queue hands back its own empty list, to be read only: a dataflow
        stepped with nothing new allocates nothing)."""
        items = self.items
        if items:
            self.items = []
        return items


@attrs.define(eq=False)
class Stream:
    """An operator's output at one worker."""

    queues: list[Queue] = attrs.field(factory=list)
    frontier: int | None = None

    def subscribe(self) -> Queue:
        queue = Queue()
        self.queues.append(queue)
        return queue

    def push(self, updates: Sequence[Update]) -> None:
        if updates:
            for queue in self.queues:
                queue.items.extend(updates)


@attrs.define(eq=False)
class Errors:
    """The evaluation errors of some operators at one worker: a collection
    of messages, ``(message, time) -> diff``, consolidated as it grows."""

    counts: dict[tuple[str, int], int] = attrs.field(factory=dict)

    def add(self, message: str, time: int, diff: int) -> None:
        key = (message, time)
        total = self.counts.get(key, 0) + diff
        if total:
            self.counts[key] = total
        else:
            self.counts.pop(key, None)

    def at(self, ts: int) -> str | None:
        """The least message the collection holds at ``ts``, if any."""
        if not self.counts:
            return None
        totals: dict[str, int] = defaultdict(int)
        for (message, time), diff in self.counts.items():
            if time <= ts:
                totals[message] += diff
        held = [message for message, total in totals.items() if total]
        return min(held) if held else None


def first_error(errors: Sequence[Errors], ts: int) -> str | None:
    """The least message any of ``errors`` holds at ``ts``."""
    found = [message for log in errors if (message := log.at(ts)) is not None]
    return min(found) if found else None


@attrs.define(eq=False)
class Times:
    """The times a dataflow covers: ``as_of`` (it may move up, when a
    reconciliation keeps the dataflow for a later one) up to ``until``."""

    as_of: int
    until: int | None = None

    def admit(self, updates: Sequence[Update]) -> list[Update]:
        """Updates before ``as_of`` advanced to it; those at or after
        ``until`` left out."""
        as_of, until = self.as_of, self.until
        if until is None:
            return [u if u[1] >= as_of else (u[0], as_of, u[2]) for u in updates]
        return [u if u[1] >= as_of else (u[0], as_of, u[2]) for u in updates if u[1] < until]

    def cap(self, frontier: int) -> int:
        """A frontier never before ``as_of``, never past ``until``."""
        frontier = max(frontier, self.as_of)
        return frontier if self.until is None else min(frontier, self.until)


class Operator:
    """One operator at one worker."""

    out: Stream

    def step(self) -> None:
        raise NotImplementedError

    def close(self) -> None:
        """The dataflow is dropped: stop listening to anything."""


@attrs.define(eq=False)
class ShardSource(Operator):
    """Reads a shard: this worker takes every ``workers``-th update."""

    shard: Shard
    times: Times
    worker: int
    workers: int
    stop_listening: Callable[[], None]
    out: Stream = attrs.field(factory=Stream)
    cursor: int = 0

    def step(self) -> None:
        updates, end = self.shard.updates, len(self.shard.updates)
        if end > self.cursor:
            start = self.cursor + (self.worker - self.cursor) % self.workers
            self.out.push(self.times.admit(updates[start : end : self.workers]))
            self.cursor = end
        self.out.frontier = self.times.cap(self.shard.upper)

    def close(self) -> None:
        self.stop_listening()


@attrs.define(eq=False)
class KeyedShardSource(Operator):
    """Reads a shard for an index of it: this worker takes the updates whose
    key routes to it, so the index needs no exchange (the shard routes each
    update once, for all the workers: :class:`~replica._shard.Partitioned`)."""

    shard: Shard
    times: Times
    worker: int
    # The shard's updates split by the key's route, shared with the other
    # workers' sources (each update is routed once, not once per worker).
    partitioned: Partitioned
    stop_listening: Callable[[], None]
    out: Stream = attrs.field(factory=Stream)
    cursor: int = 0

    def step(self) -> None:
        mine = self.partitioned.part(self.worker)
        end = len(mine)
        if end > self.cursor:
            self.out.push(self.times.admit(mine[self.cursor : end]))
            self.cursor = end
        self.out.frontier = self.times.cap(self.shard.upper)

    def close(self) -> None:
        self.stop_listening()


@attrs.define(eq=False)
class ArrangementSource(Operator):
    """Reads this worker's part of an imported index, through ``provider``
    (``None`` while the part is not published yet: the import waits)."""

    provider: Callable[[], Arrangement | None]
    times: Times
    wake: Callable[[], None]
    out: Stream = attrs.field(factory=Stream)
    cursor: int = 0
    arrangement: Arrangement | None = None
    stop_listening: Callable[[], None] | None = None

    def step(self) -> None:
        arrangement = self.provider()
        if arrangement is None:
            return
        if arrangement is not self.arrangement:
            assert self.arrangement is None, "an import reads one arrangement for good"
            self.arrangement = arrangement
            self.stop_listening = arrangement.listen(self.wake)
        log = arrangement.log
        if len(log) > self.cursor:
            self.out.push(self.times.admit(log[self.cursor :]))
            self.cursor = len(log)
        if arrangement.upper is not None:
            self.out.frontier = self.times.cap(arrangement.upper)

    def close(self) -> None:
        if self.stop_listening is not None:
            self.stop_listening()


@attrs.define(eq=False)
class MapRows(Operator):
    """Rewrites each row (``Project``, ``Map``)."""

    input: Stream
    queue: Queue
    function: Callable[[Row], Row]
    out: Stream = attrs.field(factory=Stream)
    # Where a row the function fails on goes (None: it cannot fail).
    errors: Errors | None = None

    def step(self) -> None:
        function = self.function
        updates = self.queue.take()
        try:
            output = [(function(row), time, diff) for row, time, diff in updates]
        except EvalError:
            assert self.errors is not None, "only a Map's expressions fail"
            output = []
            for row, time, diff in updates:
                try:
                    output.append((function(row), time, diff))
                except EvalError as error:
                    self.errors.add(str(error), time, diff)
        self.out.push(output)
        self.out.frontier = self.input.frontier


@attrs.define(eq=False)
class FilterOperator(Operator):
    """Passes on the updates whose row ``keep`` holds for (``Filter``, and a
    join's equality of two columns of one input)."""

    input: Stream
    queue: Queue
    keep: Callable[[Row], bool]
    out: Stream = attrs.field(factory=Stream)
    # Where a row a predicate fails on goes (None: none can fail).
    errors: Errors | None = None

    def step(self) -> None:
        keep = self.keep
        updates = self.queue.take()
        try:
            output = [update for update in updates if keep(update[0])]
        except EvalError:
            assert self.errors is not None, "only a Filter's predicates fail"
            output = []
            for update in updates:
                try:
                    if keep(update[0]):
                        output.append(update)
                except EvalError as error:
                    self.errors.add(str(error), update[1], update[2])
        self.out.push(output)
        self.out.frontier = self.input.frontier


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
    its row count and a :class:`~replica._aggregates.GroupState` per
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


@attrs.define(eq=False)
class JoinOperator(Operator):
    """The equi-join of two inputs, each exchanged by its join columns: new
    updates of each side meet everything the other side had, once their
    times are complete; the output's time is the later of the two."""

    left: Stream
    left_queue: Queue
    left_key: tuple[int, ...]
    right: Stream
    right_queue: Queue
    right_key: tuple[int, ...]
    out: Stream = attrs.field(factory=Stream)
    left_pending: list[Update] = attrs.field(factory=list)
    right_pending: list[Update] = attrs.field(factory=list)
    left_state: dict[Row, list[Update]] = attrs.field(factory=dict)
    right_state: dict[Row, list[Update]] = attrs.field(factory=dict)

    def step(self) -> None:
        self.left_pending.extend(self.left_queue.take())
        self.right_pending.extend(self.right_queue.take())
        if self.left.frontier is None or self.right.frontier is None:
            return
        frontier = min(self.left.frontier, self.right.frontier)
        new_left, self.left_pending = _completed(self.left_pending, frontier)
        new_right, self.right_pending = _completed(self.right_pending, frontier)
        output: list[Update] = []
        # new left x (old right + new right), then old left x new right.
        _arrange(self.right_state, new_right, self.right_key)
        for row, time, diff in new_left:
            for other, other_time, other_diff in self.right_state.get(
                tuple(row[c] for c in self.left_key), ()
            ):
                output.append(((*row, *other), max(time, other_time), diff * other_diff))
        for other, other_time, other_diff in new_right:
            for row, time, diff in self.left_state.get(tuple(other[c] for c in self.right_key), ()):
                output.append(((*row, *other), max(time, other_time), diff * other_diff))
        _arrange(self.left_state, new_left, self.left_key)
        self.out.push(output)
        self.out.frontier = frontier


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


COMPLETE = 2**64 - 1
"""The frontier of a collection complete at every time a script can name (a
``Constant``): u64's last, short of the exchange's ``CLOSED``, which says a
worker left it."""


@attrs.define(eq=False)
class ConstantSource(Operator):
    """A ``Constant``'s rows, from ``owner`` alone (each worker renders it,
    one says it), at the dataflow's as_of; complete at every time."""

    rows: tuple[tuple[Row, int], ...]
    times: Times
    owner: bool
    out: Stream = attrs.field(factory=Stream)
    sent: bool = False

    def step(self) -> None:
        if not self.sent:
            self.sent = True
            if self.owner:
                self.out.push(self.times.admit([(row, 0, diff) for row, diff in self.rows if diff]))
        self.out.frontier = self.times.cap(COMPLETE)


@attrs.define(eq=False)
class UnionOperator(Operator):
    """Every update of each input; its frontier is the least of theirs."""

    inputs: tuple[Stream, ...]
    queues: tuple[Queue, ...]
    out: Stream = attrs.field(factory=Stream)

    def step(self) -> None:
        for queue in self.queues:
            self.out.push(queue.take())
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


def threshold_count(count: int) -> int:
    """How many times ``Threshold`` keeps a row counted ``count`` times."""
    return count if count > 0 else 0


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


def _sort_key(
    order_key: tuple[tuple[int, bool, bool], ...],
) -> Callable[[Row], tuple[object, ...]]:
    """A row's place in ``order_key``'s order, ties broken by the whole row."""

    def key(row: Row) -> tuple[object, ...]:
        parts: list[object] = []
        for column, descending, nulls_last in order_key:
            value = row[column]
            if value is None:
                parts.append((1 if nulls_last else -1,))
            else:
                order = ordered(value)
                parts.append((0, _Reversed(order) if descending else order))
        # Ties by the whole row (NULL first; NaN as Materialize orders it).
        parts.append(tuple((0,) if value is None else (1, ordered(value)) for value in row))
        return tuple(parts)

    return key


def top_k_rows(
    rows: dict[Row, int],
    order_key: tuple[tuple[int, bool, bool], ...],
    limit: int | None,
    offset: int,
) -> dict[Row, int]:
    """A ``TopK`` of one group's rows (each with its count): sorted by
    ``order_key`` (``(column, descending, nulls_last)``), ties by the whole
    row ascending, ``offset`` places skipped, then ``limit`` places kept (a
    row counted ``n`` times takes ``n`` places; a count below one none)."""
    ordered_rows = sorted(rows, key=_sort_key(order_key))
    return _first_places(ordered_rows, rows, limit, offset)


def _first_places(
    ordered_rows: Iterable[Row], counts: dict[Row, int], limit: int | None, offset: int
) -> dict[Row, int]:
    """The rows of places ``offset`` to ``offset + limit`` of ``ordered_rows``,
    each taking as many places as its count (none if below one)."""
    if limit is not None and limit <= 0:
        return {}
    kept: dict[Row, int] = {}
    skip = offset
    room = limit
    for row in ordered_rows:
        count = counts[row]
        if count <= 0:
            continue
        taken = min(count, skip)
        skip -= taken
        count -= taken
        if room is not None:
            count = min(count, room)
            room -= count
        if count:
            kept[row] = count
        if room == 0:
            break
    return kept


@functools.total_ordering
@attrs.frozen
class _Reversed:
    """A sort key in descending order."""

    value: object

    def __lt__(self, other: object) -> bool:
        assert isinstance(other, _Reversed)
        return other.value < self.value  # type: ignore[no-any-return,operator]


@attrs.define(eq=False)
class TopKOperator(_Reduce):
    """``TopK`` per group of ``group_key``, its input exchanged by the key:
    each completed time's updates change their groups' rows, kept in order
    (a row in or out costs a search and a move), and each changed group's
    output moves from its old first places to its new ones, read from the
    front of its order (work for ``offset + limit`` places, not the group)."""

    order_key: tuple[tuple[int, bool, bool], ...] = ()
    limit: Scalar | None = None
    offset: int = 0
    errors: Errors = attrs.field(factory=Errors)
    # Invariant: a group is here exactly while it holds a row; its order
    # holds (sort key, row) for each of its rows, sorted.
    groups: dict[Row, tuple[dict[Row, int], list[tuple[tuple[object, ...], Row]]]] = attrs.field(
        factory=dict
    )
    outputs: dict[Row, dict[Row, int]] = attrs.field(factory=dict)
    # The error each group's limit fails with, while it holds a row (the
    # group's one error in the errors: retracted when the group empties or
    # its limit no longer fails, as a from-scratch evaluation would have it).
    failed: dict[Row, str] = attrs.field(factory=dict)
    key: Callable[[Row], tuple[object, ...]] = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        self.key = _sort_key(self.order_key)

    def _apply_time(self, time: int, updates: Iterator[Update], output: list[Update]) -> None:
        touched: set[Row] = set()
        for row, _, diff in updates:
            group = tuple(row[column] for column in self.group_key)
            self._count(group, row, diff)
            touched.add(group)
        for group in touched:
            self._regroup(group, time, output)

    def _count(self, group: Row, row: Row, diff: int) -> None:
        counts, order = self.groups.setdefault(group, ({}, []))
        old = counts.get(row, 0)
        count = old + diff
        if count and not old:
            key = self.key(row)
            order.insert(bisect.bisect_left(order, (key,)), (key, row))
        elif old and not count:
            del order[bisect.bisect_left(order, (self.key(row),))]
        if count:
            counts[row] = count
        else:
            counts.pop(row, None)

    def _regroup(self, group: Row, time: int, output: list[Update]) -> None:
        counts, order = self.groups.get(group, ({}, []))
        if not counts:
            self.groups.pop(group, None)
        old = self.outputs.pop(group, {})
        limit = self._limit(group, counts, time)
        new = _first_places((row for _, row in order), counts, limit, self.offset)
        if new:
            self.outputs[group] = new
        for row in old.keys() | new.keys():
            change = new.get(row, 0) - old.get(row, 0)
            if change:
                output.append((row, time, change))

    def _limit(self, group: Row, rows: dict[Row, int], time: int) -> int | None:
        """The group's limit (it reads the group's key only); 0 when it
        fails, the failure then being the group's error at ``time`` on."""
        limit: Datum = None
        error: str | None = None
        if self.limit is not None and rows:
            try:
                limit = evaluate(self.limit, next(iter(rows)))
            except EvalError as failure:
                error, limit = str(failure), 0
        old = self.failed.pop(group, None)
        if error is not None:
            self.failed[group] = error
        if old != error:
            if old is not None:
                self.errors.add(old, time, -1)
            if error is not None:
                self.errors.add(error, time, 1)
        assert limit is None or isinstance(limit, int), "a TopK's limit is a bigint"
        return limit


STEP_ZERO = "step size cannot equal zero"
# A row's series stays within what a spec may write in all.
MAX_SERIES = 1_000_000


def table_rows(func: str, values: Sequence[Datum]) -> list[Row]:
    """The rows table function ``func`` gives for argument ``values``;
    :class:`~replica._scalar.EvalError` when it has none."""
    if func == "generate_series":
        start, stop, step = (*values, 1) if len(values) == 2 else values
        if start is None or stop is None or step is None:
            return []
        assert isinstance(start, int), "generate_series counts bigints"
        assert isinstance(stop, int), "generate_series counts bigints"
        assert isinstance(step, int), "generate_series counts bigints"
        if step == 0:
            raise EvalError(STEP_ZERO)
        # Its length by arithmetic: len() of a range longer than the
        # machine's word (-2**63 to 2**63 - 1) raises OverflowError.
        length = max(0, (stop - start) // step + 1)
        if length > MAX_SERIES:
            raise EvalError(
                f"generate_series of more than {MAX_SERIES} rows (this replica's limit)"
            )
        return [(value,) for value in range(start, stop + (1 if step > 0 else -1), step)]
    width = int(func.removeprefix("wrap"))
    return [tuple(values[at : at + width]) for at in range(0, len(values), width)]


@attrs.define(eq=False)
class FlatMapRows(Operator):
    """``FlatMap``: each update's row, followed by each row the table
    function gives for it, with the update's time and diff."""

    input: Stream
    queue: Queue
    func: str
    exprs: tuple[Scalar, ...]
    errors: Errors
    out: Stream = attrs.field(factory=Stream)

    def step(self) -> None:
        output: list[Update] = []
        for row, time, diff in self.queue.take():
            try:
                values = [evaluate(expr, row) for expr in self.exprs]
                produced = table_rows(self.func, values)
            except EvalError as error:
                self.errors.add(str(error), time, diff)
                continue
            output.extend(((*row, *extra), time, diff) for extra in produced)
        self.out.push(output)
        self.out.frontier = self.input.frontier
