"""Seed-driven fault injection: off by default, repeatable, and harmless to
correctness with the barrier (it only delays or loses what the design allows)."""

from __future__ import annotations

import pytest
import trio
import trio.testing

import actors
from replica import (
    Command,
    CreateDataflow,
    CreateInstance,
    DataflowDescription,
    FaultPlan,
    Faults,
    InitializationComplete,
    ReplicaConfig,
    Schedule,
    ShardCatalog,
    open_controller,
    open_replica,
)
from replica.driver import main

from ...paths import SPECS

OLD = DataflowDescription.index(1000, "data", 1001, (0,), 0)
NEW = DataflowDescription.index(1000, "data", 1001, (1,), 0)


def test_no_plan_injects_nothing() -> None:
    faults = Faults.seeded(FaultPlan(), seed=3)
    assert [faults.delay_delivery() for _ in range(100)] == [None] * 100
    assert faults.lose_hello(4) == frozenset()
    assert faults.injected == {}


def test_the_same_seed_makes_the_same_decisions() -> None:
    def decisions(seed: int) -> list[object]:
        faults = Faults.seeded(FaultPlan(rate=0.5, max_delay=2), seed)
        return [
            (faults.delay_delivery(), faults.lose_hello(3), faults.late_arrival())
            for _ in range(20)
        ]

    assert decisions(7) == decisions(7)
    assert decisions(7) != decisions(8)


@pytest.mark.parametrize(("rate", "delay"), [(-0.1, 1.0), (1.5, 1.0), (0.5, 0.0)])
def test_a_bad_plan_is_refused(rate: float, delay: float) -> None:
    with pytest.raises(ValueError, match=r"^'(rate|max_delay)' must be"):
        FaultPlan(rate=rate, max_delay=delay)


async def recreate_under_faults(rate: float) -> tuple[dict[str, int], list[object]]:
    shards = ShardCatalog()
    config = ReplicaConfig(processes=2, workers=2, interactive=True, faults=FaultPlan(rate))
    async with open_replica(config, shards=shards) as replica, open_controller(replica) as c:
        shards.shard("data").write(0, [(1, "a"), (2, "b")])
        first: list[Command] = [CreateInstance(), InitializationComplete(), CreateDataflow(OLD)]
        for command in [*first, Schedule(1001)]:
            await c.send(command)
        await c.await_frontier(1001, 1)
        for _ in range(3):
            await c.connect()
            for command in (CreateInstance(), CreateDataflow(NEW), Schedule(1001)):
                await c.send(command)
            await c.send(InitializationComplete())
            await c.connect()
            for command in (CreateInstance(), CreateDataflow(OLD), Schedule(1001)):
                await c.send(command)
            await c.send(InitializationComplete())
        shards.shard("data").write(1, [(3, "c")])
        with trio.fail_after(10):
            rows: list[object] = list(await c.peek(1001, 1))
        return dict(replica.faults.injected), rows


def test_every_site_fires_and_reads_still_answer_with_the_barrier() -> None:
    injected, rows = actors.run(recreate_under_faults, 0.5, seed=4)
    assert set(injected) == {"delay_delivery", "lose_hello", "delay_hello", "late_arrival"}
    assert rows == [(1, "a"), (2, "b"), (3, "c")]


def test_the_same_seed_with_faults_gives_the_same_run(capsys: pytest.CaptureFixture[str]) -> None:
    spec = "replica/driver/specs/two_runtime_recreate_index.spec"
    args = ["run", spec, "--check-determinism", "--faults", "0.5", "--processes", "2"]
    assert main(args) == 0
    assert capsys.readouterr().out.startswith(f"deterministic {spec}: ")


def test_a_controller_that_goes_away_mid_reconciliation_replays_and_all_still_pass() -> None:

    from replica.driver.lang._spec import read_spec
    from replica.driver.run._runner import Topology, run_spec

    specs = SPECS
    assert sorted(specs.glob("*.spec")), "the bundled specs"
    injected: dict[str, int] = {}
    for path in sorted(specs.glob("*.spec")):
        run = run_spec(read_spec(path), Topology(2, 2, faults=0.4), seed=5, trace=None)
        assert run.passed, path.name
        for site, count in run.injected.items():
            injected[site] = injected.get(site, 0) + count
    assert injected.get("reconnect", 0) > 0
    assert set(injected) >= {"delay_delivery", "delay_hello", "late_arrival", "reconnect"}
