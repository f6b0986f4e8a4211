"""actors.run ends a deadlock on its mock clock with an error naming who waits
on what, instead of hanging in real time; and it runs on a real clock too."""

from __future__ import annotations

import functools
import inspect
import math
import re
import socket
import threading
import warnings

import attrs
import pytest
import trio
import trio._core._run as trio_run
import trio.testing

import actors
from actors import DeadlockError, Inbox, RealClock, Reply
from actors._deadlock import _waits, io_waiters

from .messages import Add, CounterMessage, Hold, Total, counter


def test_trios_run_loop_still_calls_the_clocks_autojump_hook() -> None:
    # If this fails, trio moved the hook deadlock detection rests on: see
    # actors/_deadlock.py and the trio range in pyproject.toml.
    assert callable(getattr(trio.testing.MockClock, "_autojump", None))
    assert "runner.clock._autojump()" in inspect.getsource(trio_run.unrolled_run)
    assert "seconds_to_next_deadline" in {
        field.name for field in trio_run.RunStatistics.__attrs_attrs__
    }


async def asks_a_silent_actor() -> None:
    async def silent(inbox: Inbox[Total]) -> None:
        async for _ in inbox:
            pass  # takes the ask and never answers

    async with actors.open_system() as system:
        await system.spawn(counter, name="idle")
        quiet = await system.spawn(silent, name="quiet")
        await trio.sleep(3)
        await quiet.ask(Total)


def test_a_deadlock_under_run_ends_with_an_error_naming_the_parked_actors() -> None:
    with pytest.raises(DeadlockError) as info:
        actors.run(asks_a_silent_actor)
    assert str(info.value) == (
        "deadlock at 3s: every task waits and no deadline is pending, so nothing can wake "
        "them:\n"
        "  actor 'idle' waits for a message\n"
        "  actor 'quiet' waits for a message\n"
        "  task 'tests.actors.test_deadlock.asks_a_silent_actor' waits for the reply to "
        "message 0 of actor 'quiet'"
    )


async def ticks_then_asks_a_silent_actor() -> None:
    async def silent(inbox: Inbox[Total | str]) -> None:
        inbox.timers.send_every(1, "tick")
        async for envelope in inbox:
            if envelope.message == "tick" and trio.current_time() >= 2:
                inbox.timers.cancel("tick")

    async with actors.open_system() as system:
        quiet = await system.spawn(silent, name="quiet")
        await quiet.ask(Total)


def test_a_deadlock_report_leaves_out_the_idle_timer_task() -> None:
    # Ticks keep the run alive until 2s, and the cancelled ticker's next
    # deadline wakes the timer task once more, at 3s, to find nothing due; then
    # nothing is scheduled, and the timer task waits too, but it is the
    # framework's, not a party to the deadlock.
    with pytest.raises(DeadlockError) as info:
        actors.run(ticks_then_asks_a_silent_actor)
    assert str(info.value) == (
        "deadlock at 3s: every task waits and no deadline is pending, so nothing can wake "
        "them:\n"
        "  actor 'quiet' waits for a message\n"
        "  task 'tests.actors.test_deadlock.ticks_then_asks_a_silent_actor' waits for the "
        "reply to message 0 of actor 'quiet'"
    )


async def waits_for_room_and_for_a_stop() -> None:
    async with actors.open_system() as system:
        full = await system.spawn(counter, name="full", capacity=1)
        await full.tell(Hold(trio.Event()))  # never set
        await full.tell(Add(1))

        async def feeder(inbox: Inbox[int], to: actors.ActorRef[CounterMessage]) -> None:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(to.tell, Add(2), name="helper")
                async for _ in inbox:
                    pass

        await system.spawn(feeder, full, name="feeder")
        await full.wait_stopped()


def test_the_error_says_what_each_actor_and_task_waits_on() -> None:
    with pytest.raises(DeadlockError) as info:
        actors.run(waits_for_room_and_for_a_stop)
    lines = str(info.value).splitlines()[1:]
    assert lines[0] == "  actor 'feeder' waits for a message"
    assert re.fullmatch(
        r"  actor 'full' waits in counter \(.*tests/actors/messages\.py:\d+\)", lines[1]
    )
    assert lines[2:] == [
        "  task 'helper' of actor 'feeder' waits for room in the mailbox of actor 'full'",
        "  task 'tests.actors.test_deadlock.waits_for_room_and_for_a_stop' waits for actor "
        "'full' to stop",
    ]


def test_a_run_that_ends_gives_the_clock_its_own_hook_back() -> None:
    clock = trio.testing.MockClock(autojump_threshold=0)

    async def sleeps() -> int:
        await trio.sleep(10)
        return 7

    assert actors.run(sleeps, clock=clock) == 7
    assert "_autojump" not in vars(clock)
    with pytest.raises(DeadlockError):
        actors.run(asks_a_silent_actor, clock=clock)
    assert "_autojump" not in vars(clock)


def test_a_run_on_the_real_clock_has_its_own_time_and_no_deadlock_watch() -> None:
    async def which_clock() -> trio.abc.Clock:
        async with actors.open_system() as system:
            ref = await system.spawn(counter)
            await ref.tell(Add(2))
            assert await ref.ask(Total, timeout=60) == 2
        return trio.lowlevel.current_clock()

    clock = RealClock()
    assert actors.run(which_clock, clock=clock) is clock
    assert 0 <= clock.deadline_to_sleep_time(clock.current_time() + 1) <= 1


async def test_a_task_waiting_for_a_worker_thread_is_not_part_of_a_deadlock() -> None:
    release = threading.Event()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(
            functools.partial(trio.to_thread.run_sync, release.wait), name="threaded"
        )
        try:
            await trio.testing.wait_all_tasks_blocked()
            waits = dict(_waits())
        finally:
            release.set()
    (threaded,) = [wait for wait in waits if wait.startswith("task 'threaded'")]
    assert waits[threaded] is True
    assert not any(outside for wait, outside in waits.items() if wait != threaded)


async def test_a_task_waiting_for_a_socket_is_not_part_of_a_deadlock() -> None:
    left, right = socket.socketpair()
    with left, right:
        receiving = trio.socket.from_stdlib_socket(left)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(receiving.recv, 1, name="reader")
            try:
                await trio.testing.wait_all_tasks_blocked()
                waits = dict(_waits())
            finally:
                right.send(b"x")
    assert [outside for wait, outside in waits.items() if "reader" in wait] == [True]


async def test_a_reply_handed_on_is_named_by_its_message() -> None:
    kept: list[Reply[int]] = []

    async def keeper(inbox: Inbox[Total]) -> None:
        async for envelope in inbox:
            kept.append(envelope.message.reply)

    async with actors.open_system() as system:
        ref = await system.spawn(keeper, name="keeper")
        async with trio.open_nursery() as nursery:
            nursery.start_soon(ref.ask, Total, name="asker")
            await trio.testing.wait_all_tasks_blocked()
            waits = dict(_waits())
            kept[0].send(1)
    assert "task 'asker' waits for the reply to message 0 of actor 'keeper'" in waits


@attrs.frozen
class Tick:
    pass


async def asks_a_ticking_actor() -> None:
    """A stuck ask that a periodic timer keeps from being a deadlock."""

    async def ticker(inbox: Inbox[Tick | Total]) -> None:
        inbox.timers.send_every(1, Tick())
        async for _ in inbox:
            pass  # ticks, and takes the ask without answering

    async with actors.open_system() as system:
        ref = await system.spawn(ticker, name="ticker")
        await ref.ask(Total)


def test_a_run_kept_going_by_a_timer_ends_at_its_time_limit_naming_what_waits() -> None:
    with pytest.raises(actors.TimeLimitError) as raised:
        actors.run(asks_a_ticking_actor, time_limit=3600)
    assert str(raised.value).splitlines() == [
        "time limit of 3600s reached at 3600s: every task waits and the next deadline, "
        "at 3601s, is past it:",
        "  actor 'ticker' waits for a message",
        f"  task '{__name__}.asks_a_ticking_actor' waits for the reply to message 0 of actor "
        "'ticker'",
    ]


def test_a_time_limit_changes_nothing_for_a_run_that_ends_in_time_or_deadlocks() -> None:
    async def sleeps(seconds: float) -> float:
        await trio.sleep(seconds)
        return trio.current_time()

    assert actors.run(sleeps, 10, time_limit=10) == 10  # a deadline at the limit is in time
    with pytest.raises(actors.TimeLimitError, match=r"^time limit of 10s reached at 0s: "):
        actors.run(sleeps, 10.5, time_limit=10)
    with pytest.raises(DeadlockError, match=r"^deadlock at 3s: "):
        actors.run(asks_a_silent_actor, time_limit=10)


def test_the_time_limit_counts_from_the_start_of_the_run() -> None:
    clock = trio.testing.MockClock(autojump_threshold=0)
    clock.jump(100)
    with pytest.raises(actors.TimeLimitError, match=r"reached at 5s: .* at 6s, is past it"):
        actors.run(asks_a_ticking_actor, clock=clock, time_limit=5)


@pytest.mark.parametrize(
    ("limit", "error", "message"),
    [
        (True, TypeError, "time_limit must be a number of seconds, not bool"),
        ("10", TypeError, "time_limit must be a number of seconds, not str"),
        (-1, ValueError, r"time_limit must be a finite number of seconds >= 0: -1"),
        (math.inf, ValueError, r"time_limit must be a finite number of seconds >= 0: inf"),
        (math.nan, ValueError, r"time_limit must be a finite number of seconds >= 0: nan"),
    ],
)
def test_a_bad_time_limit_is_refused_before_anything_runs(
    limit: object, error: type[Exception], message: str
) -> None:
    ran: list[bool] = []

    async def main() -> None:
        ran.append(True)

    with pytest.raises(error, match=f"^{message}$"):
        actors.run(main, time_limit=limit)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"^time_limit is virtual time: it needs trio.s MockClock"):
        actors.run(main, clock=RealClock(), time_limit=5)
    assert ran == []


def socket_wait_with_timeout() -> tuple[bool, float]:
    """A read of a socket no one writes to, with a 5 s timeout, under
    actors.run on the mock clock: it times out at once, in virtual time."""

    async def main() -> tuple[bool, float]:
        left, right = socket.socketpair()
        with left, right:
            receiving = trio.socket.from_stdlib_socket(left)
            with trio.move_on_after(5) as scope:
                await receiving.recv(1)
        return scope.cancelled_caught, trio.current_time()

    return actors.run(main)


def test_a_mock_clock_run_that_waits_for_a_socket_is_warned_once() -> None:
    with pytest.warns(actors.MockClockWarning) as warned:
        assert socket_wait_with_timeout() == (True, 5.0)
    assert len(warned) == 1
    assert str(warned[0].message) == (
        "actors.run is on trio's MockClock, and virtual time jumps ahead while task "
        f"'{__name__}.socket_wait_with_timeout.<locals>.main' waits in "
        f"socket_wait_with_timeout.<locals>.main ({__file__}:"
        f"{inspect.getsourcelines(socket_wait_with_timeout)[1] + 9}): its timeouts fire at "
        "once, whatever the peer does. Run an application that does I/O with "
        "clock=actors.RealClock()"
    )


def test_trios_entry_queue_is_the_one_io_waiter_of_a_run_that_does_no_io() -> None:
    # If this fails, the MockClockWarning check (actors/_deadlock.py) counts
    # the wrong baseline of trio's own I/O waiters.
    async def main() -> int:
        await trio.testing.wait_all_tasks_blocked()
        return io_waiters(trio.lowlevel.current_statistics())

    assert actors.run(main) == 1


def test_a_run_with_no_io_or_on_the_real_clock_is_not_warned() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert actors.run(trio.sleep, 5) is None

        async def reads_with_timeout() -> bool:
            left, right = socket.socketpair()
            with left, right:
                right.send(b"x")
                receiving = trio.socket.from_stdlib_socket(left)
                with trio.fail_after(5):
                    return await receiving.recv(1) == b"x"

        assert actors.run(reads_with_timeout, clock=RealClock()) is True


def test_the_time_limit_holds_while_a_task_waits_on_a_socket() -> None:
    async def main() -> None:
        left, right = socket.socketpair()
        with left, right:
            receiving = trio.socket.from_stdlib_socket(left)
            async with trio.open_nursery() as nursery:
                nursery.start_soon(receiving.recv, 1)
                for _ in range(10**6):  # kept going by a timer, beside a wait on I/O
                    await trio.sleep(1)

    with (
        pytest.warns(actors.MockClockWarning),
        pytest.raises(actors.TimeLimitError, match=r"^time limit of 10s reached at 10s"),
    ):
        actors.run(main, time_limit=10)
