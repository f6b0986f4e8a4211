"""OTP's restart strategies, restart types, terminate_child and back-off."""

from __future__ import annotations

import random

import pytest
import trio
import trio.testing

import actors
from actors import (
    ActorRef,
    ActorStoppedError,
    Backoff,
    EventKind,
    Inbox,
    Killed,
    OneForAll,
    OneForOne,
    Restart,
    RestartIntensityError,
    RestForOne,
    Stopped,
)

from .messages import Add, Boom, CounterMessage, Hold, Total, counter


async def logged(inbox: Inbox[str], name: str, log: list[str]) -> None:
    """Logs its starts and ends; "fail" raises, "return" returns."""
    log.append(f"start {name}")
    try:
        async for envelope in inbox:
            if envelope.message == "fail":
                raise ValueError(name)
            if envelope.message == "return":
                return
    finally:
        log.append(f"end {name}")


async def test_one_for_all_cancels_the_others_last_started_first_then_restarts_all_in_order() -> (
    None
):
    log: list[str] = []
    trace = actors.Trace()
    async with (
        actors.open_system(tracer=trace) as system,
        system.open_supervisor(OneForAll(intensity=1), name="sup") as supervisor,
    ):
        refs = [await supervisor.spawn(logged, name, log, name=name) for name in "abc"]
        await refs[1].tell("fail")
        await trio.testing.wait_all_tasks_blocked()
        assert log[3:] == ["end b", "end c", "end a", "start a", "start b", "start c"]
        assert [ref.statistics().restarts for ref in refs] == [1, 1, 1]
    details = [e.detail for e in trace if e.kind is EventKind.RESTARTED]
    assert (
        details
        == ["restart 1: one-for-all after 'b' failed handling message 0: ValueError('b')"] * 3
    )


async def test_one_for_all_keeps_every_mailbox_and_starts_every_state_afresh() -> None:
    async with (
        actors.open_system() as system,
        system.open_supervisor(OneForAll(intensity=1)) as supervisor,
    ):
        steady = await supervisor.spawn(counter, name="steady")
        flaky = await supervisor.spawn(counter, name="flaky")
        await steady.tell(Add(10))
        assert await steady.ask(Total) == 10
        await steady.tell(Hold(release := trio.Event()))
        await steady.tell(Add(1))  # queued while it holds: kept through the restart
        await flaky.tell(Boom())
        await trio.testing.wait_all_tasks_blocked()
        assert steady.statistics().restarts == 1
        release.set()
        assert await steady.ask(Total) == 1
        assert await flaky.ask(Total) == 0


async def test_rest_for_one_restarts_the_failed_child_and_those_started_after_it() -> None:
    log: list[str] = []
    async with (
        actors.open_system() as system,
        system.open_supervisor(RestForOne(intensity=1)) as supervisor,
    ):
        refs = [await supervisor.spawn(logged, name, log, name=name) for name in "abcd"]
        await refs[1].tell("fail")
        await trio.testing.wait_all_tasks_blocked()
        assert log[4:] == ["end b", "end d", "end c", "start b", "start c", "start d"]
        assert [ref.statistics().restarts for ref in refs] == [0, 1, 1, 1]


async def test_a_temporary_child_in_a_one_for_all_restart_ends_for_good() -> None:
    log: list[str] = []
    async with (
        actors.open_system() as system,
        system.open_supervisor(OneForAll(intensity=1)) as supervisor,
    ):
        lasting = await supervisor.spawn(logged, "a", log, name="a")
        passing = await supervisor.spawn(logged, "t", log, name="t", restart=Restart.TEMPORARY)
        await lasting.tell("fail")
        await trio.testing.wait_all_tasks_blocked()
        assert await passing.wait_stopped() == Killed()
        assert supervisor.children == (lasting,)
        assert log[2:] == ["end a", "end t", "start a"]


async def test_a_permanent_childs_normal_end_under_one_for_all_restarts_every_child() -> None:
    log: list[str] = []
    async with (
        actors.open_system() as system,
        system.open_supervisor(OneForAll(intensity=1)) as supervisor,
    ):
        first = await supervisor.spawn(logged, "a", log, name="a")
        await supervisor.spawn(logged, "b", log, name="b")
        await first.tell("return")
        await trio.testing.wait_all_tasks_blocked()
        assert log[2:] == ["end a", "end b", "start a", "start b"]


ENDS = ["return", "stop", "fail", "kill"]


@pytest.mark.parametrize(
    ("restart", "restarted"),
    [
        (Restart.PERMANENT, {"return", "stop", "fail", "kill"}),
        (Restart.TRANSIENT, {"fail", "kill"}),
        (Restart.TEMPORARY, set()),
    ],
)
@pytest.mark.parametrize("end", ENDS)
async def test_a_child_is_restarted_by_its_restart_type_and_how_it_ended(
    restart: Restart, restarted: set[str], end: str
) -> None:
    log: list[str] = []
    async with (
        actors.open_system() as system,
        system.open_supervisor(OneForOne(intensity=1)) as supervisor,
    ):
        ref = await supervisor.spawn(logged, "c", log, name="c", restart=restart)
        await trio.testing.wait_all_tasks_blocked()
        if end == "stop":
            await ref.stop()
        elif end == "kill":
            await ref.kill()
        else:
            await ref.tell(end)
        await trio.testing.wait_all_tasks_blocked()
        again = end in restarted
        assert (ref.statistics().restarts, log[-1]) == ((1, "start c") if again else (0, "end c"))
        assert (ref.statistics().state is actors.ActorState.RUNNING) is again


async def test_a_stopped_permanent_child_starts_again_on_a_new_mailbox() -> None:
    async with (
        actors.open_system() as system,
        system.open_supervisor(OneForOne(intensity=1)) as supervisor,
    ):
        ref = await supervisor.spawn(counter, name="c")
        await ref.tell(Add(5))
        await ref.stop()
        await ref.tell(Add(1))  # the new mailbox accepts
        assert await ref.ask(Total) == 1
        assert ref.statistics().restarts == 1


async def test_a_stopped_permanent_child_accepts_messages_while_its_restart_waits() -> None:
    async with (
        actors.open_system() as system,
        system.open_supervisor(
            OneForOne(intensity=1, backoff=Backoff(minimum=5, jitter=0))
        ) as supervisor,
    ):
        ref = await supervisor.spawn(counter, name="c")
        await ref.stop()
        await ref.tell(Add(1))  # queued for the restarted behaviour
        assert trio.current_time() == 0
        assert await ref.ask(Total) == 1
        assert trio.current_time() == 5


async def test_a_stop_while_a_child_waits_to_restart_is_drained_by_the_restart() -> None:
    async with (
        actors.open_system() as system,
        system.open_supervisor(
            OneForOne(intensity=2, backoff=Backoff(minimum=5, maximum=5, jitter=0))
        ) as supervisor,
    ):
        ref = await supervisor.spawn(counter, name="c")
        await ref.tell(Boom())
        await trio.testing.wait_all_tasks_blocked()  # waits 5s to restart
        await ref.tell(Add(1))
        await ref.stop()  # the restarted behaviour delivers Add(1), then ends
        assert (trio.current_time(), ref.statistics().delivered) == (5, 2)
        await ref.tell(Add(2))  # a permanent child: restarted again, on a new mailbox
        assert await ref.ask(Total) == 2
        assert (trio.current_time(), ref.statistics().restarts) == (10, 2)


async def test_a_stop_while_a_child_waits_for_its_group_to_restart_is_not_undone() -> None:
    async def slow_to_die(inbox: Inbox[str]) -> None:
        try:
            async for _ in inbox:
                pass
        finally:
            with trio.CancelScope(shield=True):
                await trio.sleep(1)  # the round waits for this end

    async with (
        actors.open_system() as system,
        system.open_supervisor(OneForAll(intensity=5)) as supervisor,
    ):
        a = await supervisor.spawn(logged, "a", [], name="a")
        await supervisor.spawn(slow_to_die, name="b")
        await a.tell("fail")
        await trio.testing.wait_all_tasks_blocked()  # a waits for b to end
        assert a.statistics().state is actors.ActorState.RUNNING
        await a.stop()  # the next call drains the closed mailbox and returns
        assert trio.current_time() == 1
        await trio.testing.wait_all_tasks_blocked()
        # A permanent child: restarted again after the stop, on a new mailbox.
        assert a.statistics().state is actors.ActorState.RUNNING
        await a.tell("x")


async def test_a_killed_child_restarts_on_the_same_mailbox_with_its_queued_messages() -> None:
    async with (
        actors.open_system() as system,
        system.open_supervisor(OneForOne(intensity=1)) as supervisor,
    ):
        ref = await supervisor.spawn(counter, name="c")
        await ref.tell(Hold(trio.Event()))  # never set
        await ref.tell(Add(1))
        await ref.tell(Add(2))
        await trio.testing.wait_all_tasks_blocked()
        await ref.kill()
        assert await ref.ask(Total) == 3


async def test_killing_a_child_waiting_to_restart_does_nothing() -> None:
    async with (
        actors.open_system() as system,
        system.open_supervisor(OneForOne(intensity=1, backoff=Backoff(minimum=5))) as supervisor,
    ):
        ref = await supervisor.spawn(counter, name="c")
        await ref.tell(Boom())
        await trio.testing.wait_all_tasks_blocked()
        await ref.kill()
        assert trio.current_time() == 0
        assert await ref.ask(Total) == 0
        assert ref.statistics().restarts == 1
        assert 4 <= trio.current_time() <= 5  # the back-off, less its jitter


async def test_killing_a_child_under_escalate_ends_it_without_an_error() -> None:
    async with actors.open_system() as system, system.open_supervisor() as supervisor:
        ref = await supervisor.spawn(counter, name="c")
        await ref.kill()
        assert await ref.wait_stopped() == Killed()


async def test_terminate_child_stops_a_permanent_child_for_good() -> None:
    async with (
        actors.open_system() as system,
        system.open_supervisor(OneForOne(intensity=1), name="sup") as supervisor,
    ):
        ref = await supervisor.spawn(counter, name="c")
        await ref.tell(Add(1))
        await supervisor.terminate_child(ref)
        assert await ref.wait_stopped() == Stopped()
        assert (ref.statistics().delivered, ref.statistics().restarts) == (1, 0)
        assert supervisor.children == ()
        await supervisor.terminate_child(ref)  # again: returns at once
        with pytest.raises(ActorStoppedError):
            await ref.tell(Add(1))


async def test_terminate_child_refuses_an_actor_of_another_scope() -> None:
    async with (
        actors.open_system() as system,
        system.open_supervisor(OneForOne(), name="sup") as supervisor,
    ):
        stranger = await system.spawn(counter, name="stranger")
        with pytest.raises(
            ValueError, match=r"^actor 'stranger' is not a child of supervisor 'sup'$"
        ):
            await supervisor.terminate_child(stranger)


@pytest.mark.parametrize(
    ("bad", "shown"),
    [(-1, "-1"), (float("nan"), "nan"), (10**400, "a number too large")],
    ids=["negative", "nan", "too large"],
)
async def test_terminate_child_refuses_a_bad_timeout_and_leaves_the_child_running(
    bad: float, shown: str
) -> None:
    async with (
        actors.open_system() as system,
        system.open_supervisor(OneForOne(intensity=1)) as supervisor,
    ):
        ref = await supervisor.spawn(counter, name="c")
        message = rf"^terminate_child timeout must be None or a number of seconds >= 0, not {shown}"
        with pytest.raises(ValueError, match=message):
            await supervisor.terminate_child(ref, timeout=bad)
        assert ref.statistics().state is actors.ActorState.RUNNING
        await ref.tell(Add(1))
        assert await ref.ask(Total) == 1


async def test_a_child_cannot_terminate_itself_and_runs_on() -> None:
    errors: list[str] = []

    async def resigning(inbox: Inbox[str], supervisor: actors.Supervisor) -> None:
        async for envelope in inbox:
            try:
                await supervisor.terminate_child(inbox.ref)
            except actors.ActorError as error:
                errors.append(f"{envelope.message}: {error}")

    async with (
        actors.open_system() as system,
        system.open_supervisor(OneForOne(intensity=1)) as supervisor,
    ):
        ref = await supervisor.spawn(resigning, supervisor, name="c")
        await ref.tell("resign")
        await ref.tell("again")
        await trio.testing.wait_all_tasks_blocked()
        assert ref.statistics().state is actors.ActorState.RUNNING
    message = (
        "actor 'c' cannot wait for its own termination; "
        "close its inbox, or have another task call terminate_child"
    )
    assert errors == [f"resign: {message}", f"again: {message}"]


async def test_an_unknown_restart_type_is_refused_and_spawns_nothing() -> None:
    async with (
        actors.open_system() as system,
        system.open_supervisor(OneForOne(intensity=1)) as supervisor,
    ):
        message = r"^restart must be one of 'permanent', 'transient', 'temporary', not 'sometimes'$"
        with pytest.raises(ValueError, match=message):
            await supervisor.spawn(counter, name="c", restart="sometimes")  # type: ignore[arg-type]
        assert supervisor.children == ()
        assert system.lookup("c") is None


async def test_a_restart_type_given_by_its_value_is_that_type() -> None:
    async with (
        actors.open_system() as system,
        system.open_supervisor(OneForOne(intensity=1)) as supervisor,
    ):
        ref = await supervisor.spawn(counter, name="c", restart="transient")  # type: ignore[arg-type]
        await ref.stop()  # a transient child is not restarted after a stop
        assert await ref.wait_stopped() == Stopped()


async def test_terminate_child_with_a_timeout_kills_a_child_that_does_not_drain() -> None:
    async with (
        actors.open_system() as system,
        system.open_supervisor(OneForOne(intensity=1)) as supervisor,
    ):
        ref = await supervisor.spawn(counter, name="c")
        await ref.tell(Hold(trio.Event()))  # never set
        await supervisor.terminate_child(ref, timeout=2)
        assert await ref.wait_stopped() == Killed()
        assert (trio.current_time(), ref.statistics().restarts) == (2, 0)


async def test_terminate_child_ends_a_child_waiting_out_its_backoff_at_once() -> None:
    async with (
        actors.open_system() as system,
        system.open_supervisor(OneForOne(intensity=1, backoff=Backoff(minimum=5))) as supervisor,
    ):
        ref = await supervisor.spawn(counter, name="c")
        await ref.tell(Boom())
        await trio.testing.wait_all_tasks_blocked()
        await supervisor.terminate_child(ref)
        assert (await ref.wait_stopped(), trio.current_time()) == (Stopped(), 0)


async def test_a_child_spawned_while_its_scope_drains_is_stopped_for_good_too() -> None:
    async with actors.open_system() as system:
        async with system.open_supervisor(OneForOne(intensity=5)) as supervisor:

            async def dispatcher(inbox: Inbox[int]) -> None:
                async for envelope in inbox:
                    await supervisor.spawn(counter, name=f"worker-{envelope.message}")

            ref = await supervisor.spawn(dispatcher, name="dispatcher")
            await ref.tell(1)
            await trio.testing.wait_all_tasks_blocked()
            await ref.tell(2)  # taken while the scope drains: worker-2 starts then
        assert trio.current_time() == 0  # the block ended, at once
        worker = system.lookup("worker-2")
        assert worker is None
        assert supervisor.children == ()


async def test_a_failure_while_a_scope_drains_is_restarted_to_deliver_the_rest() -> None:
    async with actors.open_system() as system:
        async with system.open_supervisor(OneForOne(intensity=1)) as supervisor:
            ref = await supervisor.spawn(counter, name="c")
            release = trio.Event()
            await ref.tell(Hold(release))
            await ref.tell(Boom())
            await ref.tell(Add(1))
            release.set()
        assert (ref.statistics().delivered, ref.statistics().restarts) == (3, 1)
        assert await ref.wait_stopped() == Stopped()


async def raises_at_once(inbox: Inbox[object]) -> None:
    del inbox
    raise ValueError("at once")


async def restart_times(backoff: Backoff, until: float) -> list[float]:
    trace = actors.Trace()
    start = trio.current_time()
    async with actors.open_system(tracer=trace, seed=5) as system:
        with trio.move_on_after(until):
            async with system.open_supervisor(
                OneForOne(intensity=3, period=5, backoff=backoff)
            ) as supervisor:
                await supervisor.spawn(raises_at_once, name="crasher")
                await trio.sleep_forever()
    return [event.time - start for event in trace if event.kind is EventKind.RESTARTED]


async def test_backoff_spreads_the_restarts_of_a_crash_on_start_child_over_virtual_time() -> None:
    times = await restart_times(Backoff(minimum=1, maximum=8, jitter=0), until=40)
    # delays 1, 2, 4, 8, 8, 8: never more than 2 restarts within 5s, so no escalation
    assert times == [1, 3, 7, 15, 23, 31, 39]


async def test_backoff_jitter_comes_from_the_systems_seeded_random() -> None:
    backoff = Backoff(minimum=2, maximum=8, jitter=0.5)
    times = await restart_times(backoff, until=30)
    model = random.Random(5)  # the system's seed
    expected, now = [], 0.0
    for streak in range(len(times)):
        now += min(8.0, 2.0 * 2.0**streak) * (1 - 0.5 * model.random())
        expected.append(now)
    assert len(times) > 3
    assert times == pytest.approx(expected)
    assert await restart_times(backoff, until=30) == pytest.approx(times)


async def test_backoff_starts_again_from_the_minimum_once_a_child_ran_long_enough() -> None:
    trace = actors.Trace()
    async with (
        actors.open_system(tracer=trace) as system,
        system.open_supervisor(
            OneForOne(intensity=5, backoff=Backoff(minimum=1, maximum=30, jitter=0))
        ) as supervisor,
    ):
        ref = await supervisor.spawn(counter, name="c")
        for pause in (0, 0, 40):
            await trio.sleep(pause)
            await ref.tell(Boom())
            await trio.testing.wait_all_tasks_blocked()
            await ref.ask(Total)
    times = [event.time for event in trace if event.kind is EventKind.RESTARTED]
    assert times == [1, 3, 44]  # 1, then 2, then 1 again after 40s running


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"minimum": 0}, r"^'minimum' must be > 0: 0$"),
        ({"minimum": 2, "maximum": 1}, r"^'maximum' must be >= minimum 2: 1$"),
        ({"multiplier": 0.5}, r"^'multiplier' must be >= 1: 0\.5$"),
        ({"jitter": 1.5}, r"^'jitter' must be <= 1: 1\.5$"),
    ],
)
def test_a_bad_backoff_is_refused(kwargs: dict[str, float], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Backoff(**kwargs)


def test_backoff_is_off_by_default_as_in_otp() -> None:
    assert OneForOne().backoff is None
    assert (OneForOne().intensity, OneForOne().period) == (1, 5.0)


async def test_an_exhausted_budget_under_one_for_all_escalates() -> None:
    with pytest.RaisesGroup(
        pytest.RaisesGroup(
            pytest.RaisesExc(
                RestartIntensityError,
                match=(
                    r"^supervisor 'sup': restarting actor 'b' would be restart 2 "
                    r"within 5s, over the intensity 1$"
                ),
            )
        )
    ):
        async with (
            actors.open_system() as system,
            system.open_supervisor(OneForAll(intensity=1), name="sup") as supervisor,
        ):
            await supervisor.spawn(counter, name="a")
            b: ActorRef[CounterMessage] = await supervisor.spawn(counter, name="b")
            await b.tell(Boom())
            await b.tell(Boom())
            await trio.sleep_forever()
