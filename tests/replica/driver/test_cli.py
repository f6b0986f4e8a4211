from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from replica.driver import main


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
