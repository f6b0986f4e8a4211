"""Process 0's command channel: the bytes each command arrived as,
forwarded until every runtime took them, and runs of commands in items a
frame carries."""

from __future__ import annotations

from typing import Any, cast

import attrs
import trio
import trio.testing

from replica import (
    AllowCompaction,
    Frontier,
    SequencedCommand,
)
from replica.procs import _wire
from replica.procs._fanout import Encoded, Fanout
from replica.procs._items import (
    Item,
    Sequenced,
)
from replica.procs._links import Hub


def test_process_0_forwards_a_commands_bytes_until_every_runtime_took_them() -> None:
    encoded = Encoded(uses=2)
    command = AllowCompaction(3, Frontier.at(1))
    encoded.remember(command, b"as it came")
    assert encoded.take(command) == b"as it came"
    assert encoded.take(command) == b"as it came"
    # Both runtimes took it: it is forgotten, and encoded again if asked for.
    assert encoded.take(command) == _wire.encode(command)


@attrs.define(eq=False)
class _FakeHub:
    name: str = "p0"
    outlinks: dict[str, Any] = attrs.field(factory=dict)
    sent: list[tuple[str, Item]] = attrs.field(factory=list)

    def send(self, target: str, item: Item) -> None:
        self.sent.append((target, item))

    def uncount(self) -> None:
        pass


@attrs.define(eq=False)
class _LocalSequencer:
    got: list[SequencedCommand] = attrs.field(factory=list)

    async def broadcast_many(self, messages: Any) -> None:
        self.got += messages


def test_process_0_forwards_a_huge_run_of_commands_in_items_a_frame_carries() -> None:
    """A burst of small commands (the adapter sequences everything queued at
    once) goes to the other processes in items of at most ``item_bytes``
    each, not one item a frame cannot carry (which would stop process 0)."""
    commands = [AllowCompaction(n, Frontier.at(n)) for n in range(1000)]
    one = len(_wire.encode(commands[0]))
    hub = _FakeHub()
    local = _LocalSequencer()
    fanout = Fanout(cast(Any, local), cast(Hub, hub), ["p1"], "maintenance", Encoded())
    fanout.item_bytes = 50 * one
    batch = [SequencedCommand(7, 0, command) for command in commands]
    trio.run(fanout.broadcast_many, batch)
    assert local.got == batch
    items = [item for _, item in hub.sent]
    assert all(isinstance(item, Sequenced) for item in items)
    sequenced = cast(list[Sequenced], items)
    assert all(len(item.commands) <= 50 * one + 3 for item in sequenced)
    assert [target for target, _ in hub.sent] == ["p1"] * len(hub.sent)
    assert [c for item in sequenced for c in _wire.split(item.commands)] == commands
    assert {(i.epoch, i.runtime, i.nonce, i.position) for i in sequenced} == {
        (0, "maintenance", 7, 0)
    }
