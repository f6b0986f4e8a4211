"""Timers: inbox.timers.send_after, send_every, cancel, is_active, on the mock
clock (every async test runs on it): exact times, keys, what a cancel, a
restart, a stop and a full mailbox do to a timer's message."""

from __future__ import annotations

import math

import attrs
import pytest
import trio
import trio.testing

import actors
from actors import Envelope, Inbox, OneForOne

from .messages import Hold


@attrs.frozen
class Tick:
    n: int = 0


TimedMessage = Tick | str | Hold


@attrs.define
class Timed:
    """An actor that logs what it receives, and when; the test drives its
    timers through the inbox it hands out."""

    inbox: Inbox[TimedMessage] | None = None
    log: list[tuple[float, TimedMessage]] = attrs.field(factory=list)
    envelopes: list[Envelope[TimedMessage]] = attrs.field(factory=list)

    @property
    def timers(self) -> actors.Timers[TimedMessage]:
        assert self.inbox is not None
        return self.inbox.timers

    async def behaviour(self, inbox: Inbox[TimedMessage]) -> None:
        self.inbox = inbox
        async for envelope in inbox:
            self.log.append((trio.current_time(), envelope.message))
            self.envelopes.append(envelope)
            if isinstance(envelope.message, Hold):
                await envelope.message.event.wait()


async def spawn_timed(
    system: actors.ActorSystem, **options: float
) -> tuple[Timed, actors.ActorRef[TimedMessage]]:
    timed = Timed()
    ref = await system.spawn(timed.behaviour, name="timed", **options)  # type: ignore[arg-type]
    return timed, ref


async def test_send_after_delivers_the_message_once_after_the_delay() -> None:
    async with actors.open_system() as system:
        timed, ref = await spawn_timed(system)
        await ref.tell("told")
        timed.timers.send_after(2.5, "ping")
        assert timed.timers.is_active("ping")
        await trio.sleep(10)
        assert timed.log == [(0, "told"), (2.5, "ping")]
        assert [(e.seq, e.sender) for e in timed.envelopes] == [(0, None), (1, None)]
        assert not timed.timers.is_active("ping")  # a one-off timer is done once received


async def test_send_every_delivers_on_a_fixed_beat_after_its_first_delay() -> None:
    async with actors.open_system() as system:
        timed, _ = await spawn_timed(system)
        timed.timers.send_every(2, Tick(), delay=1)
        await trio.sleep(7.5)
        assert timed.log == [(1, Tick()), (3, Tick()), (5, Tick()), (7, Tick())]
        assert timed.timers.is_active(Tick())


async def test_send_every_waits_one_interval_before_its_first_message() -> None:
    async with actors.open_system() as system:
        timed, _ = await spawn_timed(system)
        timed.timers.send_every(1.5, Tick())
        await trio.sleep(4)
        assert [time for time, _ in timed.log] == [1.5, 3]


async def test_a_zero_delay_delivers_at_once_in_virtual_time() -> None:
    async with actors.open_system() as system:
        timed, _ = await spawn_timed(system)
        timed.timers.send_after(0, "now")
        await trio.testing.wait_all_tasks_blocked()
        assert timed.log == [(0, "now")]


async def test_a_timer_started_under_a_key_in_use_replaces_it() -> None:
    async with actors.open_system() as system:
        timed, _ = await spawn_timed(system)
        timed.timers.send_after(5, "first", key="k")
        timed.timers.send_after(3, "second", key="k")
        await trio.sleep(10)
        assert timed.log == [(3, "second")]


async def test_the_key_defaults_to_the_message_so_a_ticker_started_twice_is_one() -> None:
    async with actors.open_system() as system:
        timed, _ = await spawn_timed(system)
        timed.timers.send_every(1, Tick())
        await trio.sleep(0.5)
        timed.timers.send_every(1, Tick())
        await trio.sleep(2.6)
        assert timed.log == [(1.5, Tick()), (2.5, Tick())]


async def test_cancel_stops_a_timer_and_says_whether_one_was_active() -> None:
    async with actors.open_system() as system:
        timed, _ = await spawn_timed(system)
        timed.timers.send_every(1, Tick(), key="tick")
        await trio.sleep(2.5)
        assert timed.timers.cancel("tick") is True
        assert timed.timers.cancel("tick") is False
        assert not timed.timers.is_active("tick")
        await trio.sleep(5)
        assert timed.log == [(1, Tick()), (2, Tick())]


async def test_a_cancelled_timers_message_already_in_the_mailbox_is_never_received() -> None:
    release = trio.Event()
    async with actors.open_system() as system:
        timed, ref = await spawn_timed(system)
        await ref.tell(Hold(release))  # busy until released
        timed.timers.send_after(1, "stale", key="k")
        await ref.tell("before")
        await trio.sleep(2)  # posted at 1, behind "before"
        assert ref.statistics().queued == 2
        assert timed.timers.cancel("k") is True
        await ref.tell("after")
        release.set()
        await trio.testing.wait_all_tasks_blocked()
        assert [message for _, message in timed.log] == [Hold(release), "before", "after"]


async def test_a_replaced_timers_message_already_in_the_mailbox_is_never_received() -> None:
    release = trio.Event()
    async with actors.open_system() as system:
        timed, ref = await spawn_timed(system)
        await ref.tell(Hold(release))
        timed.timers.send_after(1, "old", key="k")
        await trio.sleep(2)  # "old" waits in the mailbox
        timed.timers.send_after(1, "new", key="k")
        release.set()
        await trio.sleep(2)
        assert timed.log == [(0, Hold(release)), (3, "new")]


async def test_cancel_all_cancels_every_timer() -> None:
    async with actors.open_system() as system:
        timed, _ = await spawn_timed(system)
        timed.timers.send_every(1, Tick(1))
        timed.timers.send_after(2, "later")
        timed.timers.cancel_all()
        assert not timed.timers.is_active(Tick(1))
        assert not timed.timers.is_active("later")
        await trio.sleep(5)
        assert timed.log == []


async def test_a_periodic_timer_never_piles_up_ticks_for_a_slow_actor() -> None:
    release = trio.Event()
    async with actors.open_system() as system:
        timed, ref = await spawn_timed(system)
        timed.timers.send_every(1, Tick())
        await ref.tell(Hold(release))
        await trio.sleep(10.5)  # ten ticks came due; the first waits in the mailbox
        assert ref.statistics().queued == 1
        release.set()
        await trio.sleep(2)
        assert timed.log == [(0, Hold(release)), (10.5, Tick()), (11, Tick()), (12, Tick())]


async def test_timer_messages_go_beyond_a_full_mailbox_after_what_it_holds() -> None:
    release = trio.Event()
    async with actors.open_system() as system:
        timed, ref = await spawn_timed(system, capacity=1)
        await ref.tell(Hold(release))
        await trio.testing.wait_all_tasks_blocked()
        await ref.tell("queued")  # the mailbox is full
        timed.timers.send_after(1, "timer")
        other, _ = Timed(), None
        await system.spawn(other.behaviour, name="other")
        await trio.testing.wait_all_tasks_blocked()
        other.timers.send_after(2, "on time")
        await trio.sleep(3)  # the full mailbox held nobody up
        assert other.log == [(2, "on time")]
        assert ref.statistics().queued == 2
        release.set()
        await trio.testing.wait_all_tasks_blocked()
        assert [message for _, message in timed.log] == [Hold(release), "queued", "timer"]


async def test_a_restart_cancels_the_timers_and_the_new_incarnation_never_receives_theirs() -> None:
    log: list[tuple[float, TimedMessage]] = []
    incarnations: list[Inbox[TimedMessage]] = []

    async def ticking(inbox: Inbox[TimedMessage]) -> None:
        incarnations.append(inbox)
        inbox.timers.send_after(1, Tick(len(incarnations)))
        if len(incarnations) == 1:
            await trio.sleep_forever()  # takes nothing: its tick waits in the mailbox
        async for envelope in inbox:
            log.append((trio.current_time(), envelope.message))

    async with (
        actors.open_system() as system,
        system.open_supervisor(OneForOne(intensity=3)) as supervisor,
    ):
        ref = await supervisor.spawn(ticking, name="ticking")
        await trio.sleep(2)
        assert ref.statistics().queued == 1  # Tick(1)
        await ref.kill()
        assert not incarnations[-1].timers.is_active(Tick(1))
        await trio.sleep(5)
        assert log == [(3, Tick(2))]
        await supervisor.terminate_child(ref)


async def test_a_timer_never_delivers_after_its_actor_ended() -> None:
    async with actors.open_system() as system:
        timed, ref = await spawn_timed(system)
        timed.timers.send_every(1, Tick())
        timed.timers.send_after(2.5, "late")
        await trio.sleep(1.5)
        await ref.stop()
        await trio.sleep(5)
        assert timed.log == [(1, Tick())]
        assert not timed.timers.is_active(Tick())
        assert system._timekeeper._heap == []


async def test_a_closed_mailbox_takes_no_more_timer_messages_but_delivers_those_it_has() -> None:
    release = trio.Event()
    async with actors.open_system() as system:
        timed, ref = await spawn_timed(system)
        await ref.tell(Hold(release))
        timed.timers.send_after(1, "posted")
        timed.timers.send_after(3, "too late")
        await trio.sleep(2)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(ref.stop)  # closes the mailbox; the actor drains it
            await trio.sleep(2)  # "too late" came due on a closed mailbox
            assert not timed.timers.is_active("too late")
            release.set()
        assert timed.log == [(0, Hold(release)), (4, "posted")]


async def test_an_interval_below_the_clocks_resolution_ticks_once_per_clock_value() -> None:
    ticks: list[float] = []
    three = trio.Event()

    async def ticking(inbox: Inbox[Tick]) -> None:
        # At 1000 s, 1e-20 s is below a float's resolution: now + 1e-20 == now.
        inbox.timers.send_every(1e-20, Tick())
        async for _ in inbox:
            ticks.append(trio.current_time())
            if len(ticks) == 3:
                inbox.timers.cancel(Tick())
                three.set()

    async with actors.open_system() as system:
        await trio.sleep(1000)
        await system.spawn(ticking, name="ticking")
        await three.wait()
        assert ticks[0] == 1000
        assert ticks[0] < ticks[1] < ticks[2] == math.nextafter(ticks[1], math.inf)


@pytest.mark.parametrize(
    ("start", "message"),
    [
        (
            lambda t: t.send_after(-1, "m"),
            "a timer's delay must be a finite number of seconds >= 0, not -1",
        ),
        (
            lambda t: t.send_after(math.nan, "m"),
            "a timer's delay must be a finite number of seconds >= 0, not nan",
        ),
        (
            lambda t: t.send_after(math.inf, "m"),
            "a timer's delay must be a finite number of seconds >= 0, not inf",
        ),
        (
            lambda t: t.send_every(0, "m"),
            "a timer's interval must be a finite number of seconds > 0, not 0",
        ),
        (
            lambda t: t.send_every(1, "m", delay=-2.5),
            "a timer's delay must be a finite number of seconds >= 0, not -2.5",
        ),
        (
            lambda t: t.send_every(10**400, "m"),
            f"a timer's interval must be a finite number of seconds > 0, not {10**400}",
        ),
    ],
    ids=[
        "negative delay",
        "nan delay",
        "infinite delay",
        "zero interval",
        "negative first delay",
        "huge interval",
    ],
)
async def test_a_bad_delay_or_interval_is_refused_and_sets_nothing(
    start: object, message: str
) -> None:
    async with actors.open_system() as system:
        timed, _ = await spawn_timed(system)
        with pytest.raises(ValueError, match=f"^{message}$"):
            start(timed.timers)  # type: ignore[operator]
        assert not timed.timers.is_active("m")


async def test_a_delay_or_interval_that_is_not_a_number_is_a_type_error() -> None:
    async with actors.open_system() as system:
        timed, _ = await spawn_timed(system)
        with pytest.raises(
            TypeError, match=r"^a timer's delay must be a number of seconds, not '5'$"
        ):
            timed.timers.send_after("5", "m")  # type: ignore[arg-type]
        with pytest.raises(
            TypeError, match=r"^a timer's interval must be a number of seconds, not None$"
        ):
            timed.timers.send_every(None, "m")  # type: ignore[arg-type]
        assert not timed.timers.is_active("m")


async def test_an_unhashable_message_needs_a_key() -> None:
    async with actors.open_system() as system:
        lists: list[Inbox[list[int]]] = []

        async def takes_lists(inbox: Inbox[list[int]]) -> None:
            lists.append(inbox)
            async for _ in inbox:
                pass

        await system.spawn(takes_lists, name="lists")
        message = (
            r"^timers\.send_after: a message of type 'list' is not hashable, "
            r"so it cannot be its own key; pass key=$"
        )
        with pytest.raises(TypeError, match=message):
            lists[0].timers.send_after(1, [1, 2])
        lists[0].timers.send_after(1, [1, 2], key="list")
        assert lists[0].timers.is_active("list")


async def test_a_key_that_is_not_hashable_is_refused_and_sets_nothing() -> None:
    @attrs.frozen
    class Batch:
        items: list[int]  # frozen, but its hash fails

    async with actors.open_system() as system:
        timed, _ = await spawn_timed(system)
        with pytest.raises(
            TypeError, match=r"^timers\.send_after: a key of type 'list' is not hashable$"
        ):
            timed.timers.send_after(1, "m", key=[1])  # type: ignore[arg-type]
        message = (
            r"^timers\.send_every: a message of type 'Batch' is not hashable, "
            r"so it cannot be its own key; pass key=$"
        )
        with pytest.raises(TypeError, match=message):
            timed.timers.send_every(1, Batch([1]))  # type: ignore[arg-type]
        assert repr(timed.timers) == "<Timers of actor 'timed': 0 active>"


async def test_a_timer_set_once_its_actor_ended_is_refused_and_holds_nothing() -> None:
    async with actors.open_system() as system:
        timed, ref = await spawn_timed(system)
        await ref.stop()
        message = (
            r"^timers\.send_after of actor 'timed': the actor is stopped, "
            r"and timers and monitors belong to a running incarnation$"
        )
        with pytest.raises(actors.ActorStoppedError, match=message):
            timed.timers.send_after(100, "late")
        with pytest.raises(actors.ActorStoppedError):
            timed.timers.send_every(1, Tick())
        assert not timed.timers.is_active("late")
        assert system._timekeeper._heap == []


async def test_a_timer_set_while_its_actor_waits_to_restart_is_refused() -> None:
    incarnations: list[Inbox[TimedMessage]] = []

    async def crashing(inbox: Inbox[TimedMessage]) -> None:
        incarnations.append(inbox)
        async for _ in inbox:
            raise ValueError("crash")

    backoff = actors.Backoff(minimum=5, maximum=5, jitter=0)
    async with (
        actors.open_system() as system,
        system.open_supervisor(OneForOne(intensity=2, backoff=backoff)) as supervisor,
    ):
        ref = await supervisor.spawn(crashing, name="crashing")
        await ref.tell("crash")
        await trio.testing.wait_all_tasks_blocked()  # it waits 5 s to restart
        message = r"^timers\.send_after of actor 'crashing': the actor waits to be restarted, "
        with pytest.raises(actors.ActorStoppedError, match=message):
            incarnations[0].timers.send_after(6, "for the next one")
        await trio.sleep(10)
        assert len(incarnations) == 2
        assert ref.statistics().queued == 0  # no message of the refused timer
        await supervisor.terminate_child(ref)


async def tickers() -> list[actors.TraceEvent]:
    trace = actors.Trace()

    async def ticker(inbox: Inbox[Tick], every: float) -> None:
        inbox.timers.send_every(every, Tick())
        inbox.timers.send_after(every * 2.5, Tick(1))
        async for _ in inbox:
            await trio.lowlevel.checkpoint()

    async with actors.open_system(tracer=trace) as system:
        for index in range(4):
            await system.spawn(ticker, 0.5 + index % 2, name=f"ticker-{index}")
        await trio.sleep(5)
    return trace.events


def test_the_same_seed_gives_the_same_trace_with_timers() -> None:
    first = actors.run(tickers, seed=7)
    assert len(first) > 30
    assert actors.run(tickers, seed=7) == first
