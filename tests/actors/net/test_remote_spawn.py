"""Remote spawn: a node allows behaviours by key, and a peer spawns actors
running them there with arguments the codec carries, getting a typed
reference back; what the far node refuses comes back by name."""

from __future__ import annotations

import struct

import attrs
import msgspec
import pytest
import trio
import trio.testing

from actors import Inbox, ServiceKey
from actors.net import CodecError, RemoteError
from actors.net._frames import Spawn
from actors.net._peer import MAX_SPAWNING

from ..messages import Add, Total
from .nodes import CounterMessage, connected

COUNTERS = ServiceKey[CounterMessage]("counters")


@attrs.frozen
class Start:
    value: int


async def counting(inbox: Inbox[CounterMessage], start: Start, step: int) -> None:
    total = start.value
    async for envelope in inbox:
        match envelope.message:
            case Add(amount):
                total += amount * step
            case Total(reply):
                reply.send(total)
            case _:
                pass


async def test_a_peer_spawns_an_allowed_behaviour_and_gets_a_typed_reference() -> None:
    async with connected() as pair:
        pair.node_b.codec.values.register(Start, name="Start")
        pair.node_a.codec.values.register(Start, name="Start")
        pair.node_b.allow_spawn(COUNTERS, counting)
        ref = await pair.peer_a.spawn(COUNTERS, Start(10), 3, name="tally")
        assert ref.name == "tally@b"
        await ref.tell(Add(2))
        assert await ref.ask(Total, timeout=5) == 16  # 10 + 2 * 3, counted on node b
        assert pair.system_b.lookup("tally") is not None
        await ref.stop()
        assert pair.system_b.lookup("tally") is None


@pytest.mark.parametrize(
    ("setup", "args", "name", "refused"),
    [
        ("none", (Start(0), 1), None, r"^LookupError: this node allows no spawn under the key"),
        ("allow", (Start(0), 1), "counter", r"^ActorNameError: an actor named 'counter' is "),
        ("allow", (Start(0),), None, r"^TypeError: counting\(\) missing 1 required positional"),
    ],
    ids=["no-such-key", "name-taken", "wrong-arguments"],
)
async def test_what_the_far_node_refuses_comes_back_by_name(
    setup: str, args: tuple[object, ...], name: str | None, refused: str
) -> None:
    async with connected() as pair:
        for node in (pair.node_a, pair.node_b):
            node.codec.values.register(Start, name="Start")
        if setup == "allow":
            pair.node_b.allow_spawn(COUNTERS, counting)
        with pytest.raises(RemoteError, match=refused):
            await pair.peer_a.spawn(COUNTERS, *args, name=name)
        assert await (await pair.counter_ref()).ask(Total, timeout=5) == 0  # b goes on


async def test_arguments_that_cannot_travel_are_refused_before_anything_is_sent() -> None:
    async with connected() as pair:
        pair.node_b.allow_spawn(COUNTERS, counting)
        with pytest.raises(CodecError):
            await pair.peer_a.spawn(COUNTERS, Start(1), 1)  # Start is no value of a's codec
        with pytest.raises(TypeError, match=r"^spawn takes a ServiceKey, not 'counters'$"):
            await pair.peer_a.spawn("counters")  # type: ignore[arg-type]


async def test_allow_spawn_refuses_a_key_twice_and_what_is_not_a_behaviour() -> None:
    async with connected() as pair:
        pair.node_b.allow_spawn(COUNTERS, counting)
        with pytest.raises(ValueError, match=r"allows a spawn under 'counters' already"):
            pair.node_b.allow_spawn(COUNTERS, counting)
        with pytest.raises(TypeError, match=r"^allow_spawn takes a ServiceKey"):
            pair.node_b.allow_spawn("x", counting)  # type: ignore[arg-type]
        with pytest.raises(TypeError, match=r"^allow_spawn takes an async function"):
            pair.node_b.allow_spawn(ServiceKey[CounterMessage]("y"), 3)  # type: ignore[arg-type]


async def test_a_flood_of_spawns_starts_at_most_max_spawning_at_once() -> None:
    async with connected() as pair:
        pair.node_b.codec.values.register(Start, name="Start")
        pair.node_b.allow_spawn(COUNTERS, counting)
        args = pair.node_b.codec.values.encode([Start(0), 1])
        frames = b""
        for number in range(MAX_SPAWNING + 4):
            payload = msgspec.msgpack.encode(Spawn(10_000 + number, "counters", args, None))
            frames += struct.pack(">I", len(payload)) + payload
        await pair.stream_a.send_all(frames)  # all in one read: none has started yet
        await trio.testing.wait_all_tasks_blocked()
        spawned = [name for name in pair.system_b._live if name.startswith("counting")]
        assert len(spawned) == MAX_SPAWNING
        assert pair.peer_b.reason is None
