"""Process 0's command channel across OS processes: each batch its global
worker 0 adapter sequences goes on the link to every other process
(:class:`~._items.Sequenced`, one item a run of commands) and to this
process's workers; the bytes each command arrived as are forwarded as they
came (:class:`Encoded`) instead of being encoded again."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import attrs

from actors import Sequencer

from ..runtime._worker import SequencedCommand
from . import _wire
from ._items import Sequenced
from ._links import CHUNK, Hub


@attrs.define(eq=False)
class Encoded:
    """The bytes each command arrived as, by the command, until every runtime
    forwarded it (so process 0 forwards them as they came instead of encoding
    them again). ``uses`` is the number of runtimes; a command routed to
    fewer of them (a peek, to the interactive runtime only) stays until it
    is among the oldest when ``limit`` are kept, or their bytes pass
    ``byte_limit`` (a count alone let 2,000 peeks of 97 KB of literals hold
    193 MB here). Keeping only what is still to be forwarded keeps the
    collector's work down (forwarded commands are not held here)."""

    uses: int = 1
    limit: int = 1 << 16
    byte_limit: int = 64 * 2**20
    _by_id: dict[int, list[Any]] = attrs.field(factory=dict)
    # The bytes of the commands held.
    size: int = 0

    def remember(self, command: object, data: bytes) -> None:
        by_id = self._by_id
        key = id(command)
        old = by_id.pop(key, None)
        if old is not None:
            self.size -= len(old[1])
        while by_id and (len(by_id) >= self.limit or self.size + len(data) > self.byte_limit):
            self.size -= len(by_id.pop(next(iter(by_id)))[1])
        by_id[key] = [command, data, self.uses]
        self.size += len(data)

    def take(self, command: object) -> bytes:
        """The bytes ``command`` arrived as (encoded again if forgotten)."""
        key = id(command)
        found = self._by_id.get(key)
        if found is None or found[0] is not command:
            return _wire.encode(command)
        found[2] -= 1
        data: bytes = found[1]
        if not found[2]:
            del self._by_id[key]
            self.size -= len(data)
        return data


@attrs.define(eq=False)
class Fanout:
    """Process 0's command channel: each batch goes on the link to every other
    process (:class:`~._items.Sequenced`, one item a run), then to this process's workers
    through the local sequencer. Links keep their order, so every process's
    workers get the same commands in the same order."""

    local: Sequencer[SequencedCommand]
    hub: Hub
    others: list[str]
    runtime: str
    encoded: Encoded
    # The generation's controller reset (see Generation.epoch), when sent.
    epoch: Callable[[], int] = lambda: 0
    # The most bytes of commands one item carries (unless one command is
    # larger): a burst the adapter sequences at once may be far more than a
    # frame carries (MAX_FRAME), and the other end decodes an item at once.
    item_bytes: int = CHUNK

    async def broadcast_many(self, messages: Iterable[SequencedCommand]) -> object:
        batch = list(messages)
        if self.others:
            # One item per run of the same connection and position (or per
            # item_bytes of it): the commands' bytes joined into one array
            # (one decode at the other end).
            runs: list[tuple[int, int, list[bytes]]] = []
            take = self.encoded.take
            size = 0
            for sequenced in batch:
                data = take(sequenced.command)
                if (
                    not runs
                    or runs[-1][:2] != (sequenced.nonce, sequenced.position)
                    or size + len(data) > self.item_bytes
                ):
                    runs.append((sequenced.nonce, sequenced.position, []))
                    size = 0
                runs[-1][2].append(data)
                size += len(data)
            epoch = self.epoch()
            items = [
                Sequenced(epoch, self.runtime, nonce, position, _wire.join(commands))
                for nonce, position, commands in runs
            ]
            for target in self.others:
                for item in items:
                    self.hub.send(target, item)
        return await self.local.broadcast_many(batch)
