"""Nothing lost silently between nodes: every message lost is counted in the
peers' statistics and handed to the nodes' ``dead_letters`` hooks, on both
sides; an ask is never a dead letter (its asker gets the error)."""

from __future__ import annotations

import logging
from typing import cast

import attrs
import pytest
import trio
import trio.testing

import actors
from actors import ActorRef, Reply
from actors.net import DeadLetter, MessageReceived, RemoteError, open_node

from ..messages import SECRET, Add, Total, Unregistered, codec
from .nodes import connected


@attrs.frozen
class Strange:
    reply: Reply[int]


UNKNOWN_TO_B = [(Unregistered, "Unregistered"), (Strange, "Strange")]


async def test_a_tell_the_peer_refuses_is_a_dead_letter_on_both_sides() -> None:
    seen_a: list[DeadLetter] = []
    seen_b: list[DeadLetter] = []
    async with connected(
        only_a=UNKNOWN_TO_B, dead_letters_a=seen_a.append, dead_letters_b=seen_b.append
    ) as pair:
        ref = await pair.counter_ref()
        pair.peer_a._conn.peer_types = None  # as if b had lost the type since it said
        await cast("ActorRef[Unregistered]", ref).tell(Unregistered())
        with pytest.raises(RemoteError, match="unknown message type 'Strange'"):
            await cast("ActorRef[Strange]", ref).ask(Strange, timeout=5)
        assert await ref.ask(Total, timeout=5) == 0  # the connection goes on
        reason = "unknown message type 'Unregistered'"
        assert seen_a == [DeadLetter("b", True, reason)]
        assert seen_b == [DeadLetter("a", False, reason)]


async def test_a_tell_for_an_actor_gone_is_dropped_and_the_sender_is_told() -> None:
    seen_a: list[DeadLetter] = []
    seen_b: list[DeadLetter] = []
    async with connected(dead_letters_a=seen_a.append, dead_letters_b=seen_b.append) as pair:
        ref = await pair.counter_ref()
        # A tell for an actor b never exported (one stopped looks the same).
        pair.peer_a._conn.send_message(999_999, Add(1))
        pair.peer_a._writer_lot.unpark()
        assert await ref.ask(Total, timeout=5) == 0  # the tell came first, and was dropped
        await trio.testing.wait_all_tasks_blocked()
        reason = "a Add for actor uid 999999 of node 'b' was dropped: it is stopped or unknown"
        assert seen_b == [DeadLetter("a", False, reason, Add(1))]
        assert seen_a == [DeadLetter("b", True, reason)]
        a, b = pair.peer_a.statistics(), pair.peer_b.statistics()
        assert (a.refused_by_peer, a.dropped, b.refused_by_peer, b.dropped) == (1, 0, 0, 1)


async def test_a_tell_undelivered_when_the_connection_goes_is_a_dead_letter() -> None:
    seen_b: list[DeadLetter] = []
    async with connected(dead_letters_b=seen_b.append) as pair:
        ref = await pair.counter_ref()
        target = ref.address.uid
        # As if it had come and waited for room in the counter's mailbox.
        pair.peer_b._inbound.append(MessageReceived(target, Add(3), None))
        await pair.stream_a.aclose()
        await pair.peer_b.closed.wait()
        (letter,) = seen_b
        assert (letter.peer, letter.outgoing, letter.message) == ("a", False, Add(3))
        assert "before it was delivered" in letter.reason
        assert pair.peer_b.statistics().dropped == 1


async def test_a_hook_that_raises_is_logged_and_the_connection_goes_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.ERROR, "actors.net")

    def failing(letter: DeadLetter) -> None:
        raise RuntimeError(f"hook failed on {letter.reason}")

    async with connected(dead_letters_b=failing) as pair:
        ref = await pair.counter_ref()
        pair.peer_a._conn.send_message(999_999, Add(1))
        pair.peer_a._writer_lot.unpark()
        assert await ref.ask(Total, timeout=5) == 0
        await ref.tell(Add(2))
        assert await ref.ask(Total, timeout=5) == 2
        assert "node 'b': the dead-letters hook failed" in caplog.text


async def test_a_hook_that_is_not_callable_is_refused() -> None:
    async with actors.open_system() as system:
        with pytest.raises(TypeError, match="dead_letters hook must be callable"):
            async with open_node(
                system,
                name="a",
                secret=SECRET,
                codec=codec(),
                listen=None,
                dead_letters=3,  # type: ignore[arg-type]
            ):
                pytest.fail("the node must not open")
