"""``trio-reconcile simulate``: random programs with a line of progress each."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from replica.driver import main


def test_random_programs_pass_with_the_barrier_and_report_progress(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["simulate", "--programs", "6", "--faults", "0.2", "--out", str(tmp_path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split("]")[0] for line in lines[:6]] == [f"[{n}/6" for n in range(1, 7)]
    assert all(line.endswith("stanzas)") for line in lines[:6])
    assert re.fullmatch(r"simulate: 6 programs, 0 failed \(\d+\.\d programs/s\)", lines[6])
    assert list(tmp_path.iterdir()) == []


def test_without_the_barrier_a_failure_is_written_as_a_spec_that_replays(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["simulate", "--programs", "12", "--seed", "4", "--no-barrier", "--out", str(tmp_path)]
    assert main(args) == 1
    failures = [line for line in capsys.readouterr().out.splitlines() if "FAIL" in line]
    assert failures
    replay = failures[0].split("replay: trio-reconcile ")[1].split()
    assert main(replay) == 1  # the race again, without the barrier
    with_barrier = [word for word in replay if word != "--no-barrier"]
    assert main(with_barrier) == 0  # and the barrier fixes the same program
