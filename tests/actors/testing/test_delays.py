"""Held-back tasks (``explore(delays=)``): a task held back stays runnable
and runs after the others' steps, for one batch (``h``) or until no other
task can run (``w``); dfs covers every schedule within the delay budget,
random holds with a chance, pct runs the highest-priority runnable task at
each step; the reports say who was held back. The teller race, which
reordering Trio's batches never finds, is the test that matters."""

from __future__ import annotations

import itertools
from collections.abc import Awaitable, Callable

import pytest
import trio

from actors.testing import (
    ExplorationFailedError,
    Schedule,
    ScheduleError,
    StepLimitError,
    StrategyName,
    explore,
    failure_report,
)

from ..tellers import tellers as run_tellers


def tellers(late_by: int) -> Callable[[], Awaitable[None]]:
    """The bank tellers of ``tests/actors/tellers.py`` (each adds its deposit
    by a read-modify-write across two asks), the second ``late_by``
    checkpoints after the first; a lost deposit fails the run."""

    async def main() -> None:
        final, right = await run_tellers(head_start=late_by)
        assert final == right, "a transfer was lost"

    return main


LATE = 3


@pytest.mark.parametrize("late_by", [LATE, 10, 100])
def test_reordering_batches_never_finds_the_teller_race(late_by: int) -> None:
    exploration = explore(tellers(late_by), strategy="dfs", bound=2, budget=100_000)
    assert exploration.complete
    assert exploration.failure is None


@pytest.mark.parametrize("late_by", [LATE, 10, 100])
@pytest.mark.parametrize("delays", [1, 2])
def test_dfs_finds_the_teller_race_within_a_delay_budget(late_by: int, delays: int) -> None:
    with pytest.raises(ExplorationFailedError) as raised:
        explore(tellers(late_by), strategy="dfs", bound=0, delays=delays, budget=1000)
    failure = raised.value.exploration.failure
    assert failure is not None
    # One teller held back until the other had done everything it could.
    assert failure.schedule.holds == 1
    assert failure.schedule.reorders == 0
    assert "held teller-" in failure.deviations[0]
    assert "back until no other task could run" in failure.deviations[0]


@pytest.mark.parametrize("late_by", [LATE, 10, 100])
def test_pct_finds_the_teller_race_within_100_runs(late_by: int) -> None:
    for seed in range(5):
        exploration = explore(
            tellers(late_by), strategy="pct", budget=100, seed=seed, raise_on_failure=False
        )
        assert exploration.failure is not None, (seed, exploration.summary())
        assert str(exploration.failure.schedule).startswith("2:")


@pytest.mark.parametrize("late_by", [LATE, 10])
def test_random_with_delays_finds_the_teller_race(late_by: int) -> None:
    exploration = explore(
        tellers(late_by), strategy="random", budget=200, delays=2, raise_on_failure=False
    )
    assert exploration.failure is not None, exploration.summary()
    without = explore(tellers(late_by), strategy="random", budget=200, raise_on_failure=False)
    assert without.failure is None, without.summary()


def test_a_failing_schedule_with_holds_replays_with_the_same_steps() -> None:
    found = explore(tellers(10), strategy="dfs", bound=0, delays=1, raise_on_failure=False)
    failure = found.failure
    assert failure is not None
    again = explore(tellers(10), replay=str(failure.schedule), raise_on_failure=False)
    assert again.failure is not None
    assert again.failure.trace_hash == failure.trace_hash
    report = failure_report(found, name="tellers")
    assert f'replay="{failure.schedule}"' in report
    assert "0 reorderings, 1 holds" in report


# What a hold does, on two tasks that record their steps ------------------------


def recorder(seen: list[str], steps: int = 2) -> Callable[[], Awaitable[None]]:
    async def main() -> None:
        seen.clear()

        async def task(name: str) -> None:
            for step in range(steps):
                seen.append(f"{name}{step}")
                await trio.lowlevel.checkpoint()

        async with trio.open_nursery() as nursery:
            nursery.start_soon(task, "a")
            nursery.start_soon(task, "b")

    return main


def test_the_default_schedule_alternates_and_a_hold_lets_the_other_task_run_ahead() -> None:
    seen: list[str] = []
    main = recorder(seen, steps=3)
    explore(main, replay="1:")
    assert seen == ["a0", "b0", "a1", "b1", "a2", "b2"]
    # Choice point 1 is the first batch of a and b (0 is Trio's own).
    # a held back for one batch: b runs its step first, and a stays runnable
    # (one step behind from then on).
    explore(main, replay="1:1=h0")
    assert seen == ["b0", "a0", "b1", "a1", "b2", "a2"]
    # a held back until no other task can run: b runs to its end first.
    explore(main, replay="1:1=w0")
    assert seen == ["b0", "b1", "b2", "a0", "a1", "a2"]
    # b run before a, in the same batch: only that batch changes.
    explore(main, replay="1:1=1")
    assert seen == ["b0", "a0", "a1", "b1", "a2", "b2"]
    # b held back: a runs ahead.
    explore(main, replay="1:1=h1")
    assert seen == ["a0", "a1", "b0", "a2", "b1", "b2"]


def test_every_interleaving_of_two_tasks_is_reached_within_enough_delays() -> None:
    seen: list[str] = []
    main = recorder(seen, steps=2)
    orders: set[tuple[str, ...]] = set()

    async def recorded() -> None:
        await main()
        orders.add(tuple(seen))

    exploration = explore(recorded, strategy="dfs", bound=2, delays=2, budget=100_000)
    assert exploration.complete
    every = {
        order
        for order in itertools.permutations(["a0", "a1", "b0", "b1"])
        if order.index("a0") < order.index("a1") and order.index("b0") < order.index("b1")
    }
    assert orders == every
    # Reordering alone reaches fewer: b can never run both steps first.
    orders.clear()
    explore(recorded, strategy="dfs", bound=2, budget=100_000)
    assert ("b0", "b1", "a0", "a1") not in orders


def test_dfs_with_delays_runs_each_schedule_once_and_the_default_first() -> None:
    seen: list[str] = []
    main = recorder(seen, steps=2)
    schedules: list[str] = []
    first: list[str] = []

    async def recorded() -> None:
        await main()
        if not first:
            first.extend(seen)

    exploration = explore(
        recorded,
        strategy="dfs",
        bound=1,
        delays=1,
        budget=100_000,
        progress=lambda runs, so_far: schedules.append(str(runs)),
    )
    assert exploration.complete
    assert first == ["a0", "b0", "a1", "b1"]
    assert exploration.runs == len(schedules)
    assert exploration.held > 0
    assert "within 1 reorderings and 1 delays" in exploration.summary()


def test_minimising_removes_holds_that_do_not_matter() -> None:
    shrunk = 0
    for seed in range(10):
        found = explore(tellers(10), strategy="random", delays=3, seed=seed, raise_on_failure=False)
        failure = found.failure
        assert failure is not None
        assert len(failure.schedule) <= len(failure.found)
        assert failure.schedule.holds >= 1
        shrunk += len(failure.found) > len(failure.schedule)
    assert shrunk >= 3


# Schedule strings ---------------------------------------------------------------


@pytest.mark.parametrize("text", ["1:3=h0", "1:3=w2,9=1", "1:0=h12,1=w0,5=3", "2:4=1,7=2"])
def test_a_schedule_with_holds_prints_as_it_was_read(text: str) -> None:
    assert str(Schedule.parse(text)) == text


def test_a_schedule_counts_its_holds_and_reorderings() -> None:
    schedule = Schedule.parse("1:0=h1,2=w0,3=2")
    assert (schedule.holds, schedule.reorders, len(schedule)) == (2, 1, 3)


@pytest.mark.parametrize("text", ["2:3=h0", "2:1=w1", "1:3=x0", "1:3=h", "1:3=hw1", "1:3=-1"])
def test_a_hold_that_is_not_one_is_refused(text: str) -> None:
    with pytest.raises(ScheduleError):
        Schedule.parse(text)


def test_a_hold_past_the_options_of_its_choice_point_does_not_fit() -> None:
    seen: list[str] = []
    with pytest.raises(ScheduleError, match="does not fit"):
        explore(recorder(seen), replay="1:0=h7")


@pytest.mark.parametrize("delays", [-1, 1.5, True, "2"])
def test_a_delay_budget_that_is_not_one_is_refused(delays: object) -> None:
    seen: list[str] = []
    with pytest.raises(ValueError, match="delays"):
        explore(recorder(seen), delays=delays)  # type: ignore[arg-type]
    assert seen == []


def test_a_delay_budget_adds_schedules_and_keeps_every_one_without_delays() -> None:
    seen: list[str] = []
    main = recorder(seen, steps=3)
    orders: dict[int, set[tuple[str, ...]]] = {0: set(), 1: set()}
    runs = {}
    for delays in (0, 1):

        async def recorded(delays: int = delays) -> None:
            await main()
            orders[delays].add(tuple(seen))

        runs[delays] = explore(recorded, strategy="dfs", bound=1, delays=delays, budget=10_000)
    assert orders[0] < orders[1]
    assert runs[0].runs < runs[1].runs


# Reduction: state caching --------------------------------------------------------


@pytest.mark.parametrize(("bound", "delays"), [(1, 1), (2, 1), (0, 2), (1, 2)])
def test_the_reduction_reaches_every_final_state_the_full_enumeration_does(
    bound: int, delays: int
) -> None:
    seen: list[str] = []
    main = recorder(seen, steps=3)
    orders: dict[bool, set[tuple[str, ...]]] = {True: set(), False: set()}
    explorations = {}
    for reduction in (True, False):

        async def recorded(reduction: bool = reduction) -> None:
            await main()
            orders[reduction].add(tuple(seen))

        explorations[reduction] = explore(
            recorded,
            strategy="dfs",
            bound=bound,
            delays=delays,
            budget=100_000,
            reduction=reduction,
        )
    reduced, full = explorations[True], explorations[False]
    assert reduced.complete
    assert full.complete
    assert orders[True] == orders[False]
    assert reduced.interleavings == full.interleavings
    assert reduced.runs <= full.runs
    if bound + delays >= 2:
        assert reduced.merged > 0
        assert reduced.runs < full.runs


@pytest.mark.parametrize("late_by", [LATE, 10])
def test_with_and_without_the_reduction_dfs_finds_the_teller_race_at_the_same_run(
    late_by: int,
) -> None:
    found = [
        explore(
            tellers(late_by),
            strategy="dfs",
            bound=1,
            delays=2,
            reduction=reduction,
            raise_on_failure=False,
        )
        for reduction in (True, False)
    ]
    assert found[0].failure is not None
    assert found[1].failure is not None
    assert found[0].failure.schedule == found[1].failure.schedule
    assert found[0].runs <= found[1].runs


# Latency ------------------------------------------------------------------------


def test_with_latency_the_default_schedule_finds_the_teller_race_and_the_replay_keeps_it() -> None:
    main = tellers(10)
    # Without latency no seed loses a transfer in the default schedule.
    assert all(explore(main, replay="1:", seed=seed).failure is None for seed in range(10))
    found = explore(
        main, strategy="dfs", bound=0, latency=0.001, budget=1, seed=1, raise_on_failure=False
    )
    failures = [
        explore(main, replay="1:", seed=seed, latency=0.001, raise_on_failure=False).failure
        for seed in range(10)
    ]
    assert sum(failure is not None for failure in failures) >= 5
    failing_seed = next(seed for seed, failure in enumerate(failures) if failure is not None)
    with pytest.raises(ExplorationFailedError, match=r"latency=0\.001\)") as raised:
        explore(main, strategy="dfs", bound=0, seed=failing_seed, latency=0.001)
    failure = raised.value.exploration.failure
    assert failure is not None
    again = explore(
        main,
        replay=str(failure.schedule),
        seed=failing_seed,
        latency=0.001,
        raise_on_failure=False,
    )
    assert again.failure is not None
    assert again.failure.trace_hash == failure.trace_hash
    assert found.latency == 0.001


@pytest.mark.parametrize(
    ("latency", "error"),
    [
        (-1.0, ValueError),
        (float("nan"), ValueError),
        ((2.0, 1.0), ValueError),
        (True, TypeError),
        ("0.1", TypeError),
        ((1.0,), TypeError),
    ],
)
def test_a_latency_that_is_not_one_is_refused_before_anything_runs(
    latency: object, error: type[Exception]
) -> None:
    seen: list[str] = []
    with pytest.raises(error):
        explore(recorder(seen), latency=latency)  # type: ignore[arg-type]
    assert seen == []


# Programs that spin, and programs that will not stop ------------------------------


async def spin_wait() -> None:
    # Correct under Trio's scheduler: the setter runs in the spinner's next
    # batch. Under priorities alone the spinner could run for ever.
    state = {"set": False}

    async def setter() -> None:
        await trio.lowlevel.checkpoint()
        state["set"] = True

    async def spinner() -> None:
        while not state["set"]:
            await trio.lowlevel.checkpoint()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(setter)
        nursery.start_soon(spinner)


def test_pct_is_fair_enough_that_a_spin_wait_is_no_livelock() -> None:
    for seed in range(10):
        explore(spin_wait, strategy="pct", budget=20, seed=seed, max_steps=5000)


@pytest.mark.parametrize("strategy", ["dfs", "random"])
def test_a_task_held_until_no_other_can_run_does_not_wait_for_ever_behind_a_spinner(
    strategy: StrategyName,
) -> None:
    exploration = explore(spin_wait, strategy=strategy, delays=1, budget=200, max_steps=5000)
    assert exploration.held > 0


def test_a_run_past_the_step_limit_is_reported_without_minimising() -> None:
    async def livelock() -> None:
        while True:
            await trio.lowlevel.checkpoint()

    exploration = explore(livelock, strategy="pct", max_steps=300, raise_on_failure=False)
    failure = exploration.failure
    assert failure is not None
    assert failure.minimise_runs == 0


def test_a_run_that_swallows_cancelled_is_broken_off_past_the_step_limit() -> None:
    async def stubborn() -> None:
        while True:
            try:
                await trio.lowlevel.checkpoint()
            except BaseException:  # the bug under test
                continue

    exploration = explore(
        stubborn, strategy="random", budget=1, max_steps=500, raise_on_failure=False
    )
    failure = exploration.failure
    assert failure is not None
    assert "swallows trio.Cancelled" in str(failure.error)


def test_a_hold_index_that_would_read_as_another_kind_is_refused() -> None:
    with pytest.raises(ScheduleError, match="at most h"):
        Schedule.parse(f"1:1=h{(1 << 40) - 1}")
    assert str(Schedule.parse(f"1:1=h{(1 << 40) - 2}")) == f"1:1=h{(1 << 40) - 2}"


def test_pct_refuses_a_delay_budget_it_would_not_use() -> None:
    seen: list[str] = []
    with pytest.raises(ValueError, match="pct holds no task back"):
        explore(recorder(seen), strategy="pct", delays=1)
    assert seen == []


def test_a_merge_is_counted_once_however_many_levels_walk_it() -> None:
    seen: list[str] = []
    exploration = explore(
        recorder(seen, steps=4), strategy="dfs", bound=2, delays=2, budget=100_000
    )
    assert 0 < exploration.merged < exploration.runs


def test_one_wide_batch_past_the_step_limit_is_not_taken_for_a_swallowed_cancel() -> None:
    async def wide() -> None:
        async def step() -> None:
            await trio.lowlevel.checkpoint()

        async with trio.open_nursery() as nursery:
            for _ in range(3000):  # ready all at once: one batch past max_steps
                nursery.start_soon(step)
        await trio.sleep_forever()  # so the run ends only at the step limit

    exploration = explore(wide, strategy="random", budget=1, max_steps=1000, raise_on_failure=False)
    failure = exploration.failure
    assert failure is not None
    assert isinstance(failure.error, StepLimitError)
    assert "swallows" not in str(failure.error)
