"""The storage of durable shards: what a catalog needs of it, the URLs that
name it, and storage in memory.

A store holds, per shard, its upper and its batches in order, each batch the
encoded updates of one append (:mod:`._codec`). Every method is one
transaction: it changes all it says or nothing. The catalog above keeps the
decoded shards in memory and asks the store only to change them or to catch
up with what other writers did.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

import attrs
import trio

from .._errors import UpperMismatchError

Changed = Callable[[frozenset[str] | None], object]
"""Called by :meth:`ShardStorage.watch` with the names of shards another
writer changed, or ``None`` when any may have changed."""


@attrs.frozen
class StoredBatch:
    """One stored append: its position in the shard (0, 1, ...), the
    ``[lower, upper)`` it covers, and its updates encoded (:mod:`._codec`)."""

    seq: int
    lower: int
    upper: int
    data: bytes


@attrs.frozen
class ShardState:
    """A shard as stored: its upper, how many batches it holds, and the
    batches from some position on, in order (:meth:`ShardStorage.read`).
    As read: the catalog checks it before taking it in."""

    upper: int
    batches: int
    data: tuple[StoredBatch, ...] = ()


class ShardStorage(Protocol):
    """Where durable shards are stored (SQLite, PostgreSQL, or memory).

    The methods are synchronous and each is one transaction. A shard that was
    never written is stored as upper 0 with no batches."""

    @property
    def url(self) -> str:
        """The URL this storage was opened with (without a password)."""
        ...

    def uppers(self) -> dict[str, ShardState]:
        """Every stored shard's upper and batch count (no data). Raises
        :class:`~replica.storage.persist.StorageCorruptError` as :meth:`read` does."""
        ...

    def read(self, name: str, since: int) -> ShardState:
        """Shard ``name``'s upper, its batch count, and its batches from
        position ``since`` on, as of one moment. Raises
        :class:`~replica.storage.persist.StorageCorruptError` for a stored value of
        another type than the schema's, or batches stored without their
        shard."""
        ...

    def append(self, name: str, data: bytes, lower: int, upper: int) -> int:
        """Compare-and-append: if shard ``name``'s upper is ``lower``, add the
        batch ``data`` and set the upper to ``upper``; return the batch's
        position. Raises :class:`~replica.UpperMismatchError` (and stores
        nothing) otherwise."""
        ...

    def advance(self, name: str, upper: int) -> ShardState:
        """Set shard ``name``'s upper to ``upper`` if that is not below it;
        return the shard's upper and batch count after (an upper above
        ``upper`` means this advance would have moved it back: nothing
        changed)."""
        ...

    async def watch(self, changed: Changed, *, task_status: trio.TaskStatus[None]) -> None:
        """Until cancelled, call ``changed`` with the shards other writers
        change, as the store pushes them (never by polling). Calls
        ``changed(None)`` once it listens, before ``task_status.started()``,
        so nothing between a load and the watch is missed. Raises
        :class:`~replica.storage.persist.NotificationsUnsupportedError` if the store
        cannot push (SQLite)."""
        ...

    def close(self) -> None:
        """Release the storage's connections; idempotent."""
        ...


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
