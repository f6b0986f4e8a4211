"""A plain reference model of what a spec's directives must print (no Trio,
no actors), for the simulation to check the replica against.

It covers the directives in the states where their output is determined: it
assumes reads are issued only while no runtime is held and no reconciliation
is unfinished (the simulation's programs respect that). An id dropped on a
connection cannot be defined again on it (the replica refuses). Within those
limits, DESIGN.md §2 fixes every answer: a kept index keeps its rows and is
compacted to the new ``as_of`` and reads as of it; a rebuilt or new one reads from its
``as_of``; a read is ready once its shard's upper (or the index's ``as_of``)
is past it, fails below the compaction frontier, and waits (times out)
otherwise.
"""

from __future__ import annotations

import attrs

from ._format import format_rows
from ._runner import DEFAULT_TIMEOUT
from ._spec import Stanza, as_int, as_str, parse_row


@attrs.define
class _Index:
    source: int
    shard: str
    key: tuple[int, ...]
    as_of: int
    since: int


@attrs.define
class _Shard:
    upper: int = 0
    rows: list[tuple[int, tuple[int | str, ...]]] = attrs.field(factory=list)


@attrs.define
class ReferenceModel:
    """Feed it stanzas in order; it says what each must print."""

    shards: dict[str, _Shard] = attrs.field(factory=dict)
    indexes: dict[int, _Index] = attrs.field(factory=dict)
    # The defines of a connection still reconciling (None: not reconciling).
    # The first connection reconciles too: it starts with an empty block.
    block: list[tuple[int, _Index]] | None = attrs.field(factory=list)
    held: set[str] = attrs.field(factory=set)
    # Ids dropped on the current connection: the replica refuses to reuse them.
    retired: set[int] = attrs.field(factory=set)
    # Scheduled indexes (live), and those scheduled in the block being reconciled.
    scheduled: set[int] = attrs.field(factory=set)
    block_scheduled: set[int] = attrs.field(factory=set)

    @property
    def settled(self) -> bool:
        """Whether reads are determined now: nothing held, nothing reconciling."""
        return not self.held and self.block is None

    def expect(self, stanza: Stanza) -> list[str]:
        args = stanza.args
        match stanza.name:
            case "write-rows" | "write-single-ts":
                shard = self.shards.setdefault(as_str(args["shard"]), _Shard())
                ts = as_int(args["ts"])
                if ts < shard.upper:
                    return [f"error: write at ts {ts} is below the shard upper {shard.upper}"]
                if stanza.name == "write-rows":
                    rows = [parse_row(line) for line in stanza.body]
                else:
                    rows = [(i,) for i in range(as_int(args["count"]))]
                shard.rows.extend((ts, row) for row in rows)
                shard.upper = ts + 1
                return [f"wrote {len(rows)}"]
            case "advance":
                shard = self.shards.setdefault(as_str(args["shard"]), _Shard())
                upper = as_int(args["upper"])
                if upper < shard.upper:
                    return [f"error: upper {upper} is below the shard upper {shard.upper}"]
                shard.upper = upper
            case "reconnect":
                self.block = []
                self.block_scheduled = set()
                self.retired.clear()
            case "schedule":
                if self.block is not None:
                    self.block_scheduled.add(as_int(args["id"]))
                elif as_int(args["id"]) in self.indexes:
                    self.scheduled.add(as_int(args["id"]))
            case "define-index":
                key = args["key"]
                assert isinstance(key, tuple)
                index = _Index(
                    as_int(args["source"]), as_str(args["shard"]), key, as_int(args["as-of"]), 0
                )
                index.since = index.as_of
                if self.block is not None:
                    id = as_int(args["index"])
                    assert all(id != other for other, _ in self.block), (
                        f"line {stanza.line}: an id defined twice in one reconciliation"
                    )
                    self.block.append((id, index))
                elif as_int(args["index"]) not in self.retired:
                    self.indexes.setdefault(as_int(args["index"]), index)
            case "initialization-complete" if self.block is not None:
                self._reconcile()
            case "allow-compaction":
                assert self.block is None, f"line {stanza.line}: compaction while reconciling"
                compacted = self.indexes.get(as_int(args["id"]))
                if compacted is not None:
                    compacted.since = max(compacted.since, as_int(args["since"]))
            case "drop":
                assert self.block is None, f"line {stanza.line}: drop while reconciling"
                if self.indexes.pop(as_int(args["id"]), None) is not None:
                    self.retired.add(as_int(args["id"]))
                    self.scheduled.discard(as_int(args["id"]))
            case "hold":
                self.held.add(as_str(args["runtime"]))
            case "release":
                self.held.discard(as_str(args["runtime"]))
            case "await-frontier" | "peek" | "count":
                return self._read(stanza)
        return ["ok"]

    def _reconcile(self) -> None:
        assert self.block is not None
        old, new = self.indexes, {}
        for id, index in self.block:
            running = old.get(id)
            if (
                running is not None
                and (running.source, running.shard, running.key)
                == (index.source, index.shard, index.key)
                and max(running.as_of, running.since) <= index.as_of
                and running.since <= index.as_of
            ):
                # Kept: compacted to the new as_of, and read as of it.
                running.since = running.as_of = index.as_of
                new[id] = running
            else:
                new[id] = index
        scheduled = {id for id in new if id in self.block_scheduled}
        scheduled |= {id for id in new if new[id] is old.get(id) and id in self.scheduled}
        self.indexes, self.scheduled = new, scheduled
        self.block = None

    def _read(self, stanza: Stanza) -> list[str]:
        assert self.settled, f"line {stanza.line}: a read the model cannot decide"
        args = stanza.args
        timeout = as_str(args.get("timeout-secs", DEFAULT_TIMEOUT))
        timed_out = [f"error: timed out after {timeout}s"]
        id, ts = as_int(args["id"]), as_int(args["ts"])
        index = self.indexes.get(id)
        if stanza.name == "await-frontier":
            assert index is not None, f"line {stanza.line}: await-frontier of a missing index"
            if id not in self.scheduled:
                return timed_out  # a dataflow does nothing until it is scheduled
            upper = max(self.shards.setdefault(index.shard, _Shard()).upper, index.as_of)
            return ["ok"] if upper >= ts else timed_out
        if index is None:
            return ["error: collection ID does not exist"]
        if ts < index.since:
            return [f"error: read at ts {ts} is before the compaction frontier {index.since}"]
        shard = self.shards.setdefault(index.shard, _Shard())
        if id not in self.scheduled or max(shard.upper, index.as_of) <= ts:
            return timed_out
        rows = [row for written, row in shard.rows if written <= ts]
        return [str(len(rows))] if stanza.name == "count" else format_rows(rows)
