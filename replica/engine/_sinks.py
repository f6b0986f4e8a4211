"""Sinks: where a dataflow's collection leaves it.

A **materialized-view sink** keeps a shard equal to its collection. Its
correction buffer holds what the dataflow wants the shard to hold minus what
the shard holds, as updates by time. The sink can only ever write at or after
the shard's upper, so every update before the upper is advanced to it, where
the two halves of the same row at different times meet and cancel. Until
``AllowWrites`` the sink is read-only: it keeps the buffer consolidated as the
upper moves (others may write the shard) but appends nothing, and it is
read-only again from the moment a new connection begins until that
connection allows its writes (a reconnecting controller replays
``AllowWrites``; until its reconciliation is done the old definition must not
write). A read-only sink reports the frontier of what it computed; a writable
one no further than what its shard holds. Once writable,
whenever its input is complete past the shard's upper it appends the buffer's
updates before that point (compare-and-append), then reads them back, which
cancels them. The counters ``mz_persist_sink_correction_insertions_total``
and ``..._deletions_total`` count entries entering and leaving the buffer, so
their difference is its size.

A **subscribe** streams its collection's updates to the controller as
batches ``[lower, upper)``, consolidated, up to ``up_to``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable

import attrs

from ..model._frontier import Frontier
from ..model._ids import GlobalId
from ..model._metrics import Metrics
from ..model._rows import Row, Update, consolidate
from ..storage._errors import UpperMismatchError
from ..storage._shard import Shard
from ._stream import Operator, Queue, Stream, Times

INSERTIONS = "mz_persist_sink_correction_insertions_total"
DELETIONS = "mz_persist_sink_correction_deletions_total"


@attrs.define(eq=False)
class MaterializedViewSink(Operator):
    """A materialized-view sink at the one worker its updates are exchanged
    to (``owner``); at the other workers it does nothing."""

    input: Stream
    queue: Queue
    shard: Shard
    times: Times
    owner: bool
    metrics: Metrics
    stop_listening: Callable[[], None]
    out: Stream = attrs.field(factory=Stream)
    writable: bool = False
    # The correction buffer: time -> row -> diff (never zero).
    correction: dict[int, dict[Row, int]] = attrs.field(factory=dict)
    # How far the sink has read its shard back.
    cursor: int = 0
    # The shard upper the buffer is consolidated to (every entry is at or after it).
    consolidated: int = 0

    def step(self) -> None:
        desired = self.queue.take()
        if not self.owner:
            self.out.frontier = self._frontier()
            return
        upper, as_of = self.shard.upper, self.times.as_of
        inserted = deleted = 0
        if upper > self.consolidated:
            for time in [time for time in self.correction if time < upper]:
                for row, diff in self.correction.pop(time).items():
                    deleted += 1
                    inserted, deleted = self._add(row, upper, diff, inserted, deleted)
            self.consolidated = upper
        floor = max(upper, as_of)
        for row, time, diff in desired:
            inserted, deleted = self._add(row, max(time, floor), diff, inserted, deleted)
        written = self.shard.updates
        for row, time, diff in written[self.cursor :]:
            inserted, deleted = self._add(row, max(time, floor), -diff, inserted, deleted)
        self.cursor = len(written)
        frontier = self.input.frontier
        if self.writable and frontier is not None and frontier > upper:
            batch = [
                (row, time, diff)
                for time, rows in self.correction.items()
                if time < frontier
                for row, diff in rows.items()
            ]
            # If someone else wrote meanwhile, the next step recomputes.
            with contextlib.suppress(UpperMismatchError):
                self.shard.append(batch, upper, frontier)
        self.metrics.add(INSERTIONS, inserted)
        self.metrics.add(DELETIONS, deleted)
        self.out.frontier = self._frontier()

    def _frontier(self) -> int | None:
        """What the sink reports (every worker alike): what it computed
        (its input's frontier) while read-only; once writable, also no further
        than what the shard holds. Never back (a frontier does not regress
        when the sink becomes writable behind what it computed)."""
        computed = self.input.frontier
        if computed is None:
            return self.out.frontier
        if self.writable:
            computed = min(computed, self.shard.upper)
        previous = self.out.frontier
        return computed if previous is None else max(previous, computed)

    def _add(self, row: Row, time: int, diff: int, inserted: int, deleted: int) -> tuple[int, int]:
        rows = self.correction.setdefault(time, {})
        old = rows.get(row, 0)
        new = old + diff
        if old == 0:
            inserted += 1
        if new == 0:
            deleted += 1
            del rows[row]
            if not rows:
                del self.correction[time]
        else:
            rows[row] = new
        return inserted, deleted

    @property
    def size(self) -> int:
        return sum(len(rows) for rows in self.correction.values())

    def close(self) -> None:
        self.stop_listening()
        self.metrics.add(DELETIONS, self.size)
        self.correction.clear()


@attrs.define(eq=False)
class SubscribeSink(Operator):
    """A subscribe at one worker: sends this worker's updates as batches."""

    id: GlobalId
    input: Stream
    queue: Queue
    lower: int
    up_to: int | None
    # Sends a batch: (id, lower, upper, updates), a SubscribeBatch's fields.
    emit: Callable[[GlobalId, int, Frontier, tuple[Update, ...]], None]
    out: Stream = attrs.field(factory=Stream)
    pending: list[Update] = attrs.field(factory=list)
    done: bool = False

    def step(self) -> None:
        arrived = self.queue.take()
        if self.done:
            return  # finished: what comes after is nobody's
        self.pending.extend(arrived)
        frontier = self.input.frontier
        if frontier is None:
            return
        up_to = self.up_to
        upper = frontier if up_to is None else min(frontier, up_to)
        self.out.frontier = upper
        if up_to is not None and up_to <= self.lower:
            # Nothing to send from as_of on: finished at once.
            self.done, self.pending = True, []
            self.emit(self.id, self.lower, Frontier.empty(), ())
            return
        if upper <= self.lower:
            return
        pending = self.pending
        updates = tuple(consolidate(update for update in pending if update[1] < upper))
        self.pending = [
            update
            for update in pending
            if update[1] >= upper and (up_to is None or update[1] < up_to)
        ]
        self.done = up_to is not None and upper >= up_to
        closed = Frontier.empty() if self.done else Frontier.at(upper)
        self.emit(self.id, self.lower, closed, updates)
        self.lower = upper
