"""Under random failure sequences: the restart budget is OTP's, and one-for-all
and rest-for-one restart the right children in the right order."""

from __future__ import annotations

import itertools

import trio
import trio.testing
from hypothesis import given, settings
from hypothesis import strategies as st

import actors
from actors import Inbox, OneForAll, OneForOne, RestartBudget, RestartIntensityError, RestForOne


def otp_add_restart(
    restarts: list[float], now: float, period: float, intensity: int
) -> tuple[bool, list[float]]:
    """``supervisor:add_restart/1,3`` of Erlang/OTP, transcribed: ``restarts``
    newest first; returns whether the restart is allowed and the new list."""
    threshold = now - period
    kept = list(itertools.takewhile(lambda then: then >= threshold, restarts))
    new = [now, *kept]
    return len(new) <= intensity, new


gaps = st.lists(st.integers(0, 6), max_size=30)


@settings(max_examples=300, deadline=None)
@given(gaps=gaps, intensity=st.integers(0, 5), period=st.integers(1, 10))
def test_the_budget_allows_exactly_what_otps_add_restart_allows(
    gaps: list[int], intensity: int, period: int
) -> None:
    budget = RestartBudget(intensity, float(period))
    restarts: list[float] = []
    now = 0
    for gap in gaps:
        now += gap
        allowed, restarts = otp_add_restart(restarts, now, period, intensity)
        assert budget.try_restart(float(now)) is allowed
        if not allowed:
            break


async def failing_at(inbox: Inbox[str]) -> None:
    async for envelope in inbox:
        if envelope.message == "fail":
            raise ValueError("fail")


async def fail_at(gaps: list[int], intensity: int, period: int) -> tuple[bool, int]:
    """Fail one child after each gap under OneForOne: whether the supervisor
    escalated, and how many restarts the child had."""
    children: list[actors.ActorRef[str]] = []
    escalated = False
    try:
        async with (
            actors.open_system() as system,
            system.open_supervisor(OneForOne(intensity=intensity, period=period)) as supervisor,
        ):
            children.append(await supervisor.spawn(failing_at, name="child"))
            for gap in gaps:
                await trio.sleep(gap)
                await children[0].tell("fail")
                await trio.testing.wait_all_tasks_blocked()
    except* RestartIntensityError:
        escalated = True
    return escalated, children[0].statistics().restarts


@settings(max_examples=100, deadline=None)
@given(gaps=gaps, intensity=st.integers(0, 4), period=st.integers(1, 10))
def test_a_supervisor_escalates_at_the_failure_otps_rule_refuses(
    gaps: list[int], intensity: int, period: int
) -> None:
    refused: int | None = None
    restarts: list[float] = []
    now = 0
    for index, gap in enumerate(gaps):
        now += gap
        allowed, restarts = otp_add_restart(restarts, now, period, intensity)
        if not allowed:
            refused = index
            break
    expected = (False, len(gaps)) if refused is None else (True, refused)
    assert actors.run(fail_at, gaps, intensity, period) == expected


async def logged(inbox: Inbox[str], index: int, log: list[str]) -> None:
    log.append(f"start {index}")
    try:
        async for envelope in inbox:
            if envelope.message == "fail":
                raise ValueError(index)
    finally:
        log.append(f"end {index}")


async def play_group(
    rest_for_one: bool, size: int, failures: list[int]
) -> tuple[list[list[str]], list[int]]:
    log: list[str] = []
    rounds: list[list[str]] = []
    strategy = RestForOne if rest_for_one else OneForAll
    async with (
        actors.open_system() as system,
        system.open_supervisor(strategy(intensity=len(failures) + 1)) as supervisor,
    ):
        refs = [await supervisor.spawn(logged, i, log, name=f"c{i}") for i in range(size)]
        await trio.testing.wait_all_tasks_blocked()
        for failing in failures:
            log.clear()
            await refs[failing % size].tell("fail")
            await trio.testing.wait_all_tasks_blocked()
            rounds.append(list(log))
        restarts = [ref.statistics().restarts for ref in refs]
    return rounds, restarts


@settings(max_examples=150, deadline=None)
@given(
    rest_for_one=st.booleans(),
    size=st.integers(1, 5),
    failures=st.lists(st.integers(0, 4), max_size=8),
    seed=st.integers(0, 2**32),
)
def test_a_group_restart_ends_the_rest_last_first_and_starts_them_in_order(
    rest_for_one: bool, size: int, failures: list[int], seed: int
) -> None:
    rounds, restarts = actors.run(play_group, rest_for_one, size, failures, seed=seed)
    expected_restarts = [0] * size
    for failing, log in zip(failures, rounds, strict=True):
        failed = failing % size
        group = list(range(failed if rest_for_one else 0, size))
        others = [i for i in reversed(group) if i != failed]
        assert log == [
            f"end {failed}",
            *(f"end {i}" for i in others),
            *(f"start {i}" for i in group),
        ]
        for i in group:
            expected_restarts[i] += 1
    assert restarts == expected_restarts


async def play_overlapping(
    kind: str, size: int, batches: list[list[int]]
) -> tuple[list[str], list[actors.ActorRef[str]]]:
    log: list[str] = []
    intensity = sum(len(batch) for batch in batches) + 1
    strategy: actors.Strategy = (
        OneForOne(intensity=intensity)
        if kind == "one"
        else OneForAll(intensity=intensity)
        if kind == "all"
        else RestForOne(intensity=intensity)
    )
    async with actors.open_system() as system, system.open_supervisor(strategy) as supervisor:
        refs = [await supervisor.spawn(logged, i, log, name=f"c{i}") for i in range(size)]
        for batch in batches:
            for failing in batch:
                refs[failing % size].tell_nowait("fail")
            await trio.testing.wait_all_tasks_blocked()
            assert all(ref.statistics().state is actors.ActorState.RUNNING for ref in refs)
            assert supervisor.children == tuple(refs)
    return log, refs


@settings(max_examples=150, deadline=None)
@given(
    kind=st.sampled_from(["one", "all", "rest"]),
    size=st.integers(1, 4),
    batches=st.lists(st.lists(st.integers(0, 3), max_size=4), max_size=5),
    seed=st.integers(0, 2**32),
)
def test_failures_that_overlap_a_group_restart_leave_every_child_running_once(
    kind: str, size: int, batches: list[list[int]], seed: int
) -> None:
    log, refs = actors.run(play_overlapping, kind, size, batches, seed=seed)
    for index, ref in enumerate(refs):
        mine = [line.split()[0] for line in log if line.endswith(f" {index}")]
        # each behaviour call ends before the next starts; the last ended with the scope
        assert mine == ["start", "end"] * (len(mine) // 2)
        assert len(mine) // 2 == ref.statistics().restarts + 1
