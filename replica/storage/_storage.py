"""What a durable catalog needs of where its shards are stored: the
:class:`ShardStorage` protocol and the values it passes. Below the shards
(:mod:`._shard` names the protocol) and below the durable catalogs and their
backends (:mod:`replica.storage.persist`), which implement it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

import attrs

if TYPE_CHECKING:
    import trio

Changed = Callable[[frozenset[str] | None], object]
"""Called by :meth:`ShardStorage.watch` with the names of shards another
writer changed, or ``None`` when any may have changed."""


@attrs.frozen
class StoredBatch:
    """One stored append: its position in the shard (0, 1, ...), the
    ``[lower, upper)`` it covers, and its updates encoded
    (:mod:`replica.storage.persist._codec`)."""

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
