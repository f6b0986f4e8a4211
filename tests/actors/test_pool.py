"""Pools: routing, backpressure, supervision of the members, stopping."""

from __future__ import annotations

import functools
import math

import pytest
import trio
import trio.testing

import actors
from actors import (
    ActorFailedError,
    ActorStoppedError,
    Inbox,
    OneForOne,
    Pool,
    RestartIntensityError,
    Routing,
    Stopped,
)

from .messages import Add, Boom, CounterMessage, Hold, Total, counter
from .test_threads import in_thread


async def names(inbox: Inbox[int], log: list[tuple[str, int]]) -> None:
    async for envelope in inbox:
        log.append((inbox.address.name, envelope.message))


async def test_round_robin_gives_each_member_a_message_in_turn() -> None:
    log: list[tuple[str, int]] = []
    async with actors.open_system() as system:
        pool = await system.pool(names, log, size=3, name="p")
        for value in range(7):
            await pool.tell(value)
    assert sorted(log) == sorted((f"p/{value % 3}", value) for value in range(7))


async def test_least_loaded_skips_members_busy_with_a_message() -> None:
    release = trio.Event()
    async with actors.open_system() as system:
        pool = await system.pool(counter, size=3, routing=Routing.LEAST_LOADED, name="p")
        await trio.testing.wait_all_tasks_blocked()
        await pool.tell(Hold(release))  # p/0 is busy from now on
        await trio.testing.wait_all_tasks_blocked()
        await pool.tell(Add(1))  # to p/1, idle
        await pool.tell(Hold(release))  # to p/2, idle
        await trio.testing.wait_all_tasks_blocked()
        await pool.tell(Add(2))  # p/1 again: the only idle member
        assert [await member.ask(Total) for member in pool.members[1:2]] == [3]
        release.set()
        queued = [stats.queued for stats in pool.statistics().members]
        assert queued == [0, 0, 0]


async def test_least_loaded_prefers_the_shortest_queue_when_all_are_busy() -> None:
    release = trio.Event()
    async with actors.open_system() as system:
        pool = await system.pool(counter, size=2, routing=Routing.LEAST_LOADED, name="p")
        await trio.testing.wait_all_tasks_blocked()
        for _ in range(2):
            await pool.tell(Hold(release))
        await trio.testing.wait_all_tasks_blocked()
        pool.members[0].tell_nowait(Add(1))
        pool.members[0].tell_nowait(Add(1))
        for _ in range(3):
            pool.tell_nowait(Add(5))
        assert [stats.queued for stats in pool.statistics().members] == [3, 2]  # a tie: in turn
        release.set()
        assert [await member.ask(Total) for member in pool.members] == [7, 10]


async def test_a_tell_to_a_pool_waits_for_room_in_the_member_it_picks() -> None:
    release = trio.Event()
    async with actors.open_system() as system:
        pool = await system.pool(counter, size=2, name="p", capacity=1)
        for _ in range(2):
            await pool.tell(Hold(release))
        await trio.testing.wait_all_tasks_blocked()
        await pool.tell(Add(1))
        await pool.tell(Add(1))
        with trio.move_on_after(5) as waited:
            await pool.tell(Add(1))
        assert waited.cancelled_caught
        with pytest.raises(trio.WouldBlock):
            pool.tell_nowait(Add(1))
        release.set()
        await pool.tell(Add(1))


async def test_an_ask_to_a_pool_is_answered_by_a_member() -> None:
    async with actors.open_system() as system:
        pool: Pool[CounterMessage] = await system.pool(counter, size=2, name="p")
        await pool.tell(Add(4))
        assert await pool.ask(Total, timeout=1) == 0  # the other member
        assert await pool.ask(Total, timeout=1) == 4


async def test_a_failed_member_restarts_and_loses_only_the_message_it_was_handling() -> None:
    async with actors.open_system() as system:
        pool = await system.pool(counter, size=2, name="p")
        member = pool.members[0]
        release = trio.Event()
        await member.tell(Add(1))
        await member.tell(Hold(release))
        await trio.testing.wait_all_tasks_blocked()
        async with trio.open_nursery() as nursery:

            async def ask_and_fail() -> None:
                with pytest.raises(
                    ActorFailedError, match=r"^actor 'p/0' failed before replying to message 2$"
                ):
                    await member.ask(lambda reply: _boom_with(reply))

            nursery.start_soon(ask_and_fail)
            await trio.testing.wait_all_tasks_blocked()
            await member.tell(Add(10))  # queued behind the failing ask
            release.set()
        assert await member.ask(Total) == 10
        assert member.statistics().restarts == 1
        assert pool.members[0] == member


def _boom_with(reply: actors.Reply[int]) -> CounterMessage:
    """A Boom that is also an ask (its reply is never sent)."""
    del reply
    return Boom()


async def test_a_pool_stops_its_members_gracefully_and_then_refuses_messages() -> None:
    log: list[tuple[str, int]] = []
    async with actors.open_system() as system:
        pool = await system.pool(names, log, size=2, name="p", capacity=math.inf)
        for value in range(4):
            pool.tell_nowait(value)
        await pool.stop()
        assert len(log) == 4
        assert await pool.wait_stopped() == Stopped()
        assert [await member.wait_stopped() for member in pool.members] == [Stopped()] * 2
        with pytest.raises(ActorStoppedError, match=r"^pool 'p' is stopped$"):
            await pool.tell(5)


async def test_a_pool_is_an_actor_its_system_stops_on_exit() -> None:
    log: list[tuple[str, int]] = []
    async with actors.open_system() as system:
        pool = await system.pool(names, log, size=2, name="p")
        assert system.lookup("p") is not None
        assert [member.name for member in pool.members] == ["p/0", "p/1"]
        assert repr(pool) == "<Pool 'p' of 2 (round-robin)>"
        await pool.tell(1)
    assert log == [("p/0", 1)]
    assert pool.statistics().members[0].state is actors.ActorState.STOPPED


async def test_members_failing_past_the_budget_fail_the_pool() -> None:
    with pytest.RaisesGroup(RestartIntensityError, flatten_subgroups=True):
        async with actors.open_system() as system:
            pool = await system.pool(counter, size=2, name="p", strategy=OneForOne(intensity=1))
            for _ in range(2):
                await pool.members[0].tell(Boom())
            await trio.sleep_forever()


@pytest.mark.parametrize("size", [0, -1, 1.5])
async def test_a_bad_pool_size_is_refused(size: int) -> None:
    async with actors.open_system() as system:
        with pytest.raises(ValueError, match=r"^a pool's size must be a whole number >= 1, not "):
            await system.pool(counter, size=size)
        assert system.lookup("counter-pool-0") is None


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"capacity": -1}, "capacity must be a whole number >= 0 or math.inf, not -1"),
        (
            {"routing": "fastest"},
            "a pool's routing must be one of 'round-robin', 'least-loaded', not 'fastest'",
        ),
    ],
    ids=["negative capacity", "unknown routing"],
)
async def test_a_bad_pool_capacity_or_routing_is_refused_and_starts_nothing(
    options: dict[str, object], message: str
) -> None:
    async with actors.open_system() as system:
        with pytest.raises(ValueError, match=f"^{message}$"):
            await system.pool(counter, size=2, name="p", **options)  # type: ignore[arg-type]
        assert list(system._live) == []


async def test_a_pool_whose_member_cannot_start_ends_what_it_started() -> None:
    async with actors.open_system() as system:
        squatter = await system.spawn(counter, name="p/1")
        with pytest.raises(
            actors.ActorNameError, match=r"^an actor named 'p/1' is already running$"
        ):
            await system.pool(counter, size=3, name="p")
        assert list(system._live) == ["p/1"]
        assert squatter.statistics().state is actors.ActorState.RUNNING


async def test_a_pool_cancelled_while_it_starts_its_members_ends_what_it_started() -> None:
    async def cancels_its_starter(inbox: Inbox[int], starter: trio.CancelScope) -> None:
        starter.cancel()  # the first member runs while the pool starts the next
        async for _ in inbox:
            pass

    async with actors.open_system() as system:
        returned = False
        with trio.CancelScope() as starter:
            await system.pool(cancels_its_starter, starter, size=3, name="p")
            returned = True
        assert not returned
        assert list(system._live) == []


async def test_a_pool_refuses_a_foreign_thread(autojump_clock: trio.testing.MockClock) -> None:
    async with actors.open_system() as system:
        pool = await system.pool(counter, size=1, name="p")
        with pytest.raises(
            RuntimeError,
            match=(
                r"^tell_nowait of pool 'p' was called from a thread other than its actor "
                r"system's trio thread; from another thread, call "
                r"trio\.from_thread\.run_sync\(pool\.tell_nowait, message\)$"
            ),
        ):
            await in_thread(autojump_clock, functools.partial(pool.tell_nowait, Add(1)))
        assert await pool.ask(Total) == 0


async def test_least_loaded_skips_a_member_waiting_out_its_restart_backoff() -> None:
    release = trio.Event()
    strategy = OneForOne(intensity=10, period=60, backoff=actors.Backoff(minimum=5, maximum=5))
    async with actors.open_system() as system:
        pool = await system.pool(
            counter, size=2, routing=Routing.LEAST_LOADED, name="p", strategy=strategy
        )
        await trio.testing.wait_all_tasks_blocked()
        await pool.tell(Boom())  # p/0 fails and waits 5 s (less its jitter) to restart
        await trio.testing.wait_all_tasks_blocked()
        await pool.tell(Hold(release))  # p/1: busy from now on, as loaded as p/0 counts
        await trio.testing.wait_all_tasks_blocked()
        for _ in range(3):
            await pool.tell(Add(1))  # behind p/1's hold, not into the member that is down
        assert [stats.queued for stats in pool.statistics().members] == [0, 3]
        release.set()
        assert await pool.members[1].ask(Total) == 3
        await trio.sleep(5)  # p/0 restarted: an idle member again, picked first
        await trio.testing.wait_all_tasks_blocked()
        await pool.tell(Add(2))
        assert [await member.ask(Total) for member in pool.members] == [2, 3]
