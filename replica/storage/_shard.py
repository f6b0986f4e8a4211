"""Shards: shared append-only logs of updates with an upper, like persist
shards (docs/protocol.md). A change wakes every reader that listens.

These shards live in memory and vanish with the process; a catalog on
durable storage (SQLite, PostgreSQL) is :mod:`replica.storage.persist`'s, with the
same shards and the same synchronous API (:meth:`ShardCatalog.open`).

A shard holds updates ``(row, time, diff)``; every time before ``upper`` is
complete. Appends are compare-and-append, as persist's are: a batch covers
``[lower, upper)`` and applies only if ``lower`` is the shard's upper. The
driver's writes are the special case of one time.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Self

import attrs

from ..model._listeners import Listeners
from ..model._rows import Row, Update, accumulate, rows_of_counts
from ._errors import UpperMismatchError, UpperRegressionError, WriteBelowUpperError

if TYPE_CHECKING:
    from ._storage import ShardStorage

_durable: list[Callable[[str | ShardStorage], ShardCatalog]] = []
"""How :meth:`ShardCatalog.open` opens a catalog: the durable catalogs
(:mod:`replica.storage.persist`, above this module) register
:func:`~replica.storage.persist.open_catalog` here as they are imported;
``open`` loads them on first use if nothing did (the one load upward in the
layers, by name: ``tests/test_layout.py`` pins it)."""

DURABLE_CATALOGS = "replica.storage.persist"
"""The module that registers the durable catalogs."""


def register_opener(opener: Callable[[str | ShardStorage], ShardCatalog]) -> None:
    """Make ``opener`` what :meth:`ShardCatalog.open` calls."""
    _durable[:] = [opener]


@attrs.define(eq=False)
class Shard:
    """An append-only log of updates and its upper."""

    name: str
    # Invariant: every update's time is below upper; batches are appended in
    # time order (a later batch's times are at or after an earlier one's upper).
    upper: int = 0
    updates: list[Update] = attrs.field(factory=list)
    _listeners: Listeners = attrs.field(init=False)
    # The updates split by a route, once for all the readers that read them so
    # (the workers of an index of this shard), by what names the route.
    _partitions: dict[object, Partitioned] = attrs.field(factory=dict)

    @_listeners.default
    def _listeners_of_this_shard(self) -> Listeners:
        return Listeners(f"shard {self.name!r}")

    def partitioned(self, name: object, parts: int, route: Callable[[Row], int]) -> Partitioned:
        """The updates split into ``parts`` by ``route``, shared by every
        reader that asks under the same ``name`` (a route is a pure function of
        a row: the same name must mean the same route)."""
        found = self._partitions.get(name)
        if found is None:
            found = self._partitions[name] = Partitioned(self, parts, route)
        return found

    def write(self, ts: int, rows: Iterable[Row]) -> int:
        """Append ``rows`` at ``ts`` (each once); the upper becomes ``ts + 1``.
        Return how many. Raises :class:`~replica.WriteBelowUpperError` (and
        writes nothing) if ``ts`` is below the upper."""
        if ts < self.upper:
            raise WriteBelowUpperError(f"write at ts {ts} is below the shard upper {self.upper}")
        batch = [(row, ts, 1) for row in rows]
        self.updates.extend(batch)
        self.upper = ts + 1
        self._notify()
        return len(batch)

    def append(self, updates: Iterable[Update], lower: int, upper: int) -> None:
        """Compare-and-append: add ``updates`` (times in ``[lower, upper)``)
        and move the upper to ``upper``, if the upper is ``lower`` now. Raises
        :class:`~replica.UpperMismatchError` (and changes nothing) otherwise."""
        updates = self.checked_append(updates, lower, upper)
        self.updates.extend(updates)
        self.upper = upper
        self._notify()

    def checked_append(self, updates: Iterable[Update], lower: int, upper: int) -> Sequence[Update]:
        """The checks of :meth:`append` (the upper is ``lower``; the batch
        ``[lower, upper)`` is not empty and holds every update's time), which
        change nothing; return the updates, a generator read once."""
        updates = updates if isinstance(updates, Sequence) else list(updates)
        if lower != self.upper:
            raise UpperMismatchError(
                f"append to shard {self.name!r} expected upper {lower}, found {self.upper}"
            )
        return checked_batch(updates, lower, upper)

    def advance(self, upper: int) -> None:
        """Move the upper to ``upper`` without data. Raises
        :class:`~replica.UpperRegressionError` if that would move it back."""
        if upper < self.upper:
            raise UpperRegressionError(f"upper {upper} is below the shard upper {self.upper}")
        if upper > self.upper:
            self.upper = upper
            self._notify()

    def read_at(self, ts: int) -> list[Row]:
        """The rows at ``ts`` (a row with multiplicity k appears k times).
        Complete only once the upper is past ``ts``."""
        return rows_of_counts(accumulate(self.updates, ts))

    def listen(self, wake: Callable[[], None]) -> Callable[[], None]:
        """Call ``wake`` after every change; return the function that stops it
        (a ``wake`` that raises: :class:`~replica.model._listeners.Listeners`)."""
        return self._listeners.listen(wake)

    def _notify(self) -> None:
        self._listeners.notify()


def checked_batch(updates: Iterable[Update], lower: int, upper: int) -> Sequence[Update]:
    """``updates`` as a batch ``[lower, upper)`` of an append: not empty, and
    holding every update's time (``ValueError`` otherwise); a generator is
    read once, here."""
    updates = updates if isinstance(updates, Sequence) else list(updates)
    if upper <= lower:
        raise ValueError(f"an append covers [lower, upper) with upper > lower: {lower}, {upper}")
    stray = next((t for _, t, _ in updates if not lower <= t < upper), None)
    if stray is not None:
        raise ValueError(f"an update at {stray} is outside the batch [{lower}, {upper})")
    return updates


@attrs.define(eq=False)
class Partitioned:
    """A shard's updates split into parts by a route, in arrival order: the
    routing of each update happens once, however many workers read a part."""

    shard: Shard
    parts: int
    route: Callable[[Row], int]
    _split: list[list[Update]] = attrs.field(init=False)
    # Invariant: the updates before ``_cursor`` are in ``_split``.
    _cursor: int = 0

    def __attrs_post_init__(self) -> None:
        self._split = [[] for _ in range(self.parts)]

    def part(self, index: int) -> list[Update]:
        """Part ``index``: every update of the shard so far that routes there
        (the list grows; readers keep their own position in it)."""
        if self.parts == 1:
            return self.shard.updates
        updates = self.shard.updates
        end = len(updates)
        if end > self._cursor:
            split, route = self._split, self.route
            for update in updates[self._cursor : end]:
                split[route(update[0])].append(update)
            self._cursor = end
        return self._split[index]


@attrs.define(eq=False)
class ShardCatalog:
    """The shards of a deployment, by name; a shard exists once it is named.

    This catalog keeps its shards in memory only; :meth:`open` gives one
    whose shards are durable. Either is a context manager that closes it."""

    shards: dict[str, Shard] = attrs.field(factory=dict)

    @staticmethod
    def open(storage: str | ShardStorage) -> ShardCatalog:
        """A catalog on ``storage``, a URL (``memory:``, ``sqlite:PATH``,
        ``postgresql://...``) or an open :class:`~replica.storage.persist.ShardStorage`:
        see :func:`replica.storage.persist.open_catalog`."""
        if not _durable:
            importlib.import_module(DURABLE_CATALOGS)
        (opener,) = _durable
        return opener(storage)

    def shard(self, name: str) -> Shard:
        shard = self.shards.get(name)
        if shard is None:
            shard = self.shards[name] = Shard(name)
        return shard

    def close(self) -> None:
        """Release what the catalog holds (nothing, in memory)."""

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
