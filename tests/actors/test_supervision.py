from __future__ import annotations

import pytest
import trio
import trio.testing

import actors
from actors import EventKind, Inbox, OneForOne, RestartBudget, RestartIntensityError

from .messages import Add, Boom, Total, counter


def test_a_budget_allows_intensity_restarts_within_a_period() -> None:
    budget = RestartBudget(intensity=2, period=10.0)
    assert budget.try_restart(0.0)
    assert budget.try_restart(1.0)
    assert not budget.try_restart(2.0)


def test_restarts_older_than_the_period_no_longer_count() -> None:
    budget = RestartBudget(intensity=1, period=5.0)
    assert budget.try_restart(0.0)
    assert not budget.try_restart(5.0)  # the one at 0 is exactly period old: still counts
    budget = RestartBudget(intensity=1, period=5.0)
    assert budget.try_restart(0.0)
    assert budget.try_restart(5.5)
    assert budget.recent == 1


def test_intensity_zero_never_restarts() -> None:
    assert not RestartBudget(intensity=0, period=1.0).try_restart(0.0)


@pytest.mark.parametrize(
    ("intensity", "period"), [(-1, 5.0), (1, 0.0), (1, -2.0)], ids=["intensity", "zero", "neg"]
)
def test_a_bad_strategy_is_refused(intensity: int, period: float) -> None:
    with pytest.raises(ValueError, match=r"^'(intensity|period)' must be"):
        OneForOne(intensity=intensity, period=period)


@pytest.mark.parametrize("strategy", ["one-for-one", OneForOne], ids=["a string", "the class"])
async def test_a_supervisor_refuses_what_is_not_a_strategy(strategy: object) -> None:
    async with actors.open_system() as system:
        message = (
            r"^a supervisor's strategy must be an instance of Escalate, OneForOne, OneForAll "
            r"or RestForOne, not "
        )
        with pytest.raises(TypeError, match=message):
            system.open_supervisor(strategy)  # type: ignore[arg-type]
        with pytest.raises(TypeError, match=message):
            await system.pool(counter, size=1, strategy=strategy)  # type: ignore[arg-type]
        assert list(system._live) == []


async def test_one_for_one_restarts_only_the_failed_actor_on_the_same_mailbox() -> None:
    trace = actors.Trace()
    async with (
        actors.open_system(tracer=trace) as system,
        system.open_supervisor(OneForOne(intensity=3, period=5), name="sup") as supervisor,
    ):
        steady = await supervisor.spawn(counter, name="steady")
        flaky = await supervisor.spawn(counter, name="flaky")
        await steady.tell(Add(10))
        await flaky.tell(Add(1))
        await flaky.tell(Boom())
        await flaky.tell(Add(2))  # accepted before the restart: kept in the mailbox
        assert await flaky.ask(Total) == 2  # state is fresh, mailbox is not
        assert await steady.ask(Total) == 10
        assert flaky.statistics().restarts == 1
    flaky_kinds = [event.kind for event in trace.for_actor("flaky")]
    assert flaky_kinds.count(EventKind.RESTARTED) == 1
    assert EventKind.FAILED in flaky_kinds
    assert EventKind.RESTARTED not in [event.kind for event in trace.for_actor("steady")]


async def test_an_exhausted_budget_escalates_and_cancels_the_siblings() -> None:
    trace = actors.Trace()
    with pytest.RaisesGroup(
        pytest.RaisesGroup(
            pytest.RaisesExc(
                RestartIntensityError,
                match=(
                    r"^supervisor 'sup': restarting actor 'flaky' would be restart 3 "
                    r"within 5s, over the intensity 2$"
                ),
            )
        )
    ) as info:
        async with (
            actors.open_system(tracer=trace) as system,
            system.open_supervisor(OneForOne(intensity=2, period=5), name="sup") as supervisor,
        ):
            await supervisor.spawn(counter, name="steady")
            flaky = await supervisor.spawn(counter, name="flaky")
            for _ in range(3):
                await flaky.tell(Boom())
            await trio.sleep_forever()
    (inner,) = info.value.exceptions
    assert isinstance(inner, BaseExceptionGroup)
    (escalation,) = inner.exceptions
    assert isinstance(escalation.__cause__, ValueError)
    assert [event.kind for event in trace.for_actor("sup")] == [EventKind.ESCALATED]
    assert trace.for_actor("steady")[-1].kind is EventKind.STOPPED


async def test_failures_spread_out_in_time_keep_restarting() -> None:
    async with (
        actors.open_system() as system,
        system.open_supervisor(OneForOne(intensity=1, period=5)) as supervisor,
    ):
        flaky = await supervisor.spawn(counter)
        for _ in range(4):
            await flaky.tell(Boom())
            await trio.testing.wait_all_tasks_blocked()
            await trio.sleep(6)
        assert flaky.statistics().restarts == 4


async def test_an_escalating_subtree_is_restarted_by_its_parent() -> None:
    trace = actors.Trace()
    started = 0

    async def subtree(inbox: Inbox[object], system: actors.ActorSystem) -> None:
        nonlocal started
        started += 1
        async with system.open_supervisor(OneForOne(intensity=0), name=f"inner-{started}") as sup:
            worker = await sup.spawn(counter, name=f"worker-{started}")
            async for envelope in inbox:
                await worker.tell(Boom())
                del envelope

    async with (
        actors.open_system(tracer=trace) as system,
        system.open_supervisor(OneForOne(intensity=1, period=5), name="root") as root,
    ):
        tree = await root.spawn(subtree, system, name="tree")
        await tree.tell("crash the worker")
        await trio.testing.wait_all_tasks_blocked()
        assert tree.statistics().restarts == 1
        assert started == 2
    assert [event.kind for event in trace.for_actor("inner-1")] == [EventKind.ESCALATED]


async def test_leaving_a_supervisor_stops_its_children_gracefully() -> None:
    trace = actors.Trace()
    async with actors.open_system(tracer=trace) as system:
        async with system.open_supervisor(name="scope") as scope:
            ref = await scope.spawn(counter, name="child")
            ref.tell_nowait(Add(1))
        assert ref.statistics().state is actors.ActorState.STOPPED
        assert ref.statistics().delivered == 1


async def test_a_supervisor_forgets_children_once_they_stop() -> None:
    async with actors.open_system() as system, system.open_supervisor() as scope:
        for _ in range(3):
            ref = await scope.spawn(counter)
            await ref.stop()
        kept = await scope.spawn(counter)
        assert scope.children == (kept,)


async def test_a_failure_under_escalate_names_the_actor_and_the_message() -> None:
    with pytest.RaisesGroup(pytest.RaisesGroup(ValueError)) as info:
        async with actors.open_system() as system, system.open_supervisor() as scope:
            assert scope.strategy == actors.Escalate()
            ref = await scope.spawn(counter, name="named")
            await ref.tell(Add(1))
            await ref.tell(Boom())
            await trio.sleep_forever()
    (inner,) = info.value.exceptions
    assert isinstance(inner, BaseExceptionGroup)
    assert inner.exceptions[0].__notes__ == ["raised by actor 'named' while handling message 1"]


async def raises_at_once(inbox: Inbox[object]) -> None:
    del inbox
    raise ValueError("at once")


async def test_a_restart_storm_yields_so_an_outer_deadline_fires(
    autojump_clock: trio.testing.MockClock,
) -> None:
    # Every restart checkpoints, so the test's task runs during the storm. The
    # storm keeps the run queue busy, so the autojump clock never jumps by
    # itself: the test moves it past the deadline.
    assert trio.lowlevel.current_clock() is autojump_clock
    async with actors.open_system() as system:
        with trio.move_on_after(1) as deadline:
            async with system.open_supervisor(OneForOne(intensity=10_000, period=5)) as sup:
                storm = await sup.spawn(raises_at_once, name="storm")
                autojump_clock.jump(1)
                await trio.sleep_forever()
        assert deadline.cancelled_caught
        assert 0 < storm.statistics().restarts < 10_000
        assert storm.statistics().state is actors.ActorState.STOPPED


async def test_a_restart_storm_still_escalates_once_its_budget_is_spent() -> None:
    with pytest.RaisesGroup(
        pytest.RaisesGroup(
            pytest.RaisesExc(
                RestartIntensityError,
                match=(
                    r"^supervisor 'sup': restarting actor 'storm' would be restart 4 "
                    r"within 5s, over the intensity 3$"
                ),
            )
        )
    ):
        async with (
            actors.open_system() as system,
            system.open_supervisor(OneForOne(intensity=3, period=5), name="sup") as supervisor,
        ):
            storm = await supervisor.spawn(raises_at_once, name="storm")
            await trio.sleep_forever()
    assert storm.statistics().restarts == 3
    assert trio.current_time() == 0
