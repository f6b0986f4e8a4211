"""The driver's :class:`~replica.procs.Cluster` under a hostile schedule, with
no OS process: a fake hub records what the cluster sends, the test plays
the processes' answers, and the mock clock (autojump) runs the waits.

- a connection the controller opens to a process with no replica (it lost a
  peer and waits for the reset) is refused, named, not black-holed;
- ``recover`` goes another round when a process loses a peer again after
  it said it reset, so that it returns only with every process at one epoch;
- ``recover``, ``probe``, ``restart`` and ``kill`` refuse at once, named and
  changing nothing, what can only hang (a process not running, one running
  restarted, no such process);
- a process relaunched is not declared lost by the heartbeat for the
  silence its restart was.
"""

from __future__ import annotations

import contextlib
import types
from collections.abc import AsyncIterator
from typing import Any, cast

import attrs
import pytest
import trio
import trio.testing

from replica import Peek, ReplicaConfig
from replica.procs import Cluster, ClusterError, RemoteProcess
from replica.procs._cluster_base import Slot
from replica.procs._items import (
    Commands,
    End,
    ExchangeFrontier,
    Item,
    LostPeer,
    Open,
    Pong,
    Probe,
    Probed,
    Ready,
    Refused,
    Reset,
    ResetDone,
    Sequenced,
    ShardPush,
    SubscribeShard,
)
from replica.procs._links import Hub
from replica.procs._options import CONTROLLER, ServeOptions
from replica.procs._server import Server
from replica.runtime._connection import open_connection


@attrs.define(eq=False)
class _Link:
    peer: object | None = None
    items: list[Item] = attrs.field(factory=list)

    def put(self, item: Item) -> None:
        self.items.append(item)

    def discard(self) -> None:
        self.items = []


@attrs.define(eq=False)
class _Hub:
    """What the cluster uses of a hub: send, the outlinks, the counts."""

    name: str = "controller"
    outlinks: dict[str, _Link] = attrs.field(factory=dict)
    items: list[tuple[str, Item]] = attrs.field(factory=list)
    handlers: dict[type[Item], Any] = attrs.field(factory=dict)
    on_lost: list[Any] = attrs.field(factory=list)
    sent: int = 0
    received: int = 0
    dropped: int = 0
    # Called with each item sent (a test playing the processes' answers).
    on_send: Any = None

    def send(self, target: str, item: Item) -> None:
        self.items.append((target, item))
        if self.on_send is not None:
            self.on_send(target, item)

    def uncount(self) -> None:
        self.received -= 1

    def inbound(self, source: str) -> _Link:
        return self.outlinks.setdefault(source, _Link())

    def resets(self) -> list[tuple[str, int]]:
        return [(target, item.token) for target, item in self.items if isinstance(item, Reset)]


def _cluster(nursery: trio.Nursery, processes: int = 2) -> tuple[Cluster, _Hub]:
    hub = _Hub(outlinks={f"p{i}": _Link() for i in range(processes)})
    cluster = Cluster(
        ReplicaConfig(processes=processes, workers=1, interactive=False),
        cast(Any, types.SimpleNamespace()),
        cast(Hub, hub),
        cast(Hub, _Hub()),
        cast(Any, types.SimpleNamespace(forget=lambda source: None)),
        nursery,
        heartbeat=0.5,
        heartbeat_timeout=2.0,
        probe_patience=30.0,
    )
    for index in range(processes):
        cluster.processes.append(RemoteProcess(index, cluster))
        slot = Slot(index, ["serve"])
        slot.process = cast(Any, types.SimpleNamespace(kill=lambda: None))
        cluster.slots.append(slot)
    return cluster, hub


@contextlib.asynccontextmanager
async def _running(processes: int = 2) -> AsyncIterator[tuple[Cluster, _Hub, trio.Nursery]]:
    async with trio.open_nursery() as nursery:
        cluster, hub = _cluster(nursery, processes)
        yield cluster, hub, nursery
        nursery.cancel_scope.cancel()


def _mock_run(main: Any) -> None:
    trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))


def test_a_connection_opened_to_a_process_with_no_replica_is_refused_named() -> None:
    """After a lost peer a process has no replica until the reset; the
    controller may reconnect first. Its ``open`` was dropped, so the
    connection's commands went unanswered with nothing said: now the process
    refuses it, and the cluster counts it lost, with the reason."""

    async def main() -> None:
        config = ReplicaConfig(processes=2, workers=1, interactive=False)
        options = ServeOptions(0, config, ("h", 0), (("h", 0), ("h", 1)), ("h", 3), b"s" * 16)
        async with _running() as (cluster, _hub, nursery):
            process_hub = _Hub(name="p0", outlinks={CONTROLLER: _Link(), "p1": _Link()})
            server = Server(options, cast(Hub, process_hub), nursery)
            server.generation = cast(Any, types.SimpleNamespace())
            server._peer_lost("p1", "the connection broke")
            assert process_hub.items == [(CONTROLLER, LostPeer("p1"))]
            cluster._lost_peer("p0", LostPeer("p1"))
            assert cluster.losses == {0: 1}
            # The run loop ends the replica; the controller reconnects before
            # it recovers.
            server.generation = None
            lost: list[int] = []
            cluster.on_lost.append(lost.append)
            _client, end = open_connection(5, lambda response: None)
            cluster._servers[0, 5] = end
            server._open(CONTROLLER, Open(5))
            target, item = process_hub.items[-1]
            assert target == CONTROLLER
            assert isinstance(item, Refused)
            assert item.nonce == 5
            cluster._refused("p0", item)
            assert lost == [0]
            assert cluster.losses == {0: 2}
            assert end.responses.closed
            assert cluster.reasons[0] == (
                "replica process 0 has no replica: it lost its connection to replica process 1 "
                "(the connection broke) and waits for the controller's reset (Cluster.recover)"
            )
            # A refusal of a connection the cluster no longer has: nothing.
            cluster._refused("p0", Refused(99, "late"))
            assert cluster.losses == {0: 2}

    trio.run(main)


def test_recover_goes_another_round_when_a_process_loses_a_peer_after_its_reset() -> None:
    """A lost peer during recover, after the process said reset-done: its
    fresh replica ended, and it waits for another reset. ``recover`` used to
    return then (every process had said done), leaving it with no replica;
    now it sends another round to every process and returns when all did."""

    async def main() -> None:
        async with _running() as (cluster, hub, nursery):
            returned = trio.Event()

            async def recover() -> None:
                await cluster.recover()
                returned.set()

            nursery.start_soon(recover)
            await trio.testing.wait_all_tasks_blocked()
            ((_, first), _) = hub.resets()
            assert hub.resets() == [("p0", first), ("p1", first)]
            cluster._reset_done("p0", ResetDone(first, 0))
            cluster._lost_peer("p0", LostPeer("p1"))
            # p1's old replica said so before its reset: no matter.
            cluster._lost_peer("p1", LostPeer("p0"))
            cluster._reset_done("p1", ResetDone(first, 1))
            await trio.testing.wait_all_tasks_blocked()
            assert not returned.is_set()
            second = hub.resets()[-1][1]
            assert second != first
            assert hub.resets()[2:] == [("p0", second), ("p1", second)]
            cluster._reset_done("p0", ResetDone(second, 0))
            cluster._reset_done("p1", ResetDone(second, 1))
            await trio.testing.wait_all_tasks_blocked()
            assert returned.is_set()
            assert cluster._resets == {}

    _mock_run(main)


def test_recover_with_a_process_killed_fails_at_once_named_and_sends_nothing() -> None:
    async def main() -> None:
        async with _running() as (cluster, hub, _):
            cluster.kill(1)
            with pytest.raises(ClusterError, match=r"replica processes \[1\] are not running"):
                await cluster.recover()
            assert hub.resets() == []
            assert cluster._resets == {}
            with pytest.raises(ClusterError, match=r"replica processes \[1\] are not running"):
                await cluster.probe()

    _mock_run(main)


def test_recover_fails_named_as_soon_as_a_process_exits_while_it_waits() -> None:
    """Not after ``probe_patience`` (120 s by default) with a bare
    'did not reset'."""

    async def main() -> None:
        async with _running() as (cluster, _hub, nursery):
            failure: list[BaseException] = []

            async def recover() -> None:
                try:
                    await cluster.recover()
                except ClusterError as error:
                    failure.append(error)

            nursery.start_soon(recover)
            await trio.testing.wait_all_tasks_blocked()
            start = trio.current_time()
            cluster.kill(1)
            cluster.slots[1].exited.set()
            cluster._notify()
            await trio.testing.wait_all_tasks_blocked()
            assert trio.current_time() == start
            assert [str(e) for e in failure] == [
                "replica processes [1] are not running, so they cannot reset "
                "(Cluster.restart starts a killed one again)"
            ]
            assert cluster._resets == {}

    _mock_run(main)


def test_recover_that_times_out_or_is_cancelled_leaves_no_round_behind() -> None:
    async def main() -> None:
        async with _running() as (cluster, _hub, _):
            with pytest.raises(ClusterError, match=r"processes \[0, 1\] did not reset within 30s"):
                await cluster.recover()
            assert cluster._resets == {}
            with trio.move_on_after(1):
                await cluster.recover()
            assert cluster._resets == {}

    _mock_run(main)


def test_restart_of_a_running_process_fails_at_once_instead_of_waiting_for_ever() -> None:
    async def main() -> None:
        async with _running() as (cluster, _hub, _):
            with trio.fail_after(1):
                with pytest.raises(ClusterError, match="replica process 1 is running"):
                    await cluster.restart(1)
            assert not cluster.slots[1].expected_exit

    _mock_run(main)


@pytest.mark.parametrize("index", [-1, 2, True, 1.0])
def test_kill_and_restart_of_no_such_process_are_a_value_error(index: Any) -> None:
    """``kill(-1)`` killed the last process (a list's index from the end)."""

    async def main() -> None:
        async with _running() as (cluster, _, _):
            with pytest.raises(ValueError, match="no replica process"):
                cluster.kill(index)
            with pytest.raises(ValueError, match="no replica process"):
                await cluster.restart(index)
            assert not any(slot.expected_exit for slot in cluster.slots)

    _mock_run(main)


def test_a_relaunched_process_is_not_lost_for_the_silence_of_its_restart() -> None:
    """The heartbeat declares a ready process with no link lost when it was
    silent for ``heartbeat_timeout``. A process relaunched says ready (to
    the host) before the controller's link to it is dialled: its last pong
    was from before the kill, so the next heartbeat tick could declare it
    lost at once. Being ready counts as heard from."""

    async def main() -> None:
        async with _running() as (cluster, _hub, nursery):
            cluster.ready = {0: 1, 1: 1}

            async def process_0_answers() -> None:
                while True:
                    cluster._pong("p0", Pong(trio.current_time()))
                    await trio.sleep(cluster.heartbeat)

            nursery.start_soon(process_0_answers)
            nursery.start_soon(cluster.heartbeats)
            await trio.sleep(0.1)
            # Process 1 killed: its link goes, it says nothing for a while.
            cluster.ready.pop(1)
            await trio.sleep(cluster.heartbeat_timeout - 0.2)
            # Relaunched, ready; its link is still being dialled.
            cluster._ready("p1", Ready(1, 2))
            await trio.sleep(cluster.heartbeat_timeout - 0.1)
            assert cluster.losses == {}
            # Silent a whole timeout after it said ready (and no link): lost.
            await trio.sleep(cluster.heartbeat + 0.2)
            assert cluster.losses == {1: 1}
            assert "no answer from replica process 1" in cluster.reasons[1]

    _mock_run(main)


@pytest.mark.parametrize(("count", "literals"), [(300, 0), (40, 200), (3, 5000)])
def test_the_controllers_commands_go_in_items_a_frame_carries(
    monkeypatch: pytest.MonkeyPatch, count: int, literals: int
) -> None:
    """The driver forwarded a connection's commands 256 to an item whatever
    their size: 256 peeks of a MiB of literals each made one item over the
    frame limit, and the driver stopped (``ItemTooLargeError``). Items are now at
    most ``COMMAND_BYTES`` of commands (here shrunk), unless one command is
    larger, and at most ``COMMANDS_PER_ITEM``; every command arrives once,
    in order."""
    from replica.procs import _connections, _wire

    monkeypatch.setattr(_connections, "COMMAND_BYTES", 4096)
    commands = [
        Peek(n, 1001, 5, tuple((k, "x" * 8) for k in range(literals)) if literals else None)
        for n in range(count)
    ]

    async def main() -> None:
        async with _running(1) as (cluster, hub, _):
            client, server = open_connection(9, lambda response: None)
            for command in commands:
                client.commands.send_nowait(command)
            client.commands.close()
            await cluster._forward(0, server)
            items = [item for _, item in hub.items if isinstance(item, Commands)]
            assert [c for item in items for c in item.commands] == [
                _wire.encode(c) for c in commands
            ]
            for item in items:
                assert len(item.commands) <= _connections.COMMANDS_PER_ITEM
                assert len(item.commands) == 1 or sum(map(len, item.commands)) <= 4096
            assert hub.items[-1] == ("p0", End(9))

    trio.run(main)


def test_a_reset_and_a_connection_during_a_generation_start(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A generation that takes a while to start (its actor system, workers,
    barriers): a reset that comes meanwhile is that generation's epoch, and
    said done (both resets, after it started); a connection the controller
    opens meanwhile is refused, named (there is no replica to take it yet)."""
    from replica.procs import _server

    opened: list[int] = []
    proceed = trio.Event()

    @contextlib.asynccontextmanager
    async def slow_generation(
        options: ServeOptions, hub: Hub, token: int, epoch: int = 0
    ) -> AsyncIterator[Any]:
        opened.append(epoch)
        await proceed.wait()
        yield types.SimpleNamespace(
            epoch=epoch,
            end_all=lambda: None,
            open=lambda nonce: None,
            process=types.SimpleNamespace(),
        )

    monkeypatch.setattr(_server, "open_generation", slow_generation)

    async def main() -> None:
        config = ReplicaConfig(processes=2, workers=1, interactive=False)
        options = ServeOptions(1, config, ("h", 1), (("h", 0), ("h", 1)), ("h", 3), b"s" * 16)
        async with trio.open_nursery() as nursery:
            hub = _Hub(name="p1", outlinks={CONTROLLER: _Link()})
            server = Server(options, cast(Hub, hub), nursery)
            server._reset(CONTROLLER, Reset(4))
            nursery.start_soon(server.run)
            await trio.testing.wait_all_tasks_blocked()
            assert opened == [4]
            server._reset(CONTROLLER, Reset(6))
            server._open(CONTROLLER, Open(77))
            refused = hub.items[-1][1]
            assert isinstance(refused, Refused)
            assert refused.nonce == 77
            assert "was starting a fresh replica" in refused.reason
            proceed.set()
            await trio.testing.wait_all_tasks_blocked()
            assert server.generation is not None
            assert server.generation.epoch == server.epoch == 6
            done = [item for _, item in hub.items if isinstance(item, ResetDone)]
            assert done == [ResetDone(4, 1, 1), ResetDone(6, 1, 1)]
            # Taken: no second generation for it.
            assert opened == [4]
            nursery.cancel_scope.cancel()

    trio.run(main)


def test_start_of_a_process_that_has_not_exited_is_refused_named() -> None:
    """``start`` right after ``kill`` (the SIGKILL not reaped yet), or of a
    process running: a second OS process would not get the address, and
    the first one's exit, setting the slot's fresh event, would pass for
    the second's (and, expected no more, stop the cluster)."""

    async def main() -> None:
        async with _running() as (cluster, _hub, _):
            cluster.kill(1)
            exited = cluster.slots[1].exited
            with pytest.raises(ClusterError, match="replica process 1 has not exited"):
                await cluster.start(1)
            assert cluster.slots[1].exited is exited
            assert cluster.slots[1].expected_exit
            with pytest.raises(ClusterError, match="replica process 0 has not exited"):
                await cluster.start(0)
            with pytest.raises(ValueError, match="no replica process"):
                await cluster.start(-1)

    _mock_run(main)


def test_process_0_keeps_at_most_byte_limit_of_commands_a_runtime_never_takes() -> None:
    """A peek goes to the interactive runtime only, so its bytes were kept
    until 65,536 later commands pushed them out: 2,000 peeks of 97 KB of
    literals held 193 MB in process 0. The bytes held are bounded too
    (oldest out first); what is evicted is encoded again if asked for."""
    from replica.procs import _wire
    from replica.procs._fanout import Encoded

    encoded = Encoded(uses=2, byte_limit=1_000_000)
    peeks = [Peek(n, 1001, 5, tuple((k, "x" * 90) for k in range(100))) for n in range(200)]
    sizes = []
    for peek in peeks:
        data = _wire.encode(peek)
        sizes.append(len(data))
        encoded.remember(peek, data)
        assert encoded.take(peek) == data
        assert encoded.size == sum(len(v[1]) for v in encoded._by_id.values()) <= 1_000_000
    assert 0 < len(encoded._by_id) < len(peeks)
    # The newest still there, the oldest forgotten: both give their bytes.
    assert encoded.take(peeks[-1]) == _wire.encode(peeks[-1])
    assert encoded.take(peeks[0]) == _wire.encode(peeks[0])
    # One command over the limit alone is held alone (until the next).
    big = Peek(999, 1001, 5, tuple((k, "x" * 90) for k in range(20_000)))
    encoded.remember(big, _wire.encode(big))
    assert next(iter(encoded._by_id.values()))[0] is big
    assert len(encoded._by_id) == 1


@attrs.define(eq=False)
class _SilentPeer:
    closed_with: list[str] = attrs.field(factory=list)

    async def find(self, key: object) -> tuple[object, ...]:
        await trio.sleep_forever()
        raise AssertionError  # pragma: no cover

    async def close(self, reason: str = "closed") -> None:
        self.closed_with.append(reason)


@attrs.define(eq=False)
class _SilentNode:
    """A node whose dials never end (the address drops SYNs), or whose
    peer never answers a look-up (frozen after its kernel accepted)."""

    name: str = "p0"
    peer: _SilentPeer | None = None
    peers: list[object] = attrs.field(factory=list)

    async def connect(self, address: object, *, ssl_context: object = None) -> _SilentPeer:
        if self.peer is None:
            await trio.sleep_forever()
        assert self.peer is not None
        return self.peer


@pytest.mark.parametrize("answers_tcp", [False, True])
def test_a_dial_to_an_address_that_never_answers_gives_up_after_its_patience(
    answers_tcp: bool,
) -> None:
    """``Hub.dial`` checked its patience only after an attempt failed: an
    attempt that never ends (SYNs dropped: the kernel's minutes; a node
    frozen once its kernel accepted) kept a process dialling the shard host
    past ``--shards-patience``, instead of ending, named. Each attempt is
    now bounded by what is left of the patience."""

    async def main() -> None:
        peer = _SilentPeer() if answers_tcp else None
        node = _SilentNode(peer=peer)
        async with trio.open_nursery() as nursery:
            hub = Hub("p0", cast(Any, node), nursery)
            gave_up: list[tuple[float, str]] = []
            given_up = trio.Event()

            def unreachable(target: str, error: Exception) -> None:
                gave_up.append((trio.current_time(), str(error)))
                given_up.set()

            hub.on_unreachable.append(unreachable)
            start = trio.current_time()
            hub.dial("shards", ("10.255.255.1", 9), patience=5.0)
            hub.send("shards", SubscribeShard(1, "data"))
            with trio.fail_after(60):
                await given_up.wait()
            ((when, why),) = gave_up
            assert when - start == pytest.approx(5.0)
            assert why == ("cannot reach shards at ('10.255.255.1', 9): no answer within 5s")
            if peer is not None:
                assert peer.closed_with == ["no answer from shards within 5s"]
            nursery.cancel_scope.cancel()

    _mock_run(main)


def test_items_of_a_replica_that_ended_are_not_counted_by_the_next(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every node's quiescence counts start again at a reset, each at its
    own moment: an item another process sent its ended replica (an old
    epoch), or a push of the host for an ended generation's subscription,
    that arrives after this process's reset was counted as handled while
    its sender's count of it was gone, and ``settle`` never returned. They
    are not counted now; items of the replica running (awaiting its reset
    after a lost peer included) still are."""
    from replica.procs import _server

    @contextlib.asynccontextmanager
    async def fake_generation(
        options: ServeOptions, hub: Hub, token: int, epoch: int = 0
    ) -> AsyncIterator[Any]:
        shards = types.SimpleNamespace(receive=lambda *push: None)
        yield types.SimpleNamespace(
            epoch=epoch,
            end_all=lambda: None,
            shards=shards,
            fabrics={},
            relays={},
            process=types.SimpleNamespace(),
        )

    monkeypatch.setattr(_server, "open_generation", fake_generation)

    async def main() -> None:
        config = ReplicaConfig(processes=2, workers=1, interactive=False)
        options = ServeOptions(1, config, ("h", 1), (("h", 0), ("h", 1)), ("h", 3), b"s" * 16)
        async with trio.open_nursery() as nursery:
            hub = _Hub(name="p1", outlinks={CONTROLLER: _Link()})
            server = Server(options, cast(Hub, hub), nursery)
            nursery.start_soon(server.run)
            await trio.testing.wait_all_tasks_blocked()
            exchange = server._current_epoch(lambda generation, *args: None)

            def arrive(handle: Any, item: Item) -> None:
                hub.received += 1  # as Hub._serve counts it, before its handler
                handle("p0", item)

            def exchanged(epoch: int) -> Item:
                return ExchangeFrontier(epoch, "maintenance", 0, 0, 0, 1)

            # A lost peer: no replica, the same epoch and subscription until
            # the reset, whose items still count (their senders' do).
            server._peer_lost("p0", "the connection broke")
            await trio.testing.wait_all_tasks_blocked()
            arrive(exchange, exchanged(0))
            arrive(server._shard, ShardPush(1, "data", 0, [], 1))
            await server._seq("p0", Sequenced(0, "maintenance", 7, 0, b""))
            hub.received += 1
            assert hub.received == 3
            server._reset(CONTROLLER, Reset(5))
            await trio.testing.wait_all_tasks_blocked()
            assert server.epoch == 5
            assert hub.received == 0  # counts start again with the replica
            arrive(exchange, exchanged(0))  # the ended replica's epoch
            arrive(server._shard, ShardPush(1, "data", 0, [], 1))  # its subscription
            hub.received += 1
            await server._seq("p0", Sequenced(0, "maintenance", 7, 0, b""))
            assert hub.received == 0
            arrive(exchange, exchanged(5))
            arrive(server._shard, ShardPush(2, "data", 0, [], 1))
            assert hub.received == 2
            nursery.cancel_scope.cancel()

    trio.run(main)


def test_recover_zeroes_the_counts_only_once_the_host_took_every_ready() -> None:
    """A process says ``ready`` to the host and ``reset-done`` to the
    controller, on two connections: the host may take its ``ready`` later.
    Until it does, it pushes to the ended generation's subscription; counted
    after ``recover`` zeroed the counts, such a push left them apart."""

    async def main() -> None:
        async with _running() as (cluster, hub, nursery):
            returned = trio.Event()

            async def recover() -> None:
                await cluster.recover()
                returned.set()

            nursery.start_soon(recover)
            await trio.testing.wait_all_tasks_blocked()
            ((_, token), _) = hub.resets()
            cluster._reset_done("p0", ResetDone(token, 0, 3))
            cluster._reset_done("p1", ResetDone(token, 1, 4))
            await trio.testing.wait_all_tasks_blocked()
            assert not returned.is_set()
            cluster._ready("shards", Ready(0, 3))
            await trio.testing.wait_all_tasks_blocked()
            assert not returned.is_set()
            cluster._ready("shards", Ready(1, 4))
            await trio.testing.wait_all_tasks_blocked()
            assert returned.is_set()

    _mock_run(main)


@pytest.mark.parametrize("apart", [2, -1])
def test_settle_with_counts_that_stay_apart_fails_named_after_the_patience(apart: int) -> None:
    """Items put that no node will ever handle (lost with a dropped
    connection, before a recover): ``settle`` probed for ever. Counts
    apart and unchanged for ``probe_patience`` are a named error; counts
    that move on are not."""

    async def main() -> None:
        async with _running() as (cluster, hub, nursery):
            cluster.probe_patience = 1.0
            counts = {0: (10 + apart, 10), 1: (0, 0)}

            async def answer(target: str, token: int) -> None:
                await trio.sleep(0.01)  # a round trip (mock time)
                index = int(target[1:])
                cluster._probed(target, Probed(token, index, *counts[index], {}))

            def answering(target: str, item: Item) -> None:
                # Each process answers a probe with its counts.
                if isinstance(item, Probe):
                    nursery.start_soon(answer, target, item.token)

            hub.on_send = answering
            start = trio.current_time()
            with pytest.raises(ClusterError, match="the replica did not settle") as failure:
                await cluster.settle()
            assert f"({10 + apart}) and handled (10) stayed apart for 1s" in str(failure.value)
            assert 1 < trio.current_time() - start < 1.1
            # Counts that agree again: settled.
            counts[0] = (10, 10)
            with trio.fail_after(1):
                await cluster.settle()

    _mock_run(main)
