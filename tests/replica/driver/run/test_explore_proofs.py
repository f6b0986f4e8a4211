"""The barrier's promise, checked for every schedule within a bound: ``dfs``
with bound 1 (every schedule with at most one pick other than creation
order, in each batch of tasks Trio runs together) completes with no failure
on the recreate scenario and on the reported divergent-runtime scenario, for
small replicas; without the barrier it finds the frozen read. The runs at P=2
and the divergent scenario's at W=2 are marked ``proof``: ``.ci/run`` runs
them after the test command (``pytest -m proof``). The recreate scenario's
runs at P=1 W=2 (a few seconds each) stay in the test command, its runs of
two workers a runtime. The larger
runs (every scenario at P=2 W=2, bound 2 at P=1 W=1) are recorded in
``bench/README.md`` (``bench/explore_bench.py --proofs``)."""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable

import pytest

from actors.testing import explore as _explore
from replica.driver.lang._spec import Spec, read_spec
from replica.driver.run._bundled import bundled_spec
from replica.driver.run._explore import SpecFailedError
from replica.driver.run._runner import Topology, _run
from replica.driver.run._shared import SHARED

# The replica's shared state declared, as the explore command declares it.
explore = functools.partial(_explore, shared=SHARED)


def bundled(name: str) -> Spec:
    with bundled_spec(name) as path:
        return read_spec(path, name)


def exploring(spec: Spec, topology: Topology) -> Callable[[], Awaitable[None]]:
    async def main() -> None:
        run = await _run(spec, topology, None)
        if not run.passed:
            raise SpecFailedError(run)

    return main


@pytest.mark.parametrize(
    ("name", "processes", "workers"),
    [
        # P=1 W=1 of the recreate scenario: test_explore_command.py, through the command.
        ("two_runtime_recreate_index.spec", 1, 2),
        pytest.param("two_runtime_recreate_index.spec", 2, 1, marks=pytest.mark.proof),
        pytest.param("two_runtime_recreate_index.spec", 2, 2, marks=pytest.mark.proof),
        ("two_runtime_recreate_race.spec", 1, 1),
        ("divergent_compaction_interactive_only.spec", 1, 1),
        pytest.param("divergent_compaction_interactive_only.spec", 1, 2, marks=pytest.mark.proof),
        pytest.param("divergent_compaction_interactive_only.spec", 2, 1, marks=pytest.mark.proof),
        pytest.param("divergent_compaction_interactive_only.spec", 2, 2, marks=pytest.mark.proof),
        ("divergent_compaction_maintenance_only.spec", 1, 1),
    ],
)
def test_with_the_barrier_every_schedule_within_bound_1_answers_every_read(
    name: str, processes: int, workers: int
) -> None:
    exploration = explore(
        exploring(bundled(name), Topology(processes, workers)),
        strategy="dfs",
        bound=1,
        budget=100_000,
    )
    assert exploration.complete, exploration.summary()
    assert exploration.failure is None
    # Every schedule run was a different interleaving, and there were many
    # (run, or shown to reach a state explored with as much budget).
    assert exploration.runs == exploration.interleavings
    assert exploration.runs + exploration.skipped > exploration.max_choice_points


@pytest.mark.parametrize(("processes", "workers"), [(1, 1), (1, 2)])
def test_without_the_barrier_dfs_finds_the_frozen_read_in_one_reordering(
    processes: int, workers: int
) -> None:
    spec = bundled("two_runtime_recreate_race.spec")
    main = exploring(spec, Topology(processes, workers, barrier=False))
    exploration = explore(main, strategy="dfs", bound=1, budget=100_000, raise_on_failure=False)
    failure = exploration.failure
    assert failure is not None
    assert isinstance(failure.error, SpecFailedError)
    assert any(v.endswith("a frozen view") for v in failure.error.run.violations)
    assert len(failure.schedule) == 1
    # The one reordering: an interactive worker before a maintenance worker.
    ((deviation),) = failure.deviations
    assert " ran interactive/" in deviation
    assert " before maintenance/" in deviation
    # The default schedule passes: the race needs the scheduler.
    assert explore(main, replay="1:").failure is None


@pytest.mark.parametrize(
    ("processes", "workers"),
    # P=1 W=1: test_explore_command.py, through the command.
    [(1, 2), *(pytest.param(p, w, marks=pytest.mark.proof) for p, w in [(2, 1), (2, 2)])],
)
def test_with_the_barrier_every_schedule_within_one_delay_answers_every_read(
    processes: int, workers: int
) -> None:
    # One task held back (for a batch, or until no other can run) anywhere:
    # a worker falling behind the others by any number of steps.
    exploration = explore(
        exploring(bundled("two_runtime_recreate_index.spec"), Topology(processes, workers)),
        strategy="dfs",
        bound=0,
        delays=1,
        budget=100_000,
    )
    assert exploration.complete, exploration.summary()
    assert exploration.failure is None
    assert exploration.held >= exploration.runs - 1


@pytest.mark.parametrize(
    ("processes", "workers"), [(1, 1), pytest.param(2, 2, marks=pytest.mark.proof)]
)
def test_without_the_barrier_one_delay_finds_the_frozen_read(processes: int, workers: int) -> None:
    spec = bundled("two_runtime_recreate_race.spec")
    main = exploring(spec, Topology(processes, workers, barrier=False))
    exploration = explore(
        main, strategy="dfs", bound=0, delays=1, budget=100_000, raise_on_failure=False
    )
    failure = exploration.failure
    assert failure is not None
    assert isinstance(failure.error, SpecFailedError)
    assert any(v.endswith("a frozen view") for v in failure.error.run.violations)
    assert (failure.schedule.holds, failure.schedule.reorders) == (1, 0)
    ((deviation),) = failure.deviations
    assert " held maintenance/" in deviation
