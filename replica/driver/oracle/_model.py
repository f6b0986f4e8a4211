"""A plain reference model of what a spec's stanzas must print (no Trio, no
actors, no operators), for the simulation to check the replica against.

It evaluates every collection from scratch at the time read: a source is its
shard's rows up to that time; a plan is evaluated on row multisets
(:func:`~._evaluate.evaluate`); an index re-exports or arranges its
collection. Reconciliation is docs/protocol.md's (Reconciliation), on
whole dataflows: a replayed dataflow is kept if compatible, uncompacted past
its new ``as_of``, subscribe-free and every index it imports is kept too; a
kept dataflow is compacted to, and reads as of, the new ``as_of``; everything
not replayed (query dataflows and ``count``'s among them) is dropped.

A read is decided only while nothing is held and no reconciliation is
unfinished (the simulation's programs respect that); it is ready once the
collection's upper is past it (the least upper over the shards and indexes
its plan reads, never before its ``as_of``, never past its ``until``, and
only if its dataflow and the dataflows it imports are scheduled), fails below
the compaction frontier, and waits (times out) otherwise.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

import attrs

from replica.model import COMPLETE, DataflowDescription, GlobalId, IndexExport, Subscribe
from replica.model._plan import gets
from replica.model._rows import Row, Update, key_of, typed
from replica.protocol import (
    AllowCompaction,
    AllowWrites,
    CreateDataflow,
    InitializationComplete,
    Schedule,
)

from ..lang._data import render_datum, render_rows, render_updates
from ..lang._errors import DriverError
from ..lang._payloads import (
    Advance,
    AwaitFrontier,
    AwaitSubscribe,
    CountRows,
    Fail,
    Hold,
    PeekCount,
    PeekRows,
    Print,
    Reconnect,
    Release,
    Send,
    Settle,
    Timeout,
    Write,
)
from ..lang._spec import Stanza
from ._evaluate import evaluate

UNKNOWN = "error: peek error: collection ID does not exist"


class UndecidableError(DriverError, AssertionError):
    """A stanza the model cannot decide (the program generator avoids them)."""


@attrs.define
class _Shard:
    upper: int = 0
    rows: list[tuple[Row, int]] = attrs.field(factory=list)

    def at(self, ts: int) -> Counter[Row]:
        return Counter(row for row, time in self.rows if time <= ts)


@attrs.define
class _Dataflow:
    description: DataflowDescription
    as_of: int
    # The compaction frontier of each export still running.
    since: dict[GlobalId, int]
    scheduled: bool = False
    writable: set[GlobalId] = attrs.field(factory=set)


@attrs.define
class ReferenceModel:
    """Feed it stanzas in order; it says what each must print."""

    shards: dict[str, _Shard] = attrs.field(factory=dict)
    dataflows: list[_Dataflow] = attrs.field(factory=list)
    # What a connection still reconciling sent (None: not reconciling). The
    # first connection reconciles too: it starts with an empty block.
    block: list[DataflowDescription] | None = attrs.field(factory=list)
    block_scheduled: set[GlobalId] = attrs.field(factory=set)
    block_writable: set[GlobalId] = attrs.field(factory=set)
    held: set[str] = attrs.field(factory=set)
    # Ids dropped on the current connection: the replica refuses to reuse them.
    retired: set[GlobalId] = attrs.field(factory=set)
    # Per subscribe, the time up to which its updates were printed.
    delivered: dict[GlobalId, int] = attrs.field(factory=dict)

    @property
    def settled(self) -> bool:
        """Whether reads are determined now: nothing held, nothing reconciling."""
        return not self.held and self.block is None

    def expect(self, stanza: Stanza) -> list[str]:
        match stanza.payload:
            case Print(lines):
                return list(lines)
            case Fail(message):
                return [f"error: {message}"]
            case Send(command):
                self._send(stanza, command)
            case Write():
                return self._write(stanza.payload)
            case Advance(name, upper):
                shard = self._shard(name)
                if upper < shard.upper:
                    return [f"error: upper {upper} is below the shard upper {shard.upper}"]
                shard.upper = upper
            case Reconnect():
                self.block, self.retired = [], set()
                for dataflow in self.dataflows:
                    dataflow.writable.clear()  # read-only until allowed again
                self.block_scheduled, self.block_writable = set(), set()
            case Hold(runtime):
                self.held.add(runtime)
            case Release(runtime):
                self.held.discard(runtime)
            case Settle():
                pass
            case AwaitFrontier(id, ts, _, allow_timeout):
                self._decidable(stanza)
                reached = self._export_upper(id)
                if allow_timeout:
                    return ["awaited"]
                if reached is not None and reached >= ts:
                    return ["ok"]
                return [f"error: frontier for {id} did not reach {ts} in time"]
            case AwaitSubscribe(id, up_to, _):
                self._decidable(stanza)
                return self._await_subscribe(stanza, id, up_to)
            case PeekRows(id, ts, timeout, shard):
                self._decidable(stanza)
                if shard is not None:
                    return self._sink_read(stanza, id, ts, timeout)
                found = self._read(id, ts, timeout, None)
                return found if isinstance(found, list) else render_rows(found.elements())
            case PeekCount(id, ts, literals, timeout):
                self._decidable(stanza)
                found = self._read(id, ts, timeout, literals)
                return found if isinstance(found, list) else [str(found.total())]
            case CountRows(id, ts, dataflow, _, timeout):
                self._decidable(stanza)
                probe = self._read(id, ts, timeout, ())
                if isinstance(probe, list):
                    return probe
                self._create(dataflow, scheduled=True)
                found = self._read(id, ts, timeout, None)
                assert not isinstance(found, list), "ready as the probe was"
                return [render_datum(found.total())]
            case _:
                raise UndecidableError(f"line {stanza.line}: the model does not decide this")
        return ["ok"]

    def _decidable(self, stanza: Stanza) -> None:
        if not self.settled:
            raise UndecidableError(f"line {stanza.line}: a read the model cannot decide")

    def _shard(self, name: str) -> _Shard:
        return self.shards.setdefault(name, _Shard())

    def _write(self, write: Write) -> list[str]:
        shard = self._shard(write.shard)
        if write.lower < shard.upper:
            return [f"error: write at ts {write.lower} is below the shard upper {shard.upper}"]
        shard.rows.extend(write.updates())
        shard.upper = write.upper
        return [f"wrote {write.count}"]

    # Commands.

    def _send(self, stanza: Stanza, command: object) -> None:
        match command:
            case CreateDataflow(description):
                if self.block is not None:
                    self.block.append(description)
                else:
                    self._create(description, scheduled=False)
            case Schedule(id):
                if self.block is not None:
                    self.block_scheduled.add(id)
                elif (dataflow := self._exporting(id)) is not None:
                    dataflow.scheduled = True
            case AllowWrites(id):
                if self.block is not None:
                    self.block_writable.add(id)
                elif (dataflow := self._exporting(id)) is not None:
                    dataflow.writable.add(id)
            case AllowCompaction(id, frontier):
                if self.block is not None:
                    raise UndecidableError(f"line {stanza.line}: compaction while reconciling")
                self._compact(id, frontier.time)
            case InitializationComplete() if self.block is not None:
                self._reconcile()

    def _create(self, description: DataflowDescription, *, scheduled: bool) -> None:
        ids = description.exports
        if any(id in self.retired or self._exporting(id) is not None for id in ids):
            return  # refused: the replica changes nothing
        since = dict.fromkeys(ids, description.as_of)
        dataflow = _Dataflow(description, description.as_of, since, scheduled)
        for index in description.index_imports:
            imported = self._exporting(index.id)
            if imported is not None and imported.since[index.id] > description.as_of:
                # The replica's workers panic and its process aborts (shared
                # fate): no read the model could answer comes after it.
                raise UndecidableError(
                    f"a dataflow as of {description.as_of} over index {index.id}, compacted "
                    f"to {imported.since[index.id]}: the replica aborts"
                )
        self.dataflows.append(dataflow)

    def _compact(self, id: GlobalId, time: int | None) -> None:
        dataflow = self._exporting(id)
        if dataflow is None:
            return
        if time is None:
            del dataflow.since[id]
            self.retired.add(id)
            if not dataflow.since:
                self.dataflows.remove(dataflow)
        elif time >= dataflow.since[id]:
            dataflow.since[id] = time

    def _reconcile(self) -> None:
        assert self.block is not None
        old = {dataflow.description.exports: dataflow for dataflow in self.dataflows}
        kept = {
            description.exports: old[description.exports]
            for description in self.block
            if description.exports in old and _keeps(old[description.exports], description)
        }
        while True:
            exported = {id for ids in kept for id in ids}
            orphans = [
                ids
                for ids, dataflow in kept.items()
                if any(i.id not in exported for i in dataflow.description.index_imports)
            ]
            if not orphans:
                break
            for ids in orphans:
                del kept[ids]
        self.dataflows = []
        for description in self.block:
            dataflow = kept.get(description.exports)
            if dataflow is None:
                self.dataflows.append(_Dataflow(description, description.as_of, {}))
                dataflow = self.dataflows[-1]
                dataflow.since = dict.fromkeys(description.exports, description.as_of)
            else:
                # Kept: compacted to the new as_of, and read as of it.
                dataflow.as_of = description.as_of
                dataflow.since = dict.fromkeys(dataflow.since, description.as_of)
                self.dataflows.append(dataflow)
            exports = set(description.exports)
            dataflow.scheduled |= bool(exports & self.block_scheduled)
            dataflow.writable |= exports & self.block_writable
        self.block = None

    # Reads.

    def _exporting(self, id: GlobalId) -> _Dataflow | None:
        for dataflow in self.dataflows:
            if id in dataflow.since:
                return dataflow
        return None

    def _read(
        self, id: GlobalId, ts: int, timeout: Timeout, literals: tuple[Row, ...] | None
    ) -> list[str] | Counter[Row]:
        dataflow = self._exporting(id)
        export = None if dataflow is None else _index_export(dataflow.description, id)
        if dataflow is None or export is None:
            return [UNKNOWN]
        since = dataflow.since[id]
        if ts < since:
            return [f"error: peek error: read at ts {ts} is before the compaction frontier {since}"]
        upper = self._upper(dataflow, export.on)
        if upper is None or upper <= ts:
            return [f"error: timed out after {timeout.text}s"]
        rows = self._rows(dataflow, export.on, ts)
        if literals is not None:
            keys = {typed(literal) for literal in literals}
            rows = Counter(
                {row: n for row, n in rows.items() if typed(key_of(row, export.key)) in keys}
            )
        return rows

    def _sink_read(self, stanza: Stanza, id: GlobalId, ts: int, timeout: Timeout) -> list[str]:
        dataflow = self._exporting(id)
        if dataflow is None or id not in dataflow.writable or not dataflow.scheduled:
            raise UndecidableError(f"line {stanza.line}: a sink read the model cannot decide")
        on = next(sink.on for sink in dataflow.description.sink_exports if sink.id == id)
        upper = self._upper(dataflow, on)
        if upper is None or upper <= ts:
            return [f"error: timed out after {timeout.text}s"]
        return render_rows(self._rows(dataflow, on, ts).elements())

    def _await_subscribe(self, stanza: Stanza, id: GlobalId, up_to: int) -> list[str]:
        """What ``await-subscribe`` prints: every update of the subscribe's
        collection from the last wait's upper to its upper now (the
        snapshot at ``as_of`` first), once that upper reached ``up_to`` (or
        the subscribe finished, at its own ``up-to``)."""
        dataflow = self._exporting(id)
        sink = None
        if dataflow is not None:
            sink = next((s for s in dataflow.description.sink_exports if s.id == id), None)
        if dataflow is None or sink is None or not isinstance(sink.connection, Subscribe):
            raise UndecidableError(f"line {stanza.line}: a subscribe the model does not know")
        upper = self._upper(dataflow, sink.on)
        end = sink.connection.up_to
        reached = None if upper is None else upper if end is None else min(upper, end)
        finished = end is not None and reached is not None and reached >= end
        if reached is None or (reached < up_to and not finished):
            return [f"error: subscribe {id} did not reach {up_to} in time"]
        as_of = dataflow.description.as_of
        updates: list[Update] = []
        for time in range(self.delivered.get(id, as_of), reached):
            now = self._rows(dataflow, sink.on, time)
            before = self._rows(dataflow, sink.on, time - 1) if time > as_of else Counter()
            for row in now.keys() | before.keys():
                if now[row] != before[row]:
                    updates.append((row, time, now[row] - before[row]))
        self.delivered[id] = max(reached, self.delivered.get(id, as_of))
        return render_updates(updates)

    def _export_upper(self, id: GlobalId) -> int | None:
        dataflow = self._exporting(id)
        export = None if dataflow is None else _index_export(dataflow.description, id)
        if dataflow is None or export is None:
            return None
        return self._upper(dataflow, export.on)

    def _upper(self, dataflow: _Dataflow, on: GlobalId) -> int | None:
        """The upper of collection ``on`` of ``dataflow``: None while it (or
        an index it reads) is not scheduled or not there."""
        if not dataflow.scheduled:
            return None
        description = dataflow.description
        uppers: list[int] = []
        for read in _reads(description, on):
            source = next((s for s in description.source_imports if s.id == read), None)
            if source is not None:
                uppers.append(self._shard(source.shard).upper)
                continue
            index = next(i for i in description.index_imports if i.on == read)
            imported = self._exporting(index.id)
            if imported is None:
                return None
            upper = self._export_upper(index.id)
            if upper is None:
                return None
            uppers.append(upper)
        # A plan that reads nothing (a Constant) is complete at every time.
        upper = max(min(uppers, default=COMPLETE), dataflow.as_of)
        return upper if description.until is None else min(upper, description.until)

    def _rows(self, dataflow: _Dataflow, on: GlobalId, ts: int) -> Counter[Row]:
        description = dataflow.description
        builds = {build.id: build.plan for build in description.objects_to_build}
        if on in builds:
            plan = builds[on]
            inputs = {id: self._rows(dataflow, id, ts) for id in gets(plan)}
            return evaluate(plan, inputs)
        source = next((s for s in description.source_imports if s.id == on), None)
        if source is not None:
            return self._shard(source.shard).at(ts)
        index = next(i for i in description.index_imports if i.on == on)
        imported = self._exporting(index.id)
        assert imported is not None, "an import read once its index is there"
        export = _index_export(imported.description, index.id)
        assert export is not None
        return self._rows(imported, export.on, ts)


def _index_export(description: DataflowDescription, id: GlobalId) -> IndexExport | None:
    return next((e for e in description.index_exports if e.id == id), None)


def _reads(description: DataflowDescription, on: GlobalId) -> Iterable[GlobalId]:
    """The imported collections collection ``on`` reads (through builds)."""
    builds = {build.id: build.plan for build in description.objects_to_build}
    if on not in builds:
        yield on
        return
    for id in gets(builds[on]):
        yield from _reads(description, id)


def _keeps(old: _Dataflow, new: DataflowDescription) -> bool:
    if any(isinstance(sink.connection, Subscribe) for sink in new.sink_exports):
        return False
    if len(old.since) != len(old.description.exports):
        return False  # an export was dropped: rebuild it all
    since = max(old.since.values(), default=old.as_of)
    reduced = max(old.as_of, since)
    return since <= new.as_of and old.description.compatible_with(new, as_of=reduced)
