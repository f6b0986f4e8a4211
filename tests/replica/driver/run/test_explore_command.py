"""``trio-reconcile explore``: specs under schedules chosen on purpose. With the
barrier, every schedule of the recreate scenarios within the bound answers
every read; without it, the explorer finds the frozen read, minimises the
schedule and prints the command that replays it."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from replica.driver import main
from replica.driver.lang._spec import Spec
from replica.driver.run._runner import SpecRun, Topology, _run

from ....paths import SPECS

RECREATE = str(SPECS / "two_runtime_recreate_index.spec")
RACE = str(SPECS / "two_runtime_recreate_race.spec")
ERROR = "trio-reconcile: error: "
EXPLORE_ERROR = "trio-reconcile explore: error: "


def test_the_reduction_keeps_every_trace_the_full_enumeration_has(
    capsys: pytest.CaptureFixture[str],
) -> None:
    counts = {}
    for reduction in ("traces", "states", "none"):
        command = ["explore", RECREATE, "--strategy", "dfs", "--bound", "1"]
        assert main([*command, "--reduction", reduction, "--count-traces"]) == 0
        out = capsys.readouterr().out
        found = re.search(
            rf"^ok {re.escape(RECREATE)}: dfs bound 1: (\d+) runs, complete, \1 interleavings "
            r"\((\d+) traces\), \d+ choice points(, \d+ merged)?(, \d+ skipped)? "
            r"\(P=1 W=1 two runtimes\)$",
            out,
            re.M,
        )
        assert found, out
        # Only the traces reduction skips schedules before running them.
        assert (found[4] is not None) == (reduction == "traces"), out
        counts[reduction] = (int(found[1]), int(found[2]))
    runs = {reduction: count[0] for reduction, count in counts.items()}
    traces = {count[1] for count in counts.values()}
    assert len(traces) == 1, counts
    assert runs["traces"] < runs["none"], counts
    assert runs["states"] == runs["none"], counts  # no holds: no two schedules run the same steps
    assert main([*command, "--no-reduction"]) == 0
    assert f": {runs['none']} runs, complete" in capsys.readouterr().out


def test_without_the_barrier_it_finds_the_frozen_read_and_prints_the_replay(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["explore", RACE, "--no-barrier", "--strategy", "pct", "--seed", "3"]) == 1
    out = capsys.readouterr().out
    assert "error: timed out after 10s" in out
    assert "a frozen view" in out
    failed = rf"^FAIL {re.escape(RACE)}: pct depth 3: a failing schedule in run \d+"
    assert re.search(failed, out, re.M)
    (replay,) = re.findall(r"^  replay: (trio-reconcile explore .*)$", out, re.M)
    args = shlex.split(replay)[1:]
    assert "--no-barrier" in args
    assert "--seed=3" in args
    # The replay fails again, the same way, in one run.
    assert main(args) == 1
    again = capsys.readouterr().out
    assert "a failing schedule in run 1 (1 runs" in again
    assert "a frozen view" in again


def test_the_race_needs_the_scheduler_a_default_schedule_misses_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # The default schedule (creation order) passes without the barrier; dfs
    # finds a failing one with a single non-default choice.
    assert main(["explore", RACE, "--no-barrier", "--replay", "1:"]) == 0
    assert main(["explore", RACE, "--no-barrier", "--strategy", "dfs", "--bound", "1"]) == 1
    out = capsys.readouterr().out
    assert re.search(r"schedule: 1:\d+=\d+ \(1 non-default choices", out), out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--replay", "nonsense"], "argument --replay: not a schedule: 'nonsense'"),
        (["--replay", "1:4=0"], "argument --replay: schedule '1:4=0': a default choice"),
        (["--bound", "101"], "argument --bound: must be at most 100: 101"),
        (["--bound", "-1"], "argument --bound: not a whole number (digits 0-9): '-1'"),
        (["--depth", "0"], "argument --depth: must be at least 1: 0"),
        (["--budget", "0"], "argument --budget: must be at least 1: 0"),
        (["--strategy", "bfs"], "argument --strategy: invalid choice: 'bfs'"),
        (["--jobs", "0"], "argument --jobs: must be at least 1: 0"),
        (["--jobs", "65"], "argument --jobs: must be at most 64: 65"),
        (["--jobs", "2"], "argument --jobs: the processes share a dfs search"),
        (
            ["--jobs", "2", "--strategy", "dfs", "--replay", "1:"],
            "argument --jobs: the processes share a dfs search",
        ),
    ],
)
def test_bad_arguments_exit_2_before_anything_runs(
    capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    assert main(["explore", RECREATE, *args]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert f"{EXPLORE_ERROR}{message}" in err


def test_a_replay_names_one_spec(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explore", RECREATE, RACE, "--replay", "1:"]) == 2
    assert capsys.readouterr() == ("", f"{ERROR}--replay replays one spec, and 2 are named\n")


def test_a_replay_that_does_not_fit_the_spec_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explore", RECREATE, "--replay", "1:100000=1"]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith(f"{ERROR}--replay: the schedule names choice point 100000")


def test_a_bad_spec_exits_2_before_anything_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.spec"
    bad.write_text("no-such-directive\n----\nok\n")
    assert main(["explore", str(bad)]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith(f"{bad}:1: ")


def test_a_spec_that_runs_differently_under_one_schedule_fails_with_no_replay(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import replica.driver.run._explore as explore_module

    calls: list[int] = []

    async def flaky(spec: Spec, topology: Topology, trace: None) -> SpecRun:
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("only the first time")
        return await _run(spec, topology, trace)

    monkeypatch.setattr(explore_module, "_run", flaky)
    assert main(["explore", RECREATE, "--strategy", "dfs", "--bound", "0"]) == 1
    out = capsys.readouterr().out
    assert re.search(
        rf"^FAIL {re.escape(RECREATE)}: dfs bound 0: the program ran differently under the "
        r"same schedule and seed .*: schedule 1: failed with RuntimeError\('only the first "
        r"time'\) .*, then replayed with no failure .* \(P=1 W=1 two runtimes\)$",
        out,
        re.M,
    ), out
    assert "replay:" not in out


def test_ctrl_c_during_an_exploration_exits_130_with_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import trio._core._run as trio_run

    import replica.driver.run._explore as explore_module

    before = (trio_run._r, trio_run._ALLOW_DETERMINISTIC_SCHEDULING)
    calls: list[int] = []

    async def interrupted(spec: Spec, topology: Topology, trace: None) -> SpecRun:
        calls.append(1)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return await _run(spec, topology, trace)

    monkeypatch.setattr(explore_module, "_run", interrupted)
    assert main(["explore", RECREATE, "--strategy", "random", "--budget", "10"]) == 130
    assert capsys.readouterr() == ("", f"{ERROR[: -len('error: ')]}interrupted\n")
    assert (trio_run._r, trio_run._ALLOW_DETERMINISTIC_SCHEDULING) == before
    assert len(calls) == 3


def test_with_a_delay_budget_dfs_finds_the_frozen_read_by_holding_a_worker_back(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    timeline = tmp_path / "failing.svg"
    args = ["explore", RACE, "--no-barrier", "--strategy", "dfs", "--bound", "0"]
    assert main([*args, "--delays", "1", "--timeline", str(timeline)]) == 1
    out = capsys.readouterr().out
    assert "a frozen view" in out
    assert re.search(rf"^FAIL {re.escape(RACE)}: dfs bound 0 delays 1: ", out, re.M), out
    assert re.search(r"^  choice \d+: held \S+ back for 1 batch", out, re.M), out
    assert f"  timeline: {timeline}" in out
    assert timeline.read_text().startswith("<svg")
    assert "held tasks back" in out
    (replay,) = re.findall(r"^  replay: (trio-reconcile explore .*)$", out, re.M)
    assert main(shlex.split(replay)[1:]) == 1
    assert "a failing schedule in run 1 (1 runs" in capsys.readouterr().out


def test_with_the_barrier_every_schedule_within_one_delay_answers_every_read(
    capsys: pytest.CaptureFixture[str],
) -> None:
    args = ["explore", RECREATE, "--strategy", "dfs", "--bound", "0", "--delays", "1"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert re.search(
        rf"^ok {re.escape(RECREATE)}: dfs bound 0 delays 1: \d+ runs, complete, ", out, re.M
    ), out


def test_a_latency_makes_the_runs_and_the_replay_line_carry_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    args = ["explore", RECREATE, "--strategy", "random", "--budget", "3", "--latency", "0.001"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert re.search(rf"^ok {re.escape(RECREATE)}: random latency 0-0.001s: 3 runs", out, re.M)


def test_latency_alone_finds_the_frozen_read_without_the_barrier_and_none_with_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # The sequencers' broadcasts travel with latency too: one runtime's
    # commands can reach its worker before the other's, with no reordering.
    latency = ["--strategy", "random", "--budget", "20", "--latency", "0.001"]
    assert main(["explore", RECREATE, *latency, "--no-barrier"]) == 1
    out = capsys.readouterr().out
    assert "bound to dropped publisher #1: a frozen view" in out, out
    assert re.search(r"schedule: 1: \(0 non-default choices", out), out
    assert main(["explore", RECREATE, *latency]) == 0
    out = capsys.readouterr().out
    assert re.search(rf"^ok {re.escape(RECREATE)}: random latency 0-0.001s: 20 runs", out, re.M)


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("--delays", "-1"),
        ("--delays", "101"),
        ("--delays", "x"),
        ("--latency", "-0.1"),
        ("--latency", "nan"),
        ("--latency", "inf"),
        ("--latency", "1e3"),
        ("--latency", "0.5,0.1"),
        ("--latency", "1,2,3"),
        ("--latency", "3601"),
        ("--latency", ""),
    ],
)
def test_a_bad_delay_budget_or_latency_is_refused_before_anything_runs(
    capsys: pytest.CaptureFixture[str], option: str, value: str
) -> None:
    assert main(["explore", RECREATE, option, value]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert f"{EXPLORE_ERROR}argument {option}: " in err


def test_with_and_without_the_reduction_the_same_failing_schedule_is_found(
    capsys: pytest.CaptureFixture[str],
) -> None:
    args = ["explore", RACE, "--no-barrier", "--strategy", "dfs", "--bound", "1", "--delays", "1"]
    found = []
    for extra in ([], ["--no-reduction"]):
        assert main([*args, *extra]) == 1
        out = capsys.readouterr().out
        found.append(re.findall(r"^  schedule: (\S+)", out, re.M))
    assert found[0] == found[1]
    assert len(found[0]) == 1


def test_pct_with_a_delay_budget_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explore", RECREATE, "--strategy", "pct", "--delays", "1"]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert f"{EXPLORE_ERROR}argument --delays: pct holds no task back" in err


def test_the_replay_line_carries_the_latency_exactly(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["explore", RACE, "--no-barrier", "--strategy", "dfs", "--bound", "1"]
    assert main([*args, "--latency", "0.00123456789,0.0020000001"]) == 1
    out = capsys.readouterr().out
    (replay,) = re.findall(r"^  replay: (trio-reconcile explore .*)$", out, re.M)
    assert "--latency=0.00123456789,0.0020000001" in shlex.split(replay)


def test_dependence_prints_what_made_steps_dependent_most_first(
    capsys: pytest.CaptureFixture[str],
) -> None:
    command = ["explore", RECREATE, "--strategy", "dfs", "--bound", "0", "--dependence"]
    assert main(command) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    header = lines.index(
        "  dependent pairs of steps in one batch, by what both touched (a pair counts "
        "under each thing it met on):"
    )
    assert lines[header - 1].startswith(f"ok {RECREATE}: dfs bound 0: "), out
    shown = [re.fullmatch(r"  +(\d+)  (.+)", line) for line in lines[header + 1 :]]
    assert shown, out
    assert all(shown), out
    counts = [int(found[1]) for found in shown if found]
    assert counts[:-1] == sorted(counts[:-1], reverse=True), out
    # The index both runtimes' workers bind is among what orders their steps.
    assert any(found[2] == "IndexPart" for found in shown if found), out
    assert main(command[:-1]) == 0
    assert "dependent pairs" not in capsys.readouterr().out


def test_dependence_under_pct_says_there_is_nothing_to_count(
    capsys: pytest.CaptureFixture[str],
) -> None:
    command = ["explore", RECREATE, "--strategy", "pct", "--budget", "2", "--dependence"]
    assert main(command) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[-1].startswith("  no dependent pairs of steps in one batch counted (pct"), lines
    assert not any(line.startswith("  dependent pairs") for line in lines)


def test_jobs_share_the_last_level_and_keep_every_trace(
    capsys: pytest.CaptureFixture[str],
) -> None:
    command = ["explore", RECREATE, "--strategy", "dfs", "--bound", "1", "--count-traces"]
    counts = []
    for jobs in ("1", "2"):
        assert main([*command, "--jobs", jobs]) == 0
        out = capsys.readouterr().out
        shown = "" if jobs == "1" else " jobs 2"
        found = re.search(
            rf"^ok {re.escape(RECREATE)}: dfs bound 1{shown}: (\d+) runs, complete, \d+ "
            r"interleavings \((\d+) traces\)",
            out,
            re.M,
        )
        assert found, out
        counts.append((int(found[1]), int(found[2])))
    assert counts[0][1] == counts[1][1], counts
    assert counts[1][0] >= counts[0][0], counts


def test_jobs_are_not_shown_where_there_is_no_level_to_share(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["explore", RECREATE, "--strategy", "dfs", "--bound", "0", "--jobs", "3"]) == 0
    assert f"ok {RECREATE}: dfs bound 0: 1 runs, complete" in capsys.readouterr().out


def test_with_jobs_the_frozen_read_is_found_and_replays(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["explore", RACE, "--no-barrier", "--strategy", "dfs", "--bound", "1", "--jobs", "2"]
    assert main(args) == 1
    out = capsys.readouterr().out
    assert "a frozen view" in out
    (replay,) = re.findall(r"^  replay: (trio-reconcile explore .*)$", out, re.M)
    assert main(shlex.split(replay)[1:]) == 1
    assert "a failing schedule in run 1 (1 runs" in capsys.readouterr().out
