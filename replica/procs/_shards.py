"""Shards across OS processes: a host that owns a :class:`ShardCatalog`, and
local mirrors in each replica process fed by the changes the host pushes.

The host (in the driver's process) takes any catalog: it reads only the
shards' public surface (``updates``, ``upper``, ``listen``, ``append``), so a
durable catalog works as the in-memory one does. A replica process asks for
a shard once (:class:`~._items.SubscribeShard`); the host answers with
everything the shard holds, then pushes each change as it happens
(:class:`~._items.ShardPush`: the updates from position ``start`` on, and
the new upper): a listener on the shard, never a poll. The token names the
subscription, so a push meant for an earlier one (a process that was reset
or restarted) is ignored.

A mirror is read as a local shard. A sink's compare-and-append goes to the
host (:class:`~._items.AppendShard`), which applies it if the
host's upper is still ``lower`` and ignores it otherwise, exactly as
:meth:`Shard.append` raising :class:`UpperMismatchError` to the sink does:
either way the sink's next step sees the shard as it is and recomputes.
The mirror checks ``lower`` against what it has seen first, so a sink that
is behind learns it at once, as in one process.
"""

from __future__ import annotations

import contextlib
import functools
import logging
from collections.abc import Callable, Iterable

import attrs

from ..model._rows import Row, Update
from ..protocol import ProtocolError
from ..storage._errors import UpperMismatchError
from ..storage._shard import Shard, ShardCatalog
from . import _wire
from ._items import AppendShard, Item, ShardPush, SubscribeShard

logger = logging.getLogger("replica.procs")

PUSH_CHUNK = 50_000
"""Updates per push item (a big shard's snapshot goes in several)."""
PUSH_BYTES = 16 * 2**20
"""The most bytes a push item of several updates carries: big rows go in
more items than PUSH_CHUNK says, each well under a frame's limit (one update
bigger than this goes alone)."""


@attrs.define(eq=False)
class MirrorShard(Shard):
    """A replica process's copy of a shard the host owns."""

    send: Callable[[Item], None] | None = None

    def write(self, ts: int, rows: Iterable[Row]) -> int:
        raise ProtocolError(f"a replica process does not write shard {self.name!r} directly")

    def advance(self, upper: int) -> None:
        raise ProtocolError(f"a replica process does not advance shard {self.name!r}")

    def append(self, updates: Iterable[Update], lower: int, upper: int) -> None:
        updates = self.checked_append(updates, lower, upper)
        assert self.send is not None
        self.send(AppendShard(self.name, list(updates), lower, upper))

    def receive(self, start: int, updates: list[Update], upper: int) -> None:
        """The host's push: updates from position ``start`` on, and the upper.
        A push that starts before the mirror's end (the whole shard again,
        after :meth:`MirrorCatalog.resubscribe`) adds what it holds past it:
        the host's shards only grow, so positions agree."""
        held = len(self.updates)
        if start < held:
            updates, start = updates[held - start :], held
        if start != held:
            logger.error(
                "shard %r: a push from position %d, the mirror holds %d updates: ignored",
                self.name,
                start,
                len(self.updates),
            )
            return
        self.updates.extend(updates)
        if upper > self.upper:
            self.upper = upper
        if updates or upper >= self.upper:
            self._notify()


@attrs.define(eq=False)
class MirrorCatalog(ShardCatalog):
    """The shards of a replica process: mirrors, subscribed on first use."""

    token: int = 0
    send: Callable[[Item], None] | None = None

    def shard(self, name: str) -> Shard:
        shard = self.shards.get(name)
        if shard is None:
            assert self.send is not None
            shard = self.shards[name] = MirrorShard(name, send=self.send)
            self.send(SubscribeShard(self.token, name))
        return shard

    def resubscribe(self) -> None:
        """Ask for every mirrored shard again (pushes were lost with a dropped
        connection to the host): the host pushes each whole, and each mirror
        takes what it lacks."""
        assert self.send is not None
        for name in self.shards:
            self.send(SubscribeShard(self.token, name))

    def receive(self, push: ShardPush) -> None:
        if push.token != self.token:
            return  # for an earlier subscription of this process
        shard = self.shards.get(push.name)
        if isinstance(shard, MirrorShard):
            shard.receive(push.start, push.updates, push.upper)


@attrs.define(eq=False)
class ShardHost:
    """Owns ``catalog``; pushes each shard's changes to the processes that
    subscribed to it. ``send(process_node, item)`` puts an item on the link
    to that process."""

    catalog: ShardCatalog
    send: Callable[[str, Item], None]
    # Per process node: per shard, (subscription token, updates pushed).
    _readers: dict[str, dict[str, tuple[int, int]]] = attrs.field(factory=dict)
    _listening: dict[str, Callable[[], None]] = attrs.field(factory=dict)

    def replace(self, catalog: ShardCatalog) -> None:
        """Host ``catalog`` from now on (a fresh run): every subscription ends."""
        for stop in self._listening.values():
            stop()
        self._listening.clear()
        self._readers.clear()
        self.catalog = catalog

    def forget(self, process: str) -> None:
        """``process`` went away (or was reset): its subscriptions end."""
        self._readers.pop(process, None)

    def subscribe(self, process: str, token: int, name: str) -> None:
        shard = self.catalog.shard(name)
        if name not in self._listening:
            self._listening[name] = shard.listen(functools.partial(self._changed, name))
        self._readers.setdefault(process, {})[name] = (token, 0)
        self._push(process, name, shard, force=True)

    def append(self, name: str, updates: list[Update], lower: int, upper: int) -> None:
        with contextlib.suppress(UpperMismatchError):
            self.catalog.shard(name).append(updates, lower, upper)

    def _changed(self, name: str) -> None:
        shard = self.catalog.shard(name)
        for process, shards in self._readers.items():
            if name in shards:
                self._push(process, name, shard)

    def _push(self, process: str, name: str, shard: Shard, *, force: bool = False) -> None:
        token, cursor = self._readers[process][name]
        updates = shard.updates
        end = len(updates)
        if end == cursor and not force:
            self.send(process, ShardPush(token, name, cursor, [], shard.upper))
            return
        start = cursor
        # Updates per item: halved while an item is over PUSH_BYTES, and kept
        # for the next item (rows of a shard tend to be alike in size).
        count = PUSH_CHUNK
        while True:
            stop = min(end, start + count)
            while stop - start > 1 and len(_wire.encode(updates[start:stop])) > PUSH_BYTES:
                count = max(1, (stop - start) // 2)
                stop = start + count
            # The upper travels with the last chunk only: a mirror must not
            # see a time complete before it holds every update before it.
            upper = shard.upper if stop >= end else 0
            self.send(process, ShardPush(token, name, start, updates[start:stop], upper))
            start = stop
            if start >= end:
                break
        self._readers[process][name] = (token, end)
