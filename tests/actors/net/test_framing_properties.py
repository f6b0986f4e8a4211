"""Framing: however the stream splits the bytes, the same events come out."""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from actors.net import Authenticated, Connection, Event

from ..messages import Add, Tagged
from .test_protocol import opened, pair, pump

messages = st.lists(
    st.one_of(
        st.builds(Add, st.integers(min_value=-(2**63), max_value=2**63 - 1)),
        st.builds(
            Tagged,
            st.lists(st.text(max_size=20), max_size=5).map(tuple),
            st.floats(allow_nan=False),
        ),
    ),
    min_size=1,
    max_size=6,
)


def sent_bytes(sender: Connection, batch: list[Add | Tagged]) -> bytes:
    for message in batch:
        sender.send_message(1, message)
    return sender.data_to_send()


def feed(receiver: Connection, data: bytes, cuts: list[int]) -> list[Event]:
    """Feed ``data`` cut at ``cuts`` (a stream never delivers an empty
    chunk: that is its end)."""
    events: list[Event] = []
    bounds = [0, *sorted(set(cuts)), len(data)]
    for start, end in itertools.pairwise(bounds):
        if end > start:
            events += receiver.receive_data(data[start:end])
    return events


@settings(max_examples=200, deadline=None)
@given(batch=messages, data=st.data())
def test_any_split_of_the_stream_gives_the_same_events(
    batch: list[Add | Tagged], data: st.DataObject
) -> None:
    whole_sender, whole_receiver = opened(window=16)
    split_sender, split_receiver = opened(window=16)
    stream = sent_bytes(whole_sender, batch)
    assert sent_bytes(split_sender, batch) == stream
    cuts = data.draw(st.lists(st.integers(min_value=1, max_value=max(1, len(stream))), max_size=8))
    assert feed(split_receiver, stream, [c for c in cuts if c < len(stream)]) == (
        feed(whole_receiver, stream, [])
    )


@settings(max_examples=50, deadline=None)
@given(data=st.data())
def test_the_handshake_completes_under_any_split(data: st.DataObject) -> None:
    client, server = pair()
    hello = client.data_to_send()
    cuts = data.draw(st.lists(st.integers(min_value=1, max_value=len(hello) - 1), max_size=4))
    assert feed(server, hello, cuts) == []
    first = client.receive_data(server.data_to_send())
    seen_client, seen_server = pump(client, server)
    seen_client = first + seen_client
    assert seen_client[:1] == [Authenticated("b")]
    assert seen_server[:1] == [Authenticated("a")]
