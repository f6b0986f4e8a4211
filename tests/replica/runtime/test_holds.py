"""Read holds across the two runtimes (docs/protocol.md, "Read holds and
physical compaction"): the real team's counterexample found with the refuted
mechanisms and not with the design of record's publisher holds; I1c and the
stalled-compaction invariant; the hold gauges."""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable

import pytest
import trio.testing

from actors.testing import explore as _explore
from replica import (
    AllowCompaction,
    CreateDataflow,
    CreateInstance,
    DataflowDescription,
    Frontier,
    GlobalId,
    HoldMechanism,
    IndexPart,
    InitializationComplete,
    PeerView,
    ReplicaConfig,
    Schedule,
    ShardCatalog,
    open_controller,
    open_replica,
)
from replica.driver.lang._spec import Spec, parse_spec, read_spec
from replica.driver.run._bundled import bundled_spec
from replica.driver.run._explore import SpecFailedError
from replica.driver.run._runner import Topology, _run, run_spec
from replica.driver.run._shared import SHARED
from replica.model._rows import Update
from replica.runtime._invariants import hold_violations

# The replica's shared state declared, as the explore command declares it.
explore = functools.partial(_explore, shared=SHARED)

I1 = "has been allowed to compact beyond the dataflow as_of: since [1], as_of [0]"


def bundled(name: str) -> Spec:
    with bundled_spec(name) as path:
        return read_spec(path, name)


def exploring(spec: Spec, topology: Topology) -> Callable[[], Awaitable[None]]:
    async def main() -> None:
        run = await _run(spec, topology, None)
        if not run.passed:
            raise SpecFailedError(run)

    return main


@pytest.mark.parametrize("holds", [HoldMechanism.BROADCAST, HoldMechanism.ROUTED])
def test_the_refuted_mechanisms_break_i1_in_the_six_step_scenario(holds: HoldMechanism) -> None:
    main = exploring(bundled("holds_counterexample.spec"), Topology(holds=holds))
    exploration = explore(main, strategy="dfs", bound=1, budget=1000, raise_on_failure=False)
    failure = exploration.failure
    assert failure is not None
    assert isinstance(failure.error, SpecFailedError)
    assert failure.error.run.aborted
    assert any(I1 in violation for violation in failure.error.run.violations)
    # Minimised and replayable.
    replayed = explore(main, replay=str(failure.schedule), raise_on_failure=False)
    assert replayed.failure is not None


@pytest.mark.parametrize(
    ("processes", "workers", "bound"),
    [(1, 1, 1), pytest.param(1, 1, 2, marks=pytest.mark.proof), (1, 2, 1)],
)
def test_publisher_holds_answer_every_schedule_of_the_six_step_scenario(
    processes: int, workers: int, bound: int
) -> None:
    main = exploring(bundled("holds_counterexample.spec"), Topology(processes, workers))
    exploration = explore(main, strategy="dfs", bound=bound, budget=100_000, reduction=False)
    assert exploration.complete, exploration.summary()
    assert exploration.failure is None
    assert exploration.runs > 50


# The spec lines the scripts below start with.
STARTED = """\
create-instance
----
ok

initialization-complete
----
ok

"""
ONE_ROW = """\
write-rows shard=r ts=0
  1 alpha
----
wrote 1

"""
INDEX = """\
define-index source=1000 index=1001 shard=r key=[0] as-of=0
----
ok

schedule id=1001
----
ok

"""
HOLD = """\
hold runtime=interactive
----
ok

"""


HELD = (
    STARTED
    + ONE_ROW
    + HOLD
    + INDEX
    + """\
create-dataflow name=one-shot as-of=0 until=1
  import index=1001
  build id=t5001
    Reduce aggregates=[count(*)]
      Get u1000
  export index=t4001 on=t5001 key=[0]
----
ok

drop id=t4001
----
ok

allow-compaction id=1001 since=1
----
ok

settle
----
ok

release runtime=interactive
----
ok

settle
----
ok
"""
)


@pytest.mark.parametrize("holds", list(HoldMechanism))
def test_the_interactive_runtime_a_whole_create_behind(holds: HoldMechanism) -> None:
    """The counterexample made deterministic: maintenance applies the
    compaction while interactive has not reached the index's create."""
    run = run_spec(parse_spec(HELD, "held.spec"), Topology(holds=holds), seed=1, trace=None)
    if holds is HoldMechanism.PUBLISHER:
        assert run.passed, run.violations
    else:
        assert run.aborted
        assert any(I1 in violation for violation in run.violations)


COMPACTED_WHILE_HELD = (
    STARTED
    + ONE_ROW
    + INDEX
    + """\
advance shard=r upper=5
----
ok

await-frontier id=1001 ts=5
----
ok

hold runtime=interactive
----
ok

allow-compaction id=1001 since=3
----
ok

settle
----
ok

release runtime=interactive
----
ok
"""
)


@pytest.mark.parametrize("holds", list(HoldMechanism))
def test_i1c_a_shared_arrangement_compacts_no_faster_than_the_slower_stream(
    holds: HoldMechanism,
) -> None:
    spec = parse_spec(COMPACTED_WHILE_HELD, "compacted.spec")
    run = run_spec(spec, Topology(holds=holds), seed=1, trace=None)
    i1c = [v for v in run.violations if "I1c" in v]
    if holds is HoldMechanism.PUBLISHER:
        assert run.passed, run.violations
    else:
        assert i1c, run.violations
        assert "compacted to 3, past the 0 this runtime's stream allowed" in i1c[0]


@pytest.mark.parametrize("align", [True, False])
def test_without_alignment_a_hold_nobody_takes_pins_compaction(align: bool) -> None:
    spec = bundled("divergent_create_interactive_only.spec")
    run = run_spec(spec, Topology(align=align), seed=1, trace=None)
    pinned = [v for v in run.violations if "for good" in v]
    if align:
        assert run.passed, run.violations
    else:
        assert pinned
        assert "the peer hold of u11@1 that no peer took" in pinned[0]


async def test_the_hold_gauges_grow_while_interactive_is_held_and_close_after() -> None:
    shards = ShardCatalog()
    shards.shard("data").write(0, [(1, "a"), (2, "b")])
    shards.shard("data").advance(10)
    index = DataflowDescription.index(1000, "data", 1001, (0,), 0)
    config = ReplicaConfig(workers=2, interactive=True)
    async with open_replica(config, shards=shards) as replica, open_controller(replica) as c:
        for command in (CreateInstance(), InitializationComplete(), CreateDataflow(index)):
            await c.send(command)
        await c.send(Schedule(1001))
        await c.await_frontier(1001, 10)
        assert replica.statistics().hold_gap_ms == 0
        replica.hold("interactive")
        await c.send(AllowCompaction(1001, Frontier.at(4)))
        await trio.testing.wait_all_tasks_blocked()
        stats = replica.statistics()
        assert (stats.hold_gap_ms, stats.held_count) == (4, 1)
        assert [w.hold_gap_ms for w in stats.workers] == [4, 4]
        assert replica.metrics.value("mz_compute_shared_arrangement_hold_gap_ms") == 4
        await c.send(AllowCompaction(1001, Frontier.at(7)))
        await trio.testing.wait_all_tasks_blocked()
        assert replica.statistics().hold_gap_ms == 7
        replica.release("interactive")
        await trio.testing.wait_all_tasks_blocked()
        stats = replica.statistics()
        assert (stats.hold_gap_ms, stats.held_count) == (0, 0)
        assert replica.metrics.value("mz_compute_shared_arrangement_held_count") == 0


@pytest.mark.parametrize("interactive", [False, True])
async def test_an_index_under_churn_keeps_its_contents_not_its_history(interactive: bool) -> None:
    shards = ShardCatalog()
    data = shards.shard("data")
    keys = 200
    data.write(0, [(key, 0) for key in range(keys)])
    index = DataflowDescription.index(1000, "data", 1001, (0,), 0)
    config = ReplicaConfig(workers=1, interactive=interactive)
    version = dict.fromkeys(range(keys), 0)
    async with open_replica(config, shards=shards) as replica, open_controller(replica) as c:
        for command in (CreateInstance(), InitializationComplete(), CreateDataflow(index)):
            await c.send(command)
        await c.send(Schedule(1001))
        for ts in range(1, 100):
            changed = [(ts * 20 + step) % keys for step in range(20)]
            batch: list[Update] = [((key, version[key]), ts, -1) for key in changed]
            for key in changed:
                version[key] += 1
            batch += [((key, version[key]), ts, 1) for key in changed]
            data.append(batch, ts, ts + 1)
            await c.await_frontier(1001, ts + 1)
            await c.send(AllowCompaction(1001, Frontier.at(ts)))
        await trio.testing.wait_all_tasks_blocked()
        stats = replica.statistics()
        assert stats.arrangements == 1
        assert keys <= stats.retained_updates <= 2 * keys
        assert sorted(await c.peek(1001, 99)) == sorted(version.items())


UNSCHEDULED_IMPORT = (
    STARTED
    + """\
write-single-ts shard=r ts=0 count=100 row-bytes=1
----
wrote 100

define-index source=1000 index=1001 shard=r key=[0] as-of=0
----
ok

schedule id=1001
----
ok

await-frontier id=1001 ts=1
----
ok

create-dataflow name=reader as-of=0
  import index=1001
  build id=2000
    Reduce aggregates=[count(*)]
      Get u1000
  export index=2001 on=2000 key=[0]
----
ok

write-single-ts shard=r ts=3 count=100 start=100 row-bytes=1
----
wrote 100

advance shard=r upper=10
----
ok

await-frontier id=1001 ts=10
----
ok

allow-compaction id=1001 since=5
----
ok

settle
----
ok

schedule id=2001
----
ok

await-frontier id=2001 ts=6
----
ok

peek id=2001 ts=0
----
100

peek id=2001 ts=5
----
200
"""
)


def test_an_import_holds_from_its_build_even_before_it_is_scheduled() -> None:
    """A dataflow built at as_of 0 over an index holds it there from the
    build, scheduled or not: the index compacts no further while it waits."""
    spec = parse_spec(UNSCHEDULED_IMPORT, "unscheduled.spec")
    for topology in (Topology(), Topology(2, 2), Topology(interactive=False)):
        run = run_spec(spec, topology, seed=1, trace=None)
        assert run.passed, (topology, run.violations, [o.actual for o in run.outcomes])


@pytest.mark.parametrize("interactive", [False, True])
async def test_a_quiet_index_gives_its_history_back_once_compaction_is_allowed(
    interactive: bool,
) -> None:
    """Loaded with a long history, then allowed to compact to its end at
    once: once the workers are idle the arrangement keeps only its contents
    (no new update comes to cross a threshold)."""
    shards = ShardCatalog()
    data = shards.shard("data")
    batch: list[Update] = []
    for ts in range(300):
        # Each key's value moves on at each time: one row a key at the end.
        batch += [((key, ts), ts, 1) for key in range(50)]
        batch += [((key, ts - 1), ts, -1) for key in range(50) if ts]
    data.append(batch, 0, 300)
    index = DataflowDescription.index(1000, "data", 1001, (0,), 0)
    config = ReplicaConfig(workers=1, interactive=interactive)
    async with open_replica(config, shards=shards) as replica, open_controller(replica) as c:
        for command in (CreateInstance(), InitializationComplete(), CreateDataflow(index)):
            await c.send(command)
        await c.send(Schedule(1001))
        await c.await_frontier(1001, 300)
        await trio.testing.wait_all_tasks_blocked()
        assert replica.statistics().retained_updates == len(batch)
        await c.send(AllowCompaction(1001, Frontier.at(299)))
        await trio.testing.wait_all_tasks_blocked()
        assert replica.statistics().retained_updates == 50
        assert sorted(await c.peek(1001, 299)) == [(key, 299) for key in range(50)]


async def test_the_hold_invariants_fire_on_a_since_that_went_back() -> None:
    """The checks are not vacuous: a since moved back by hand is reported."""
    shards = ShardCatalog()
    shards.shard("data").write(0, [(1, "a")])
    index = DataflowDescription.index(1000, "data", 1001, (0,), 0)
    config = ReplicaConfig(interactive=True)
    async with open_replica(config, shards=shards) as replica, open_controller(replica) as c:
        for command in (CreateInstance(), InitializationComplete(), CreateDataflow(index)):
            await c.send(command)
        await c.send(Schedule(1001))
        await c.send(AllowCompaction(1001, Frontier.at(2)))
        await trio.testing.wait_all_tasks_blocked()
        assert hold_violations(replica) == []
        (worker,) = replica.maintenance.workers
        part = worker.state.collections[GlobalId.user(1001)]
        assert isinstance(part, IndexPart)
        assert part.arrangement is not None
        part.arrangement.since = 1
        found = hold_violations(replica)
        # Seen by both runtimes: maintenance's part and the peer reading it.
        assert found == [
            f"{name} p0/w0: the arrangement of u1001: since went back from 2 to 1"
            for name in ("maintenance", "interactive")
        ]
        # I1c: the arrangement past what the interactive runtime allowed.
        part.arrangement.since = 5
        assert any("I1c" in v for v in hold_violations(replica))


@pytest.mark.parametrize(
    "name",
    [
        "holds_reconnect_untaken.spec",
        "holds_reconnect_taken.spec",
        "holds_recreate_same_incarnation.spec",
        "holds_reexport_reconnect.spec",
    ],
)
def test_holds_across_reconnects_every_schedule_within_bound_1(name: str) -> None:
    """Where the real team's model did not look: publisher holds across
    reconnects, with the barrier, in every schedule within bound 1."""
    main = exploring(bundled(name), Topology())
    exploration = explore(main, strategy="dfs", bound=1, budget=100_000, reduction=False)
    assert exploration.complete, exploration.summary()
    assert exploration.failure is None
    assert exploration.runs > 100


def test_without_the_barrier_a_recreate_of_the_same_incarnation_aborts_the_replica() -> None:
    """Without the barrier, the interactive runtime binds the old
    publication of the same (id, as_of), compacted past the new as_of: the
    one-shot read's import panics (I1), where before compaction it only froze."""
    spec = bundled("holds_recreate_same_incarnation.spec")
    run = run_spec(spec, Topology(barrier=False), seed=1, trace=None)
    assert run.aborted
    assert any("since [3], as_of [0]" in violation for violation in run.violations)


async def test_peer_holds_do_not_pile_up_across_reconnects() -> None:
    # Each connection replays the index at the as_of the one before compacted
    # it to; interactive keeps its peer (bound to the first incarnation) and
    # takes the hold maintenance registered for the new one each time: the
    # older target holds go, or they would pile up one a reconnect.
    shards = ShardCatalog()
    shards.shard("data").write(0, [(1, "a"), (2, "b")])
    shards.shard("data").advance(20)
    config = ReplicaConfig(workers=1, interactive=True)
    async with open_replica(config, shards=shards) as replica, open_controller(replica) as c:
        for command in (CreateInstance(), InitializationComplete()):
            await c.send(command)
        await c.send(CreateDataflow(DataflowDescription.index(1000, "data", 1001, (0,), 0)))
        await c.send(Schedule(1001))
        await c.await_frontier(1001, 20)
        for as_of in range(1, 6):
            await c.send(AllowCompaction(1001, Frontier.at(as_of)))
            await trio.testing.wait_all_tasks_blocked()
            await c.connect()
            index = DataflowDescription.index(1000, "data", 1001, (0,), as_of)
            for replayed in (CreateInstance(), CreateDataflow(index), Schedule(1001)):
                await c.send(replayed)
            await c.send(InitializationComplete())
            await trio.testing.wait_all_tasks_blocked()
        views = [
            collection
            for worker in replica.interactive.workers
            for collection in worker.state.collections.values()
            if isinstance(collection, PeerView)
        ]
        assert views
        live = [len([hold for hold in view.holds if not hold.released]) for view in views]
        assert max(live) <= 2, live
        assert not hold_violations(replica)


REEXPORT = (
    STARTED
    + ONE_ROW
    + INDEX
    + """\
create-dataflow name=again as-of=0
  import index=1001
  export kind=index index=1002 on=1000 key=[0]
----
ok

schedule id=1002
----
ok

advance shard=r upper=8
----
ok

await-frontier id=1002 ts=8
----
ok

allow-compaction id=1001 since=3
----
ok

settle
----
ok
"""
)


async def test_a_re_exports_own_hold_is_not_counted_as_held_for_the_reader() -> None:
    # 1002 shares 1001's arrangement and was not compacted: the arrangement
    # stays at 0 for 1002's own controller hold, which is no peer's hold.
    from replica.driver.run._runner import LocalBackend, run_stanzas

    spec = parse_spec(REEXPORT, "reexport.spec")
    shards = ShardCatalog()
    config = Topology(1, 1).config()
    async with open_replica(config, shards=shards) as replica, open_controller(replica) as c:

        async def found() -> list[str]:
            return []

        run = await run_stanzas(spec, LocalBackend(replica), c, shards, found)
        assert run.passed
        await trio.testing.wait_all_tasks_blocked()
        stats = replica.statistics()
        assert (stats.hold_gap_ms, stats.held_count) == (0, 0)
