"""What every operator shares, at one worker.

Data moves as updates ``(row, time, diff)``; an operator's work is
proportional to the updates it receives (and the state it must look up),
never a recomputation from scratch. Each operator has an output
:class:`Stream`: the updates it produced, pushed to each consumer's
:class:`Queue`, and its frontier (every update before it has been pushed;
``None`` until it first learned one).

Stateless operators (``Project``, ``Map``, ``Filter``) pass updates on at
once. Stateful ones (``Reduce``, ``Join``, the sinks) hold updates until
their input frontier passes their time (:class:`Times`), then process the
completed times in order, so what they emit for a time never changes
afterwards.

An expression that fails on a row (:class:`~replica.model._scalar.EvalError`)
puts the row's update into :class:`Errors` instead, as an error with the
update's time and diff: a retraction of the row retracts the error. An
operator that can multiply rows emits at most :data:`MAX_OPERATOR_ROWS`;
past it, its collection holds that limit's error (:class:`RowLimit`).

The operators, a module a family: sources (:mod:`._sources`), rows mapped
and filtered (:mod:`._linear`), exchanges (:mod:`._exchange`), the reduce
family (:mod:`._reduce`), joins (:mod:`._join`), unions, negation and
thresholds (:mod:`._union`), top-k (:mod:`._top_k`), sinks (:mod:`._sinks`).
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from ..model._rows import Update, accumulate


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
        updates = (((message,), time, diff) for (message, time), diff in self.counts.items())
        held = [str(row[0]) for row, total in accumulate(updates, ts).items() if total]
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
a read answers (:data:`~replica.model._rows.MAX_RESULT_ROWS`): a run whose
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
