"""What a hostile review of references, kept connections, cancellation over
the wire and remote spawn found, each kept as a test of the documented
behaviour: answers after a cancel, asks waiting for room, framework messages
behind a message taken out, finds of silent or refusing peers, forged
references, exports of frames never sent, a seed down for hours, honest
spawns in a burst."""

from __future__ import annotations

import struct
from typing import Any, cast

import attrs
import msgspec
import pytest
import trio
import trio.testing

import actors
from actors import ActorRef, Inbox, Reply, ServiceKey
from actors.net._events import FindRequested
from actors.net._frames import Send

from .nodes import Pair, connected
from .test_cancel_over_the_wire import SLOW, Nap, Put, SlowMessage, slow


@attrs.frozen
class Slow:
    reply: Reply[str]


async def answers_late(inbox: Inbox[Slow], sent: list[bool]) -> None:
    async for envelope in inbox:
        await trio.sleep(3)
        sent.append(envelope.message.reply.send("late"))


async def test_A_no_answer_goes_back_once_the_asker_gave_up() -> None:
    # docs/actors.md: "... else the reply is marked abandoned ... and no answer goes back"
    sent: list[bool] = []
    async with connected(both=[(Slow, "Slow")]) as pair:
        await pair.system_b.spawn(answers_late, sent, name="late")
        ref = cast("ActorRef[Slow]", await pair.peer_a.lookup("late"))
        with trio.move_on_after(1):
            await ref.ask(Slow)
        await trio.sleep(5)
        assert sent == [True]
        assert pair.peer_a.statistics().late_answers == 0, "the answer went back anyway"


async def test_B_a_timed_out_ask_waiting_for_room_is_never_applied() -> None:
    # "a put that timed out is not applied later"
    applied: list[str] = []
    async with connected(both=SLOW) as pair:
        await pair.system_b.spawn(slow, applied, [], name="slow", capacity=1)
        ref = cast("ActorRef[SlowMessage]", await pair.peer_a.lookup("slow"))
        await ref.tell(Nap(10))  # taken: busy for 10 s
        await ref.tell(Nap(0))  # fills the mailbox (capacity 1)
        await trio.testing.wait_all_tasks_blocked()
        with pytest.raises(actors.AskTimeoutError):
            await ref.ask(Put, "timed out", timeout=1)
        await trio.sleep(20)
        assert applied == [], "the put whose asker timed out was applied later"


async def test_C_local_reply_abandoned_with_latency() -> None:
    # CHANGELOG: "Reply.abandoned says whether the asker gave up (local asks too)"
    kept: list[Reply[str]] = []

    async def keeper(inbox: Inbox[Slow]) -> None:
        async for envelope in inbox:
            kept.append(envelope.message.reply)

    async with actors.open_system(latency=(0.01, 0.02)) as system:
        ref = await system.spawn(keeper, name="keeper")
        with pytest.raises(actors.AskTimeoutError):
            await ref.ask(Slow, timeout=1)
        assert len(kept) == 1
        assert kept[0].abandoned, "a local ask under latency that timed out is not abandoned"


K = ServiceKey[Any]("k")


async def test_D_node_find_hangs_on_a_peer_that_never_answers() -> None:
    # a peer holding the secret, alive (pings), that ignores Find frames
    async with connected(peer_timeout=5) as pair:
        handle = pair.peer_b._handle

        def silent(event: object) -> None:
            if not isinstance(event, FindRequested):
                handle(event)  # type: ignore[arg-type]

        pair.peer_b._handle = silent  # type: ignore[method-assign]
        with trio.move_on_after(120) as scope:
            await pair.node_a.find(K)
        assert not scope.cancelled_caught, "Node.find still waiting after 120 s"


async def test_D2_node_find_raises_on_a_peer_that_refuses() -> None:
    async with connected() as pair:
        handle = pair.peer_b._handle

        def refusing(event: object) -> None:
            if isinstance(event, FindRequested):
                pair.peer_b._conn.send_refusal(event.request, "RuntimeError", "no")
                pair.peer_b._flush()
            else:
                handle(event)  # type: ignore[arg-type]

        pair.peer_b._handle = refusing  # type: ignore[method-assign]
        assert await pair.node_a.find(K) == ()  # docs: peers' failures left out


@attrs.frozen
class Maybe:
    ref: ActorRef[Any] | None


async def holder(inbox: Inbox[Maybe], kept: list[Maybe]) -> None:
    async for envelope in inbox:
        kept.append(envelope.message)


async def send_raw(pair: Pair, target: int, type_: str, values: list[object]) -> None:
    payload = msgspec.msgpack.encode(Send(target, type_, msgspec.msgpack.encode(values)))
    await pair.stream_a.send_all(struct.pack(">I", len(payload)) + payload)
    await trio.testing.wait_all_tasks_blocked()


async def test_E_forged_references_are_capped(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("actors.net._peer.MAX_REMOTE_REFS", 100)
    kept: list[Maybe] = []
    async with connected(both=[(Maybe, "Maybe")]) as pair:
        holding = await pair.system_b.spawn(holder, kept, name="holder")
        await pair.peer_a.lookup("holder")
        for uid in range(1000, 1200):
            await send_raw(pair, holding.address.uid, "Maybe", [[0, uid, "x"]])
        kept.clear()  # the application drops them all
        assert pair.peer_b.statistics().remote_refs == 100
        assert pair.peer_b.statistics().refused == 100  # the frames past the cap
        assert pair.peer_b.reason is None


async def test_F_a_forged_reference_to_a_live_actor_never_given_is_refused() -> None:
    kept: list[Maybe] = []
    async with connected(both=[(Maybe, "Maybe")]) as pair:
        holding = await pair.system_b.spawn(holder, kept, name="holder")
        secret = await pair.system_b.spawn(holder, [], name="secret")  # never exported
        await pair.peer_a.lookup("holder")
        await send_raw(pair, holding.address.uid, "Maybe", [[1, secret.address.uid, "secret"]])
        assert kept == []
        assert pair.peer_b.statistics().refused == 1


async def test_G_failed_send_still_exports() -> None:
    @attrs.frozen
    class Two:
        ref: ActorRef[Any]
        blob: bytes

    async with connected(both=[(Two, "Two")], max_frame=4096) as pair:
        mine = await pair.system_a.spawn(holder, [], name="mine")
        target = cast("ActorRef[Two]", await pair.peer_a.lookup("counter"))
        with pytest.raises(actors.net.CodecError):
            await target.tell(Two(mine, b"x" * 10000))  # over max_frame: nothing sent
        assert pair.peer_a.statistics().exported == 0, "the failed send exported 'mine'"


async def watching_slow(inbox: Inbox[Any], victim: ActorRef[Any], got: list[object]) -> None:
    inbox.monitor(victim)
    async for envelope in inbox:
        match envelope.message:
            case Nap(seconds):
                await trio.sleep(seconds)
            case Put(key, reply):
                got.append(key)
                reply.send(True)
            case actors.Down() as down:
                got.append(down)


async def test_H_unqueue_strands_a_down_in_the_system_queue() -> None:
    got: list[object] = []
    async with connected(both=SLOW) as pair:
        victim = await pair.system_b.spawn(holder, [], name="victim")
        await pair.system_b.spawn(watching_slow, victim, got, name="w", capacity=1)
        ref = cast("ActorRef[Any]", await pair.peer_a.lookup("w"))
        await ref.tell(Nap(10))  # taken at once: busy for 10 s
        await trio.testing.wait_all_tasks_blocked()
        async with trio.open_nursery() as nursery:

            async def ask() -> None:
                with pytest.raises(actors.AskTimeoutError):
                    await ref.ask(Put, "timed out", timeout=2)

            nursery.start_soon(ask)
            await trio.sleep(1)  # the Put fills the mailbox
            await victim.stop()  # its Down goes beyond the capacity
        # the Put's asker gave up at 2 s: the Put was taken out of the mailbox
        await trio.sleep(60)
        assert [type(item).__name__ for item in got] == ["Down"], got


async def test_H2_control_the_down_comes_once_another_message_does() -> None:
    got: list[object] = []
    async with connected(both=SLOW) as pair:
        victim = await pair.system_b.spawn(holder, [], name="victim")
        w = await pair.system_b.spawn(watching_slow, victim, got, name="w", capacity=1)
        ref = cast("ActorRef[Any]", await pair.peer_a.lookup("w"))
        await ref.tell(Nap(10))
        await trio.testing.wait_all_tasks_blocked()
        async with trio.open_nursery() as nursery:

            async def ask() -> None:
                with pytest.raises(actors.AskTimeoutError):
                    await ref.ask(Put, "timed out", timeout=2)

            nursery.start_soon(ask)
            await trio.sleep(1)
            await victim.stop()
        await trio.sleep(60)
        await w.tell(Nap(0))
        await trio.sleep(1)
        assert [type(i).__name__ for i in got] == ["Down"]


async def test_I_a_seed_down_for_hours_ends_the_node() -> None:
    from actors.net import open_node

    from ..messages import SECRET, codec

    dials: list[float] = []

    async def refused() -> trio.abc.Stream:
        dials.append(trio.current_time())
        raise ConnectionRefusedError("nobody there")

    async with actors.open_system() as system:
        async with open_node(
            system, name="a", secret=SECRET, codec=codec(), listen=None, seeds=[refused]
        ):
            await trio.sleep(4 * 3600)  # the seed is down for 4 hours
        assert len(dials) > 1024


async def test_J_twenty_concurrent_honest_spawns() -> None:
    from actors.net import RemoteError

    from .test_remote_spawn import COUNTERS, Start, counting

    async with connected() as pair:
        for node in (pair.node_a, pair.node_b):
            node.codec.values.register(Start, name="Start")
        pair.node_b.allow_spawn(COUNTERS, counting)
        refused: list[str] = []
        made: list[object] = []

        async def one(i: int) -> None:
            try:
                made.append(await pair.peer_a.spawn(COUNTERS, Start(0), 1, name=f"w{i}"))
            except RemoteError as error:
                refused.append(str(error))

        async with trio.open_nursery() as nursery:
            for i in range(20):
                nursery.start_soon(one, i)
        assert refused == []


async def test_K_short_lived_actors_in_messages_leave_nothing() -> None:
    kept: list[Maybe] = []
    async with connected(both=[(Maybe, "Maybe")]) as pair:
        await pair.system_b.spawn(holder, kept, name="holder")
        remote = cast("ActorRef[Maybe]", await pair.peer_a.lookup("holder"))
        for i in range(300):
            brief = await pair.system_a.spawn(holder, [], name=f"brief{i}")
            await remote.tell(Maybe(brief))
            await brief.stop()
        await trio.sleep(1)
        kept.clear()
        assert pair.peer_a.statistics().exported == 0
        assert pair.peer_b.statistics().remote_refs == 1 - 1
