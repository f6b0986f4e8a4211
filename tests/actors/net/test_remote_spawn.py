"""Remote spawn: a node allows behaviours by key, and a peer spawns actors
running them there with arguments the codec carries, getting a typed
reference back; what the far node refuses comes back by name."""

from __future__ import annotations

import re
import struct
import textwrap
from pathlib import Path
from typing import Any

import attrs
import msgspec
import pytest
import trio
import trio.testing
from mypy import api as mypy_api

from actors import Inbox, OneForOne, Restart, ServiceKey
from actors.net import CodecError, RemoteError, SpawnKey
from actors.net._frames import Spawn
from actors.net._spawning import MAX_SPAWNING

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
        with pytest.raises(
            TypeError, match=r"^spawn takes a SpawnKey or a ServiceKey, not 'counters'$"
        ):
            await pair.peer_a.spawn("counters")  # type: ignore[call-overload]


async def test_allow_spawn_refuses_a_key_twice_and_what_is_not_a_behaviour() -> None:
    async with connected() as pair:
        pair.node_b.allow_spawn(COUNTERS, counting)
        with pytest.raises(ValueError, match=r"allows a spawn under 'counters' already"):
            pair.node_b.allow_spawn(COUNTERS, counting)
        with pytest.raises(TypeError, match=r"^allow_spawn takes a SpawnKey or a ServiceKey"):
            pair.node_b.allow_spawn("x", counting)  # type: ignore[call-overload]
        with pytest.raises(TypeError, match=r"^allow_spawn takes an async function"):
            pair.node_b.allow_spawn(ServiceKey[CounterMessage]("y"), 3)  # type: ignore[call-overload]


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


TYPED = SpawnKey[CounterMessage, Start, int]("typed counters")


async def test_a_spawn_key_types_both_ends_and_works_as_a_service_key_does() -> None:
    async with connected() as pair:
        pair.node_b.codec.values.register(Start, name="Start")
        pair.node_a.codec.values.register(Start, name="Start")
        pair.node_b.allow_spawn(TYPED, counting)
        ref = await pair.peer_a.spawn(TYPED, Start(1), 2, name="typed")
        await ref.tell(Add(3))
        assert await ref.ask(Total, timeout=5) == 7
        assert repr(TYPED) == "SpawnKey('typed counters')"
        with pytest.raises(TypeError, match="a spawn key's name must be a str"):
            SpawnKey[CounterMessage](3)  # type: ignore[arg-type]


FAILS_ONCE: list[str] = []


async def failing_once(inbox: Inbox[CounterMessage], label: str) -> None:
    """Fails on its first Add (recorded in ``FAILS_ONCE``), then counts."""
    total = 0
    async for envelope in inbox:
        match envelope.message:
            case Add(amount):
                if label not in FAILS_ONCE:
                    FAILS_ONCE.append(label)
                    raise RuntimeError("the first add fails")
                total += amount
            case Total(reply):
                reply.send(total)
            case _:
                pass


async def test_a_behaviour_allowed_under_a_supervisor_is_restarted_there() -> None:
    FAILS_ONCE.clear()
    async with (
        connected() as pair,
        pair.system_b.open_supervisor(OneForOne(intensity=3, period=5)) as supervisor,
    ):
        pair.node_b.allow_spawn(
            SpawnKey[CounterMessage, str]("supervised"), failing_once, supervisor=supervisor
        )
        ref = await pair.peer_a.spawn(SpawnKey[CounterMessage, str]("supervised"), "x")
        assert [child.name for child in supervisor.children] == [ref.name.split("@")[0]]
        await ref.tell(Add(1))  # fails: restarted with its address kept
        await trio.testing.wait_all_tasks_blocked()
        await ref.tell(Add(5))
        assert await ref.ask(Total, timeout=5) == 5
        (child,) = supervisor.children
        assert child.statistics().restarts == 1


async def test_a_spawn_after_its_supervisor_ended_is_refused_by_name() -> None:
    async with connected() as pair:
        async with pair.system_b.open_supervisor() as supervisor:
            pass
        pair.node_b.allow_spawn(COUNTERS, counting, supervisor=supervisor)
        pair.node_b.codec.values.register(Start, name="Start")
        pair.node_a.codec.values.register(Start, name="Start")
        with pytest.raises(RemoteError, match=r"^RuntimeError: supervisor .* has ended"):
            await pair.peer_a.spawn(COUNTERS, Start(0), 1)


async def test_allow_spawn_refuses_a_foreign_supervisor_and_a_bad_restart() -> None:
    async with (
        connected() as pair,
        pair.system_a.open_supervisor() as foreign,
        pair.system_b.open_supervisor() as own,
    ):
        with pytest.raises(ValueError, match="is not a supervisor of node 'b'"):
            pair.node_b.allow_spawn(COUNTERS, counting, supervisor=foreign)
        untyped: Any = "sometimes"
        with pytest.raises(TypeError, match=r"restart must be an actors\.Restart"):
            pair.node_b.allow_spawn(COUNTERS, counting, supervisor=own, restart=untyped)
        with pytest.raises(TypeError, match=r"takes an actors\.Supervisor"):
            pair.node_b.allow_spawn(COUNTERS, counting, supervisor=untyped)
        pair.node_b.allow_spawn(COUNTERS, counting, supervisor=own, restart=Restart.TRANSIENT)


SPAWN_SNIPPET = """
    from actors import Inbox
    from actors.net import Node, Peer, SpawnKey

    KEY = SpawnKey[int, str, float]("key")


    async def fits(inbox: Inbox[int], label: str, rate: float) -> None: ...
    async def short(inbox: Inbox[int], label: str) -> None: ...
    async def other(inbox: Inbox[str], label: str, rate: float) -> None: ...


    async def use(node: Node, peer: Peer) -> None:
        node.allow_spawn(KEY, fits)
        node.allow_spawn(KEY, short)  # line 14: an argument missing
        node.allow_spawn(KEY, other)  # line 15: other messages
        ref = await peer.spawn(KEY, "a", 1.5)
        reveal_type(ref)  # line 17
        await peer.spawn(KEY, "a")  # line 18: an argument missing
        await peer.spawn(KEY, 1, 1.5)  # line 19: an int for the str
"""


def test_mypy_checks_a_spawn_key_at_both_ends(tmp_path: Path) -> None:
    snippet = tmp_path / "snippet.py"
    snippet.write_text(textwrap.dedent(SPAWN_SNIPPET).lstrip("\n"), encoding="utf-8")
    config = tmp_path / "mypy.ini"
    config.write_text("[mypy]\n", encoding="utf-8")
    report, errors, status = mypy_api.run(
        [
            "--strict",
            "--no-error-summary",
            "--config-file",
            str(config),
            "--cache-dir",
            str(tmp_path / "cache"),
            str(snippet),
        ]
    )
    assert (errors, status) == ("", 1), report
    lines = {int(match[1]) for match in re.finditer(r"snippet\.py:(\d+): error:", report)}
    assert lines == {14, 15, 18, 19}, report
    assert 'snippet.py:17: note: Revealed type is "actors._core._mailbox.ActorRef[int]"' in report
