"""Message latency in seeded runs: ``actors.run(main, seed=..., latency=...)``
delays each message by a seeded virtual delay, keeps the order of one
sender's messages to one receiver, and nothing more."""

from __future__ import annotations

import logging
import math
import re

import attrs
import pytest
import trio
import trio.testing
from hypothesis import given, settings
from hypothesis import strategies as st

import actors
from actors import ActorRef, Down, EventKind, Inbox, Reply, TraceEvent

from .messages import Add, Total, Withheld, counter
from .tellers import tellers
from .test_trace import racing_program

SEEDS = range(30)


@attrs.frozen
class Feed:
    """Tell the collector ``count`` messages ``(tag, 0)``, ``(tag, 1)``, ..."""

    tag: str
    count: int


@attrs.frozen
class Watch:
    ref: ActorRef[Feed]


@attrs.frozen
class Hold:
    holding: trio.Event
    release: trio.Event


async def feeder(inbox: Inbox[Feed], collector: ActorRef[object]) -> None:
    """Feeds once, then ends (a watcher's ``Down`` follows its messages)."""
    envelope = await inbox.receive()
    for number in range(envelope.message.count):
        await collector.tell((envelope.message.tag, number))


async def collector(
    inbox: Inbox[object], seen: list[object], expected: int, done: trio.Event
) -> None:
    """Records what it takes (``Watch`` monitors, ``Hold`` waits) until it
    has seen ``expected`` messages; then sets ``done``."""
    async for envelope in inbox:
        match envelope.message:
            case Watch(ref):
                inbox.monitor(ref)
            case Hold(holding, release):
                holding.set()
                await release.wait()
            case message:
                seen.append(message)
                if len(seen) == expected:
                    done.set()


async def fan_in(tags: str, count: int) -> list[object]:
    """One feeder actor per tag feeds ``count`` messages to one collector;
    what the collector saw, in order."""
    seen: list[object] = []
    done = trio.Event()
    async with actors.open_system() as system:
        sink = await system.spawn(collector, seen, len(tags) * count, done, name="sink")
        for tag in tags:
            ref = await system.spawn(feeder, sink, name=f"feeder-{tag}")
            ref.tell_nowait(Feed(tag, count))
        await done.wait()
    return seen


def by_tag(seen: list[object], tag: str) -> list[object]:
    """The numbers of ``tag``'s messages in ``seen``, in order."""
    return [message[1] for message in seen if isinstance(message, tuple) and message[0] == tag]


def between(value: float, low: float, high: float) -> bool:
    """``low <= value <= high``, give or take the rounding of Trio's clock."""
    return low - 1e-9 <= value <= high + 1e-9


# ---- determinism and ordering ----------------------------------------------


async def traced_fan_in() -> list[TraceEvent]:
    trace = actors.Trace()
    done = trio.Event()
    async with actors.open_system(tracer=trace) as system:
        sink = await system.spawn(collector, [], 30, done, name="sink")
        for tag in "abc":
            ref = await system.spawn(feeder, sink, name=f"feeder-{tag}")
            ref.tell_nowait(Feed(tag, 10))
        await done.wait()
    return trace.events


def test_the_same_seed_gives_the_same_trace_with_latency() -> None:
    first = actors.run(traced_fan_in, seed=5, latency=0.01)
    assert actors.run(traced_fan_in, seed=5, latency=0.01) == first
    assert len(first) > 30
    assert actors.run(traced_fan_in, seed=6, latency=0.01) != first


async def relayed() -> tuple[str, ...]:
    """``first`` tells the sink ``"a"``, then tells ``second``, which then
    tells the sink ``"b"``: on Trio's scheduler alone ``"a"`` always comes
    first (it was sent before ``"b"`` was)."""
    seen: list[object] = []
    done = trio.Event()

    async def relay(inbox: Inbox[str], sink: ActorRef[object], then: ActorRef[str] | None) -> None:
        async for envelope in inbox:
            await sink.tell(envelope.message)
            if then is not None:
                await then.tell("b")

    async with actors.open_system() as system:
        sink = await system.spawn(collector, seen, 2, done, name="sink")
        second = await system.spawn(relay, sink, None, name="second")
        first = await system.spawn(relay, sink, second, name="first")
        await first.tell("a")
        await done.wait()
    return tuple(str(message) for message in seen)


def test_without_latency_a_message_sent_first_by_another_sender_arrives_first() -> None:
    assert {actors.run(relayed, seed=seed) for seed in SEEDS} == {("a", "b")}


def test_seeds_reorder_the_messages_of_two_senders_to_one_receiver() -> None:
    orders = {seed: actors.run(relayed, seed=seed, latency=0.01) for seed in SEEDS}
    assert set(orders.values()) == {("a", "b"), ("b", "a")}
    # Each order comes again with its seed.
    for seed in (
        min(s for s, o in orders.items() if o == ("a", "b")),
        min(s for s, o in orders.items() if o == ("b", "a")),
    ):
        assert actors.run(relayed, seed=seed, latency=0.01) == orders[seed]


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**32),
    low=st.sampled_from([0.0, 0.001, 0.5]),
    spread=st.sampled_from([0.0, 0.001, 0.01, 1.0]),
)
def test_one_senders_messages_to_one_receiver_keep_their_order(
    seed: int, low: float, spread: float
) -> None:
    seen = actors.run(fan_in, "abc", 15, seed=seed, latency=(low, low + spread))
    assert len(seen) == 45
    for tag in "abc":
        assert by_tag(seen, tag) == list(range(15))


def test_the_order_of_one_sender_holds_for_tasks_too_and_senders_interleave() -> None:
    async def tasks_fan_in() -> list[object]:
        seen: list[object] = []
        done = trio.Event()
        async with actors.open_system() as system:
            sink = await system.spawn(collector, seen, 40, done, name="sink")

            async def feed(tag: str) -> None:
                for number in range(20):
                    sink.tell_nowait((tag, number))
                    await trio.lowlevel.checkpoint()

            async with trio.open_nursery() as nursery:
                nursery.start_soon(feed, "x")
                nursery.start_soon(feed, "y")
            await done.wait()
        return seen

    runs = [actors.run(tasks_fan_in, seed=seed, latency=0.01) for seed in SEEDS]
    for seen in runs:
        assert by_tag(seen, "x") == by_tag(seen, "y") == list(range(20))
    # Not vacuous: the two tasks are two senders, interleaved by their delays.
    assert len({tuple(seen) for seen in runs}) > len(runs) // 2


def test_without_latency_a_trace_is_what_it_was() -> None:
    for seed in range(4):
        assert actors.run(racing_program, seed=seed, latency=None) == actors.run(
            racing_program, seed=seed
        )
    assert actors.run(racing_program, seed=0, latency=0.01) != actors.run(racing_program, seed=0)


# ---- framework messages ----------------------------------------------------


def test_a_down_never_overtakes_the_dead_actors_messages() -> None:
    async def watched() -> list[object]:
        seen: list[object] = []
        done = trio.Event()
        async with actors.open_system() as system:
            sink = await system.spawn(collector, seen, 31, done, name="sink")
            feeders = [await system.spawn(feeder, sink, name=f"feeder-{tag}") for tag in "ab"]
            await sink.tell(Watch(feeders[0]))
            # The Watch arrives before the feeder is fed: it is the same
            # sender's (this task's) earlier message to the sink.
            await trio.sleep(1)
            feeders[0].tell_nowait(Feed("a", 20))
            feeders[1].tell_nowait(Feed("b", 10))
            await done.wait()
        return seen

    for seed in SEEDS:
        seen = actors.run(watched, seed=seed, latency=0.01)
        downs = [index for index, message in enumerate(seen) if isinstance(message, Down)]
        assert len(downs) == 1
        last_of_a = max(
            index
            for index, message in enumerate(seen)
            if isinstance(message, tuple) and message[0] == "a"
        )
        assert downs[0] > last_of_a, seed


def test_a_down_of_an_actor_already_ended_follows_its_messages_still_on_their_way() -> None:
    async def late_monitor() -> tuple[list[object], int]:
        seen: list[object] = []
        on_their_way: list[int] = []
        done = trio.Event()

        async def watcher(inbox: Inbox[object]) -> None:
            async for envelope in inbox:
                match envelope.message:
                    case Watch(ref):
                        on_their_way.append(inbox.ref.statistics().in_flight)
                        inbox.monitor(ref)  # it has ended: its Down comes at once
                    case message:
                        seen.append(message)
                        if isinstance(message, Down):
                            done.set()

        async with actors.open_system() as system:
            sink = await system.spawn(watcher, name="sink")
            fed = await system.spawn(feeder, sink, name="fed")
            await fed.tell(Feed("a", 5))
            await fed.wait_stopped()
            await sink.tell(Watch(fed))
            await done.wait()
        return seen, on_their_way[0]

    monitored_early = 0
    for seed in SEEDS:
        seen, on_their_way = actors.run(late_monitor, seed=seed, latency=1)
        assert seen[:-1] == [("a", number) for number in range(5)]
        down = seen[-1]
        assert isinstance(down, Down)
        assert down.reason == actors.Normal()
        monitored_early += on_their_way > 0
    # Not vacuous: the monitor often came before the dead actor's messages.
    assert monitored_early > len(SEEDS) // 4


async def ticking() -> list[float]:
    @attrs.frozen
    class Tick:
        pass

    times: list[float] = []
    done = trio.Event()

    async def clock(inbox: Inbox[Tick]) -> None:
        inbox.timers.send_every(1, Tick())
        async for _ in inbox:
            times.append(trio.current_time())
            if len(times) == 3:
                done.set()

    async with actors.open_system() as system:
        await system.spawn(clock, name="clock")
        await done.wait()
    return times


def test_timer_messages_come_at_their_time_with_latency_on() -> None:
    assert actors.run(ticking, latency=0.5) == actors.run(ticking) == [1.0, 2.0, 3.0]


# ---- tell, ask and their answers -------------------------------------------


async def test_a_tell_returns_at_once_with_its_message_on_its_way() -> None:
    async with actors.open_system(latency=(2, 2)) as system:
        ref = await system.spawn(counter, name="c")
        start = trio.current_time()
        await ref.tell(Add(1))
        ref.tell_nowait(Add(2))
        assert trio.current_time() == start
        assert ref.statistics().in_flight == 2
        assert ref.statistics().delivered == 0
        assert await ref.ask(Total) == 3
        assert trio.current_time() == start + 4  # there and back
        assert ref.statistics().in_flight == 0


async def test_a_reply_takes_its_delay_back_to_the_asker() -> None:
    handled: list[float] = []

    async def clocked(inbox: Inbox[Total]) -> None:
        async for envelope in inbox:
            handled.append(trio.current_time())
            envelope.message.reply.send(7)

    async with actors.open_system(latency=(0.5, 1.0)) as system:
        ref = await system.spawn(clocked, name="clocked")
        for _ in range(10):
            start = trio.current_time()
            assert await ref.ask(Total) == 7
            assert between(handled[-1] - start, 0.5, 1.0)
            assert between(trio.current_time() - handled[-1], 0.5, 1.0)


async def test_an_answer_follows_what_the_replier_told_the_asker_before() -> None:
    @attrs.frozen
    class Ping:
        asker: ActorRef[str]
        reply: Reply[int]

    async def replier(inbox: Inbox[Ping]) -> None:
        async for envelope in inbox:
            await envelope.message.asker.tell("before the answer")
            envelope.message.reply.send(1)

    told: list[str] = []

    async def asker(inbox: Inbox[str], other: ActorRef[Ping]) -> None:
        await other.ask(Ping, inbox.ref)
        # The tell is in the mailbox already: it came first on the route.
        told.append(inbox.receive_nowait().message)

    for seed in range(10):
        told.clear()
        async with actors.open_system(seed=seed, latency=0.01) as system:
            other = await system.spawn(replier, name="replier")
            ref = await system.spawn(asker, other, name="asker")
            await ref.wait_stopped()
        assert told == ["before the answer"]


async def test_an_ask_that_times_out_before_its_message_arrives_never_sends_it() -> None:
    async with actors.open_system(latency=(1, 2)) as system:
        ref = await system.spawn(counter, name="c")
        with pytest.raises(
            actors.AskTimeoutError,
            match=r"^ask of actor 'c' timed out after 0\.5s before its mailbox accepted the "
            r"message; the message was not sent$",
        ):
            await ref.ask(Total, timeout=0.5)
        assert trio.current_time() == 0.5
        assert ref.statistics().in_flight == 0
        await trio.sleep(5)
        assert ref.statistics().delivered == 0
        assert ref.statistics().pending_asks == 0


async def test_an_ask_times_out_at_its_deadline_with_the_latency_counted() -> None:
    async with actors.open_system(latency=(1, 1)) as system:
        ref = await system.spawn(counter, name="c")
        with pytest.raises(
            actors.AskTimeoutError, match=r"^ask of actor 'c' got no reply within 1\.5s$"
        ):
            await ref.ask(Total, timeout=1.5)
        assert trio.current_time() == 1.5
        assert ref.statistics().delivered == 1
        assert await ref.ask(Total, timeout=2.5) == 0


async def test_a_cancelled_ask_withdraws_its_message_on_its_way() -> None:
    async with actors.open_system(latency=(1, 1)) as system:
        ref = await system.spawn(counter, name="c")
        with trio.move_on_after(0.5):
            await ref.ask(Total)
        await trio.sleep(5)
        assert ref.statistics().delivered == 0
        assert ref.statistics().in_flight == 0


async def test_an_ask_and_a_tell_to_a_stopped_actor_raise_when_sent() -> None:
    async with actors.open_system(latency=1) as system:
        ref = await system.spawn(counter, name="c")
        await ref.stop()
        start = trio.current_time()
        message = r"^actor 'c' is stopped$"
        with pytest.raises(actors.ActorStoppedError, match=message):
            ref.tell_nowait(Add(1))
        with pytest.raises(actors.ActorStoppedError, match=message):
            await ref.tell(Add(1))
        with pytest.raises(actors.ActorStoppedError, match=message):
            await ref.ask(Total)
        assert trio.current_time() == start
        assert ref.statistics().dropped_in_flight == 0


async def test_a_message_that_arrives_after_its_actor_stopped_is_counted_and_traced(
    caplog: pytest.LogCaptureFixture,
) -> None:
    trace = actors.Trace()
    caplog.set_level(logging.WARNING, logger="actors")
    async with actors.open_system(tracer=trace, latency=(1, 1)) as system:
        ref = await system.spawn(counter, name="c")
        ref.tell_nowait(Add(1))
        failure: list[BaseException] = []

        async def ask() -> None:
            try:
                await ref.ask(Total)
            except actors.ActorStoppedError as error:
                failure.append(error)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(ask)
            await trio.testing.wait_all_tasks_blocked()
            await ref.stop()  # both on their way
            assert ref.statistics().in_flight == 2
        assert trio.current_time() == 1
        assert [str(error) for error in failure] == [
            "actor 'c' stopped before the message in flight reached it"
        ]
        assert ref.statistics().in_flight == 0
        assert ref.statistics().dropped_in_flight == 2
        assert ref.statistics().delivered == 0
    dropped = [event for event in trace if event.kind is EventKind.DROPPED]
    assert dropped == [TraceEvent(1.0, "c", EventKind.DROPPED)] * 2
    assert [record.getMessage() for record in caplog.records] == [
        "actor 'c' stopped before the message in flight reached it (from a task): dropped"
    ]


async def test_messages_still_on_their_way_when_the_system_is_cancelled_are_counted() -> None:
    async with actors.open_system(latency=(1, 1)) as system:
        ref = await system.spawn(counter, name="c")
        for number in range(3):
            ref.tell_nowait(Add(number))
        system.cancel()
    assert ref.statistics().in_flight == 0
    assert ref.statistics().dropped_in_flight == 3


# ---- full mailboxes --------------------------------------------------------


async def test_a_full_mailbox_keeps_each_senders_order_and_loses_nothing() -> None:
    for seed in range(10):
        seen: list[object] = []
        done = trio.Event()
        holding, release = trio.Event(), trio.Event()
        async with actors.open_system(seed=seed, latency=0.01) as system:
            sink = await system.spawn(collector, seen, 30 + 3, done, capacity=1, name="sink")
            feeders = [await system.spawn(feeder, sink, name=f"feeder-{tag}") for tag in "abc"]
            for ref in feeders:
                await sink.tell(Watch(ref))
            await sink.tell(Hold(holding, release))
            await holding.wait()
            for tag, ref in zip("abc", feeders, strict=True):
                ref.tell_nowait(Feed(tag, 10))
            await trio.sleep(1)  # everything arrived; one fits in the mailbox
            statistics = sink.statistics()
            assert (statistics.queued, statistics.in_flight) == (1, 29)
            release.set()
            await done.wait()
        assert len(seen) == 33
        for tag in "abc":
            assert by_tag(seen, tag) == list(range(10))
        # Each feeder's Down waited behind its messages.
        for tag, ref in zip("abc", feeders, strict=True):
            down = next(
                i for i, m in enumerate(seen) if isinstance(m, Down) and m.address == ref.address
            )
            assert down > seen.index((tag, 9))
        assert sink.statistics().dropped_in_flight == 0


async def test_an_ask_waiting_for_room_that_times_out_is_never_sent() -> None:
    seen: list[object] = []
    holding, release = trio.Event(), trio.Event()
    async with actors.open_system(latency=(0.1, 0.1)) as system:
        sink = await system.spawn(collector, seen, 100, trio.Event(), capacity=0, name="sink")
        await sink.tell(Hold(holding, release))
        await holding.wait()
        with pytest.raises(actors.AskTimeoutError, match=r"the message was not sent$"):
            await sink.ask(Total, timeout=2)
        release.set()
        await trio.sleep(1)
        assert seen == []
        assert (sink.statistics().in_flight, sink.statistics().pending_asks) == (0, 0)


# ---- deadlocks ---------------------------------------------------------------


def test_messages_on_their_way_are_no_deadlock() -> None:
    async def main() -> float:
        async with actors.open_system() as system:
            done = trio.Event()
            sink = await system.spawn(collector, [], 1, done, name="sink")
            sink.tell_nowait("late")
            await done.wait()  # every task waits; the message is due at 5
        return trio.current_time()

    assert actors.run(main, latency=(5, 5)) == 5


def test_a_deadlock_with_latency_is_still_reported() -> None:
    async def main() -> None:
        async with actors.open_system() as system:
            ref = await system.spawn(withholder, name="quiet")
            await ref.ask(Withheld)

    with pytest.raises(actors.DeadlockError) as caught:
        actors.run(main, latency=1)
    assert re.search(
        r"^  task '.*main' waits for the reply to its message to actor 'quiet'$",
        str(caught.value),
        re.MULTILINE,
    )
    assert str(caught.value).startswith("deadlock at ")


async def withholder(inbox: Inbox[Withheld]) -> None:
    kept: list[Withheld] = []
    async for envelope in inbox:
        kept.append(envelope.message)


# ---- configuration ---------------------------------------------------------


def test_the_runs_latency_is_each_systems_default() -> None:
    async def latencies() -> tuple[object, ...]:
        async with actors.open_system() as default, actors.open_system(latency=(1, 2)) as own:
            seen = default.latency, own.latency, actors.current_seed()
        return seen

    assert actors.run(latencies, seed=3, latency=0.5) == ((0.0, 0.5), (1.0, 2.0), 3)
    assert actors.run(latencies) == (None, (1.0, 2.0), 0)


NOT_SECONDS = (
    r"^latency must be a number of seconds from 0 to 3.1536e\+07 or a pair \(low, high\) "
    r"of them, "
)
NOT_A_NUMBER = r"^latency must be None, a number of seconds or a pair \(low, high\) of them, "
BAD = [
    (-1, ValueError, NOT_SECONDS + r"not -1$"),
    (math.nan, ValueError, NOT_SECONDS + r"not nan$"),
    (math.inf, ValueError, NOT_SECONDS + r"not inf$"),
    (10**400, ValueError, NOT_SECONDS + r"not 10{79}$"),
    # Finite, but the clock's time plus it would overflow (a false deadlock).
    (1.7e308, ValueError, NOT_SECONDS + r"not 1.7e\+308$"),
    ((1.0, 1e9), ValueError, NOT_SECONDS + r"not \(1.0, 1000000000.0\)$"),
    ((-1, 1), ValueError, NOT_SECONDS + r"not \(-1, 1\)$"),
    ((2, 1), ValueError, r"^latency \(low, high\) must have low <= high, not \(2, 1\)$"),
    (True, TypeError, NOT_A_NUMBER + r"not True$"),
    ("1", TypeError, NOT_A_NUMBER + r"not '1'$"),
    ([0, 1], TypeError, NOT_A_NUMBER + r"not \[0, 1\]$"),
    ((0, "1"), TypeError, NOT_A_NUMBER + r"not \(0, '1'\)$"),
    ((False, 1), TypeError, NOT_A_NUMBER + r"not \(False, 1\)$"),
    ((1,), TypeError, r"^latency \(low, high\) must be a pair, not \(1,\)$"),
    ((0, 1, 2), TypeError, r"^latency \(low, high\) must be a pair, not \(0, 1, 2\)$"),
]


@pytest.mark.parametrize(("latency", "error", "message"), BAD)
def test_a_bad_latency_is_refused_before_anything_runs(
    latency: object, error: type[Exception], message: str
) -> None:
    ran: list[bool] = []

    async def main() -> None:
        ran.append(True)

    with pytest.raises(error, match=message):
        actors.run(main, latency=latency)  # type: ignore[arg-type]
    assert ran == []


@pytest.mark.parametrize(("latency", "error", "message"), BAD)
async def test_a_bad_latency_is_refused_by_open_system(
    latency: object, error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        actors.open_system(latency=latency)  # type: ignore[arg-type]


# ---- the bank tellers ------------------------------------------------------


def test_without_latency_no_teller_loses_an_update() -> None:
    results = [actors.run(tellers, seed=seed) for seed in range(50)]
    assert all(final == expected for final, expected in results)


def test_with_latency_most_seeds_lose_a_tellers_update() -> None:
    results = [actors.run(tellers, seed=seed, latency=0.001) for seed in range(50)]
    assert sum(final != expected for final, expected in results) >= 25


# ---- the sequencer's broadcasts ----------------------------------------------


async def broadcast_to_three() -> tuple[list[tuple[str, int]], list[int]]:
    """A sequencer of three members broadcasts 10 messages; the members
    record what they get, in one shared log: (member, stamp). Returns the
    log and the in-flight counts seen right after the broadcast and at the
    end."""
    log: list[tuple[str, int]] = []
    done = trio.Event()

    async def member(inbox: Inbox[int], name: str) -> None:
        async for envelope in inbox:
            log.append((name, envelope.seq))
            if len(log) == 30:
                done.set()

    async with actors.open_system() as system:
        refs = [await system.spawn(member, name, name=name) for name in "abc"]
        sequencer = system.sequencer(refs, name="sequencer")
        await sequencer.broadcast_many(list(range(10)))
        flying = [sequencer.statistics().in_flight]
        await done.wait()
        flying.append(sequencer.statistics().in_flight)
        system.cancel()
    return log, flying


def test_with_latency_each_member_gets_every_broadcast_in_order_at_its_own_time() -> None:
    interleavings = set()
    for seed in range(10):
        log, flying = actors.run(broadcast_to_three, seed=seed, latency=0.01)
        for name in "abc":
            assert [seq for who, seq in log if who == name] == list(range(10))
        assert flying == [30, 0]
        interleavings.add(tuple(log))
        assert actors.run(broadcast_to_three, seed=seed, latency=0.01) == (log, flying)
    assert len(interleavings) > 5  # the members' arrivals interleave by seed


def test_without_latency_a_broadcast_is_in_every_mailbox_when_it_returns() -> None:
    for seed in range(3):
        log, flying = actors.run(broadcast_to_three, seed=seed)
        assert flying == [0, 0]
        for name in "abc":
            assert [seq for who, seq in log if who == name] == list(range(10))


async def broadcast_past_a_stopped_member() -> tuple[list[int], int]:
    """Three broadcasts, then the second member is killed before they reach
    it, then one more: what the first got, and what was dropped at the
    second."""
    got: list[int] = []

    async def member(inbox: Inbox[int]) -> None:
        async for envelope in inbox:
            got.append(envelope.seq)

    async with actors.open_system() as system:
        stays = await system.spawn(member, name="stays")
        stops = await system.spawn(member, name="stops")
        sequencer = system.sequencer([stays, stops], name="sequencer")
        await sequencer.broadcast_many([1, 2, 3])
        await stops.kill()  # before its messages arrive
        assert sequencer.members == (stays.address,)
        await sequencer.broadcast(4)
        await trio.sleep(1)
        dropped = stops.statistics().dropped_in_flight
        system.cancel()
    return got, dropped


def test_broadcasts_on_their_way_to_a_member_that_stopped_are_dropped() -> None:
    got, dropped = actors.run(broadcast_past_a_stopped_member, seed=3, latency=0.01)
    assert got == [0, 1, 2, 3]  # the member that stayed got every stamp
    assert dropped == 3  # the three on their way to the other
