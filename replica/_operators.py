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
update's time and diff: a retraction of the row retracts the error. An
operator that can multiply rows emits at most :data:`MAX_OPERATOR_ROWS`;
past it, its collection holds that limit's error (:class:`RowLimit`).
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


MAX_OPERATOR_ROWS = 4_000_000
"""The most updates (a row in or out: a retraction counts as one) one
operator that can multiply rows emits at one worker in its dataflow's life:
a ``Join`` (its inputs' product), a ``FlatMap`` (each row's series, many rows
adding up), a ``Union`` (of one input read many times) and a ``TopK`` (a row
counted many times entering a group pushes as many places out). As many as
a read answers (:data:`~replica._protocol.MAX_RESULT_ROWS`): a run whose
index holds a cross join of 4,000,000 rows of four columns peaks at about
730 MB (solo W1 and two runtimes W2P2 alike). Past it the operator is over
(:class:`RowLimit`): its collection's error, where two writes of 6,000 rows
joined on a constant (36 million rows) ran the process out of memory."""


@attrs.define(eq=False)
class RowLimit:
    """What one multiplying operator at one worker has emitted, against
    :data:`MAX_OPERATOR_ROWS`. The operator asks :meth:`fits` before it
    builds an output; once one does not fit, the operator is *over* for
    good: it emits nothing more (and may drop its state), and its collection
    holds :attr:`message` from the least time of any update it left out
    (:meth:`leave_out`), so a read at or after that time fails and a read
    before it is whole. Retractions later do not lift it: the dataflow is
    dropped and created again."""

    what: str
    errors: Errors
    emitted: int = 0
    # Invariant: None while under the limit; then the least time of the
    # updates left out, where `errors` holds `message` once.
    over_at: int | None = None
    message: str = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        self.message = (
            f"{self.what} produced more than {MAX_OPERATOR_ROWS} rows at one worker "
            "(this replica's limit)"
        )

    @property
    def over(self) -> bool:
        return self.over_at is not None

    def fits(self, rows: int) -> bool:
        """Whether the operator may emit ``rows`` more updates (counted if
        so); never once over, unless ``rows`` is none."""
        if not rows:
            return True
        if self.over_at is None and self.emitted + rows <= MAX_OPERATOR_ROWS:
            self.emitted += rows
            return True
        return False

    def leave_out(self, time: int) -> None:
        """The operator leaves out updates, the least at ``time``: it is over,
        its error held from ``time`` on (moved back if it was held later)."""
        message, over_at = self.message, self.over_at
        if over_at is not None and over_at <= time:
            return
        if over_at is not None:
            self.errors.add(message, over_at, -1)
        self.errors.add(message, time, 1)
        self.over_at = time


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
    front of its order (work for ``offset + limit`` places, not the group).
    A time whose changes pass :data:`MAX_OPERATOR_ROWS` emits nothing, the
    TopK then over (:class:`RowLimit`) and its groups forgotten."""

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
    row_limit: RowLimit = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        self.key = _sort_key(self.order_key)
        self.row_limit = RowLimit("top-k", self.errors)

    def _apply_time(self, time: int, updates: Iterator[Update], output: list[Update]) -> None:
        if self.row_limit.over:
            return
        start = len(output)
        touched: set[Row] = set()
        for row, _, diff in updates:
            group = tuple(row[column] for column in self.group_key)
            self._count(group, row, diff)
            touched.add(group)
        for group in touched:
            self._regroup(group, time, output)
        if not self.row_limit.fits(len(output) - start):
            del output[start:]
            self.row_limit.leave_out(time)
            self.groups, self.outputs, self.failed = {}, {}, {}

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
    function gives for it, with the update's time and diff. A row whose rows
    pass :data:`MAX_OPERATOR_ROWS` is left out, the FlatMap then over
    (:class:`RowLimit`)."""

    input: Stream
    queue: Queue
    func: str
    exprs: tuple[Scalar, ...]
    errors: Errors
    out: Stream = attrs.field(factory=Stream)
    limit: RowLimit = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        self.limit = RowLimit("flat map", self.errors)

    def step(self) -> None:
        output: list[Update] = []
        limit = self.limit
        for row, time, diff in self.queue.take():
            try:
                values = [evaluate(expr, row) for expr in self.exprs]
                produced = table_rows(self.func, values)
            except EvalError as error:
                self.errors.add(str(error), time, diff)
                continue
            if limit.fits(len(produced)):
                output.extend(((*row, *extra), time, diff) for extra in produced)
            else:
                limit.leave_out(time)
        self.out.push(output)
        self.out.frontier = self.input.frontier
