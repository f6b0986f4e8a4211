"""``explore(..., count_dependence=True)``: the pairs of steps that ran in one
batch and that the reduction found dependent, by what both touched."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest
import trio

import actors
from actors import Inbox
from actors.testing import belong, explore, touch
from actors.testing._explore import Reduction


class Box:
    """What two workers may both touch."""


class Owner:
    """What a worker belongs to (so that workers share no owner)."""


def workers(*, one_box: bool) -> Callable[[], Awaitable[None]]:
    """Two tasks outside actors, each touching a box in each of its two
    steps: both the same box, or each its own."""

    async def main() -> None:
        boxes = [Box(), Box()]

        async def worker(i: int) -> None:
            belong(Owner())
            for _ in range(2):
                touch(boxes[0] if one_box else boxes[i])
                await trio.lowlevel.checkpoint()

        async with trio.open_nursery() as nursery:
            nursery.start_soon(worker, 0)
            nursery.start_soon(worker, 1)

    return main


@pytest.mark.parametrize("reduction", [True, "states", False])
def test_two_steps_that_touch_one_box_are_counted_under_its_type(reduction: Reduction) -> None:
    exploration = explore(
        workers(one_box=True),
        strategy="dfs",
        bound=2,
        budget=1000,
        reduction=reduction,
        count_dependence=True,
    )
    assert exploration.complete
    assert exploration.dependence is not None
    counted = dict(exploration.dependence)
    # Every run runs the two workers' steps together in two batches, each
    # pair touching the box: two pairs a run.
    assert counted["Box"] == 2 * exploration.runs
    # (Their first steps ran before belong took effect: outside actors.)
    assert counted["the tasks outside actors"] == 2 * exploration.runs


def test_steps_on_boxes_of_their_own_count_nothing_under_the_boxes() -> None:
    exploration = explore(
        workers(one_box=False), strategy="dfs", bound=2, budget=1000, count_dependence=True
    )
    assert exploration.dependence is not None
    assert "Box" not in dict(exploration.dependence)
    assert "Owner" not in dict(exploration.dependence)


def test_the_counts_are_most_first_then_by_name() -> None:
    exploration = explore(
        workers(one_box=True), strategy="dfs", bound=2, budget=1000, count_dependence=True
    )
    assert exploration.dependence is not None
    keys = [(-count, label) for label, count in exploration.dependence]
    assert keys == sorted(keys)


@pytest.mark.parametrize("reduction", [True, "states", False])
def test_counting_changes_no_schedule_run(reduction: Reduction) -> None:
    def run(count: bool) -> tuple[object, ...]:
        exploration = explore(
            workers(one_box=True),
            strategy="dfs",
            bound=2,
            delays=1,
            budget=1000,
            reduction=reduction,
            count_traces=True,
            count_dependence=count,
        )
        return (
            exploration.runs,
            exploration.interleavings,
            exploration.traces,
            exploration.merged,
            exploration.skipped,
            exploration.stopped,
            exploration.complete,
        )

    assert run(True) == run(False)


def test_not_counted_it_is_none() -> None:
    assert explore(workers(one_box=True), strategy="dfs", budget=10).dependence is None


def test_random_and_a_replay_count_their_runs_too_and_pct_has_no_batch_of_two() -> None:
    options: dict[str, Any]
    for options in ({"strategy": "random", "budget": 4}, {"replay": "1:"}):
        exploration = explore(workers(one_box=True), count_dependence=True, **options)
        assert exploration.dependence is not None
        assert dict(exploration.dependence)["Box"] == 2 * exploration.runs, options
    # pct runs one task at a time: no two steps in one batch.
    pct = explore(workers(one_box=True), strategy="pct", budget=4, count_dependence=True)
    assert pct.dependence == ()


async def counter(inbox: Inbox[int]) -> None:
    async for _ in inbox:
        pass


def test_an_actor_told_by_two_tasks_at_once_is_named() -> None:
    async def main() -> None:
        async with actors.open_system() as system:
            ref = await system.spawn(counter, name="counter")
            async with trio.open_nursery() as nursery:
                for i in range(2):
                    nursery.start_soon(ref.tell, i)

    exploration = explore(main, strategy="dfs", bound=1, budget=1000, count_dependence=True)
    assert exploration.dependence is not None
    assert "actor counter" in dict(exploration.dependence)


def test_count_dependence_must_be_a_bool_and_nothing_runs_otherwise() -> None:
    ran: list[int] = []

    async def main() -> None:
        ran.append(1)

    with pytest.raises(TypeError, match="count_dependence must be True or False"):
        explore(main, strategy="dfs", count_dependence=1)  # type: ignore[arg-type]
    assert ran == []
