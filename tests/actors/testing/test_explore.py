"""Schedule exploration (``actors.testing.explore``): the hook into Trio's
scheduler, the strategies, replay, minimising, bad input, and two textbook
ordering bugs a single seeded run misses and the explorer finds on purpose."""

from __future__ import annotations

import functools
import re
import types
from collections.abc import Callable
from typing import Any

import attrs
import pytest
import trio
import trio._core._run as trio_run

import actors
from actors import ActorRef, DeadlockError, Inbox, Reply
from actors.testing import (
    ExplorationFailedError,
    NondeterminismError,
    Schedule,
    ScheduleError,
    StepLimitError,
    StrategyName,
    explore,
)

# Two tasks started together, each recording itself: the order they ran.


def two_tasks(seen: list[str]) -> types.FunctionType:
    async def main() -> None:
        async def record(name: str) -> None:
            seen.append(name)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(record, "first")
            nursery.start_soon(record, "second")

    return main  # type: ignore[return-value]


def test_the_default_schedule_runs_a_batch_in_creation_order() -> None:
    seen: list[str] = []
    exploration = explore(two_tasks(seen), replay="1:")
    assert seen == ["first", "second"]
    assert exploration.runs == 1
    assert exploration.failure is None


def test_a_choice_puts_another_task_of_the_batch_first() -> None:
    # Pins the hook into trio's run loop (trio._core._run._r.shuffle, a batch
    # sorted by creation order and run from its end): a trio upgrade that
    # moves it fails here.
    orders: set[tuple[str, ...]] = set()
    runs: list[list[str]] = []

    async def main() -> None:
        seen: list[str] = []
        runs.append(seen)
        await two_tasks(seen)()

    exploration = explore(main, strategy="dfs", bound=1, budget=100)
    orders = {tuple(seen) for seen in runs}
    assert orders == {("first", "second"), ("second", "first")}
    assert exploration.complete
    assert exploration.runs == exploration.interleavings == len(runs)


def test_a_run_in_which_trio_never_asked_for_an_order_is_an_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import actors.testing._schedule as schedule_module

    # As if trio no longer called _r.shuffle: the chooser is installed where
    # trio never looks.
    monkeypatch.setattr(schedule_module, "_trio_run", types.SimpleNamespace(_r=None))
    with pytest.raises(RuntimeError, match=r"never called _r\.shuffle"):
        explore(two_tasks([]), budget=1)


# Strategies and their counts.


def checkpointing(tasks: int, steps: int) -> types.FunctionType:
    async def main() -> None:
        async def work() -> None:
            for _ in range(steps):
                await trio.lowlevel.checkpoint()

        async with trio.open_nursery() as nursery:
            for _ in range(tasks):
                nursery.start_soon(work)

    return main  # type: ignore[return-value]


def test_dfs_runs_every_schedule_within_the_bound_once() -> None:
    main = checkpointing(tasks=3, steps=2)
    zero = explore(main, strategy="dfs", bound=0, budget=1000)
    one = explore(main, strategy="dfs", bound=1, budget=1000)
    two = explore(main, strategy="dfs", bound=2, budget=10_000)
    assert (zero.runs, zero.complete) == (1, True)
    # Bound 1: the default run, and one run per other option of each of its
    # choice points.
    assert one.complete
    assert one.runs == 1 + sum(options - 1 for options in _options_of_the_default_run(main))
    assert two.complete
    assert two.runs > one.runs
    # Each schedule once: every run a distinct interleaving.
    for exploration in (zero, one, two):
        assert exploration.interleavings == exploration.runs


def _options_of_the_default_run(main: types.FunctionType) -> list[int]:
    from actors.testing._schedule import _following, _run_once

    run = _run_once(main, _following(Schedule(), strict=True), seed=0, max_steps=10**6)
    return list(run.options)


def test_dfs_stops_at_the_budget_and_does_not_say_complete() -> None:
    exploration = explore(checkpointing(3, 3), strategy="dfs", bound=3, budget=5)
    assert (exploration.runs, exploration.complete) == (5, False)


@pytest.mark.parametrize("strategy", ["random", "pct"])
def test_random_and_pct_are_deterministic_for_a_seed(strategy: str) -> None:
    def summary(seed: int) -> str:
        main = checkpointing(3, 3)
        return explore(main, strategy=strategy, budget=30, seed=seed).summary()  # type: ignore[arg-type]

    assert summary(4) == summary(4)
    # And they do explore: more than one interleaving in 30 runs.
    assert "30 runs, 1 distinct" not in summary(4)


# Failures: what ends a run, minimising, replaying.


def test_a_deadlock_is_a_failure() -> None:
    async def main() -> None:
        await trio.Event().wait()

    exploration = explore(main, budget=3, raise_on_failure=False)
    assert exploration.failure is not None
    assert isinstance(exploration.failure.error, DeadlockError)
    assert exploration.runs == 1


def test_a_run_longer_than_max_steps_is_a_failure() -> None:
    async def main() -> None:
        while True:
            await trio.lowlevel.checkpoint()

    exploration = explore(main, budget=3, max_steps=500, raise_on_failure=False)
    assert exploration.failure is not None
    assert isinstance(exploration.failure.error, StepLimitError)


def test_a_failure_raises_with_the_line_that_replays_it() -> None:
    seen: list[str] = []

    async def main() -> None:
        seen.clear()
        await two_tasks(seen)()
        assert seen == ["first", "second"], "second ran first"

    with pytest.raises(ExplorationFailedError) as raised:
        explore(main, strategy="dfs", bound=1)
    message = str(raised.value)
    failure = raised.value.exploration.failure
    assert failure is not None
    assert f'replay: explore(main, seed=0, replay="{failure.schedule}")' in message
    assert "second ran first" in message
    # The replay reproduces it exactly: the same error, the same steps.
    replayed = explore(main, replay=str(failure.schedule), raise_on_failure=False)
    assert replayed.failure is not None
    assert str(replayed.failure.error) == str(failure.error)
    assert replayed.failure.trace_hash == failure.trace_hash


def test_a_failing_schedule_is_minimised_to_the_choices_that_matter() -> None:
    # Eight tasks of four steps; it fails when the last-created task ran
    # first in the first batch: one choice matters, whatever random picked.
    async def main() -> None:
        order: list[int] = []

        async def work(index: int) -> None:
            order.append(index)
            for _ in range(4):
                await trio.lowlevel.checkpoint()

        async with trio.open_nursery() as nursery:
            for index in range(8):
                nursery.start_soon(work, index)
        assert order[0] != 7

    exploration = explore(main, strategy="random", budget=200, seed=3, raise_on_failure=False)
    failure = exploration.failure
    assert failure is not None
    assert len(failure.found) > 1
    assert len(failure.schedule) == 1
    assert failure.minimise_runs > 0
    again = explore(main, replay=str(failure.schedule), raise_on_failure=False)
    assert again.failure is not None


# Bad input: a named error, nothing run.


@pytest.mark.parametrize(
    "text",
    [
        "",
        "1",
        "3:",
        "2:1=h0",
        "1:1=h",
        "1:1=hh1",
        "1:1=H1",
        "1:1=h-1",
        "1:x=1",
        "1:3=0",
        "1:5=1,2=1",
        "1:1=1,1=2",
        "1:-1=1",
        "1:1=1,",
        "1: 1=1",
        "1:\u0661=\u0661",
        "1:\uff11=1",
        "1:1=" + "9" * 19,
        "1:" + "9" * 5000 + "=1",
        "1:" + ",".join(f"{point}=1" for point in range(3000)) + ",0=1",
        b"1:",
        ["1:"],
        12,
    ],
    ids=repr,
)
def test_a_string_that_is_not_a_schedule_is_refused(text: str) -> None:
    ran: list[int] = []

    async def main() -> None:
        ran.append(1)

    with pytest.raises(ScheduleError):
        explore(main, replay=text)
    assert ran == []


def test_thousands_of_pairs_and_leading_zeros_parse_and_print_canonically() -> None:
    pairs = ",".join(f"{point}=1" for point in range(3000))
    assert str(Schedule.parse(f"1:{pairs}")) == f"1:{pairs}"
    assert str(Schedule.parse("1:007=02")) == "1:7=2"


def test_a_schedule_that_does_not_fit_the_program_is_refused() -> None:
    with pytest.raises(ScheduleError, match="has 2 options; the schedule picks 5"):
        explore(two_tasks([]), replay=f"1:{_first_choice_point()}=5")


def _first_choice_point() -> int:
    # The index of the choice point where the two tasks are ordered.
    for point in range(50):
        seen: list[str] = []
        explore(two_tasks(seen), replay=f"1:{point}=1", raise_on_failure=False)
        if seen == ["second", "first"]:
            return point
    raise AssertionError("no choice point orders the two tasks")


@pytest.mark.parametrize(
    ("argument", "value"),
    [
        ("strategy", "bfs"),
        ("budget", 0),
        ("budget", True),
        ("budget", 1.5),
        ("bound", -1),
        ("depth", 0),
        ("max_steps", 0),
        ("seed", "7"),
        ("seed", 1.5),
        ("seed", None),
        ("progress", 5),
    ],
)
def test_bad_arguments_are_refused_before_anything_runs(argument: str, value: object) -> None:
    ran: list[int] = []

    async def main() -> None:
        ran.append(1)

    with pytest.raises((ValueError, TypeError), match=argument):
        explore(main, **{argument: value})  # type: ignore[arg-type]
    assert ran == []


def test_schedules_print_and_parse_back() -> None:
    schedule = Schedule(((3, 1), (40, 2)))
    assert str(schedule) == "1:3=1,40=2"
    assert Schedule.parse(" 1:3=1,40=2\n") == schedule
    assert Schedule.parse("1:") == Schedule() == Schedule.from_picks([0, 0, 0])


# Two textbook ordering bugs in small actor programs.


@attrs.frozen
class Get:
    reply: Reply[int]


@attrs.frozen
class Put:
    value: int


async def store(inbox: Inbox[Get | Put]) -> None:
    value = 0
    async for envelope in inbox:
        match envelope.message:
            case Get(reply):
                reply.send(value)
            case Put(new):
                value = new


async def lost_update() -> None:
    """Two clients read, add one and write back across an await: one update
    is lost when both read before either wrote."""
    async with actors.open_system() as system:
        ref = await system.spawn(store, name="store")

        async def increment(delay: int) -> None:
            for _ in range(delay):
                await trio.lowlevel.checkpoint()
            value = await ref.ask(Get)
            await ref.tell(Put(value + 1))

        async with trio.open_nursery() as nursery:
            nursery.start_soon(increment, 0)
            nursery.start_soon(increment, 2)
        assert await ref.ask(Get) == 2, "an update was lost"


@attrs.frozen
class Count:
    reply: Reply[int]


@attrs.frozen
class Total:
    reply: Reply[int]


def account(peers: dict[str, ActorRef[Count | Total]], peer: str) -> types.FunctionType:
    async def behaviour(inbox: Inbox[Count | Total]) -> None:
        async for envelope in inbox:
            match envelope.message:
                case Count(reply):
                    reply.send(1)
                case Total(reply):
                    # Asks its peer while handling: a cycle if the peer does too.
                    reply.send(1 + await peers[peer].ask(Count))

    return behaviour  # type: ignore[return-value]


async def mutual_asks() -> None:
    """Two actors that each ask the other while handling a message deadlock
    when both handle one at once."""
    async with actors.open_system() as system:
        peers: dict[str, ActorRef[Count | Total]] = {}
        peers["a"] = await system.spawn(account(peers, "b"), name="a")
        peers["b"] = await system.spawn(account(peers, "a"), name="b")

        async def total(name: str, delay: int) -> None:
            for _ in range(delay):
                await trio.lowlevel.checkpoint()
            assert await peers[name].ask(Total) == 2

        async with trio.open_nursery() as nursery:
            nursery.start_soon(total, "a", 0)
            nursery.start_soon(total, "b", 1)


# The seeds a single run of each passes with (about half the seeds do).
PASSING_SEED = {lost_update: 1, mutual_asks: 2}


@pytest.mark.parametrize("main", [lost_update, mutual_asks], ids=lambda f: f.__name__)
@pytest.mark.parametrize(("strategy", "budget"), [("pct", 10), ("random", 10), ("dfs", 10)])
def test_a_textbook_bug_a_seeded_run_misses_is_found_on_purpose(
    main: types.FunctionType, strategy: StrategyName, budget: int
) -> None:
    seed = PASSING_SEED[main]
    actors.run(main, seed=seed)  # one seeded run: passes
    exploration = explore(
        main,
        strategy=strategy,
        budget=budget,
        seed=seed,
        raise_on_failure=False,
    )
    failure = exploration.failure
    assert failure is not None, exploration.summary()
    assert exploration.runs <= budget
    if main is lost_update:
        assert "an update was lost" in repr(failure.error)
    else:
        assert isinstance(failure.error, DeadlockError)
        assert "ask" in str(failure.error)
    # Replayed, it fails the same way.
    replayed = explore(main, seed=seed, replay=str(failure.schedule), raise_on_failure=False)
    assert replayed.failure is not None
    assert replayed.failure.trace_hash == failure.trace_hash


def test_a_schedule_naming_a_choice_point_the_run_never_reached_is_refused() -> None:
    with pytest.raises(ScheduleError, match="names choice point 9999; the run had"):
        explore(two_tasks([]), replay="1:9999=1")


async def test_inside_a_trio_run_explore_refuses_to_start() -> None:
    ran: list[int] = []

    async def main() -> None:
        ran.append(1)

    with pytest.raises(RuntimeError, match="not inside a Trio run"):
        explore(main)
    assert ran == []


def test_main_must_be_callable() -> None:
    with pytest.raises(TypeError, match="main must be an async function"):
        explore(42)  # type: ignore[arg-type]


@pytest.mark.parametrize(("steps", "depth"), [(2, 3), (5, 3), (40, 10), (3, 10**9)])
def test_pct_draws_depth_minus_one_distinct_change_points_or_one_per_step(
    steps: int, depth: int
) -> None:
    import random

    from actors.testing._strategies import _Pct

    for seed in range(30):
        pct = _Pct(seed, depth)
        pct._steps = steps
        changes = pct.change_points(random.Random(seed))
        points = [step for step, _ in changes]
        assert len(set(points)) == len(points) == min(depth - 1, steps)
        assert all(1 <= step <= steps for step in points)
        assert sorted({lowered for _, lowered in changes}) == sorted(
            depth - 1 - i for i in range(len(points))
        )


def test_pct_with_a_huge_depth_runs() -> None:
    exploration = explore(checkpointing(2, 2), strategy="pct", depth=10**9, budget=3)
    assert exploration.runs == 3


def test_a_replay_never_says_complete() -> None:
    exploration = explore(two_tasks([]), strategy="dfs", replay="1:")
    assert not exploration.complete
    assert "complete" not in exploration.summary()


def test_dfs_whose_budget_ends_on_the_last_schedule_within_the_bound_is_complete() -> None:
    main = checkpointing(tasks=2, steps=1)
    full = explore(main, strategy="dfs", bound=5, budget=10_000)
    assert full.complete
    exact = explore(main, strategy="dfs", bound=5, budget=full.runs)
    short = explore(main, strategy="dfs", bound=5, budget=full.runs - 1)
    assert (exact.runs, exact.complete) == (full.runs, True)
    assert (short.runs, short.complete) == (full.runs - 1, False)


def test_a_failure_on_the_last_schedule_is_not_complete() -> None:
    runs: list[list[str]] = []

    async def main() -> None:
        seen: list[str] = []
        runs.append(seen)
        await two_tasks(seen)()
        assert seen == ["first", "second"], "second ran first"

    exploration = explore(main, strategy="dfs", bound=1, minimise=False, raise_on_failure=False)
    assert exploration.failure is not None
    assert not exploration.complete


def test_a_cancelled_that_escapes_main_is_a_failure_of_the_run() -> None:
    async def main() -> None:
        # No scope of the run's was cancelled: it escapes trio.run.
        raise trio.Cancelled._create()

    exploration = explore(main, budget=3, raise_on_failure=False)
    assert exploration.failure is not None
    assert isinstance(exploration.failure.error, trio.Cancelled)
    _assert_trio_is_restored()


@pytest.mark.parametrize(
    "main",
    [lambda: None, lambda: 5, lambda: iter(()), types.SimpleNamespace],
    ids=["none", "int", "iterator", "class"],
)
def test_a_main_that_returns_no_awaitable_is_a_type_error_not_a_failure(
    main: types.FunctionType,
) -> None:
    with pytest.raises(TypeError, match=r"^main must be an async function of no arguments; "):
        explore(main, budget=5)
    _assert_trio_is_restored()


def test_a_partial_or_a_lambda_of_an_async_function_is_a_main() -> None:

    seen: list[str] = []
    assert explore(functools.partial(two_tasks(seen)), replay="1:").failure is None
    assert explore(lambda: two_tasks(seen)(), replay="1:").failure is None
    assert seen == ["first", "second"] * 2


@pytest.mark.parametrize("error", [KeyboardInterrupt, SystemExit])
def test_an_interrupt_or_exit_in_main_ends_the_exploration_and_restores_trio(
    error: type[BaseException],
) -> None:
    runs: list[int] = []

    async def main() -> None:
        runs.append(1)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(trio.lowlevel.checkpoint)
        raise error

    with pytest.raises(error):
        explore(main, budget=5)
    assert runs == [1]
    _assert_trio_is_restored()


def test_trio_is_restored_after_a_run_past_the_step_limit() -> None:
    async def main() -> None:
        while True:
            await trio.lowlevel.checkpoint()

    explore(main, max_steps=1, budget=2, raise_on_failure=False)
    _assert_trio_is_restored()


# Trio's scheduler state as this module found it (pytest-trio sets the flag).
_TRIO_R = trio_run._r
_TRIO_FLAG = trio_run._ALLOW_DETERMINISTIC_SCHEDULING


def _assert_trio_is_restored() -> None:
    assert trio_run._r is _TRIO_R
    assert trio_run._ALLOW_DETERMINISTIC_SCHEDULING is _TRIO_FLAG
    # A plain run afterwards schedules as trio does.
    assert trio.run(_returns_seven) == 7


async def _returns_seven() -> int:
    await trio.lowlevel.checkpoint()
    return 7


# Programs that run differently under the same schedule: refused, not lied about.


def changing(calls: list[int], tasks_of_call: Callable[[int], int]) -> types.FunctionType:
    async def main() -> None:
        calls.append(1)
        async with trio.open_nursery() as nursery:
            for _ in range(tasks_of_call(len(calls))):
                nursery.start_soon(trio.lowlevel.checkpoint)

    return main  # type: ignore[return-value]


def test_a_program_that_fails_only_sometimes_is_a_nondeterminism_error() -> None:
    calls: list[int] = []

    async def main() -> None:
        calls.append(1)
        await two_tasks([])()
        if len(calls) % 2:
            raise AssertionError("odd call")

    expected = (
        r"^the program ran differently under the same schedule and seed .*: schedule 1: "
        r"failed with AssertionError\('odd call'\) \(steps \w+\), then replayed with no failure "
    )
    for minimise in (True, False):
        with pytest.raises(NondeterminismError, match=expected):
            explore(main, strategy="dfs", minimise=minimise)
        calls.clear()
    _assert_trio_is_restored()


@pytest.mark.parametrize("strategy", ["dfs", "random", "pct"])
def test_a_program_whose_runs_differ_under_one_schedule_is_a_nondeterminism_error(
    strategy: StrategyName,
) -> None:
    calls: list[int] = []
    main = changing(calls, lambda call: 1 + call % 3)
    with pytest.raises(NondeterminismError, match=r"^the program ran differently"):
        explore(main, strategy=strategy, bound=2, budget=200)
    _assert_trio_is_restored()


def test_a_deterministic_program_explores_without_a_nondeterminism_error() -> None:
    calls: list[int] = []
    exploration = explore(changing(calls, lambda call: 3), strategy="random", budget=50)
    assert exploration.failure is None
    assert exploration.interleavings < exploration.runs  # schedules did repeat


def test_the_replay_line_of_a_run_past_a_lowered_step_limit_names_the_limit() -> None:
    async def main() -> None:
        while True:
            await trio.lowlevel.checkpoint()

    with pytest.raises(ExplorationFailedError) as raised:
        explore(main, max_steps=300, budget=2)
    failure = raised.value.exploration.failure
    assert failure is not None
    assert re.search(
        r'replay: explore\(main, seed=0, replay="2:[^"]*", max_steps=300\)\n', str(raised.value)
    )
    again = explore(main, replay=str(failure.schedule), max_steps=300, raise_on_failure=False)
    assert again.failure is not None
    assert again.failure.trace_hash == failure.trace_hash


def test_an_explore_from_a_thread_of_a_run_being_explored_is_refused() -> None:
    refused: list[str] = []

    async def inner() -> None:
        await trio.lowlevel.checkpoint()

    async def main() -> None:
        try:
            await trio.to_thread.run_sync(functools.partial(explore, inner, budget=2))
        except RuntimeError as error:
            refused.append(str(error))

    explore(main, replay="1:")
    assert refused == [
        "another exploration's run is in progress in this process (a thread of its "
        "program?): explore is not reentrant, one run at a time"
    ]
    _assert_trio_is_restored()


def _every_schedule_by_brute_force(main: types.FunctionType, bound: int) -> set[tuple[int, ...]]:
    """Every full sequence of picks with at most ``bound`` non-default ones,
    branching on every option at every choice point, one run per node."""
    from actors.testing._schedule import _following, _run_once

    found: set[tuple[int, ...]] = set()

    def walk(prefix: tuple[int, ...]) -> None:
        run = _run_once(
            main, _following(Schedule.from_picks(prefix), strict=True), seed=0, max_steps=10**6
        )
        if len(prefix) == len(run.options):
            found.add(run.picks)
            return
        left = bound - sum(pick != 0 for pick in prefix)
        for pick in range(run.options[len(prefix)] if left else 1):
            walk((*prefix, pick))

    walk(())
    return found


async def uneven() -> None:
    # Task k takes k steps; the first to run starts k more tasks: the choice
    # points a run has depend on its picks.
    done = trio.Event()

    async def work(steps: int) -> None:
        if not done.is_set():
            done.set()
            for _ in range(steps):
                nursery.start_soon(trio.lowlevel.checkpoint)
        for _ in range(steps):
            await trio.lowlevel.checkpoint()

    async with trio.open_nursery() as nursery:
        for steps in range(3):
            nursery.start_soon(work, steps)


@pytest.mark.parametrize(
    ("main", "bound"),
    [
        (checkpointing(2, 2), 1),
        (checkpointing(2, 2), 3),
        (checkpointing(3, 1), 2),
        (checkpointing(3, 2), 2),
        (uneven, 2),
        (uneven, 10**9),
    ],
)
def test_dfs_runs_exactly_the_schedules_a_brute_force_enumeration_finds(
    monkeypatch: pytest.MonkeyPatch, main: types.FunctionType, bound: int
) -> None:
    import actors.testing._explore as explore_module

    expected = _every_schedule_by_brute_force(main, bound)
    ran: list[tuple[int, ...]] = []
    from actors.testing._schedule import _run_once as run_once

    def recording(*args: Any, **kwargs: Any) -> Any:
        run = run_once(*args, **kwargs)
        ran.append(run.picks)
        return run

    monkeypatch.setattr(explore_module, "_run_once", recording)
    exploration = explore(main, strategy="dfs", bound=bound, budget=100_000)
    assert exploration.complete
    assert len(ran) == len(set(ran)) == exploration.runs
    assert set(ran) == expected


def test_progress_is_called_after_every_run_the_failing_one_too() -> None:
    calls: list[tuple[int, int]] = []

    async def main() -> None:
        order: list[str] = []
        await two_tasks(order)()
        assert order == ["first", "second"]

    exploration = explore(
        main,
        strategy="dfs",
        bound=1,
        raise_on_failure=False,
        progress=lambda runs, so_far: calls.append((runs, so_far.runs)),
    )
    assert exploration.failure is not None
    assert calls == [(n, n) for n in range(1, exploration.runs + 1)]


def test_a_progress_that_raises_ends_the_exploration_with_trio_restored() -> None:
    def progress(runs: int, so_far: object) -> None:
        if runs == 2:
            raise ZeroDivisionError

    with pytest.raises(ZeroDivisionError):
        explore(checkpointing(2, 2), strategy="random", budget=10, progress=progress)
    _assert_trio_is_restored()
    assert explore(checkpointing(2, 2), strategy="random", budget=3).runs == 3


def test_dfs_with_a_bound_past_every_schedule_ends_when_a_level_adds_none() -> None:
    main = checkpointing(tasks=2, steps=1)
    enough = explore(main, strategy="dfs", bound=5, budget=10_000)
    huge = explore(main, strategy="dfs", bound=10**9, budget=10_000)
    assert (huge.runs, huge.complete) == (enough.runs, True)
    exact = explore(main, strategy="dfs", bound=10**9, budget=enough.runs)
    assert (exact.runs, exact.complete) == (enough.runs, True)


def test_minimising_keeps_the_error_found_inside_a_nursery() -> None:
    # Two bugs, both raised out of a nursery (an ExceptionGroup either way):
    # the minimised schedule must fail with the one the found schedule did.
    async def main() -> None:
        order: list[str] = []

        async def a() -> None:
            for _ in range(2):
                order.append("a")
                await trio.lowlevel.checkpoint()

        async def b() -> None:
            for _ in range(2):
                order.append("b")
                await trio.lowlevel.checkpoint()
            first, second = order[0:2], order[2:4]
            if first == ["b", "a"] and second == ["b", "a"]:
                raise AssertionError("bug 1: b ran first twice")
            if first == ["b", "a"]:
                raise ValueError("bug 2: b ran first once")

        async with trio.open_nursery() as nursery:
            nursery.start_soon(a)
            nursery.start_soon(b)

    checked = 0
    for seed in range(20):
        failure = explore(
            main, strategy="random", budget=50, seed=seed, raise_on_failure=False
        ).failure
        if failure is None:
            continue
        found = explore(main, replay=str(failure.found), raise_on_failure=False).failure
        assert found is not None
        assert isinstance(found.error, BaseExceptionGroup)
        assert isinstance(failure.error, BaseExceptionGroup)
        kinds = [type(error) for error in found.error.exceptions]
        assert [type(error) for error in failure.error.exceptions] == kinds, seed
        checked += 1
    assert checked >= 10
