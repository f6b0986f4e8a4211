"""The storage of durable shards in memory (what a catalog needs of any
storage, the :class:`ShardStorage` protocol, is :mod:`replica.storage._storage`'s).

A store holds, per shard, its upper and its batches in order, each batch the
encoded updates of one append (:mod:`._codec`). Every method is one
transaction: it changes all it says or nothing. The catalog above keeps the
decoded shards in memory and asks the store only to change them or to catch
up with what other writers did.
"""

from __future__ import annotations

import attrs
import trio

from .._errors import UpperMismatchError
from .._storage import Changed as Changed
from .._storage import ShardState as ShardState
from .._storage import ShardStorage as ShardStorage
from .._storage import StoredBatch as StoredBatch


@attrs.define(eq=False)
class _StoredShard:
    upper: int = 0
    batches: list[StoredBatch] = attrs.field(factory=list)


@attrs.define(eq=False)
class _Watcher:
    # The names changed since the watch last looked, and its wake-up.
    names: set[str] = attrs.field(factory=set)
    event: trio.Event = attrs.field(factory=trio.Event)


@attrs.define(eq=False)
class MemoryStorage:
    """Storage in this process's memory (``memory:``): lost with it. Every
    catalog opened on the same instance sees one store, as processes see one
    database; :meth:`watch` pushes each change to the other catalogs'
    watchers, which makes the cross-catalog behaviour testable
    deterministically on Trio's mock clock."""

    url: str = "memory:"
    _shards: dict[str, _StoredShard] = attrs.field(factory=dict)
    _watchers: list[_Watcher] = attrs.field(factory=list)

    def uppers(self) -> dict[str, ShardState]:
        return {
            name: ShardState(shard.upper, len(shard.batches))
            for name, shard in self._shards.items()
        }

    def read(self, name: str, since: int) -> ShardState:
        shard = self._shards.get(name) or _StoredShard()
        return ShardState(shard.upper, len(shard.batches), tuple(shard.batches[since:]))

    def append(self, name: str, data: bytes, lower: int, upper: int) -> int:
        shard = self._shards.setdefault(name, _StoredShard())
        if shard.upper != lower:
            raise UpperMismatchError(
                f"append to shard {name!r} expected upper {lower}, found {shard.upper}"
            )
        seq = len(shard.batches)
        shard.batches.append(StoredBatch(seq, lower, upper, data))
        shard.upper = upper
        self._changed(name)
        return seq

    def advance(self, name: str, upper: int) -> ShardState:
        shard = self._shards.setdefault(name, _StoredShard())
        if upper > shard.upper:
            shard.upper = upper
            self._changed(name)
        return ShardState(shard.upper, len(shard.batches))

    async def watch(self, changed: Changed, *, task_status: trio.TaskStatus[None]) -> None:
        watcher = _Watcher()
        self._watchers.append(watcher)
        try:
            changed(None)
            task_status.started()
            while True:
                await watcher.event.wait()
                watcher.event = trio.Event()
                names = frozenset(watcher.names)
                watcher.names.clear()
                changed(names)
        finally:
            self._watchers.remove(watcher)

    def close(self) -> None:
        """Nothing to release: the store lives as long as this object."""

    def _changed(self, name: str) -> None:
        # Every watcher hears of it, the writer's own too: a catalog that
        # catches up with a change it made itself finds nothing new.
        for watcher in self._watchers:
            watcher.names.add(name)
            watcher.event.set()
