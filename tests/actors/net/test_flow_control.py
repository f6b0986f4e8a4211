"""Flow control between nodes: a slow remote mailbox slows its senders, with
bounded memory on both sides; a burst of tells goes out in few writes."""

from __future__ import annotations

from typing import cast

import pytest
import trio
import trio.testing

from actors import ActorRef, ActorStoppedError, Inbox

from ..messages import Add, Echo, Total
from .nodes import connected


class CountingStream(trio.abc.Stream):
    """A stream that counts its writes."""

    def __init__(self, inner: trio.abc.Stream) -> None:
        self.inner = inner
        self.writes = 0

    async def send_all(self, data: bytes | bytearray | memoryview) -> None:
        self.writes += 1
        await self.inner.send_all(data)

    async def wait_send_all_might_not_block(self) -> None:
        await self.inner.wait_send_all_might_not_block()

    async def receive_some(self, max_bytes: int | None = None) -> bytes | bytearray:
        return await self.inner.receive_some(max_bytes)

    async def aclose(self) -> None:
        await self.inner.aclose()


def counting_pair() -> tuple[trio.abc.Stream, trio.abc.Stream]:
    a, b = trio.testing.memory_stream_pair()
    return CountingStream(a), b


async def test_a_slow_remote_mailbox_slows_its_sender_and_bounds_what_is_held() -> None:
    received: list[int] = []
    go = trio.Event()

    async def slow(inbox: Inbox[Add | Total]) -> None:
        await go.wait()
        async for envelope in inbox:
            match envelope.message:
                case Add(amount):
                    received.append(amount)
                case Total(reply):
                    reply.send(len(received))

    async with connected(window=16) as pair:
        await pair.system_b.spawn(slow, name="slow", capacity=4)
        ref = await pair.peer_a.lookup("slow")
        assert ref is not None
        slow_ref = cast("ActorRef[Add | Total]", ref)
        sent = 0
        with trio.move_on_after(10) as scope:
            while True:
                await slow_ref.tell(Add(sent))
                sent += 1
        assert scope.cancelled_caught  # the sender waits: nothing more is taken
        # What is held, whatever the sender does: nothing at a (a remote
        # reference has no mailbox: the peer's credit is its capacity), and
        # at b at most the window (16) waiting for room, beside the slow
        # actor's mailbox (4).
        assert pair.peer_a.statistics().credit == 0
        assert ref.statistics().queued == 0
        waiting = pair.peer_b.statistics().waiting_delivery
        assert 0 < waiting <= 16
        assert sent == waiting + 4  # nothing else is anywhere
        go.set()
        assert await slow_ref.ask(Total, timeout=60) == sent
        assert received == list(range(sent))  # in order, none lost


async def test_a_burst_of_tells_goes_out_in_a_few_writes() -> None:
    async with connected(window=512, stream_pair=counting_pair) as pair:
        stream = pair.stream_a
        assert isinstance(stream, CountingStream)
        ref = await pair.counter_ref()
        before = stream.writes
        for amount in range(200):
            ref.tell_nowait(Add(amount))
        assert await ref.ask(Total, timeout=5) == sum(range(200))
        assert stream.writes - before <= 3  # the burst, then the ask


async def test_statistics_show_a_connection_at_rest() -> None:
    async with connected(window=16) as pair:
        ref = await pair.counter_ref()
        await ref.tell(Add(1))
        assert await ref.ask(Total, timeout=5) == 1
        stats = pair.peer_a.statistics()
        assert (stats.node, stats.remote_refs, stats.asks_in_flight, stats.credit) == (
            "b",
            1,
            0,
            16 - 2,  # credit comes back by half windows: two messages are still out
        )
        assert pair.peer_b.statistics().exported == 1


async def test_a_sender_waiting_for_credit_learns_that_the_node_went_down() -> None:
    let_go = trio.Event()

    async def stuck(inbox: Inbox[Add]) -> None:
        await let_go.wait()

    async with connected(window=4) as pair:
        await pair.system_b.spawn(stuck, name="stuck", capacity=0)
        ref = cast("ActorRef[Add]", await pair.peer_a.lookup("stuck"))
        for amount in range(4):
            ref.tell_nowait(Add(amount))
        with pytest.raises(trio.WouldBlock):
            ref.tell_nowait(Add(4))

        async def close_soon() -> None:
            await trio.sleep(1)
            await pair.stream_b.aclose()

        start = trio.current_time()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(close_soon)
            with pytest.raises(ActorStoppedError, match=r"^actor 'stuck@b' is stopped$"):
                await ref.tell(Add(4))  # waits for credit until the node goes down
        assert trio.current_time() - start == 1
        let_go.set()


class StallingStream(CountingStream):
    """A stream whose writes block for ever once ``stall`` is set (a peer
    that stopped reading)."""

    stall = False

    async def send_all(self, data: bytes | bytearray | memoryview) -> None:
        if self.stall:
            await trio.sleep_forever()
        await super().send_all(data)


def stalling_pair() -> tuple[trio.abc.Stream, trio.abc.Stream]:
    a, b = trio.testing.memory_stream_pair()
    return StallingStream(a), b


async def test_closing_a_peer_that_stopped_reading_takes_the_close_timeout_at_most() -> None:
    async with connected(stream_pair=stalling_pair) as pair:
        ref = await pair.counter_ref()
        assert isinstance(pair.stream_a, StallingStream)
        pair.stream_a.stall = True
        ref.tell_nowait(Add(1))  # the writer's send_all blocks on it
        await trio.testing.wait_all_tasks_blocked()
        start = trio.current_time()
        await pair.peer_a.close("bye")
        assert trio.current_time() - start == 5  # the default close timeout
        assert pair.peer_a.reason == "closed here: bye"
        assert pair.node_a.peers == []


async def test_asks_and_tells_that_find_the_mailbox_full_are_delivered_in_their_order() -> None:
    seen: list[str] = []
    go = trio.Event()

    async def slow(inbox: Inbox[Add | Echo]) -> None:
        await go.wait()
        async for envelope in inbox:
            match envelope.message:
                case Add(amount):
                    seen.append(f"add {amount}")
                case Echo(text, reply):
                    seen.append(f"echo {text}")
                    reply.send(text)

    async with connected(window=16) as pair:
        await pair.system_b.spawn(slow, name="slow", capacity=2)
        ref = cast("ActorRef[Add | Echo]", await pair.peer_a.lookup("slow"))
        answers: dict[int, str] = {}

        async def ask(number: int) -> None:
            answers[number] = await ref.ask(Echo, str(number), timeout=60)

        async with trio.open_nursery() as nursery:
            # Concurrent askers, and tells between their asks: past the
            # mailbox's room, the rest waits at b, in the order it came.
            for number in range(6):
                await ref.tell(Add(number))
                nursery.start_soon(ask, number)
                await trio.testing.wait_all_tasks_blocked()
            assert pair.peer_b.statistics().waiting_delivery == 12 - 2
            go.set()
        assert answers == {number: str(number) for number in range(6)}
        assert seen == [f"{kind} {number}" for number in range(6) for kind in ("add", "echo")]
        assert pair.peer_b.statistics().waiting_delivery == 0
