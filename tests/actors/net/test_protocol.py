"""The sans-I/O protocol, without sockets: two connections fed each other's bytes."""

from __future__ import annotations

import struct
from typing import cast

import msgspec
import pytest

from actors import Reply
from actors.net import (
    AnswerReceived,
    Authenticated,
    CodecError,
    Connection,
    ConnectionClosed,
    ConnectionStateError,
    CreditGranted,
    Event,
    FailureReceived,
    FrameRefused,
    MessageReceived,
    NoCreditError,
    PeerRefused,
    Role,
    State,
    StopRequested,
)
from actors.net._frames import VERSION, Hello, Send, Types

from ..messages import SECRET, Add, Echo, Tagged, Unregistered, codec


def pair(
    *, client_secret: bytes = SECRET, server_secret: bytes = SECRET, window: int = 8
) -> tuple[Connection, Connection]:
    client = Connection(
        role=Role.CLIENT,
        node="a",
        secret=client_secret,
        codec=codec(),
        window=window,
        challenge=b"c" * 32,
    )
    server = Connection(
        role=Role.SERVER,
        node="b",
        secret=server_secret,
        codec=codec(),
        window=window,
        challenge=b"s" * 32,
    )
    return client, server


def pump(a: Connection, b: Connection) -> tuple[list[Event], list[Event]]:
    """Move bytes both ways until neither has any to send; each side's events."""
    seen_a: list[Event] = []
    seen_b: list[Event] = []
    while True:
        to_b, to_a = a.data_to_send(), b.data_to_send()
        if not to_b and not to_a:
            return seen_a, seen_b
        if to_b:
            seen_b += b.receive_data(to_b)
        if to_a:
            seen_a += a.receive_data(to_a)


def opened(window: int = 8) -> tuple[Connection, Connection]:
    client, server = pair(window=window)
    pump(client, server)
    assert client.state is server.state is State.OPEN
    return client, server


def test_the_handshake_authenticates_both_sides_and_grants_a_window() -> None:
    client, server = pair(window=8)
    seen_client, seen_server = pump(client, server)
    assert seen_client[0] == Authenticated("b")
    assert seen_server[0] == Authenticated("a")
    assert client.credit == server.credit == 8


def test_a_wrong_secret_is_refused_and_nothing_it_sent_is_delivered() -> None:
    client, server = pair(client_secret=b"not the secret, but 32 bytes!!!!")
    # The impostor queues a message before its proof was checked: a frame it
    # writes by hand, since its own connection refuses to send before OPEN.
    with pytest.raises(ConnectionStateError, match=r"^send_message on the client connection"):
        client.send_message(0, Add(1))
    hello = client.data_to_send()
    payload = msgspec.msgpack.encode(Send(0, "Add", msgspec.msgpack.encode([1])))
    events = server.receive_data(hello)
    assert events == []
    proof = server.data_to_send()
    client.receive_data(proof)
    events = server.receive_data(client.data_to_send() + struct.pack(">I", len(payload)) + payload)
    assert events == [
        ConnectionClosed("handshake: node 'a' does not hold the secret", by_peer=False)
    ]
    assert server.state is State.CLOSED
    assert not any(isinstance(event, MessageReceived) for event in events)


def test_a_frame_before_the_proof_closes_the_connection() -> None:
    client, server = pair()
    server.receive_data(client.data_to_send())
    payload = msgspec.msgpack.encode(Send(0, "Add", msgspec.msgpack.encode([1])))
    events = server.receive_data(struct.pack(">I", len(payload)) + payload)
    assert events == [ConnectionClosed("handshake: unexpected Send frame", by_peer=False)]


def test_a_reflected_challenge_is_refused() -> None:
    # A peer without the secret sends our own challenge back, hoping for
    # our proof of it to replay: it is refused before any proof is made.
    _, server = pair()
    payload = msgspec.msgpack.encode(Hello(VERSION, "mirror", b"s" * 32))
    events = server.receive_data(struct.pack(">I", len(payload)) + payload)
    assert events == [ConnectionClosed("handshake: a reused or short challenge", by_peer=False)]


def test_a_node_without_a_name_is_refused() -> None:
    _, server = pair()
    payload = msgspec.msgpack.encode(Hello(VERSION, "", b"n" * 32))
    events = server.receive_data(struct.pack(">I", len(payload)) + payload)
    assert events == [ConnectionClosed("handshake: a node without a name", by_peer=False)]


def test_the_proof_names_the_role_so_a_relayed_proof_is_wrong() -> None:
    # Two servers with the secret cannot be played against each other: a
    # proof made by a server is not a client's.
    _, server = pair()
    relay = Connection(
        role=Role.SERVER, node="a", secret=SECRET, codec=codec(), challenge=b"r" * 32
    )
    # The relay answers the server's challenge, as a server would.
    relay.receive_data(server.data_to_send())
    assert server.receive_data(relay.data_to_send()) == [
        ConnectionClosed("handshake: node 'a' does not hold the secret", by_peer=False)
    ]


def test_messages_and_asks_travel_with_their_fields() -> None:
    client, server = opened()
    client.send_message(7, Tagged(("x", "y"), 2.5))
    # A reply of no run (the protocol only checks that the ask carries one).
    reply = cast("Reply[str]", Reply._create("echo", 0, None, None))
    client.send_message(7, Echo("hi", reply), reply=1)
    _, seen = pump(client, server)
    assert seen == [
        MessageReceived(7, Tagged(("x", "y"), 2.5), None),
        MessageReceived(7, Echo("hi", None), 1),  # type: ignore[arg-type]
    ]
    server.send_answer(1, "hi back")
    server.send_failure(2, "ValueError", "no")
    seen_client, _ = pump(client, server)
    assert seen_client == [AnswerReceived(1, "hi back"), FailureReceived(2, "ValueError", "no")]


def test_each_side_learns_the_types_the_other_accepts_before_its_first_credit() -> None:
    client, server = pair(window=8)
    client.receive_data(server.data_to_send())  # b's Hello
    server.receive_data(client.data_to_send())  # a's Hello and proof
    types_then_credit = server.data_to_send()  # b checked a's proof: Types, then Credit
    assert (client.peer_types, client.credit) == (None, 0)
    for index in range(len(types_then_credit)):  # byte by byte: never credit without types
        client.receive_data(types_then_credit[index : index + 1])
        assert client.credit == 0 or client.peer_types is not None
    assert client.peer_types == frozenset(codec().names)
    assert client.credit == 8
    pump(client, server)
    assert server.peer_types == frozenset(codec().names)


def test_a_second_types_frame_closes_the_connection() -> None:
    _client, server = opened()
    payload = msgspec.msgpack.encode(Types(["Add"]))
    events = server.receive_data(struct.pack(">I", len(payload)) + payload)
    assert events == [ConnectionClosed("a second Types frame", by_peer=False)]


def test_a_type_the_peer_does_not_accept_is_refused_at_the_sender() -> None:
    client, _server = opened()
    client.peer_types = frozenset({"Total"})  # as if b's codec accepted only Total
    credit = client.credit
    with pytest.raises(CodecError, match=r"^node 'b' does not accept message type 'Add': "):
        client.send_message(3, Add(2))
    assert client.credit == credit
    assert client.data_to_send() == b""


def test_an_unknown_message_type_is_answered_with_an_error_and_the_connection_survives() -> None:
    client, server = opened()
    payload = msgspec.msgpack.encode(Send(3, "Nope", msgspec.msgpack.encode([]), 4))
    seen = server.receive_data(struct.pack(">I", len(payload)) + payload)
    assert seen == [FrameRefused("unknown message type 'Nope'", 4)]
    seen_client, _ = pump(client, server)
    assert PeerRefused("unknown message type 'Nope'", 4) in seen_client
    client.send_message(3, Add(2))
    _, seen = pump(client, server)
    assert seen == [MessageReceived(3, Add(2), None)]
    assert server.state is client.state is State.OPEN


def test_an_undecodable_frame_is_answered_with_an_error_and_the_connection_survives() -> None:
    client, server = opened()
    seen = server.receive_data(struct.pack(">I", 3) + b"\xc1\xc1\xc1")
    assert len(seen) == 1
    assert isinstance(seen[0], FrameRefused)
    assert seen[0].reason.startswith("undecodable frame: ")
    seen_client, _ = pump(client, server)
    assert [type(event) for event in seen_client] == [PeerRefused]
    assert server.state is State.OPEN


def test_fields_of_the_wrong_type_are_refused_by_name() -> None:
    _client, server = opened()
    payload = msgspec.msgpack.encode(Send(3, "Add", msgspec.msgpack.encode(["1"])))
    seen = server.receive_data(struct.pack(">I", len(payload)) + payload)
    assert seen == [FrameRefused("message 'Add': Expected `int`, got `str` - at `$[0]`", None)]


def test_a_class_validator_refusing_the_values_is_a_refused_frame() -> None:
    _client, server = opened()
    payload = msgspec.msgpack.encode(Send(3, "Positive", msgspec.msgpack.encode([-1])))
    seen = server.receive_data(struct.pack(">I", len(payload)) + payload)
    assert seen == [
        FrameRefused("message 'Positive' refused by its class: value must be > 0, not -1", None)
    ]


def test_an_oversize_frame_closes_the_connection_with_a_reason() -> None:
    client = Connection(role=Role.CLIENT, node="a", secret=SECRET, codec=codec(), max_frame=2048)
    server = Connection(role=Role.SERVER, node="b", secret=SECRET, codec=codec(), max_frame=2048)
    pump(client, server)
    seen = server.receive_data(struct.pack(">I", 4096) + b"x" * 10)
    assert seen == [
        ConnectionClosed("frame of 4096 bytes is over the limit of 2048 bytes", by_peer=False)
    ]
    seen_client, _ = pump(client, server)
    assert seen_client == [
        ConnectionClosed("frame of 4096 bytes is over the limit of 2048 bytes", by_peer=True)
    ]
    assert server.receive_data(b"more") == []


def test_before_the_handshake_a_frame_over_a_kilobyte_closes_the_connection() -> None:
    _, server = pair()
    seen = server.receive_data(struct.pack(">I", 1025))
    assert seen == [
        ConnectionClosed("frame of 1025 bytes is over the limit of 1024 bytes", by_peer=False)
    ]


def test_a_message_that_cannot_be_encoded_raises_and_sends_nothing() -> None:
    client, _ = opened()
    credit = client.credit
    with pytest.raises(CodecError, match=r"^message class Unregistered is not registered"):
        client.send_message(1, Unregistered())
    with pytest.raises(CodecError, match=r"^cannot encode message 'Tagged': "):
        client.send_message(1, Tagged((object(),)))  # type: ignore[arg-type]
    assert client.data_to_send() == b""
    assert client.credit == credit


def test_credit_runs_out_and_comes_back_as_messages_are_delivered() -> None:
    client, server = opened(window=4)
    for amount in range(4):
        client.send_message(1, Add(amount))
    with pytest.raises(NoCreditError, match=r"^node 'b' granted no credit left$"):
        client.send_message(1, Add(99))
    _, seen = pump(client, server)
    assert len(seen) == 4
    server.delivered(1)
    assert pump(client, server) == ([], [])  # below half a window: held back
    server.delivered(1)
    seen_client, _ = pump(client, server)
    assert seen_client == [CreditGranted(2)]
    assert client.credit == 2
    server.delivered(1, flush=True)
    seen_client, _ = pump(client, server)
    assert seen_client == [CreditGranted(1)]


def test_a_peer_that_sends_past_its_credit_is_closed() -> None:
    _client, server = opened(window=2)
    payload = msgspec.msgpack.encode(Send(1, "Add", msgspec.msgpack.encode([1])))
    frame = struct.pack(">I", len(payload)) + payload
    seen = server.receive_data(frame * 3)
    assert seen[:2] == [MessageReceived(1, Add(1), None)] * 2
    assert seen[2] == ConnectionClosed("the peer sent past its credit of 2 messages", by_peer=False)


def test_the_end_of_the_stream_closes_the_connection() -> None:
    _client, server = opened()
    assert server.receive_data(b"") == [
        ConnectionClosed("the stream ended without a Close frame", by_peer=False)
    ]
    with pytest.raises(
        ConnectionStateError,
        match=r"^send_answer on the server connection of node 'b': the connection is closed$",
    ):
        server.send_answer(1, 2)


def test_bad_arguments_are_refused_by_name() -> None:
    with pytest.raises(ValueError, match=r"^a node's secret must be bytes, at least 16 of them$"):
        Connection(role=Role.CLIENT, node="a", secret=b"short", codec=codec())
    with pytest.raises(ValueError, match=r"^a connection's window must be a whole number >= 2"):
        Connection(role=Role.CLIENT, node="a", secret=SECRET, codec=codec(), window=1)


def test_values_nested_deeper_than_the_decoder_can_go_are_a_refused_ask() -> None:
    client, server = opened(window=4)
    deep = b"\x91" + b"\x91" * 100_000 + b"\xc0"  # a list in a list in a list ...
    payload = msgspec.msgpack.encode(Send(3, "Keep", deep, 4))
    frame = struct.pack(">I", len(payload)) + payload
    seen = server.receive_data(frame)
    reason = "message 'Keep': maximum recursion depth exceeded while deserializing an object"
    assert seen == [FrameRefused(reason, 4)]  # under its reply number: the asker learns
    assert server.receive_data(frame) == [FrameRefused(reason, 4)]  # not past its credit
    seen_client, _ = pump(client, server)
    assert seen_client == [PeerRefused(reason, 4), PeerRefused(reason, 4), CreditGranted(2)]
    client.send_message(3, Add(2))
    _, seen = pump(client, server)
    assert seen == [MessageReceived(3, Add(2), None)]
    assert server.state is client.state is State.OPEN


def test_an_undecodable_send_frame_gives_its_credit_back() -> None:
    # A Send frame whose own fields are wrong (a target that is no number):
    # refused whole, and its credit comes back as for any refused message.
    client, server = opened(window=4)
    payload = msgspec.msgpack.encode([3, "not a uid", "Add", msgspec.msgpack.encode([1]), None])
    frame = struct.pack(">I", len(payload)) + payload
    for _ in range(2):
        (event,) = server.receive_data(frame)
        assert isinstance(event, FrameRefused)
        assert event.reason.startswith("undecodable frame: Expected `int`, got `str`")
    assert server.statistics().undelivered == 0
    seen_client, _ = pump(client, server)
    assert seen_client[-1] == CreditGranted(2)
    assert server.state is State.OPEN


def test_a_peer_that_sends_past_its_credit_while_a_grant_is_held_back_is_closed() -> None:
    _client, server = opened(window=4)
    payload = msgspec.msgpack.encode(Send(1, "Add", msgspec.msgpack.encode([1])))
    frame = struct.pack(">I", len(payload)) + payload
    assert server.receive_data(frame * 4) == [MessageReceived(1, Add(1), None)] * 4
    server.delivered(1)  # below half a window: its credit is held back, not granted
    assert server.receive_data(frame) == [
        ConnectionClosed("the peer sent past its credit of 4 messages", by_peer=False)
    ]


def test_on_answer_takes_an_answer_no_event_comes_before_and_keeps_the_order() -> None:
    client, server = opened()
    answers: list[tuple[int, object]] = []
    client.on_answer = lambda number, value: answers.append((number, value))
    server.send_answer(1, "first")
    assert client.receive_data(server.data_to_send()) == []
    assert answers == [(1, "first")]
    # Behind another event in the same bytes: an event, in its order.
    server.send_failure(2, "ValueError", "no")
    server.send_answer(3, "third")
    assert client.receive_data(server.data_to_send()) == [
        FailureReceived(2, "ValueError", "no"),
        AnswerReceived(3, "third"),
    ]
    assert answers == [(1, "first")]


def test_on_message_takes_a_message_no_event_comes_before_and_keeps_the_order() -> None:
    client, server = opened()
    messages: list[tuple[int, object, int | None]] = []
    server.on_message = lambda target, message, reply: messages.append((target, message, reply))
    client.send_message(7, Add(1))
    assert server.receive_data(client.data_to_send()) == []
    assert messages == [(7, Add(1), None)]
    # Behind another event in the same bytes: an event, in its order.
    client.send_stop(7)
    client.send_message(7, Add(2))
    assert server.receive_data(client.data_to_send()) == [
        StopRequested(7),
        MessageReceived(7, Add(2), None),
    ]
    assert messages == [(7, Add(1), None)]
    # Either way, each counts against the window until reported delivered.
    assert server.statistics().undelivered == 2
