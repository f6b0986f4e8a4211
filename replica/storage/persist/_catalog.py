"""Durable shards: the in-memory shards of :mod:`replica.storage._shard`, written
through to a :class:`ShardStorage` before memory changes.

A :class:`DurableShardCatalog` loads every stored shard when it opens. A
change (``write``, ``append``, ``advance``) is first one transaction in the
store, which decides it against the stored upper (another catalog on the same
store may have moved it); only then does memory change and the shard's
listeners wake. A change refused by the store (another writer got there
first) changes nothing of it, and the catalog catches up with what the other
writer did before the error is raised, so a retry sees the new upper. Other
writers' changes otherwise reach this catalog by :meth:`~DurableShardCatalog.refresh`
or, where the store can push them, by running :meth:`~DurableShardCatalog.follow`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import overload

import attrs
import trio

from ...model._rows import Row, Update
from .._errors import UpperMismatchError, UpperRegressionError, WriteBelowUpperError
from .._shard import Shard, ShardCatalog, checked_batch, register_opener
from ._checks import checked_updates
from ._codec import check_name, check_time, encode_batch
from ._open import open_storage
from ._storage import ShardState, ShardStorage


@attrs.define(eq=False)
class DurableShard(Shard):
    """A shard whose every change is stored first. Same API as
    :class:`~replica.Shard`; reads are from memory."""

    _storage: ShardStorage = attrs.field(kw_only=True)
    # Invariant: memory holds the stored batches [0, _batches) and an upper
    # the store had with them.
    _batches: int = attrs.field(default=0, kw_only=True)
    # Set when the catalog closes: the storage may be shared (MemoryStorage)
    # and stay open to other catalogs, so the shard tracks it itself.
    _closed: bool = attrs.field(default=False, kw_only=True)

    def write(self, ts: int, rows: Iterable[Row]) -> int:
        self._check_open()
        batch = [(row, ts, 1) for row in rows]
        while True:
            if ts < self.upper:
                raise WriteBelowUpperError(
                    f"write at ts {ts} is below the shard upper {self.upper}"
                )
            try:
                self._append(batch, self.upper, ts + 1)
            except UpperMismatchError:
                continue  # caught up with another writer: check ts again
            return len(batch)

    def append(self, updates: Iterable[Update], lower: int, upper: int) -> None:
        """Compare-and-append against the stored upper (see
        :meth:`replica.Shard.append`). A malformed batch raises ``ValueError``
        and one that cannot be stored :class:`UnstorableError`, before the
        uppers are compared."""
        self._check_open()
        self._append(checked_batch(updates, lower, upper), lower, upper)

    def advance(self, upper: int) -> None:
        self._check_open()
        if upper < self.upper:
            raise UpperRegressionError(f"upper {upper} is below the shard upper {self.upper}")
        if upper == self.upper:
            return
        check_time(self.name, "upper", upper)
        stored = self._storage.advance(self.name, upper)
        if stored.upper > upper or stored.batches != self._batches:
            self.catch_up()
            if stored.upper > upper:
                raise UpperRegressionError(f"upper {upper} is below the shard upper {self.upper}")
            return
        self.upper = upper
        self._notify()

    def catch_up(self) -> bool:
        """Take in what other writers stored since this shard last looked;
        wake the listeners if anything changed. Return whether it did.
        Raises :class:`StorageCorruptError`, changing nothing, if what the
        store holds is damaged."""
        self._check_open()
        return self.take(self._storage.read(self.name, self._batches))

    def take(self, state: ShardState) -> bool:
        """Take in ``state``, read from the store with the batches from this
        shard's batch count on. Return whether anything changed. Raises
        :class:`StorageCorruptError`, changing nothing, if what was read is
        damaged (see :func:`._checks.checked_updates`)."""
        updates = checked_updates(self.name, self._batches, self.upper, state)
        if state.upper == self.upper and not state.data:
            return False
        self._take_in(updates, state.batches, state.upper)
        self._notify()
        return True

    @trio.lowlevel.enable_ki_protection
    def _take_in(self, updates: Iterable[Update], batches: int, upper: int) -> None:
        # With KeyboardInterrupt deferred (under Trio): a Ctrl-C between the
        # updates and the batch count would make the next catch-up take the
        # updates in twice.
        self.updates.extend(updates)
        self._batches = batches
        self.upper = upper

    def _check_open(self) -> None:
        if self._closed:
            raise trio.ClosedResourceError(f"the shard catalog on {self._storage.url!r} is closed")

    def _append(self, updates: Sequence[Update], lower: int, upper: int) -> None:
        check_time(self.name, "lower", lower)
        check_time(self.name, "upper", upper)
        data = encode_batch(self.name, updates)
        try:
            seq = self._storage.append(self.name, data, lower, upper)
        except UpperMismatchError:
            self.catch_up()
            raise
        if seq != self._batches:
            self.catch_up()  # others appended before: take theirs and this batch in order
            return
        self._take_in(updates, seq + 1, upper)
        self._notify()


@attrs.define(eq=False)
class DurableShardCatalog(ShardCatalog):
    """A catalog whose shards are stored in ``storage`` (which it owns and
    closes). Build it with :meth:`load` (or :func:`open_catalog`)."""

    storage: ShardStorage = attrs.field(kw_only=True)
    _closed: bool = attrs.field(default=False, init=False)

    @classmethod
    def load(cls, storage: ShardStorage) -> DurableShardCatalog:
        """A catalog with every shard ``storage`` holds, rows and uppers,
        each checked as it is read. Raises :class:`StorageCorruptError`,
        naming the shard, for a damaged store. Closes ``storage`` if the
        load fails."""
        catalog = cls(storage=storage)
        try:
            catalog.refresh()
        except BaseException:
            storage.close()
            raise
        return catalog

    def shard(self, name: str) -> DurableShard:
        shard = self.shards.get(name)
        if shard is None:
            check_name(name)
            shard = self.shards[name] = DurableShard(
                name, storage=self.storage, closed=self._closed
            )
        assert isinstance(shard, DurableShard), f"shard {name!r} is not durable"
        return shard

    def refresh(self, names: Iterable[str] | None = None) -> list[str]:
        """Catch up with other writers: the shards ``names`` (every stored
        shard if ``None``) take in what was stored since this catalog last
        looked, and their listeners wake. Return the names of the shards that
        changed. Other writers' changes reach a catalog on SQLite only so.
        Raises :class:`StorageCorruptError` if what is read is damaged: the
        shards taken in before it stay so, the damaged one unchanged."""
        self._check_open()
        if isinstance(names, str):
            raise TypeError(f"refresh takes shard names, not one name: refresh([{names!r}])")
        changed: list[str] = []
        if names is None:
            for name, state in self.storage.uppers().items():
                shard = self.shard(name)
                if (state.upper, state.batches) != (shard.upper, shard._batches):
                    shard.catch_up()
                    changed.append(name)
        else:
            for name in names:
                if self._catch_up(name):
                    changed.append(name)
        return changed

    def _catch_up(self, name: str) -> bool:
        shard = self.shards.get(name)
        if isinstance(shard, DurableShard):
            return shard.catch_up()
        check_name(name)
        state = self.storage.read(name, 0)
        if state == ShardState(0, 0):
            return False  # nothing stored: no shard to make
        return self.shard(name).take(state)

    async def follow(
        self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        """Until cancelled, take in other writers' changes as the store pushes
        them (PostgreSQL's NOTIFY; never polling). Start it with
        ``await nursery.start(catalog.follow)``: once started, every change
        stored after this point reaches the listeners. Raises
        :class:`NotificationsUnsupportedError` on SQLite. Cancelling it
        leaves the catalog as it was, with the changes taken so far."""
        self._check_open()
        await self.storage.watch(self.refresh, task_status=task_status)

    def close(self) -> None:
        """Close the storage; the shards stay readable in memory, and a
        change (or :meth:`refresh`, :meth:`follow`) raises
        ``trio.ClosedResourceError``. Idempotent."""
        self._closed = True
        for shard in self.shards.values():
            if isinstance(shard, DurableShard):
                shard._closed = True
        self.storage.close()

    def _check_open(self) -> None:
        if self._closed:
            raise trio.ClosedResourceError(f"the shard catalog on {self.storage.url!r} is closed")


@overload
def open_catalog(storage: ShardStorage) -> DurableShardCatalog: ...
@overload
def open_catalog(storage: str | ShardStorage) -> ShardCatalog: ...
def open_catalog(storage: str | ShardStorage) -> ShardCatalog:
    """A shard catalog on ``storage``: a URL (see :func:`open_storage`) or an
    open storage, which the catalog then owns. ``memory:`` gives today's
    in-memory :class:`~replica.ShardCatalog`, which stores nothing; anything
    else a :class:`DurableShardCatalog` with every stored shard loaded."""
    if isinstance(storage, str):
        if storage.strip().lower() == "memory:":
            return ShardCatalog()
        storage = open_storage(storage)
    return DurableShardCatalog.load(storage)


register_opener(open_catalog)
