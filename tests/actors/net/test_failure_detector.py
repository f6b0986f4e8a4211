"""The failure detector: heartbeats keep an idle connection up, and a peer
that sends nothing for ``peer_timeout`` seconds is taken for down, with
everything its connection carried, on the mock clock."""

from __future__ import annotations

import math
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import attrs
import pytest
import trio
import trio.testing

import actors
from actors import Down, Inbox, NodeDown
from actors.net import Connection, NodeDownError, Peer, Role, State, open_node

from ..messages import SECRET, Add, Total, Withheld, codec
from .nodes import connected


@attrs.define
class Silent:
    """A peer that completes the handshake by hand, then sends nothing: a
    frozen process (SIGSTOP) whose socket the kernel still drains."""

    stream: trio.abc.Stream
    conn: Connection
    received: int = 0


@asynccontextmanager
async def silent_peer(
    *, heartbeat: float = 1.0, peer_timeout: float | None = 10.0
) -> AsyncIterator[tuple[actors.ActorSystem, Peer, Silent]]:
    async with (
        actors.open_system() as system,
        open_node(
            system,
            name="a",
            secret=SECRET,
            codec=codec(),
            listen=None,
            heartbeat=heartbeat,
            peer_timeout=peer_timeout,
        ) as node,
        trio.open_nursery() as nursery,
    ):
        ours, theirs = trio.testing.memory_stream_pair()
        silent = Silent(
            theirs, Connection(role=Role.SERVER, node="z", secret=SECRET, codec=codec())
        )

        async def handshake_then_silence() -> None:
            await silent.stream.send_all(silent.conn.data_to_send())  # its Hello
            talking = True
            while True:
                data = await silent.stream.receive_some(65536)
                if not data:
                    return
                silent.received += len(data)
                silent.conn.receive_data(data)
                out = silent.conn.data_to_send()
                if talking and out:  # its proof, then its types and credit
                    await silent.stream.send_all(out)
                talking = silent.conn.state is not State.OPEN

        nursery.start_soon(handshake_then_silence)
        peer = await node.connect(ours)
        await trio.testing.wait_all_tasks_blocked()
        silent.received = 0  # the handshake's bytes
        yield system, peer, silent
        nursery.cancel_scope.cancel()


async def test_a_peer_that_sends_nothing_is_taken_for_down_after_the_peer_timeout() -> None:
    async with silent_peer(heartbeat=1, peer_timeout=10) as (system, peer, silent):
        start = trio.current_time()
        await peer.closed.wait()
        waited = trio.current_time() - start
        assert 10 <= waited <= 11  # within peer_timeout + heartbeat
        assert peer.reason == "node 'z' sent nothing for 10s (the peer timeout is 10s)"
        assert silent.received > 0  # it was sent heartbeats meanwhile
        assert system.lookup("a") is None


def freezable_pair(frozen: trio.Event) -> tuple[trio.abc.Stream, trio.abc.Stream]:
    """A memory stream pair whose b-to-a direction stops once ``frozen`` is
    set: what b writes stays in its send buffer, and a reads nothing more
    (b itself runs on, as a process does whose packets are dropped)."""
    a_send, b_receive = trio.testing.memory_stream_one_way_pair()
    b_send, a_receive = trio.testing.memory_stream_one_way_pair()

    async def pump() -> None:
        if not frozen.is_set():
            trio.testing.memory_stream_pump(b_send, a_receive)

    b_send.send_all_hook = pump
    return (
        trio.StapledStream(a_send, a_receive),
        trio.StapledStream(b_send, b_receive),
    )


async def test_what_a_silent_peer_carried_ends_with_node_down() -> None:
    frozen = trio.Event()
    async with connected(stream_pair=lambda: freezable_pair(frozen), peer_timeout=10) as pair:
        ref = await pair.counter_ref()
        seen: list[Down] = []

        async def watcher(inbox: Inbox[Down]) -> None:
            inbox.monitor(ref)
            async for envelope in inbox:
                seen.append(envelope.message)

        await pair.system_a.spawn(watcher, name="watcher")
        await trio.testing.wait_all_tasks_blocked()
        assert await ref.ask(Total, timeout=5) == 0
        frozen.set()
        start = trio.current_time()
        with pytest.raises(
            NodeDownError,
            match=r"^the connection to node 'b' was lost before the reply came: node 'b' sent ",
        ):
            await ref.ask(Total, timeout=60)
        assert 10 <= trio.current_time() - start <= 11
        await trio.testing.wait_all_tasks_blocked()
        assert [down.reason for down in seen] == [NodeDown("b")]
        assert pair.peer_a.reason == "node 'b' sent nothing for 10s (the peer timeout is 10s)"


async def test_an_idle_connection_stays_up_on_heartbeats_alone() -> None:
    async with connected(peer_timeout=10) as pair:
        ref = await pair.counter_ref()
        received = pair.peer_a._conn.statistics().frames_received
        await trio.sleep(3600)  # an hour of virtual time, nothing sent by anyone
        assert pair.peer_a.reason is None
        assert pair.peer_b.reason is None
        beats = pair.peer_a._conn.statistics().frames_received - received
        assert 3500 <= beats <= 3600  # about one a second
        assert await ref.ask(Total, timeout=5) == 0


async def test_a_busy_connection_sends_no_heartbeats() -> None:
    async with connected(peer_timeout=10) as pair:
        ref = await pair.counter_ref()
        sent = pair.peer_a._conn.statistics().frames_sent
        for _ in range(100):  # a message every half second: never a second of silence
            await ref.tell(Add(1))
            await trio.sleep(0.5)
        frames = pair.peer_a._conn.statistics().frames_sent - sent
        assert frames == 100


async def test_without_a_peer_timeout_a_silent_peer_stays_up() -> None:
    async with silent_peer(peer_timeout=None) as (_, peer, silent):
        await trio.sleep(3600)
        assert peer.reason is None
        assert silent.received == 0  # no heartbeats either


@pytest.mark.parametrize(
    ("heartbeat", "peer_timeout", "message"),
    [
        (0, 10, r"^a node's heartbeat must be a finite number of seconds >= 0.01: 0"),
        (math.inf, 10, r"^a node's heartbeat must be a finite number of seconds >= 0.01: inf"),
        (-1, 10, r"^heartbeat must be None or a number of seconds >= 0, not -1$"),
        (1e-9, 10, r"^a node's heartbeat must be a finite number of seconds >= 0.01: 1e-09$"),
        (1, 1, r"^a node's peer_timeout \(1s\) must be over its heartbeat \(1s\)$"),
        (1, -5, r"^peer_timeout must be None or a number of seconds >= 0"),
    ],
)
async def test_bad_heartbeat_options_are_refused_before_anything_starts(
    heartbeat: float, peer_timeout: float, message: str
) -> None:
    async with actors.open_system() as system:
        with pytest.raises(ValueError, match=message):
            async with open_node(
                system,
                name="a",
                secret=SECRET,
                codec=codec(),
                listen=None,
                heartbeat=heartbeat,
                peer_timeout=peer_timeout,
            ):
                pass  # pragma: no cover
        with pytest.raises(TypeError, match=r"^a node's heartbeat and peer_timeout are numbers"):
            async with open_node(
                system, name="a", secret=SECRET, codec=codec(), listen=None, heartbeat=True
            ):
                pass  # pragma: no cover
        with pytest.raises(TypeError, match=r"^heartbeat must be None or a number of seconds"):
            async with open_node(
                system,
                name="a",
                secret=SECRET,
                codec=codec(),
                listen=None,
                heartbeat="1",  # type: ignore[arg-type]
            ):
                pass  # pragma: no cover


async def test_on_the_mock_clock_the_detector_is_off_unless_asked_for() -> None:
    async with connected() as pair:  # peer_timeout left out
        assert pair.peer_a._peer_timeout is None
        sent = pair.peer_a._conn.statistics().frames_sent
        await trio.sleep(3600)
        assert pair.peer_a._conn.statistics().frames_sent == sent  # no heartbeats


def test_a_deadlock_over_nodes_on_the_mock_clock_is_still_reported() -> None:
    async def main() -> None:
        async with connected() as pair:
            ref = await pair.counter_ref()
            await ref.ask(Withheld)  # never answered: every task waits

    with pytest.raises(actors.DeadlockError, match=r"^deadlock at 0s"):
        actors.run(main)


async def test_a_node_whose_own_loop_stalls_starts_the_count_again() -> None:
    frozen = trio.Event()
    async with connected(stream_pair=lambda: freezable_pair(frozen), peer_timeout=3) as pair:
        await trio.sleep(0.5)
        frozen.set()  # from now on a hears nothing from b
        await trio.sleep(1.5)  # a's beats at 1 s and 2 s: its count of b's silence runs
        clock = trio.lowlevel.current_clock()
        assert isinstance(clock, trio.testing.MockClock)
        clock.jump(5)  # as if a computation held a's loop for 5 s
        await trio.sleep(0.5)
        assert (pair.peer_a.reason, pair.peer_b.reason) == (None, None)  # the count began again
        start = trio.current_time()
        await pair.peer_a.closed.wait()  # b is silent for real: down a timeout later
        assert 2 <= trio.current_time() - start <= 3.5
        assert pair.peer_a.reason is not None
        assert pair.peer_a.reason.startswith("node 'b' sent nothing for 3")
