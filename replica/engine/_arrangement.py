"""Arrangements: one worker's part of an index, shared by whoever reads it.

An index export routes each update to the worker its key hashes to; that
worker's :class:`Arrangement` keeps the updates in arrival order (a log every
importer reads from its own cursor: arrangements are shared, never copied),
and by key (for reads of given keys). ``upper`` says every update before it
has arrived, so a read at ``ts`` is complete once ``upper > ts``.

The hash is stable across runs and processes (never Python's salted ``hash``
of a string): integers hash as themselves, strings by CRC-32 of their UTF-8.
"""

from __future__ import annotations

import operator
import zlib
from collections import Counter
from collections.abc import Callable, Sequence

import attrs

from ..model._listeners import Listeners
from ..model._rows import Datum, Row, Update, accumulate, key_of, rows_of_counts, typed

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
    _readers: Listeners = attrs.field(factory=lambda: Listeners("an arrangement"))
    _key_of: Callable[[Row], Row] = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        self._key_of = key_function(self.key)

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
        by_key = self.by_key
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
