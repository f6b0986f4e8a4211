"""Sources: a shard read in turns by a runtime's workers (keyed or not),
this worker's part of an imported index, and a plan's constant rows."""

from __future__ import annotations

from collections.abc import Callable

import attrs

from ..model._relational import COMPLETE
from ..model._rows import Row
from ..storage._shard import Partitioned, Shard
from ._arrangement import Arrangement, Cursor, ReadHold
from ._stream import Operator, Stream, Times


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
    update once, for all the workers: :class:`~replica.storage._shard.Partitioned`)."""

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
    (``None`` while the part is not published yet: the import waits).

    The import holds the arrangement at its ``as_of`` once it finds it, and
    downgrades the hold through its own read handle to what it has read; an
    import with an ``until`` lets go once the upper reaches it (a one-shot
    read, ``until = as_of + 1``, as soon as the upper passes ``as_of``)."""

    provider: Callable[[], Arrangement | None]
    times: Times
    wake: Callable[[], None]
    out: Stream = attrs.field(factory=Stream)
    cursor: Cursor | None = None
    arrangement: Arrangement | None = None
    read_hold: ReadHold | None = None
    stop_listening: Callable[[], None] | None = None

    def take_hold(self) -> None:
        """Hold the imported arrangement at ``as_of`` from the build on, as
        the real import's trace handle does (a dataflow not scheduled yet
        holds it too); a placeholder holds it once filled."""
        if self.read_hold is None and self.arrangement is None:
            arrangement = self.provider()
            if arrangement is not None:
                self.arrangement = arrangement
                self.read_hold = arrangement.hold(self.times.as_of)

    def step(self) -> None:
        arrangement = self.provider()
        if arrangement is None:
            return
        cursor = self.cursor
        if cursor is None:
            # The first step that finds it: read it from its start, from now on.
            assert self.arrangement in (None, arrangement), "an import reads one arrangement"
            if self.arrangement is None:
                self.arrangement = arrangement
                self.read_hold = arrangement.hold(self.times.as_of)
            self.stop_listening = arrangement.listen(self.wake)
            cursor = self.cursor = arrangement.cursor()
        fresh = cursor.take(arrangement.log)
        if fresh:
            self.out.push(self.times.admit(fresh))
        upper = arrangement.upper
        if upper is not None:
            self.out.frontier = frontier = self.times.cap(upper)
            hold = self.read_hold
            if hold is not None:
                until = self.times.until
                if until is not None and upper >= until:
                    hold.release()
                    self.read_hold = None
                else:
                    hold.downgrade(frontier)

    def close(self) -> None:
        if self.stop_listening is not None:
            self.stop_listening()
        if self.read_hold is not None:
            self.read_hold.release()
            self.read_hold = None
        if self.arrangement is not None and self.cursor is not None:
            self.arrangement.close_cursor(self.cursor)


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
