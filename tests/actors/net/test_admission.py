"""What strangers (connections that have not authenticated) may cost a
listening node: the admission table on its own (sans-I/O), then a listener
held by idle and slow-drip connections that an honest peer still gets
through, over memory streams on the mock clock and over loopback TCP on the
real clock (bounded), and the warnings such connections may make it write."""

from __future__ import annotations

import functools
import logging
import math
import re
import ssl
from typing import cast

import pytest
import trio
import trio.testing

import actors
from actors import ActorRef
from actors.net import Connection, Role, open_node
from actors.net._admission import Admission, LogBudget, Progress
from actors.net._node import LOG_BURST, LOG_INTERVAL, MAX_HANDSHAKES

from ..messages import SECRET, Echo, codec
from .nodes import CounterMessage, counter
from .siege import Siege

# The table on its own.


def test_a_full_table_admits_the_newcomer_and_evicts_the_oldest_silent_one() -> None:
    admission = Admission(3)
    first, _ = admission.admit("h")
    second, _ = admission.admit("h")
    third, _ = admission.admit("h")
    admission.advance(first, Progress.GREETED)
    fourth, evicted = admission.admit("h")
    assert evicted is second  # the oldest of those that said nothing
    assert admission.statistics().handshaking == 3
    _, evicted = admission.admit("h")
    assert evicted is third
    _, evicted = admission.admit("h")
    assert evicted is fourth
    # Only greeted ones are left besides the newest: the oldest greeted goes.
    admission.advance(first, Progress.GREETED)
    assert admission.statistics().evicted == 3


def test_a_stranger_that_spoke_outlasts_those_that_said_nothing() -> None:
    admission = Admission(2)
    dripping, _ = admission.admit("h")
    admission.advance(dripping, Progress.SPOKE)
    silent, _ = admission.admit("h")
    _, evicted = admission.admit("h")
    assert evicted is silent


def test_the_host_holding_the_most_slots_is_evicted_first() -> None:
    admission = Admission(4)
    lone, _ = admission.admit("honest")
    flood = [admission.admit("flood")[0] for _ in range(3)]
    _, evicted = admission.admit("flood")
    assert evicted is flood[0]  # not the lone connection, older though it is
    _, evicted = admission.admit("flood")
    assert evicted is flood[1]
    assert lone.progress is Progress.SILENT


def test_a_flood_of_hellos_from_one_host_evicts_its_own_not_a_silent_newcomer_of_another() -> None:
    # Strangers from one host that each sent a Hello (no secret needed) do
    # not push out a connection from another host whose Hello has not been
    # read yet (an honest peer, just accepted).
    admission = Admission(3)
    flood = [admission.admit("flood")[0] for _ in range(2)]
    for stranger in flood:
        admission.advance(stranger, Progress.GREETED)
    honest, _ = admission.admit("honest")
    _, evicted = admission.admit("flood")
    assert evicted is flood[0]
    assert honest.progress is Progress.SILENT


def test_progress_never_goes_back_and_release_is_idempotent() -> None:
    admission = Admission(1)
    one, _ = admission.admit(None)
    admission.advance(one, Progress.GREETED)
    admission.advance(one, Progress.SPOKE)
    assert one.progress is Progress.GREETED
    admission.release(one, failed=True)
    admission.release(one, failed=True)
    stats = admission.statistics()
    assert (stats.handshaking, stats.failed) == (0, 1)
    two, evicted = admission.admit(None)
    assert evicted is None
    _, evicted = admission.admit(None)
    assert evicted is two
    admission.release(two, failed=True)  # evicted already: not counted again
    assert admission.statistics().failed == 1


@pytest.mark.parametrize("limit", [0, -1, 1.5, "64", True])
def test_a_bad_limit_is_refused(limit: object) -> None:
    with pytest.raises(ValueError, match=r"^max_handshakes must be a whole number >= 1, not "):
        Admission(cast(int, limit))


def test_the_log_budget_holds_lines_back_and_says_how_many() -> None:
    budget = LogBudget(burst=2, interval=10)
    assert [budget.take(0.0) for _ in range(5)] == [0, 0, None, None, None]
    assert budget.take(9.9) is None
    assert budget.take(10.0) == 4
    assert budget.take(10.0) == 0
    assert budget.total_held_back == 4


# A listener under siege, on the mock clock.


class QueueListener(trio.abc.Listener[trio.abc.Stream]):
    """A listener whose connections are memory streams handed to ``dial``."""

    def __init__(self) -> None:
        self._send, self._receive = trio.open_memory_channel[trio.abc.Stream](math.inf)

    def dial(self) -> trio.abc.Stream:
        """Open a connection to the listener: our end (theirs queues to be accepted)."""
        ours, theirs = trio.testing.memory_stream_pair()
        self.queue(theirs)
        return ours

    def queue(self, theirs: trio.abc.Stream) -> None:
        """Queue ``theirs`` (the listener's end of a connection) to be accepted."""
        self._send.send_nowait(theirs)

    async def accept(self) -> trio.abc.Stream:
        return await self._receive.receive()

    async def aclose(self) -> None:
        self._receive.close()
        await trio.lowlevel.checkpoint()


def memory_siege(listener: QueueListener) -> Siege:
    async def dial() -> trio.abc.Stream:
        await trio.lowlevel.checkpoint()
        return listener.dial()

    return Siege(dial, pause=1)


async def test_an_honest_peer_gets_past_200_idle_and_10_dripping_strangers(
    autojump_clock: trio.testing.MockClock,
) -> None:
    listener = QueueListener()
    async with (
        actors.open_system() as system_a,
        actors.open_system() as system_b,
        open_node(system_a, name="a", secret=SECRET, codec=codec(), listen=None) as a,
        open_node(system_b, name="b", secret=SECRET, codec=codec(), listen=listener) as b,
    ):
        await system_b.spawn(counter, name="counter")
        siege = memory_siege(listener)
        async with trio.open_nursery() as nursery:
            for index in range(210):
                nursery.start_soon(siege.hold, index >= 200, 20)
            await siege.reached(300)  # the listener full, and strangers evicting each other
            assert b.statistics().handshaking == MAX_HANDSHAKES
            start = trio.current_time()
            with trio.fail_after(2):
                peer = await a.connect(listener.dial())
                ref = cast("ActorRef[CounterMessage]", await peer.lookup("counter"))
                assert await ref.ask(Echo, "through", timeout=1) == "THROUGH"
            assert trio.current_time() - start < 2
            assert siege.opened < 210 * 20  # the siege was still on
            assert b.statistics().handshaking <= MAX_HANDSHAKES
            nursery.cancel_scope.cancel()
        stats = b.statistics()
        assert stats.evicted > 0
        assert stats.peers == 1


async def test_a_node_past_its_handshake_limit_still_lets_one_more_in(
    autojump_clock: trio.testing.MockClock, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, "actors.net")
    listener = QueueListener()
    async with (
        actors.open_system() as system,
        open_node(system, name="a", secret=SECRET, codec=codec(), listen=None) as a,
        open_node(
            system, name="b", secret=SECRET, codec=codec(), listen=listener, max_handshakes=2
        ) as b,
    ):
        silent = [listener.dial() for _ in range(2)]
        await trio.testing.wait_all_tasks_blocked()
        assert b.statistics().handshaking == 2
        await a.connect(listener.dial())
        assert b.statistics().evicted == 1
        # The oldest was closed (it read our hello, no more: a Close would
        # hold a task for the close timeout, a flood of them a flood of tasks).
        await read_to_end(silent[0])
        assert b.statistics().handshaking == 1  # the other silent one; ours is a peer
        assert caplog.messages == [
            "node 'b' refused a connection: handshake with an unnamed node (as server): "
            "evicted to make room for a newer connection (the listener keeps 2 in their "
            "handshake)"
        ]


async def test_an_honest_peer_is_not_evicted_as_silent_while_the_node_sends_its_hello(
    autojump_clock: trio.testing.MockClock,
) -> None:
    # The honest peer's Hello waits in its stream when it is accepted; a
    # stranger arrives while the node sends its own Hello. The node read the
    # peer's Hello first, so the peer has shown more than the strangers that
    # only greeted before it, and the older of those is evicted, not the peer.
    listener = QueueListener()
    async with (
        actors.open_system() as system,
        open_node(system, name="a", secret=SECRET, codec=codec(), listen=None) as a,
        open_node(
            system, name="b", secret=SECRET, codec=codec(), listen=listener, max_handshakes=2
        ) as b,
    ):
        strangers = []
        for index in range(2):
            stranger = listener.dial()
            hello = Connection(role=Role.CLIENT, node=f"s{index}", secret=b"x" * 16, codec=codec())
            await stranger.send_all(hello.data_to_send())
            strangers.append(stranger)
        await trio.testing.wait_all_tasks_blocked()
        ours, theirs = trio.testing.memory_stream_pair()
        pump = theirs.send_stream.send_all_hook
        assert pump is not None

        async def a_stranger_arrives() -> None:
            theirs.send_stream.send_all_hook = pump
            listener.dial()
            await trio.testing.wait_all_tasks_blocked()
            await pump()

        theirs.send_stream.send_all_hook = a_stranger_arrives
        listener.queue(theirs)
        with trio.fail_after(2):
            await a.connect(ours)
        await trio.testing.wait_all_tasks_blocked()
        stats = b.statistics()
        assert (stats.peers, stats.evicted) == (1, 2)
        for stranger in strangers:  # both closed: the older ones went
            await read_to_end(stranger)


async def read_to_end(stream: trio.abc.Stream) -> bytes:
    data = b""
    while chunk := await stream.receive_some():
        data += chunk
    return data


async def test_warnings_about_strangers_are_rate_limited(
    autojump_clock: trio.testing.MockClock, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, "actors.net")
    listener = QueueListener()
    async with (
        actors.open_system() as system,
        open_node(system, name="b", secret=SECRET, codec=codec(), listen=listener) as b,
    ):
        for _ in range(2000):
            await listener.dial().aclose()
        await trio.testing.wait_all_tasks_blocked()
        assert len(caplog.records) == LOG_BURST
        assert b.statistics().unlogged == 2000 - LOG_BURST
        await trio.sleep(LOG_INTERVAL)
        await listener.dial().aclose()
        await trio.testing.wait_all_tasks_blocked()
        assert len(caplog.records) == LOG_BURST + 1
        assert re.search(
            rf"\({2000 - LOG_BURST} more warnings like it were not logged\)$",
            caplog.records[-1].getMessage(),
        )
        assert b.statistics().failed == 2001


async def test_a_bad_max_handshakes_is_refused_before_anything_starts() -> None:
    async with actors.open_system() as system:
        with pytest.raises(ValueError, match=r"^max_handshakes must be a whole number >= 1"):
            async with open_node(system, name="b", secret=SECRET, codec=codec(), max_handshakes=0):
                pass


# Over TLS: the TLS handshake shares the admission.

trustme = pytest.importorskip("trustme", reason="trustme makes the TLS tests' certificates")


async def test_an_honest_tls_peer_gets_past_idle_and_dripping_strangers(
    autojump_clock: trio.testing.MockClock,
) -> None:
    authority = trustme.CA()
    server_ssl = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    authority.issue_cert("b").configure_cert(server_ssl)
    client_ssl = ssl.create_default_context()
    authority.configure_trust(client_ssl)
    listener = QueueListener()
    async with (
        actors.open_system() as system,
        open_node(system, name="a", secret=SECRET, codec=codec(), listen=None) as a,
        open_node(
            system, name="b", secret=SECRET, codec=codec(), listen=listener, ssl_context=server_ssl
        ) as b,
    ):
        siege = memory_siege(listener)
        async with trio.open_nursery() as nursery:
            for index in range(80):
                nursery.start_soon(siege.hold, index >= 70, 10)
            await siege.reached(150)
            with trio.fail_after(2):
                await a.connect(listener.dial(), ssl_context=client_ssl, server_hostname="b")
            assert siege.opened < 80 * 10
            nursery.cancel_scope.cancel()
        assert b.statistics().peers == 1


# Over loopback TCP, on the real clock.

SIEGE_LIMIT = 60  # real seconds for the whole test; it takes a few


def test_honest_peers_get_past_a_siege_over_loopback_tcp() -> None:
    async def main() -> list[float]:
        took: list[float] = []
        with trio.fail_after(SIEGE_LIMIT):
            async with (
                actors.open_system() as system_a,
                actors.open_system() as system_b,
                open_node(system_a, name="a", secret=SECRET, codec=codec(), listen=None) as a,
                open_node(system_b, name="b", secret=SECRET, codec=codec()) as b,
            ):
                await system_b.spawn(counter, name="counter")
                assert b.address is not None
                address = b.address
                siege = Siege(functools.partial(trio.open_tcp_stream, *address), pause=0.5)
                async with trio.open_nursery() as nursery:
                    for index in range(210):  # bounded: 100 connections each at most
                        nursery.start_soon(siege.hold, index >= 200, 100)
                    await siege.reached(400)
                    for _ in range(10):
                        start = trio.current_time()
                        with trio.fail_after(2):
                            peer = await a.connect(address)
                            ref = cast("ActorRef[CounterMessage]", await peer.lookup("counter"))
                            assert await ref.ask(Echo, "in", timeout=2) == "IN"
                        took.append(trio.current_time() - start)
                        assert b.statistics().handshaking <= MAX_HANDSHAKES
                        await peer.close("done")
                    assert not siege.failed, siege.failed
                    assert siege.opened < 210 * 100  # the siege was still on
                    nursery.cancel_scope.cancel()
                assert b.statistics().evicted > 0
        return took

    took = trio.run(main)
    assert len(took) == 10
    assert max(took) < 2
