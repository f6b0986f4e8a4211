"""A replica process's server with no process: the shared fate of its
connections to another process, what it drops of an ended replica, and the
epoch its next replica starts at."""

from __future__ import annotations

import contextlib
import types
from collections.abc import AsyncIterator
from typing import Any, cast

import attrs
import pytest
import trio
import trio.testing

from actors.net import Peer
from replica import (
    ProtocolError,
    ReplicaConfig,
)
from replica.procs import _wire
from replica.procs._generation import Generation
from replica.procs._items import (
    ExchangeFrontier,
    Item,
    LostPeer,
    Reset,
    ResetDone,
    Sequenced,
)
from replica.procs._links import Hub
from replica.procs._options import CONTROLLER, ServeOptions
from replica.procs._server import Server


@attrs.define(eq=False)
class _FakePeer:
    """A connection to another replica process, as the server watches it."""

    node: str
    closed: trio.Event = attrs.field(factory=trio.Event)
    reason: str | None = None

    async def close(self, reason: str = "closed") -> None:
        self.drop(reason)

    def drop(self, reason: str) -> None:
        if self.reason is None:
            self.reason = reason
        self.closed.set()


@attrs.define(eq=False)
class _FakeHub:
    name: str = "p0"
    outlinks: dict[str, Any] = attrs.field(factory=dict)
    sent: list[tuple[str, Item]] = attrs.field(factory=list)

    def send(self, target: str, item: Item) -> None:
        self.sent.append((target, item))

    def uncount(self) -> None:
        pass


def test_a_lost_connection_to_a_process_closes_its_others_whose_later_loss_is_not_ignored() -> None:
    """Shared fate: when one connection to process 1 drops, the others to it
    end too (as a real restart ends them), so that none stays open written
    off, with a later loss of it ignored (the restarted replicas would then
    lose what it carried, and not restart)."""

    async def main() -> None:
        config = ReplicaConfig(processes=2, workers=1, interactive=False)
        options = ServeOptions(0, config, ("h", 0), (("h", 1), ("h", 2)), ("h", 3), b"s" * 16)
        async with trio.open_nursery() as nursery:
            hub = _FakeHub(outlinks={CONTROLLER: object()})
            server = Server(options, cast(Hub, hub), nursery)
            server.generation = cast(Generation, object())
            dialled, accepted = _FakePeer("p1"), _FakePeer("p1")
            server._watch_link("p1", cast(Peer, dialled))
            server._watch_link("p1", cast(Peer, accepted))
            await trio.testing.wait_all_tasks_blocked()
            dialled.drop("the connection broke")
            await trio.testing.wait_all_tasks_blocked()
            assert hub.sent == [(CONTROLLER, LostPeer("p1"))]
            assert accepted.closed.is_set()
            # The fresh generation (as run() starts it), on a fresh connection.
            server._restart = trio.Event()
            fresh = _FakePeer("p1")
            server._watch_link("p1", cast(Peer, fresh))
            await trio.testing.wait_all_tasks_blocked()
            assert not server._restart.is_set()
            fresh.drop("the connection broke")
            await trio.testing.wait_all_tasks_blocked()
            assert server._restart.is_set()
            assert len(hub.sent) == 2

    trio.run(main)


def _exchanged(epoch: int, runtime: str = "maintenance") -> ExchangeFrontier:
    """An item between replica processes, at ``epoch``."""
    return ExchangeFrontier(epoch, runtime, 1, 0, 0, 1)


@attrs.define
class _FakeOutlink:
    queue: list[Item]

    def discard(self) -> None:
        self.queue = []


def test_a_lost_peer_drops_what_the_ending_generation_queued_for_other_processes() -> None:
    """Items the old generation queued for another replica process would go
    out on the next connection, to its fresh replica: they are dropped when
    the generation ends; the controller's and the shard host's stay."""

    async def main() -> None:
        config = ReplicaConfig(processes=3, workers=1, interactive=False)
        options = ServeOptions(0, config, ("h", 0), (("h", 1), ("h", 2)), ("h", 3), b"s" * 16)
        outlinks = {name: _FakeOutlink([_exchanged(1)]) for name in ("p1", "p2", CONTROLLER)}
        async with trio.open_nursery() as nursery:
            hub = _FakeHub(outlinks=outlinks)
            server = Server(options, cast(Hub, hub), nursery)
            server.generation = cast(Generation, object())
            server._peer_lost("p1", "the connection broke")
            assert server._restart.is_set()
        assert outlinks["p1"].queue == outlinks["p2"].queue == []
        assert outlinks[CONTROLLER].queue == [_exchanged(1)]

    trio.run(main)


def test_an_item_from_another_process_sent_before_a_reset_is_dropped() -> None:
    """Items between replica processes carry the sender's last controller
    reset: one sent before a reset (on a connection that stayed open) is
    for the replica the reset ended, and the fresh one drops it."""

    async def main() -> None:
        config = ReplicaConfig(processes=2, workers=1, interactive=False)
        options = ServeOptions(1, config, ("h", 1), (("h", 0), ("h", 1)), ("h", 3), b"s" * 16)
        async with trio.open_nursery() as nursery:
            server = Server(options, cast(Hub, _FakeHub()), nursery)
            server.generation = cast(Generation, types.SimpleNamespace(epoch=3, relays={}))
            got: list[Item] = []
            handler = server._current_epoch(lambda generation, item: got.append(item))
            handler("p0", _exchanged(2, "stale"))
            handler("p0", _exchanged(3, "fresh"))
            assert got == [_exchanged(3, "fresh")]
            # A relayed run of commands: dropped before the relay is looked
            # up (this generation has none, so one taken would fail).
            await server._seq("p0", Sequenced(2, "maintenance", 7, 0, _wire.join([])))
            with pytest.raises(ProtocolError, match="relays no maintenance runtime"):
                await server._seq("p0", Sequenced(3, "maintenance", 7, 0, _wire.join([])))

    trio.run(main)


@attrs.define(eq=False)
class _CountingHub:
    """A hub as ``Server.run`` uses it: items put, and the quiescence counts."""

    name: str = "p1"
    outlinks: dict[str, Any] = attrs.field(factory=dict)
    items: list[tuple[str, Item]] = attrs.field(factory=list)
    sent: int = 0
    received: int = 0
    dropped: int = 0

    def send(self, target: str, item: Item) -> None:
        self.items.append((target, item))

    def uncount(self) -> None:
        self.received -= 1


def test_after_a_lost_peer_the_next_replica_starts_at_the_next_reset_and_its_epoch(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A process that lost a peer ends its replica and starts the next only
    when the controller's reset comes, at that reset's epoch (as a real
    process halts and serves again when the controller reconnects with a new
    epoch): the other processes' old replicas, at the old epoch, can still
    have items on connections closing, and the fresh replica drops them."""
    from replica.procs import _server

    opened: list[int] = []

    @contextlib.asynccontextmanager
    async def fake_generation(
        options: ServeOptions, hub: Hub, token: int, epoch: int = 0
    ) -> AsyncIterator[Any]:
        opened.append(epoch)
        yield types.SimpleNamespace(
            epoch=epoch, end_all=lambda: None, process=types.SimpleNamespace()
        )

    monkeypatch.setattr(_server, "open_generation", fake_generation)

    async def main() -> None:
        config = ReplicaConfig(processes=2, workers=1, interactive=False)
        options = ServeOptions(1, config, ("h", 1), (("h", 0), ("h", 1)), ("h", 3), b"s" * 16)
        async with trio.open_nursery() as nursery:
            hub = _CountingHub(outlinks={CONTROLLER: object()})
            server = Server(options, cast(Hub, hub), nursery)
            nursery.start_soon(server.run)
            await trio.testing.wait_all_tasks_blocked()
            assert opened == [0]
            got: list[Item] = []
            exchange = server._current_epoch(lambda generation, item: got.append(item))
            server._peer_lost("p0", "the connection broke")
            await trio.testing.wait_all_tasks_blocked()
            # No replica until the reset: an old item finds none.
            assert opened == [0]
            assert server.generation is None
            exchange("p0", _exchanged(0, "old"))
            server._reset(CONTROLLER, Reset(7))
            await trio.testing.wait_all_tasks_blocked()
            assert opened == [0, 7]
            assert (CONTROLLER, ResetDone(7, 1, 2)) in hub.items
            exchange("p0", _exchanged(0, "old, late"))
            exchange("p0", _exchanged(7, "fresh"))
            assert got == [_exchanged(7, "fresh")]
            nursery.cancel_scope.cancel()

    trio.run(main)


def test_a_relaunched_process_starts_at_the_epoch_it_is_given() -> None:
    config = ReplicaConfig(processes=2, workers=1, interactive=False)
    options = ServeOptions(1, config, ("h", 1), (("h", 0), ("h", 1)), ("h", 3), b"s" * 16, epoch=12)

    async def main() -> None:
        async with trio.open_nursery() as nursery:
            server = Server(options, cast(Hub, _CountingHub()), nursery)
            assert server.epoch == 12

    trio.run(main)
