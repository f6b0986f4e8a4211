"""Nodes over Trio memory streams, on the mock clock: references to another
node's actors, replies, monitors, failures and their named errors."""

from __future__ import annotations

import logging
import struct
from typing import cast

import attrs
import msgspec
import pytest
import trio
import trio.testing

import actors
from actors import ActorFailedError, ActorRef, ActorStoppedError, Down, Inbox, NodeDown, Reply
from actors.net import (
    Codec,
    CodecError,
    Connection,
    HandshakeError,
    NodeDownError,
    RemoteError,
    Role,
    open_node,
)
from actors.net._frames import Credit, Send

from ..messages import SECRET, Add, Echo, Release, Total, Unregistered, Withheld, codec, counter
from .nodes import CounterMessage, connected


async def test_a_remote_reference_tells_and_asks_over_the_connection() -> None:
    async with connected() as pair:
        ref = await pair.counter_ref()
        assert ref.name == "counter@b"
        for amount in range(10):
            await ref.tell(Add(amount))
        ref.tell_nowait(Add(100))
        assert await ref.ask(Total, timeout=5) == 145
        assert await ref.ask(Echo, "hi") == "HI"
        assert await pair.peer_a.lookup("counter") == ref  # one reference per actor
        assert await pair.peer_a.lookup("nobody") is None


async def test_find_returns_typed_references_to_a_service() -> None:
    key = actors.ServiceKey[CounterMessage]("counters")
    async with connected() as pair:
        local = pair.system_b.lookup("counter")
        assert local is not None
        pair.system_b.register(key, cast("ActorRef[CounterMessage]", local))
        (ref,) = await pair.peer_a.find(key)
        await ref.tell(Add(2))
        assert await ref.ask(Total, timeout=5) == 2
        assert await pair.peer_a.find(actors.ServiceKey[Add]("none")) == ()


async def test_an_asked_actor_failing_fails_the_remote_ask_by_name() -> None:
    async def fragile(inbox: Inbox[Total]) -> None:
        async for _ in inbox:
            raise ValueError("broken")

    async def refuser(inbox: Inbox[Echo]) -> None:
        async for envelope in inbox:
            envelope.message.reply.fail(KeyError("no such thing"))

    async with (
        connected() as pair,
        pair.system_b.open_supervisor(actors.OneForOne(intensity=5)) as sup,
    ):
        await sup.spawn(fragile, name="fragile")
        await sup.spawn(refuser, name="refuser")
        ref = cast("ActorRef[Total]", await pair.peer_a.lookup("fragile"))
        with pytest.raises(
            ActorFailedError, match=r"^actor 'fragile' failed before replying to message 0$"
        ):
            await ref.ask(Total, timeout=5)
        echo = cast("ActorRef[Echo]", await pair.peer_a.lookup("refuser"))
        with pytest.raises(RemoteError, match=r"^KeyError: 'no such thing'$") as raised:
            await echo.ask(Echo, "x", timeout=5)
        assert raised.value.kind == "KeyError"


async def test_the_remote_actors_end_comes_back_to_its_monitors() -> None:
    async with connected() as pair:
        ref = await pair.counter_ref()
        seen: list[Down] = []

        async def monitor_it(inbox: Inbox[Down]) -> None:
            inbox.monitor(ref)
            async for envelope in inbox:
                seen.append(envelope.message)

        await pair.system_a.spawn(monitor_it, name="monitor")
        await ref.tell(Add(1))
        await ref.stop()  # over the connection: b's counter stops
        assert pair.system_b.lookup("counter") is None
        await trio.testing.wait_all_tasks_blocked()
        assert [(down.address.name, down.reason) for down in seen] == [
            ("counter@b", actors.Stopped())
        ]
        assert await ref.wait_stopped() == actors.Stopped()
        with pytest.raises(ActorStoppedError, match=r"^actor 'counter@b' is stopped$"):
            await ref.tell(Add(1))


async def test_a_remote_kill_cancels_the_actor_and_its_end_comes_back() -> None:
    async with connected() as pair:
        ref = await pair.counter_ref()
        await ref.tell(Add(1))
        assert await ref.ask(Total, timeout=5) == 1
        await ref.kill()  # returns once the kill is sent
        assert await ref.wait_stopped() == actors.Killed()
        assert pair.system_b.lookup("counter") is None
        with pytest.raises(ActorStoppedError, match=r"^actor 'counter@b' is stopped$"):
            await ref.tell(Add(1))


async def test_a_remote_kill_of_a_supervised_actor_restarts_it() -> None:
    async with (
        connected() as pair,
        pair.system_b.open_supervisor(actors.OneForOne()) as supervisor,
    ):
        await supervisor.spawn(counter, name="kept")
        found = await pair.peer_a.lookup("kept")
        assert found is not None
        ref = cast("ActorRef[CounterMessage]", found)
        await ref.tell(Add(2))
        assert await ref.ask(Total, timeout=5) == 2
        await ref.kill()
        await trio.testing.wait_all_tasks_blocked()
        assert await ref.ask(Total, timeout=5) == 0  # restarted: a fresh count
        assert pair.system_b.lookup("kept") is not None


async def test_a_lost_connection_sends_node_down_exactly_once_and_fails_asks_in_flight() -> None:
    async with connected() as pair:
        ref = await pair.counter_ref()
        seen: list[Down] = []

        async def monitor_it(inbox: Inbox[Down]) -> None:
            inbox.monitor(ref)
            inbox.monitor(ref)
            async for envelope in inbox:
                seen.append(envelope.message)

        await pair.system_a.spawn(monitor_it, name="monitor")
        errors: list[BaseException] = []

        async def ask_held() -> None:
            try:
                await ref.ask(Withheld, timeout=60)
            except NodeDownError as error:
                errors.append(error)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(ask_held)
            await trio.testing.wait_all_tasks_blocked()
            assert pair.peer_a.statistics().asks_in_flight == 1
            await pair.stream_b.aclose()  # node b's end goes away mid-ask
        assert len(errors) == 1
        assert str(errors[0]) == (
            "the connection to node 'b' was lost before the reply came: "
            "the stream ended without a Close frame"
        )
        await trio.testing.wait_all_tasks_blocked()
        assert [(down.address.name, down.reason) for down in seen] == [
            ("counter@b", NodeDown("b")),
            ("counter@b", NodeDown("b")),
        ]  # one per monitor
        assert pair.node_a.peers == []
        with pytest.raises(ActorStoppedError):
            await ref.ask(Total, timeout=1)


async def test_monitoring_after_the_node_went_down_gives_node_down_at_once() -> None:
    async with connected() as pair:
        ref = await pair.counter_ref()
        await pair.peer_a.close("done")
        assert pair.peer_a.reason == "closed here: done"
        seen: list[Down] = []

        async def monitor_it(inbox: Inbox[Down]) -> None:
            inbox.monitor(ref)
            async for envelope in inbox:
                seen.append(envelope.message)

        await pair.system_a.spawn(monitor_it, name="monitor")
        await trio.testing.wait_all_tasks_blocked()
        assert [down.reason for down in seen] == [NodeDown("b")]
        assert pair.peer_b.reason == "closed by node 'a': done"
        with pytest.raises(NodeDownError, match=r"^node 'b' is down: closed here: done$"):
            await pair.peer_a.lookup("counter")


async def test_a_cancelled_ask_leaves_nothing_behind() -> None:
    async with connected() as pair:
        ref = await pair.counter_ref()
        with trio.move_on_after(1) as scope:
            await ref.ask(Withheld)
        assert scope.cancelled_caught
        assert pair.peer_a.statistics().asks_in_flight == 0  # forgotten at once
        await ref.tell(Release())
        assert await ref.ask(Total, timeout=5) == 0
        stats = pair.peer_a.statistics()
        # The far node was told the asker gave up: no answer came back.
        assert (stats.asks_in_flight, stats.late_answers) == (0, 0)
        assert ref.statistics().pending_asks == 0


async def test_asks_that_timed_out_leave_nothing_in_the_reply_table() -> None:
    async with connected() as pair:
        ref = await pair.counter_ref()
        for _ in range(100):
            with pytest.raises(actors.AskTimeoutError):
                await ref.ask(Withheld, timeout=1)
        assert pair.peer_a.statistics().asks_in_flight == 0
        assert ref.statistics().pending_asks == 0
        await ref.tell(Release())  # the 100 replies are completed there, late
        assert await ref.ask(Total, timeout=5) == 0
        stats = pair.peer_a.statistics()
        # Each asker's Cancel reached b first: none of the answers went back.
        assert (stats.asks_in_flight, stats.late_answers) == (0, 0)
        assert pair.peer_b._asked == {}


async def test_an_ask_times_out_by_the_local_clock() -> None:
    async with connected() as pair:
        ref = await pair.counter_ref()
        start = trio.current_time()
        with pytest.raises(actors.AskTimeoutError, match=r"^ask of actor 'counter@b' got no"):
            await ref.ask(Withheld, timeout=3)
        assert trio.current_time() - start == 3


@attrs.frozen
class Strange:
    reply: Reply[int]


UNKNOWN_TO_B = [(Unregistered, "Unregistered"), (Strange, "Strange")]


async def test_a_message_type_the_peer_lacks_is_refused_at_the_sender_and_nothing_is_sent() -> None:
    async with connected(only_a=UNKNOWN_TO_B) as pair:
        ref = await pair.counter_ref()
        credit = pair.peer_a.statistics().credit
        refused = r"^node 'b' does not accept message type 'Unregistered': its codec does not"
        with pytest.raises(CodecError, match=refused):
            await cast("ActorRef[Unregistered]", ref).tell(Unregistered())
        with pytest.raises(CodecError, match=refused):
            cast("ActorRef[Unregistered]", ref).tell_nowait(Unregistered())
        with pytest.raises(CodecError, match=r"^node 'b' does not accept message type 'Strange'"):
            await cast("ActorRef[Strange]", ref).ask(Strange, timeout=5)
        assert pair.peer_a.statistics().credit == credit
        assert pair.peer_a.statistics().asks_in_flight == 0
        await ref.tell(Add(5))  # the connection goes on
        assert await ref.ask(Total, timeout=5) == 5


async def test_a_message_the_peer_refuses_is_counted_and_logged_on_both_sides(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, "actors.net")
    async with connected(only_a=UNKNOWN_TO_B) as pair:
        ref = await pair.counter_ref()
        # As if b's codec had lost the types since it said which it accepts.
        pair.peer_a._conn.peer_types = None
        await cast("ActorRef[Unregistered]", ref).tell(Unregistered())
        with pytest.raises(RemoteError, match=r"^CodecError: unknown message type 'Strange'$"):
            await cast("ActorRef[Strange]", ref).ask(Strange, timeout=5)
        await ref.tell(Add(5))
        assert await ref.ask(Total, timeout=5) == 5
        a, b = pair.peer_a.statistics(), pair.peer_b.statistics()
        assert (a.refused, a.refused_by_peer, b.refused, b.refused_by_peer) == (0, 2, 2, 0)
        messages = [record.getMessage() for record in caplog.records]
        assert "refused a frame from node 'a': unknown message type 'Unregistered'" in messages
        assert "node 'b' refused a message: unknown message type 'Unregistered'" in messages


async def test_a_codec_in_use_by_a_node_registers_no_more_classes() -> None:
    async with connected() as pair:
        with pytest.raises(RuntimeError, match=r"^the codec is in use by a node, so it registers"):
            pair.node_a.codec.register(Unregistered, name="Unregistered")
        assert "Unregistered" not in pair.node_a.codec.names
        pair.node_a.codec.register(Add, name="Add")  # one it has: nothing changes


async def test_a_message_that_cannot_travel_is_refused_by_name_and_sends_nothing() -> None:
    async with connected() as pair:
        ref = cast("ActorRef[Unregistered]", await pair.counter_ref())
        credit = pair.peer_a.statistics().credit
        with pytest.raises(CodecError, match=r"^message class Unregistered is not registered"):
            ref.tell_nowait(Unregistered())
        with pytest.raises(CodecError, match=r"^message class Unregistered is not registered"):
            await ref.tell(Unregistered())
        assert pair.peer_a.statistics().credit == credit
        counter = await pair.counter_ref()
        assert await counter.ask(Total, timeout=5) == 0
        assert pair.peer_a.statistics().asks_in_flight == 0


async def test_a_message_over_the_frame_limit_is_a_codec_error_in_the_sender() -> None:
    async with connected(max_frame=2048) as pair:
        ref = await pair.counter_ref()
        with pytest.raises(
            CodecError,
            match=r"^message 'Echo': a frame of 5016 bytes is over the limit of 2048 bytes$",
        ):
            await ref.ask(Echo, "x" * 5000, timeout=5)
        with pytest.raises(CodecError, match=r"^message 'Echo': a frame of"):
            await ref.ask(Echo, "x" * 5000)
        assert pair.peer_a.statistics().asks_in_flight == 0
        assert await ref.ask(Echo, "x" * 100, timeout=5) == "X" * 100  # the connection goes on


async def test_an_answer_over_the_frame_limit_fails_the_ask_and_the_connection_survives() -> None:
    async with connected(max_frame=2048) as pair:
        ref = await pair.counter_ref()
        # The counter answers Echo with the text upper-cased: U+0149 is two
        # bytes of UTF-8, upper-cased three, so the ask fits and its answer not.
        with pytest.raises(
            RemoteError, match=r"^CodecError: an answer: a frame of 3010 bytes is over the limit"
        ):
            await ref.ask(Echo, "\u0149" * 1000, timeout=5)
        assert await ref.ask(Echo, "ok", timeout=5) == "OK"


async def test_an_oversize_frame_closes_the_connection_with_a_reason() -> None:
    async with connected(max_frame=2048) as pair:
        ref = await pair.counter_ref()
        seen: list[Down] = []

        async def monitor_it(inbox: Inbox[Down]) -> None:
            inbox.monitor(ref)
            async for envelope in inbox:
                seen.append(envelope.message)

        await pair.system_a.spawn(monitor_it, name="monitor")
        await trio.testing.wait_all_tasks_blocked()
        # A peer that does not check its frames (a hand-written length).
        await pair.stream_a.send_all(struct.pack(">I", 5013) + b"x" * 10)
        await pair.peer_a.closed.wait()
        await trio.testing.wait_all_tasks_blocked()
        assert pair.peer_b.reason == "frame of 5013 bytes is over the limit of 2048 bytes"
        assert pair.peer_a.reason == (
            "closed by node 'b': frame of 5013 bytes is over the limit of 2048 bytes"
        )
        assert [down.reason for down in seen] == [NodeDown("b")]


async def test_a_peer_without_the_secret_is_refused_and_nothing_it_sent_is_delivered() -> None:
    delivered: list[object] = []

    async def sink(inbox: Inbox[Add]) -> None:
        async for envelope in inbox:
            delivered.append(envelope.message)

    async with actors.open_system() as system:
        sink_ref = await system.spawn(sink, name="sink")
        async with open_node(system, name="b", secret=SECRET, codec=codec(), listen=None) as b:
            ours, theirs = trio.testing.memory_stream_pair()
            # The impostor speaks the protocol with the wrong secret and sends a
            # message to the sink (its uid guessed) right behind its proof.
            impostor = Connection(role=Role.CLIENT, node="mallory", secret=b"x" * 32, codec=codec())
            payload = msgspec.msgpack.encode(
                Send(sink_ref.address.uid, "Add", msgspec.msgpack.encode([1]))
            )
            refused: list[str] = []

            async def accept() -> None:
                with pytest.raises(HandshakeError) as raised:
                    await b.accept(theirs)
                refused.append(str(raised.value))

            async with trio.open_nursery() as nursery:
                nursery.start_soon(accept)
                await ours.send_all(impostor.data_to_send())
                while impostor.peer is None:
                    impostor.receive_data(await ours.receive_some(4096))
                await ours.send_all(
                    impostor.data_to_send() + struct.pack(">I", len(payload)) + payload
                )
            assert refused == [
                "handshake with node 'mallory' (as server): node 'mallory' does not hold the secret"
            ]
            assert b.peers == []
            await trio.testing.wait_all_tasks_blocked()
    assert delivered == []


async def test_two_nodes_with_different_secrets_do_not_connect() -> None:
    async with (
        actors.open_system() as system_a,
        actors.open_system() as system_b,
        open_node(system_a, name="a", secret=b"x" * 32, codec=codec(), listen=None) as a,
        open_node(system_b, name="b", secret=SECRET, codec=codec(), listen=None) as b,
    ):
        stream_a, stream_b = trio.testing.memory_stream_pair()

        async def accept() -> None:
            with pytest.raises(HandshakeError):
                await b.accept(stream_b)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(accept)
            with pytest.raises(HandshakeError):
                await a.connect(stream_a)
        assert a.peers == b.peers == []


async def test_a_handshake_that_never_comes_times_out() -> None:
    async with (
        actors.open_system() as system,
        open_node(
            system, name="a", secret=SECRET, codec=codec(), listen=None, handshake_timeout=5
        ) as node,
    ):
        stream, _silent = trio.testing.memory_stream_pair()
        start = trio.current_time()
        with pytest.raises(
            HandshakeError, match=r"^handshake with an unnamed node \(as server\): no proof"
        ):
            await node.accept(stream)
        assert trio.current_time() - start == 5


async def test_bad_node_arguments_are_refused_before_anything_starts() -> None:
    async with actors.open_system() as system:
        with pytest.raises(TypeError, match=r"^a node's name must be a non-empty str, not 3$"):
            async with open_node(system, name=3, secret=SECRET, codec=codec()):  # type: ignore[arg-type]
                pass
        with pytest.raises(TypeError, match=r"^a node's codec must be an actors.net.Codec"):
            async with open_node(system, name="a", secret=SECRET, codec=[Add]):  # type: ignore[arg-type]
                pass
        with pytest.raises(ValueError, match=r"^a node's secret must be bytes, at least 16"):
            async with open_node(system, name="a", secret=b"short", codec=codec()):
                pass
        with pytest.raises(ValueError, match=r"^a node's window must be a whole number >= 2"):
            async with open_node(system, name="a", secret=SECRET, codec=codec(), window=0):
                pass
        with pytest.raises(ValueError, match=r"^handshake_timeout must be None or a number"):
            async with open_node(
                system, name="a", secret=SECRET, codec=codec(), handshake_timeout=-1
            ):
                pass


async def test_a_flood_of_stop_frames_starts_no_task_per_frame() -> None:
    async with connected() as pair:
        busy = trio.Event()

        async def slow_to_stop(inbox: Inbox[Add]) -> None:
            await busy.wait()
            async for _ in inbox:
                pass

        await pair.system_b.spawn(slow_to_stop, name="slow")
        ref = await pair.peer_a.lookup("slow")
        assert ref is not None
        uid = ref.address.uid
        assert pair.peer_b._nursery is not None
        tasks = len(pair.peer_b._nursery.child_tasks)
        for _ in range(1000):
            pair.peer_a._conn.send_stop(uid)
        pair.peer_a._writer_lot.unpark()
        await trio.testing.wait_all_tasks_blocked()
        assert len(pair.peer_b._nursery.child_tasks) == tasks
        busy.set()
        assert await ref.wait_stopped() == actors.Stopped()


async def test_a_restarted_nodes_actors_have_new_addresses() -> None:
    addresses = []
    for _ in range(2):  # node b's two lives: the same name, the same actor and uid
        async with connected() as pair:
            ref = await pair.counter_ref()
            assert pair.peer_a.incarnation == pair.node_b.incarnation != 0
            assert ref.address.incarnation == pair.node_b.incarnation
            again = await pair.counter_ref()
            assert again.address == ref.address  # within one life, one address
            addresses.append(ref.address)
    before, after = addresses
    assert (before.name, before.uid) == (after.name, after.uid) == ("counter@b", 0)
    assert before != after  # a stale Down or look-up cannot be taken for the new one's
    local = actors.Address("counter", 0)
    assert local.incarnation == 0


async def test_a_remote_kill_after_a_stop_that_takes_too_long_kills() -> None:
    release = trio.Event()

    async def stubborn(inbox: Inbox[Add]) -> None:
        async for _ in inbox:
            await release.wait()  # busy: a graceful stop waits for it

    async with connected() as pair:
        await pair.system_b.spawn(stubborn, name="stubborn")
        found = await pair.peer_a.lookup("stubborn")
        assert found is not None
        ref = cast("ActorRef[Add]", found)
        await ref.tell(Add(1))
        with trio.move_on_after(1):
            await ref.stop()  # the pattern: stop within a time, then kill
        await ref.kill()
        assert await ref.wait_stopped() == actors.Killed()
        assert not release.is_set()


async def test_a_codec_whose_type_names_overflow_a_frame_is_refused_and_stays_open() -> None:
    many = Codec()
    for index in range(40):
        cls = attrs.make_class(f"Message{index}", ["value"], frozen=True)
        many.register(cls, name=f"a.rather.long.message.name.{index:04}")
    async with actors.open_system() as system:
        with pytest.raises(ValueError, match=r"^the names of the codec's 40 message types take"):
            async with open_node(system, name="a", secret=SECRET, codec=many, max_frame=1024):
                pass  # pragma: no cover
        # Refused: the codec is not in use, so it still takes classes.
        many.register(attrs.make_class("Late", ["value"], frozen=True), name="late")
        with pytest.raises(ValueError, match=r"^a node's window must be a whole number"):
            async with open_node(system, name="a", secret=SECRET, codec=many, window=0):
                pass  # pragma: no cover
        many.register(attrs.make_class("Later", ["value"], frozen=True), name="later")


async def test_a_peer_that_grants_credit_before_saying_its_types_is_refused() -> None:
    refused: list[str] = []
    async with (
        actors.open_system() as system,
        open_node(system, name="b", secret=SECRET, codec=codec(), listen=None) as b,
    ):
        ours, theirs = trio.testing.memory_stream_pair()
        client = Connection(role=Role.CLIENT, node="a", secret=SECRET, codec=codec())

        async def accept() -> None:
            peer = await b.accept(theirs)
            await peer.closed.wait()
            refused.append(str(peer.reason))

        async with trio.open_nursery() as nursery:
            nursery.start_soon(accept)
            await ours.send_all(client.data_to_send())  # Hello
            client.receive_data(await ours.receive_some(4096))  # b's Hello
            proof = client.data_to_send()
            credit = msgspec.msgpack.encode(Credit(8))  # Credit, no Types
            await ours.send_all(proof + struct.pack(">I", len(credit)) + credit)
    assert refused == ["a Credit frame before the Types frame"]


async def test_a_lookup_with_a_key_is_typed_and_finds_only_what_is_registered_so() -> None:
    key = actors.ServiceKey[CounterMessage]("counters")
    async with connected() as pair:
        counter_b = pair.system_b.lookup("counter")
        assert counter_b is not None
        pair.system_b.register(key, cast("ActorRef[CounterMessage]", counter_b))
        typed = await pair.peer_a.lookup("counter", key)  # ActorRef[CounterMessage] | None
        assert typed is not None
        await typed.tell(Add(2))
        assert await typed.ask(Total, timeout=5) == 2
        assert typed == await pair.peer_a.lookup("counter")
        other = actors.ServiceKey[CounterMessage]("others")
        assert await pair.peer_a.lookup("counter", other) is None  # not registered so
        assert await pair.peer_a.lookup("nobody", key) is None
