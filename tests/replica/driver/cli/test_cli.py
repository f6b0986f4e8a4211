from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from replica.driver import main
from replica.driver.cli._main import build_parser


def test_version_prints_the_version(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--version"]) == 0
    assert capsys.readouterr().out == "trio-reconcile 0.1.0\n"


def test_bad_arguments_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--no-such-option"]) == 2
    assert "unrecognized arguments: --no-such-option" in capsys.readouterr().err


def test_the_console_script_is_installed() -> None:
    script = Path(sys.executable).parent / "trio-reconcile"
    result = subprocess.run([str(script), "--version"], capture_output=True, text=True, check=False)
    assert (result.returncode, result.stdout) == (0, "trio-reconcile 0.1.0\n")


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        ("--workers", "65", "must be at most 64: 65"),
        ("--workers", "100000", "must be at most 64: 100000"),
        ("--processes", "17", "must be at most 16: 17"),
        ("--workers", "9" * 5000, "must be at most 64: 99999999999999999999... (5000 digits)"),
        ("--workers", "0", "must be at least 1: 0"),
        ("--processes", "000", "must be at least 1: 0"),
    ],
)
def test_workers_and_processes_out_of_bounds_exit_2_before_anything_runs(
    capsys: pytest.CaptureFixture[str], option: str, value: str, message: str
) -> None:
    assert main(["run", "missing.spec", option, value]) == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        f"trio-reconcile run: error: argument {option}: {message}"
    )


@pytest.mark.parametrize("value", ["٣", "+3", " 3", "3_0", "3.0", "0x3", ""])
def test_workers_written_other_than_in_ascii_digits_exit_2(
    capsys: pytest.CaptureFixture[str], value: str
) -> None:
    assert main(["run", "missing.spec", "--workers", value]) == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        f"trio-reconcile run: error: argument --workers: not a whole number (digits 0-9): {value!r}"
    )


def test_the_largest_workers_and_processes_are_accepted() -> None:
    args = build_parser().parse_args(["run", "x.spec", "--workers", "64", "--processes", "016"])
    assert (args.workers, args.processes) == (64, 16)


def test_simulate_programs_are_bounded(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "--programs", "1000000001"]) == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        "trio-reconcile simulate: error: argument --programs: must be at most 1000000000: "
        "1000000001"
    )


def test_run_help_states_the_bounds_of_workers_and_processes(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["run", "--help"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "--workers W workers per process, 1 to 64 (default 1)" in out
    assert "--processes P processes per runtime, 1 to 16 (default 1)" in out
