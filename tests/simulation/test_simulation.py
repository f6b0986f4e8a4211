"""Deterministic simulation: Hypothesis generates whole programs, each runs in
one ``trio.run`` on the mock clock, and the replica is checked against the
plain reference model and its own invariants."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from hypothesis import HealthCheck, find, given, settings
from hypothesis import strategies as st

import actors
from replica import HoldMechanism
from replica.driver import main
from replica.driver.lang._spec import parse_spec
from replica.driver.run._runner import SpecRun, Topology, run_spec

from .programs import Program, faulty_topologies, programs, topologies

FAILURES = Path(__file__).resolve().parents[2] / ".hypothesis" / "failures"


def simulate(program: Program, topology: Topology, seed: int) -> tuple[str, SpecRun]:
    text = program.spec_text()
    return text, run_spec(parse_spec(text, "generated.spec"), topology, seed=seed, trace=None)


def replay_command(path: Path, topology: Topology, seed: int) -> str:
    flags = f"--workers {topology.workers} --processes {topology.processes} --seed {seed}"
    if topology.faults:
        flags += f" --faults {topology.faults:g}"
    return f"trio-reconcile run {path} {flags}" + ("" if topology.barrier else " --no-barrier")


def explain(text: str, topology: Topology, seed: int, run: SpecRun) -> str:
    """Write the failing program as a spec; say how to replay it."""
    FAILURES.mkdir(parents=True, exist_ok=True)
    path = FAILURES / f"seed-{seed}.spec"
    path.write_text(text, encoding="utf-8")
    lines = [f"seed {seed}, {topology}; replay: {replay_command(path, topology, seed)}"]
    for outcome in run.outcomes:
        if not outcome.matched:
            lines.append(
                f"line {outcome.stanza.line}: expected {list(outcome.stanza.expected)}, "
                f"got {list(outcome.actual)}"
            )
    lines += run.violations
    lines += [f"a command for an unknown id: {refusal}" for refusal in run.unknown_ids()]
    return "\n".join(lines)


def check_against_the_model(program: Program, topology: Topology, seed: int) -> None:
    text, run = simulate(program, topology, seed)
    # The programs name only ids they made: a refusal for an unknown id is a
    # protocol violation, as a broken invariant is.
    assert run.passed, explain(text, topology, seed, run)
    assert not run.unknown_ids(), explain(text, topology, seed, run)
    assert not run.misfits, explain(text, topology, seed, run)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(program=programs(), topology=topologies, seed=st.integers(0, 2**16))
def test_the_replica_agrees_with_the_reference_model(
    program: Program, topology: Topology, seed: int
) -> None:
    check_against_the_model(program, topology, seed)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(program=programs(), topology=faulty_topologies, seed=st.integers(0, 2**16))
def test_with_faults_the_replica_still_agrees_with_the_reference_model(
    program: Program, topology: Topology, seed: int
) -> None:
    # Faults only delay or lose what the design allows; with the barrier, every
    # read the model says can answer still answers within its timeout.
    check_against_the_model(program, topology, seed)


@settings(max_examples=15, deadline=None)
@given(program=programs(max_steps=6), topology=faulty_topologies, seed=st.integers(0, 2**16))
def test_the_same_seed_gives_the_same_run(program: Program, topology: Topology, seed: int) -> None:
    spec = parse_spec(program.spec_text(), "generated.spec")
    first, second = actors.Trace(), actors.Trace()
    one = run_spec(spec, topology, seed=seed, trace=first)
    two = run_spec(spec, topology, seed=seed, trace=second)
    assert first.events == second.events
    assert [o.actual for o in one.outcomes] == [o.actual for o in two.outcomes]
    assert one.injected == two.injected


def disagrees_without_the_barrier(program: Program, counter: list[int]) -> bool:
    counter.append(1)
    topology = Topology(processes=1, workers=1, interactive=True, barrier=False)
    _, run = simulate(program, topology, seed=1)
    return not run.passed


def find_the_race(seed: int) -> tuple[Program, int]:
    """Search programs until one shows the race; return the shrunk program and
    how many programs were tried before the first that failed."""
    tried: list[int] = []
    first_failure: list[int] = []

    def condition(program: Program) -> bool:
        failed = disagrees_without_the_barrier(program, tried)
        if failed and not first_failure:
            first_failure.append(len(tried))
        return failed

    shrunk = find(
        programs(),
        condition,
        settings=settings(max_examples=2000, deadline=None, database=None),
        random=random.Random(seed),
    )
    return shrunk, first_failure[0]


@pytest.mark.proof
def test_without_the_barrier_the_simulation_finds_the_frozen_read(tmp_path: Path) -> None:
    program, _ = find_the_race(seed=0)
    text = program.spec_text()
    # The counterexample is a spec: it replays with the command, failing only
    # without the barrier.
    spec = tmp_path / "race.spec"
    spec.write_text(text, encoding="utf-8")
    assert main(["run", str(spec), "--no-barrier", "--seed", "1"]) == 1
    assert main(["run", str(spec), "--seed", "1"]) == 0
    # The shrunk counterexample is the race: a reconnect recreates an index at
    # the same as_of under another key (maintenance held, or simply behind),
    # and a read of new data hangs on the frozen incarnation.
    assert "reconnect" in text
    _, with_barrier = simulate(program, Topology(1, 1, True, True), seed=1)
    assert with_barrier.passed, "the same program passes with the barrier"
    _, without = simulate(program, Topology(1, 1, True, False), seed=1)
    # The interactive peer is left on a dropped publisher (the runtimes'
    # invariant says so at the next settle or at the end); any read it served
    # since timed out.
    assert any(v.endswith("a frozen view") for v in without.violations), without.violations
    mismatches = [o.actual for o in without.outcomes if not o.matched]
    assert all(actual == ("error: timed out after 5s",) for actual in mismatches)


@pytest.mark.proof
def test_with_broadcast_holds_the_simulation_finds_the_compacted_import(tmp_path: Path) -> None:
    """The real team's counterexample, found by the generator: with no peer
    hold, maintenance compacts an index past the as_of of a one-shot read the
    interactive runtime has yet to build, whose import panics (I1)."""
    broadcast = Topology(1, 1, True, holds=HoldMechanism.BROADCAST)

    def aborts(program: Program) -> bool:
        return simulate(program, broadcast, seed=1)[1].aborted

    program = find(
        programs(),
        aborts,
        settings=settings(max_examples=2000, deadline=None, database=None),
        random=random.Random(0),
    )
    text = program.spec_text()
    _, run = simulate(program, broadcast, seed=1)
    assert any("has been allowed to compact beyond the dataflow as_of" in v for v in run.violations)
    # The shrunk program has the race: a one-shot read created, and its
    # index compacted past its as_of; with publisher holds it passes.
    assert " until=" in text
    assert "allow-compaction" in text
    _, publisher = simulate(program, Topology(1, 1, True), seed=1)
    assert publisher.passed, publisher.violations
    spec = tmp_path / "race.spec"
    spec.write_text(text, encoding="utf-8")
    assert main(["run", str(spec), "--holds", "broadcast", "--seed", "1"]) == 1
    assert main(["run", str(spec), "--seed", "1"]) == 0
