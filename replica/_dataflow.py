"""One worker's part of an index dataflow (DESIGN.md §2.5).

Rows are split over a runtime's workers by a stable hash of their key columns
(CRC-32 of a canonical JSON encoding: never Python's salted ``hash``). Each
worker arranges its part and advances the part's upper as it steps; the
index's upper is the minimum over the parts.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Callable

import attrs

from sharing import Incarnation, Peer, Publisher

from ._protocol import DataflowDescription, Frontier, Row
from ._shard import Shard


def compaction_error(ts: int, since: int) -> str | None:
    """Why a read at ``ts`` cannot be served below compaction frontier ``since``."""
    if ts < since:
        return f"read at ts {ts} is before the compaction frontier {since}"
    return None


def partition_of(row: Row, key: tuple[int, ...], parts: int) -> int:
    """The part (0 .. parts-1) that holds ``row``: stable across runs and processes.
    A key column the row lacks hashes as null."""
    values = [row[column] if column < len(row) else None for column in key]
    encoded = json.dumps(values, separators=(",", ":"), ensure_ascii=False).encode()
    return zlib.crc32(encoded) % parts


@attrs.define(eq=False)
class IndexPart:
    """A worker's part of one index dataflow: its rows, upper and compaction.

    ``upper`` is ``None`` until the dataflow is scheduled and has stepped once:
    a dataflow does nothing until it is scheduled. ``as_of`` starts at the
    description's and moves up when a reconciliation keeps the part for a
    later ``as_of``: a kept part then reads exactly as a fresh one built at
    that ``as_of`` would (its upper is never below it).
    """

    dataflow: DataflowDescription
    shard: Shard
    part: int
    parts: int
    # Invariant: since >= as_of >= dataflow.as_of; both only move forward.
    since: int
    as_of: int
    upper: int | None = None
    scheduled: bool = False
    # Rows of this part, with the time they were written at, in time order.
    rows: list[tuple[int, Row]] = attrs.field(factory=list)
    # How far into the shard's log this part has read.
    cursor: int = 0
    stop_listening: Callable[[], None] | None = None
    # Where the maintenance runtime publishes this part for the interactive
    # one: under the incarnation it was built as, and under each later
    # ``as_of`` a reconciliation kept it for (oldest first).
    publishers: dict[Incarnation, Publisher[IndexPart]] = attrs.field(factory=dict)

    @classmethod
    def build(cls, dataflow: DataflowDescription, shard: Shard, part: int, parts: int) -> IndexPart:
        return cls(dataflow, shard, part, parts, since=dataflow.as_of, as_of=dataflow.as_of)

    def keep(self, as_of: int) -> None:
        """A reconciliation keeps this part for a dataflow built ``as_of``
        (compatible, and not compacted past it): from now on it reads as of
        it. The caller compacts it to ``as_of`` too."""
        assert as_of >= self.as_of, f"a kept part's as_of only moves up ({self.as_of} -> {as_of})"
        self.as_of = as_of

    @property
    def frontier(self) -> Frontier | None:
        return None if self.upper is None else Frontier.at(self.upper)

    def step(self) -> bool:
        """Take what the shard has that this part has not; return whether the
        upper moved. Does nothing until scheduled."""
        if not self.scheduled:
            return False
        updates = self.shard.updates
        key, part, parts = self.dataflow.key, self.part, self.parts
        for ts, row in updates[self.cursor :]:
            if partition_of(row, key, parts) == part:
                self.rows.append((ts, row))
        self.cursor = len(updates)
        upper = max(self.shard.upper, self.as_of)
        if upper != self.upper:
            self.upper = upper
            return True
        return False

    def read_error(self, ts: int) -> str | None:
        """Why a read at ``ts`` cannot be served, if it cannot."""
        return compaction_error(ts, self.since)

    def ready(self, ts: int) -> bool:
        """Whether this part is complete at ``ts`` (its upper is past it)."""
        return self.upper is not None and self.upper > ts

    def read(self, ts: int) -> list[Row]:
        """The part's rows at ``ts``: every row written at or before ``ts``
        (history before ``since`` is merged; rows are never retracted)."""
        return [row for written, row in self.rows if written <= ts]

    def changed(self) -> None:
        """The part moved on: wake the peers bound to any of its publishers."""
        for publisher in self.publishers.values():
            publisher.changed()

    def close(self) -> None:
        """The dataflow is dropped: stop reading the shard, stop publishing."""
        if self.stop_listening is not None:
            self.stop_listening()
        for publisher in self.publishers.values():
            publisher.drop()


@attrs.define(eq=False)
class PeerView:
    """The interactive runtime's stand-in for an index: no dataflow of its own,
    a peer bound (through the sharing registry) to the maintenance runtime's
    part, read at the peer's own compaction frontier.

    Its frontier is the bound publisher's upper; a peer bound to a dropped
    publisher keeps that publisher's last upper forever (a frozen view), and a
    parked peer reports nothing.
    """

    dataflow: DataflowDescription
    peer: Peer[IndexPart]
    # Invariant: since >= as_of, and since only moves forward.
    since: int
    scheduled: bool = False

    @classmethod
    def bind(cls, dataflow: DataflowDescription, peer: Peer[IndexPart]) -> PeerView:
        return cls(dataflow, peer, since=dataflow.as_of)

    @property
    def _part(self) -> IndexPart | None:
        publisher = self.peer.publisher
        return None if publisher is None else publisher.value

    @property
    def frontier(self) -> Frontier | None:
        part = self._part
        if not self.scheduled or part is None:
            return None
        return part.frontier

    def step(self) -> bool:
        return False

    def read_error(self, ts: int) -> str | None:
        return compaction_error(ts, self.since)

    def ready(self, ts: int) -> bool:
        part = self._part
        return self.scheduled and part is not None and part.ready(ts)

    def read(self, ts: int) -> list[Row]:
        part = self._part
        assert part is not None, "a parked peer is never ready"
        return part.read(ts)

    def rebind(self, peer: Peer[IndexPart]) -> Peer[IndexPart]:
        """Read through ``peer`` from now on; release the old one and return it."""
        old, self.peer = self.peer, peer
        old.release()
        return old

    def close(self) -> None:
        self.peer.release()
