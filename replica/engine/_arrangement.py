r"""Arrangements: one worker's part of an index, shared by whoever reads it.

An index export routes each update to the worker its key hashes to; that
worker's :class:`Arrangement` keeps the updates in arrival order (a log every
importer reads from its own cursor: arrangements are shared, never copied),
and by key (for reads of given keys). ``upper`` says every update before it
has arrived, so a read at ``ts`` is complete once ``upper > ts``.

The hash is stable across runs and processes (never Python's salted ``hash``
of a string): integers hash as themselves, strings by CRC-32 of their UTF-8.

An arrangement compacts (docs/protocol.md, "Read holds and physical
compaction"): its ``since`` is the meet of its :class:`ReadHold`\ s (the
controller's, through its index export; every importer's; every peer hold),
never goes back, and never rewinds to a hold registered below it; updates
before ``since`` are advanced to it and consolidated, a slice of bounded work
per step (:meth:`Arrangement.maintain`), so its size follows its distinct
contents, not its history. Importers read the log through a :class:`Cursor`
the compaction keeps in place; a read in progress keeps the lists it began on.
"""

from __future__ import annotations

import operator
import zlib
from collections import Counter
from collections.abc import Callable, Sequence

import attrs

from ..model._listeners import Listeners
from ..model._rows import (
    Datum,
    Row,
    Update,
    accumulate,
    consolidate,
    key_of,
    rows_of_counts,
    sum_into,
    typed,
)

MASK = 0xFFFFFFFFFFFF
_NULL = 0x9E3779B9
_NAN = 0x7FF8000000000000


def _stable(value: Datum) -> int:
    if type(value) is str:
        return zlib.crc32(value.encode())
    if value is None or value != value:
        # NULL, and NaN (whose hash is the float object's identity).
        return _NULL if value is None else _NAN
    # int, bool and float hash alike in every process (only str and bytes are salted).
    return hash(value)


_ROW = operator.itemgetter(0)


def stable_hash(values: Sequence[Datum]) -> int:
    """A hash of ``values`` that is the same in every run and process."""
    return hash(tuple(_stable(value) for value in values)) & MASK


def column_router(column: int, parts: int) -> Callable[[Row], int]:
    """``partition_of(row, (column,), parts)``, faster: the route of a row by
    one key column."""

    def route(row: Row) -> int:
        value = row[column] if column < len(row) else None
        if type(value) is int:
            return (hash((hash(value),)) & MASK) % parts
        return (hash((_stable(value),)) & MASK) % parts

    return route


def key_function(key: tuple[int, ...]) -> Callable[[Row], Row]:
    """A fast ``key_of`` for one key."""
    if len(key) == 1:
        (column,) = key

        def single(row: Row) -> Row:
            return (row[column],) if column < len(row) else (None,)

        return single
    return lambda row: key_of(row, key)


def partition_of(row: Row, key: tuple[int, ...], parts: int) -> int:
    """The part (0 .. parts-1) that holds ``row`` when arranged by ``key``."""
    return stable_hash(key_of(row, key)) % parts


COMPACTION_WORK = 4096
"""The most updates one step of an arrangement's compaction looks at."""

MIN_COMPACTION = 64
"""The fewest new updates (since the last compaction) worth compacting: a
compaction begins once the new ones are at least this many and at least as
many as the compacted ones, so each update is compacted a bounded number of
times on average and the arrangement stays within about twice its distinct
contents."""


@attrs.define(eq=False)
class ReadHold:
    """A read hold on an arrangement at ``time``: its ``since`` never passes
    a live hold (a hold registered below ``since`` does not rewind it)."""

    _arrangement: Arrangement | None
    time: int

    @property
    def released(self) -> bool:
        return self._arrangement is None

    def downgrade(self, time: int) -> None:
        """Move the hold forward to ``time`` (never back)."""
        arrangement = self._arrangement
        if arrangement is not None and time > self.time:
            self.time = time
            arrangement._holds_moved()

    def release(self) -> None:
        """Let go of the arrangement. Idempotent."""
        arrangement, self._arrangement = self._arrangement, None
        if arrangement is not None:
            del arrangement._holds[self]
            arrangement._holds_moved()


@attrs.define(eq=False)
class Cursor:
    """Where an importer is in an arrangement's log; a compaction moves it
    with what it rewrote. A reader that came during a compaction, and had
    not read the whole prefix rewritten, keeps what it had left of it
    (``backlog``) to read first."""

    position: int = 0
    backlog: list[Update] = attrs.field(factory=list)

    def take(self, log: list[Update]) -> list[Update]:
        """What the reader has not read yet of ``log``, once: its backlog,
        then the log from its position."""
        backlog = self.backlog
        if backlog:
            self.backlog = []
            backlog.extend(log[self.position :])
            self.position = len(log)
            return backlog
        if len(log) > self.position:
            taken = log[self.position :]
            self.position = len(log)
            return taken
        return backlog


@attrs.define(eq=False)
class _Compaction:
    """A compaction in slices: the log's prefix up to ``end`` advanced to
    ``since`` and consolidated (``sums``), then indexed by key (``by_key``)."""

    since: int
    end: int
    position: int = 0
    sums: dict[tuple[Row, int], int] = attrs.field(factory=dict)
    consolidated: list[Update] | None = None
    indexed: int = 0
    by_key: dict[Row, list[Update]] = attrs.field(factory=dict)


@attrs.define(eq=False)
class Arrangement:
    """A worker's part of one index: its updates, by arrival and by key."""

    key: tuple[int, ...]
    # Every update, in arrival order: importers read it from their cursor.
    log: list[Update] = attrs.field(factory=list)
    by_key: dict[Row, list[Update]] = attrs.field(factory=dict)
    # Invariant: every update at a time before upper has arrived; upper only
    # grows. None until the index's dataflow first stepped.
    upper: int | None = None
    # Invariant: reads at or after since are exact; since only grows.
    since: int = 0
    # Called when a compaction may be due (a hold moved, the log grew past the
    # threshold): the owner then calls maintain at its next step.
    on_change: Callable[[Arrangement], None] | None = None
    _readers: Listeners = attrs.field(factory=lambda: Listeners("an arrangement"))
    _key_of: Callable[[Row], Row] = attrs.field(init=False)
    _holds: dict[ReadHold, None] = attrs.field(factory=dict)
    _cursors: dict[Cursor, None] = attrs.field(factory=dict)
    # The log's consolidated prefix: how long, and the since it was compacted to.
    _compacted: int = 0
    _compacted_since: int = 0
    # The latest time in the compacted prefix: what a later since may merge.
    _prefix_latest: int = 0
    _job: _Compaction | None = None

    def __attrs_post_init__(self) -> None:
        self._key_of = key_function(self.key)

    def hold(self, time: int) -> ReadHold:
        """A read hold at ``time`` (below ``since``, it holds nothing back)."""
        hold = ReadHold(self, time)
        self._holds[hold] = None
        self._holds_moved()
        return hold

    @property
    def holds(self) -> tuple[int, ...]:
        """The times of the live holds."""
        return tuple(hold.time for hold in self._holds)

    def allowed(self) -> int | None:
        """How far the holds let ``since`` go (``None``: no hold at all)."""
        if not self._holds:
            return None
        return min(hold.time for hold in self._holds)

    def cursor(self) -> Cursor:
        """A reader of the log from its start (one that comes during a
        compaction reads the prefix being rewritten as it was)."""
        cursor = Cursor()
        self._cursors[cursor] = None
        return cursor

    def close_cursor(self, cursor: Cursor) -> None:
        self._cursors.pop(cursor, None)

    @property
    def compacting(self) -> bool:
        return self._job is not None

    def _holds_moved(self) -> None:
        # The logical frontier follows the holds at once (as differential's
        # logical compaction does); rewriting the log waits for a step.
        allowed = self.allowed()
        if allowed is not None and allowed > self.since:
            self.since = allowed
        if self.on_change is not None:
            self.on_change(self)

    @property
    def settled(self) -> bool:
        """Whether a compaction when idle would merge nothing more: the
        compacted prefix holds no time that ``since`` passed since it was
        compacted (new updates wait for the threshold)."""
        compacted_since = self._compacted_since
        return self.since <= compacted_since or self._prefix_latest <= compacted_since

    def compact_when_idle(self) -> bool:
        """The worker has nothing else to do: compact, whatever the count of
        new updates, once ``since`` went at least halfway from where the
        prefix was compacted to its latest time (so a quiet index gives its
        history back, and a since that creeps costs a bounded number of
        compactions per doubling of its lag); return whether a compaction
        began (the owner then steps again)."""
        if self._job is not None:
            return True
        if self.settled or not self._holds:
            return False
        compacted_since = self._compacted_since
        if 2 * (self.since - compacted_since) < self._prefix_latest - compacted_since:
            return False
        end = min((cursor.position for cursor in self._cursors), default=len(self.log))
        if end == 0:
            return False
        self._job = _Compaction(self.since, end)
        return True

    def maintain(self, work: int = COMPACTION_WORK) -> bool:
        """Go on with compaction (up to ``work`` updates looked at); return
        whether more is due (the owner steps again). ``since`` moved already,
        when the holds did. A compaction rewrites the log's prefix every
        importer has read: it starts once that prefix holds at least
        :data:`MIN_COMPACTION` new updates, and as many as were compacted."""
        job = self._job
        if job is None:
            threshold = max(MIN_COMPACTION, self._compacted)
            if len(self.log) - self._compacted < threshold:
                return False
            end = min((cursor.position for cursor in self._cursors), default=len(self.log))
            if end - self._compacted < threshold:
                return False
            job = self._job = _Compaction(self.since, end)
        return self._compact(job, work)

    def _compact(self, job: _Compaction, work: int) -> bool:
        if job.consolidated is None:
            stop = min(job.end, job.position + work)
            since = job.since
            sum_into(
                (
                    u if u[1] >= since else (u[0], since, u[2])
                    for u in self.log[job.position : stop]
                ),
                job.sums,
            )
            job.position = stop
            if stop == job.end:
                job.consolidated, job.sums = consolidate((), into=job.sums), {}
            return True
        consolidated = job.consolidated
        if job.indexed < len(consolidated):
            stop = min(len(consolidated), job.indexed + work)
            self._index(consolidated[job.indexed : stop], job.by_key)
            job.indexed = stop
            return True
        # The swap: what came during the compaction follows the new prefix; a
        # read in progress keeps the old lists, which nothing changes again.
        compacted = len(consolidated)
        old = self.log
        tail = old[job.end :]
        self._index(tail, job.by_key)
        consolidated.extend(tail)
        for cursor in self._cursors:
            if cursor.position < job.end:
                # A reader that came during the compaction: the rest of the
                # prefix it was reading, as it was, comes first.
                cursor.backlog += old[cursor.position : job.end]
                cursor.position = compacted
            else:
                cursor.position += compacted - job.end
        self.log, self.by_key = consolidated, job.by_key
        self._compacted, self._compacted_since = compacted, job.since
        self._prefix_latest = max((u[1] for u in consolidated[:compacted]), default=job.since)
        self._job = None
        return False

    def update(self, updates: Sequence[Update], upper: int | None) -> None:
        """Add ``updates`` (at or after the current upper) and move the upper
        to ``upper`` (if given and later); wakes the readers once if anything
        changed."""
        if updates:
            self._add(updates)
        moved = upper is not None and (self.upper is None or upper > self.upper)
        if moved:
            self.upper = upper
        if updates or moved:
            self._wake()

    def _add(self, updates: Sequence[Update]) -> None:
        self.log.extend(updates)
        if (
            self.on_change is not None
            and self._job is None
            and len(self.log) - self._compacted >= max(MIN_COMPACTION, self._compacted)
        ):
            self.on_change(self)
        self._index(updates, self.by_key)

    def _index(self, updates: Sequence[Update], by_key: dict[Row, list[Update]]) -> None:
        if not updates:
            return
        # Every row has the key column (checked in C: no Python call per row).
        if len(self.key) == 1 and min(map(len, map(_ROW, updates))) > self.key[0]:
            (column,) = self.key
            for update in updates:
                single: Row = (update[0][column],)
                found = by_key.get(single)
                if found is None:
                    by_key[single] = [update]
                else:
                    found.append(update)
        else:
            key_of_row = self._key_of
            for update in updates:
                found = by_key.get(key := key_of_row(update[0]))
                if found is None:
                    by_key[key] = [update]
                else:
                    found.append(update)

    def ready(self, ts: int) -> bool:
        return self.upper is not None and self.upper > ts

    def scan(self, ts: int, literals: tuple[Row, ...] | None) -> Scan:
        """A read at ``ts`` (of the keys in ``literals`` only, if given), to
        run in steps of bounded work; complete once ``ready(ts)``."""
        if literals is None:
            sources: list[list[Update]] = [self.log]
        else:
            # A literal finds the updates of its key, unless it only equals
            # that key in Python (a bigint literal and a boolean key).
            sources = [
                self.by_key[key]
                for key in literals
                if key in self.by_key
                and typed(key_of(self.by_key[key][0][0], self.key)) == typed(key)
            ]
        return Scan(ts, [(source, len(source)) for source in sources])

    def listen(self, wake: Callable[[], None]) -> Callable[[], None]:
        """Call ``wake`` whenever updates arrive or the upper moves; return
        the function that stops it (a ``wake`` that raises:
        :class:`~replica.model._listeners.Listeners`)."""
        return self._readers.listen(wake)

    def _wake(self) -> None:
        self._readers.notify()


@attrs.define(eq=False)
class Scan:
    """A read of an arrangement at ``ts``, resumable: each :meth:`run` looks
    at most ``work`` updates. It reads only the prefix of each list that
    existed when it began: every update at or before ``ts`` was there (the read
    began once the upper passed ``ts``), and later ones are after ``ts``; so
    it loses and duplicates nothing while the arrangement grows."""

    ts: int
    # Each list to read, and how much of it existed when the scan began.
    sources: list[tuple[list[Update], int]]
    counts: Counter[Row] = attrs.field(factory=Counter)
    _source: int = 0
    _position: int = 0

    @property
    def done(self) -> bool:
        return self._source >= len(self.sources)

    def run(self, work: int | None = None) -> bool:
        """Look at up to ``work`` updates (all, if ``None``); return ``done``."""
        budget = work
        ts, counts = self.ts, self.counts
        while not self.done:
            source, end = self.sources[self._source]
            stop = end if budget is None else min(end, self._position + budget)
            accumulate(source[self._position : stop], ts, counts)
            if budget is not None:
                budget -= stop - self._position
            self._position = stop
            if stop == end:
                self._source, self._position = self._source + 1, 0
            if budget == 0:
                break
        return self.done

    def rows(self) -> list[Row]:
        """The rows read (a row with multiplicity k, k times). Once ``done``.
        :class:`~replica.model._rows.ResultTooLargeError` past
        :data:`~replica.model._rows.MAX_RESULT_ROWS`."""
        assert self.done, "a scan's rows are known once it is done"
        return rows_of_counts(self.counts)
