"""The parts of the replica on OS processes that need no process: the wire
encoding, exchanges across processes, and shard mirrors fed by a host."""

from __future__ import annotations

import contextlib
import sys
import types
from collections.abc import AsyncIterator
from typing import Any, cast

import attrs
import pytest
import trio
import trio.testing

from actors.net import Peer
from replica import (
    AllowCompaction,
    CommandRejected,
    CreateDataflow,
    DataflowDescription,
    Frontier,
    Frontiers,
    GlobalId,
    Peek,
    PeekResponse,
    ProtocolError,
    ReplicaConfig,
    Rows,
    ShardCatalog,
    SubscribeBatch,
    UpperMismatchError,
)
from replica.engine._exchange import CLOSED
from replica.model import _plan
from replica.model._aggregates import AggregateExpr, AggregateFunc
from replica.model._dataflow import Build, IndexExport, IndexImport
from replica.model._plan import (
    Aggregate,
    Constant,
    Filter,
    FlatMap,
    Get,
    Join,
    Map,
    Negate,
    Project,
    Reduce,
    Threshold,
    TopK,
    Union,
)
from replica.model._scalar import Call, Column, Literal, ScalarFunc
from replica.procs import MirrorCatalog, ShardHost, WireError, _wire
from replica.procs._fabric import NetFabric
from replica.procs._links import Hub
from replica.procs._serve import CONTROLLER, Generation, ServeOptions, _Encoded, _Fanout, _Server
from replica.runtime._worker import SequencedCommand


@pytest.mark.parametrize(
    "value",
    [
        CreateDataflow(DataflowDescription.index(1, "s", 2, (0, 1), 3)),
        CreateDataflow(
            DataflowDescription(
                as_of=4,
                index_imports=(IndexImport(5, 6, (0,), 3),),
                objects_to_build=(
                    Build(
                        7, Reduce(Project((0,), Join((Get(6), Get(6)), ((0, 3),))), group_key=(0,))
                    ),
                ),
                index_exports=(IndexExport(GlobalId("t", 8), 7, (0,), transient=True),),
                until=9,
                name="a dataflow",
            )
        ),
        Build(
            7,
            Reduce(
                Map(
                    (Call(ScalarFunc.IS_NULL, (Column(0),)), Literal(None)),
                    Filter((Call(ScalarFunc.GT, (Column(1), Literal(2))),), Get(6)),
                ),
                (Aggregate.COUNT, AggregateExpr(AggregateFunc.MIN, Column(1), distinct=True)),
                (2,),
            ),
        ),
        Build(
            8,
            TopK(
                Threshold(
                    Union(
                        (
                            Negate(Constant((((1, "a"), 2), ((2.5, None), -1)), 2)),
                            FlatMap("generate_series", (Literal(1), Column(0)), Get(6)),
                        )
                    )
                ),
                group_key=(0,),
                order_key=((1, True, False),),
                limit=Literal(3),
                offset=1,
            ),
        ),
        AllowCompaction(3, Frontier.empty()),
        Peek(1, GlobalId("si", 2), 2**64 - 1, ((None, True, 1.5, "x", -(2**63)),)),
        PeekResponse(3, Rows(((1, "a"), (1, "a")))),
        SubscribeBatch(4, 0, Frontier.at(5), (((1, "b"), 2, -1),)),
        CommandRejected(AllowCompaction(3, Frontier.at(1)), "why"),
        SequencedCommand(2**63, 4, Frontiers(1, Frontier.at(2))),  # type: ignore[arg-type]
        [("xf", "maintenance", 1, 0, 3, CLOSED), {"a": [1, 2]}],
    ],
)
def test_every_protocol_value_comes_back_equal(value: object) -> None:
    back = _wire.decode(_wire.encode(value))
    assert back == value
    assert type(back) is type(value)


def test_every_kind_of_plan_travels() -> None:
    """A plan operator added to the planner and not to the wire would stop
    a spec that uses it under ``--spawn`` only: the wire knows every kind."""
    assert set(_plan.PLAN_CLASSES) <= set(_wire.CLASSES)


def test_a_description_keeps_its_name_which_equality_ignores() -> None:
    description = DataflowDescription.index(1, "s", 2, (0,), 0)
    assert _wire.decode(_wire.encode(description)).name == description.name


@pytest.mark.parametrize(
    ("value", "message"),
    [(object(), "cannot travel"), ({1, 2}, "cannot travel")],
)
def test_what_is_not_the_protocol_does_not_travel(value: object, message: str) -> None:
    with pytest.raises(WireError, match=message):
        _wire.encode(value)


@pytest.mark.parametrize(
    "builtins",
    [[], [99], [4, "Nope"], [4, "Hello"], [4, "Hello", 1, 2], [2, "x", 1], [3, "Aggregate", "x"]],
)
def test_malformed_values_are_a_wire_error(builtins: Any) -> None:
    with pytest.raises(WireError):
        _wire.from_builtins(builtins)
    with pytest.raises(WireError):
        _wire.decode(b"\xc1")


@pytest.mark.parametrize("count", [0, 1, 15, 16, 2**16 - 1, 2**16])
def test_a_run_of_encoded_values_splits_back_into_the_values_in_order(count: int) -> None:
    values = [Peek(n, GlobalId("u", n), n) if n % 2 else n for n in range(count)]
    assert _wire.split(_wire.join([_wire.encode(v) for v in values])) == values


def _nested(depth: int) -> bytes:
    """MessagePack bytes of ``depth`` tuples, each inside the next (as a peer
    could send them): a handful of bytes per level."""
    return b"\x92\x00" * depth + b"\x00"


def test_a_value_nested_too_deeply_is_a_wire_error() -> None:
    with pytest.raises(WireError, match=r"^a value nested too deeply on the wire$"):
        _wire.decode(_nested(700))
    with pytest.raises(WireError, match=r"^a value nested too deeply on the wire$"):
        _wire.split(_wire.join([_wire.encode(1), _nested(700)]))


def test_the_wire_refuses_depth_by_its_own_limit_not_the_interpreters() -> None:
    """However high the recursion limit (a test or a library may raise it),
    a value nested past ``MAX_DEPTH`` is refused, and one within decodes."""
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(100_000)
    try:
        with pytest.raises(WireError, match=r"^a value nested too deeply on the wire$"):
            _wire.decode(_nested(_wire.MAX_DEPTH + 2))
    finally:
        sys.setrecursionlimit(limit)
    value = _wire.decode(_nested(200))
    for _ in range(199):
        (value,) = value
    assert value == (0,)


def test_a_run_that_is_not_an_array_is_a_wire_error() -> None:
    with pytest.raises(WireError, match=r"^a run of values is an array \(not int\)$"):
        _wire.split(_wire.encode(3))


def test_process_0_forwards_a_commands_bytes_until_every_runtime_took_them() -> None:
    encoded = _Encoded(uses=2)
    command = AllowCompaction(3, Frontier.at(1))
    encoded.remember(command, b"as it came")
    assert encoded.take(command) == b"as it came"
    assert encoded.take(command) == b"as it came"
    # Both runtimes took it: it is forgotten, and encoded again if asked for.
    assert encoded.take(command) == _wire.encode(command)


def _fabrics(processes: int, per_process: int) -> tuple[list[NetFabric], list[tuple[int, Any]]]:
    """Fabrics of one runtime in ``processes`` processes; what one puts on a
    link waits in ``wire`` (process, item) until delivered."""
    wire: list[tuple[int, Any]] = []
    fabrics = [
        NetFabric(
            processes * per_process,
            runtime="m",
            process=p,
            per_process=per_process,
            processes=processes,
            send_to=lambda process, item: wire.append((process, item)),
        )
        for p in range(processes)
    ]
    return fabrics, wire


def _deliver(fabrics: list[NetFabric], wire: list[tuple[int, Any]]) -> None:
    while wire:
        process, item = wire.pop(0)
        match item:
            case ("xs", _, dataflow, place, destination, updates):
                fabrics[process].arrive(dataflow, place, destination, updates)
            case ("xf", _, dataflow, place, worker, frontier):
                fabrics[process].heard(dataflow, place, worker, frontier)


def test_an_exchange_across_processes_completes_only_what_every_worker_said() -> None:
    fabrics, wire = _fabrics(2, 1)
    woken: list[int] = []
    here, there = fabrics[0].exchange(0, 0), fabrics[1].exchange(0, 0)
    here.join(0, lambda: woken.append(0))
    there.join(1, lambda: woken.append(1))
    here.send(0, {0: [((1,), 0, 1)], 1: [((2,), 0, 1)]})
    here.say(0, 1)
    assert here.take(0) == [((1,), 0, 1)]
    # Nothing arrived at process 1 yet: its frontier waits for worker 0.
    assert there.frontier() is None
    there.say(1, 1)
    assert there.frontier() is None
    _deliver(fabrics, wire)
    assert there.take(1) == [((2,), 0, 1)]
    assert there.frontier() == 1 == here.frontier()
    assert 1 in woken
    # A worker that leaves holds nobody back; the exchange goes once all left.
    fabrics[0].release(0, 0, 0)
    fabrics[1].release(0, 0, 1)
    _deliver(fabrics, wire)
    assert len(fabrics[0]) == len(fabrics[1]) == 0
    assert here.sent == [CLOSED, CLOSED]


def test_an_update_for_a_worker_that_left_is_dropped_on_arrival() -> None:
    fabrics, wire = _fabrics(2, 2)
    sender = fabrics[0].exchange(3, 1)
    sender.send(0, {3: [((1,), 0, 1)]})
    receiver = fabrics[1].exchange(3, 1)
    receiver.leave(3)
    _deliver(fabrics, wire)
    assert receiver.take(3) == []


def _host_and_mirror() -> tuple[ShardHost, MirrorCatalog, list[Any]]:
    to_host: list[Any] = []
    catalog = ShardCatalog()
    mirror = MirrorCatalog(token=7, send=to_host.append)

    def push(process: str, item: Any) -> None:
        assert process == "p0"
        _, *args = item
        mirror.receive(*args)

    return ShardHost(catalog, push), mirror, to_host


def _serve(host: ShardHost, to_host: list[Any]) -> None:
    while to_host:
        match to_host.pop(0):
            case ("sub", token, name):
                host.subscribe("p0", token, name)
            case ("append", name, updates, lower, upper):
                host.append(name, updates, lower, upper)


def test_a_mirror_gets_the_shard_then_every_change_pushed() -> None:
    host, mirror, to_host = _host_and_mirror()
    host.catalog.shard("s").write(0, [(1,), (2,)])
    shard = mirror.shard("s")
    woken: list[None] = []
    shard.listen(lambda: woken.append(None))
    assert shard.upper == 0
    _serve(host, to_host)
    assert shard.updates == [((1,), 0, 1), ((2,), 0, 1)]
    assert shard.upper == 1
    host.catalog.shard("s").advance(5)
    assert shard.upper == 5
    assert len(woken) == 2


def test_a_mirror_appends_through_the_host_with_compare_and_append() -> None:
    host, mirror, to_host = _host_and_mirror()
    shard = mirror.shard("s")
    _serve(host, to_host)
    shard.append([((1,), 0, 1)], 0, 1)
    assert shard.upper == 0  # not applied here: the host pushes it back
    shard.append([((1,), 0, 1)], 0, 1)  # a second step before the push: the same batch
    _serve(host, to_host)
    assert host.catalog.shard("s").updates == [((1,), 0, 1)]
    assert shard.updates == [((1,), 0, 1)]
    assert shard.upper == 1
    with pytest.raises(UpperMismatchError):
        shard.append([((2,), 0, 1)], 0, 1)


def test_a_push_for_an_earlier_subscription_is_ignored() -> None:
    host, mirror, to_host = _host_and_mirror()
    mirror.shard("s")
    _serve(host, to_host)
    mirror.receive(6, "s", 0, [((9,), 0, 1)], 1)
    assert mirror.shard("s").updates == []


def test_a_big_snapshot_completes_times_only_with_its_last_chunk() -> None:
    from replica.procs import _shards

    host, mirror, to_host = _host_and_mirror()
    rows = [(n,) for n in range(_shards.PUSH_CHUNK + 10)]
    host.catalog.shard("s").write(0, rows)
    seen: list[tuple[int, int]] = []
    shard = mirror.shard("s")
    shard.listen(lambda: seen.append((len(shard.updates), shard.upper)))
    _serve(host, to_host)
    assert seen == [(_shards.PUSH_CHUNK, 0), (len(rows), 1)]


def test_a_push_of_big_rows_is_split_under_a_frame_whatever_its_count(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Rows of 10 kB, fewer than PUSH_CHUNK of them but more bytes than a
    push may carry: several pushes, each within PUSH_BYTES (one over
    MAX_FRAME was a CodecError that ended the run); one row bigger than that
    goes alone."""
    from replica.procs import _shards

    monkeypatch.setattr(_shards, "PUSH_BYTES", 64 * 1024)
    pushed: list[bytes] = []
    host, mirror, to_host = _host_and_mirror()
    push = host.send

    def measure(process: str, item: Any) -> None:
        pushed.append(_wire.encode(item))
        push(process, item)

    host.send = measure
    rows = [(n, "x" * 10_000) for n in range(30)] + [(30, "y" * 100_000)]
    host.catalog.shard("s").write(0, rows)
    shard = mirror.shard("s")
    _serve(host, to_host)
    assert [row for row, _, _ in shard.updates] == rows
    assert shard.upper == 1
    assert len(pushed) > 1
    assert all(len(data) <= 64 * 1024 for data in pushed[:-1])
    assert len(_wire.encode(pushed[-1])) > 100_000  # the big row, alone


def test_a_mirror_that_lost_pushes_resubscribes_and_catches_up() -> None:
    """Pushes lost with a dropped connection to the host: the mirror ignores
    the later ones (they do not start where it stands) until it subscribes
    again, when the host's whole push overlaps what it holds and it takes
    the rest."""
    host, mirror, to_host = _host_and_mirror()
    source = host.catalog.shard("s")
    source.write(0, [(1,)])
    shard = mirror.shard("s")
    _serve(host, to_host)
    deliver = host.send
    host.send = lambda process, item: None  # the connection dropped
    source.write(1, [(2,)])
    host.send = deliver
    source.write(2, [(3,)])
    assert [row for row, _, _ in shard.updates] == [(1,)]  # a gap: ignored
    mirror.resubscribe()
    _serve(host, to_host)
    assert [row for row, _, _ in shard.updates] == [(1,), (2,), (3,)]
    assert shard.upper == source.upper == 3


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
    sent: list[tuple[str, tuple[Any, ...]]] = attrs.field(factory=list)

    def send(self, target: str, item: tuple[Any, ...]) -> None:
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
            server = _Server(options, cast(Hub, hub), nursery)
            server.generation = cast(Generation, object())
            dialled, accepted = _FakePeer("p1"), _FakePeer("p1")
            server._watch_link("p1", cast(Peer, dialled))
            server._watch_link("p1", cast(Peer, accepted))
            await trio.testing.wait_all_tasks_blocked()
            dialled.drop("the connection broke")
            await trio.testing.wait_all_tasks_blocked()
            assert hub.sent == [(CONTROLLER, ("lost-peer", "p1"))]
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
    fanout = _Fanout(cast(Any, local), cast(Hub, hub), ["p1"], "maintenance", _Encoded())
    fanout.item_bytes = 50 * one
    batch = [SequencedCommand(7, 0, command) for command in commands]
    trio.run(fanout.broadcast_many, batch)
    assert local.got == batch
    assert all(len(item[5]) <= 50 * one + 3 for _, item in hub.sent)
    assert [target for target, _ in hub.sent] == ["p1"] * len(hub.sent)
    assert [c for _, item in hub.sent for c in _wire.split(item[5])] == commands
    assert {item[:5] for _, item in hub.sent} == {("seq", 0, "maintenance", 7, 0)}


@attrs.define
class _FakeOutlink:
    queue: list[tuple[Any, ...]]

    def discard(self) -> None:
        self.queue = []


def test_a_lost_peer_drops_what_the_ending_generation_queued_for_other_processes() -> None:
    """Items the old generation queued for another replica process would go
    out on the next connection, to its fresh replica: they are dropped when
    the generation ends; the controller's and the shard host's stay."""

    async def main() -> None:
        config = ReplicaConfig(processes=3, workers=1, interactive=False)
        options = ServeOptions(0, config, ("h", 0), (("h", 1), ("h", 2)), ("h", 3), b"s" * 16)
        outlinks = {
            name: _FakeOutlink([("xs", "maintenance", 1)]) for name in ("p1", "p2", CONTROLLER)
        }
        async with trio.open_nursery() as nursery:
            hub = _FakeHub(outlinks=outlinks)
            server = _Server(options, cast(Hub, hub), nursery)
            server.generation = cast(Generation, object())
            server._peer_lost("p1", "the connection broke")
            assert server._restart.is_set()
        assert outlinks["p1"].queue == outlinks["p2"].queue == []
        assert outlinks[CONTROLLER].queue == [("xs", "maintenance", 1)]

    trio.run(main)


def test_an_item_from_another_process_sent_before_a_reset_is_dropped() -> None:
    """Items between replica processes carry the sender's last controller
    reset: one sent before a reset (on a connection that stayed open) is
    for the replica the reset ended, and the fresh one drops it."""

    async def main() -> None:
        config = ReplicaConfig(processes=2, workers=1, interactive=False)
        options = ServeOptions(1, config, ("h", 1), (("h", 0), ("h", 1)), ("h", 3), b"s" * 16)
        async with trio.open_nursery() as nursery:
            server = _Server(options, cast(Hub, _FakeHub()), nursery)
            server.generation = cast(Generation, types.SimpleNamespace(epoch=3, relays={}))
            got: list[tuple[Any, ...]] = []
            handler = server._current_epoch(lambda generation, *args: got.append(args))
            handler("p0", 2, "maintenance", "stale")
            handler("p0", 3, "maintenance", "fresh")
            assert got == [("maintenance", "fresh")]
            # A relayed run of commands: dropped before the relay is looked
            # up (this generation has none, so one taken would fail).
            await server._seq("p0", 2, "maintenance", 7, 0, _wire.join([]))
            with pytest.raises(ProtocolError, match="relays no maintenance runtime"):
                await server._seq("p0", 3, "maintenance", 7, 0, _wire.join([]))

    trio.run(main)


@attrs.define(eq=False)
class _CountingHub:
    """A hub as ``_Server.run`` uses it: items put, and the quiescence counts."""

    name: str = "p1"
    outlinks: dict[str, Any] = attrs.field(factory=dict)
    items: list[tuple[str, tuple[Any, ...]]] = attrs.field(factory=list)
    sent: int = 0
    received: int = 0
    dropped: int = 0

    def send(self, target: str, item: tuple[Any, ...]) -> None:
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
    from replica.procs import _serve

    opened: list[int] = []

    @contextlib.asynccontextmanager
    async def fake_generation(
        options: ServeOptions, hub: Hub, token: int, epoch: int = 0
    ) -> AsyncIterator[Any]:
        opened.append(epoch)
        yield types.SimpleNamespace(epoch=epoch, end_all=lambda: None)

    monkeypatch.setattr(_serve, "open_generation", fake_generation)

    async def main() -> None:
        config = ReplicaConfig(processes=2, workers=1, interactive=False)
        options = ServeOptions(1, config, ("h", 1), (("h", 0), ("h", 1)), ("h", 3), b"s" * 16)
        async with trio.open_nursery() as nursery:
            hub = _CountingHub(outlinks={CONTROLLER: object()})
            server = _Server(options, cast(Hub, hub), nursery)
            nursery.start_soon(server.run)
            await trio.testing.wait_all_tasks_blocked()
            assert opened == [0]
            got: list[tuple[Any, ...]] = []
            exchange = server._current_epoch(lambda generation, *args: got.append(args))
            server._peer_lost("p0", "the connection broke")
            await trio.testing.wait_all_tasks_blocked()
            # No replica until the reset: an old item finds none.
            assert opened == [0]
            assert server.generation is None
            exchange("p0", 0, "maintenance", "old")
            server._reset(CONTROLLER, 7)
            await trio.testing.wait_all_tasks_blocked()
            assert opened == [0, 7]
            assert (CONTROLLER, ("reset-done", 7, 1, 2)) in hub.items
            exchange("p0", 0, "maintenance", "old, late")
            exchange("p0", 7, "maintenance", "fresh")
            assert got == [("maintenance", "fresh")]
            nursery.cancel_scope.cancel()

    trio.run(main)


def test_a_relaunched_process_starts_at_the_epoch_it_is_given() -> None:
    config = ReplicaConfig(processes=2, workers=1, interactive=False)
    options = ServeOptions(1, config, ("h", 1), (("h", 0), ("h", 1)), ("h", 3), b"s" * 16, epoch=12)

    async def main() -> None:
        async with trio.open_nursery() as nursery:
            server = _Server(options, cast(Hub, _CountingHub()), nursery)
            assert server.epoch == 12

    trio.run(main)
