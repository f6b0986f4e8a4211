"""What a rendered dataflow is at one worker: its operators, and the
collections it exports (docs/protocol.md): index parts (arrangements,
partitioned across workers by the hash of their key), materialized-view and
subscribe sinks. The collections a worker serves reads from share one
shape (:class:`Reported`): an index export of a rendered dataflow, or, on
the interactive runtime, a :class:`~replica.compute._peers.PeerView` of the
part maintenance publishes.
"""

from __future__ import annotations

from collections.abc import Callable

import attrs

from sharing import Incarnation, PeerHold, Publisher

from ..model._dataflow import DataflowDescription, SinkExport, Subscribe
from ..model._frontier import Frontier
from ..model._ids import GlobalId
from ..model._rows import Row
from ._arrangement import Arrangement, ReadHold, Scan
from ._exchange import Fabric
from ._sinks import MaterializedViewSink
from ._stream import Errors, Operator, Times, first_error


def compaction_error(ts: int, since: int) -> str | None:
    """Why a read at ``ts`` cannot be served below compaction frontier ``since``."""
    if ts < since:
        return f"read at ts {ts} is before the compaction frontier {since}"
    return None


class Reported:
    """A collection a worker reports: its ``frontier`` is its ``upper`` (an
    integer, ``None`` while it has none), as the protocol says it."""

    @property
    def upper(self) -> int | None:
        raise NotImplementedError

    @property
    def frontier(self) -> Frontier | None:
        upper = self.upper
        return None if upper is None else Frontier.at(upper)


@attrs.define(eq=False)
class Export(Reported):
    """One collection a rendered dataflow exports (an index or a sink)."""

    id: GlobalId
    dataflow: Dataflow
    # Invariant: since >= the dataflow's as_of when exported, and only grows.
    since: int

    @property
    def scheduled(self) -> bool:
        return self.dataflow.scheduled


@attrs.define(eq=False)
class IndexPart(Export):
    """A worker's part of an index export: its part of the arrangement
    (``provider`` returns it; for a re-export, the imported part), and where
    maintenance publishes it for the interactive runtime."""

    provider: Callable[[], Arrangement | None] = attrs.field(kw_only=True)
    publishers: dict[Incarnation, Publisher[IndexPart]] = attrs.field(factory=dict, kw_only=True)
    # The controller's hold on the arrangement, at since (once it exists: a
    # re-export's may come later).
    pin: ReadHold | None = attrs.field(default=None, kw_only=True)
    # The peer holds its publications registered (maintenance, publisher holds).
    peer_holds: list[PeerHold] = attrs.field(factory=list, kw_only=True)
    # Why reads fail, if they do (its dataflow could not read an import).
    error: str | None = attrs.field(default=None, kw_only=True)
    # The evaluation errors of the operators its collection comes from.
    errors: tuple[Errors, ...] = attrs.field(default=(), kw_only=True)

    @property
    def arrangement(self) -> Arrangement | None:
        return self.provider()

    def hold(self) -> bool:
        """Hold the arrangement at ``since`` and attach the peer holds, once
        it exists; return whether it does."""
        part = self.provider()
        if part is None:
            return False
        if self.pin is None:
            self.pin = part.hold(self.since)
        for hold in self.peer_holds:
            hold.attach(part.hold)
        return True

    def allow(self, time: int) -> None:
        """The controller allows compaction to ``time`` (not before ``since``)."""
        self.since = time
        if self.pin is not None:
            self.pin.downgrade(time)

    @property
    def compaction_frontier(self) -> int:
        """Reads before it are refused: ``since``, or the arrangement's own
        since if its holds let it go further (a re-export's may)."""
        part = self.provider()
        return self.since if part is None or part.since <= self.since else part.since

    def release(self) -> None:
        """Dropped by the controller: let go of the arrangement."""
        if self.pin is not None:
            self.pin.release()

    @property
    def upper(self) -> int | None:
        """The part's upper, once its dataflow is scheduled and stepped;
        within the dataflow's times (a re-export shares an arrangement built
        for other times: its upper is still never before its ``as_of`` nor
        past its ``until``)."""
        part = self.provider()
        dataflow = self.dataflow  # (scheduled, inline: once per collection per report)
        if not dataflow.scheduled or part is None or part.upper is None:
            return None
        return dataflow.times.cap(part.upper)

    def read_error(self, ts: int) -> str | None:
        if self.error is not None:
            return self.error
        return compaction_error(ts, self.compaction_frontier) or self.evaluation_error(ts)

    def evaluation_error(self, ts: int) -> str | None:
        """Once the part is complete through ``ts``: the error its
        collection holds at ``ts`` if any (a peek of it fails with it)."""
        if not self.errors or not self.ready(ts):
            return None
        message = first_error(self.errors, ts)
        return None if message is None else f"Evaluation error: {message}"

    def ready(self, ts: int) -> bool:
        upper = self.upper
        return upper is not None and upper > ts

    def scan(self, ts: int, literals: tuple[Row, ...] | None) -> Scan:
        part = self.provider()
        assert part is not None, "a read starts once the part is ready"
        return part.scan(ts, literals)

    def close(self) -> None:
        self.release()
        for hold in self.peer_holds:
            if not hold.taken:
                # A hold nobody took dies with the publication that registered it.
                hold.release()
        for publisher in self.publishers.values():
            publisher.drop()


@attrs.define(eq=False)
class SinkPart(Export):
    """A sink export: its frontier is the sink operator's."""

    sink: SinkExport = attrs.field(kw_only=True)
    operator: Operator = attrs.field(kw_only=True)

    @property
    def upper(self) -> int | None:
        """A materialized view's upper once scheduled; a subscribe reports
        none (its batches say how far it got)."""
        if not self.scheduled or isinstance(self.sink.connection, Subscribe):
            return None
        return self.operator.out.frontier

    def allow_writes(self, allowed: bool = True) -> None:
        """Let a materialized view write its shard (or not: read-only)."""
        if isinstance(self.operator, MaterializedViewSink):
            self.operator.writable = allowed

    def close(self) -> None:
        pass


@attrs.define(eq=False)
class Dataflow:
    """A rendered dataflow at one worker. ``number`` is its place in the
    order this worker rendered dataflows (the same on every worker)."""

    description: DataflowDescription
    number: int
    times: Times
    operators: list[Operator] = attrs.field(factory=list)
    exports: dict[GlobalId, IndexPart | SinkPart] = attrs.field(factory=dict)
    exchanges: int = 0
    scheduled: bool = False
    closed: bool = False

    def fail_reads(self, error: str) -> None:
        """Reads of its indexes fail with ``error`` (an import was compacted
        past its as_of); it still computes, as a real dataflow's error stream
        would."""
        for export in self.exports.values():
            if isinstance(export, IndexPart):
                export.error = error

    @property
    def as_of(self) -> int:
        return self.times.as_of

    def keep(self, as_of: int) -> None:
        """A reconciliation keeps this dataflow for one built ``as_of``: from
        now on it reads as of it (its frontiers never below it)."""
        assert as_of >= self.times.as_of, "a kept dataflow's as_of only moves up"
        self.times.as_of = as_of

    def step(self) -> None:
        if self.scheduled:
            for operator in self.operators:
                operator.step()

    def close(self, fabric: Fabric, worker: int) -> None:
        """Dropped: stop every operator, leave every exchange, stop publishing."""
        if self.closed:
            return
        self.closed = True
        for operator in self.operators:
            operator.close()
        for place in range(self.exchanges):
            fabric.release(self.number, place, worker)
        for export in self.exports.values():
            export.close()
