from __future__ import annotations

import subprocess
import sys
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "replicated_ledger.py"


def run_example(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(EXAMPLE), *args], capture_output=True, text=True, check=False
    )


def test_the_replicas_agree_and_the_auditor_is_restarted() -> None:
    result = run_example("--seed", "1")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "leader stamped transfers 0..11"
    assert all(line.endswith("(agree)") for line in lines[1:4])
    assert lines[4] == " total: 300 (money is conserved)"
    assert lines[5] == "auditor: checked 10 transfers, restarted 2 times"
    assert result.stderr == ""


def test_the_example_is_deterministic(tmp_path: Path) -> None:
    first, second = tmp_path / "first.jsonl", tmp_path / "second.jsonl"
    assert run_example("--trace", str(first)).stdout.replace(str(first), "T") == (
        run_example("--trace", str(second)).stdout.replace(str(second), "T")
    )
    assert first.read_text() == second.read_text()
    assert len(first.read_text().splitlines()) == 79  # with a left event per replica at the end


def test_an_exhausted_restart_budget_escalates_and_exits_1() -> None:
    result = run_example("--seed", "2")
    assert result.returncode == 1
    assert result.stderr == (
        "the auditor's restart budget ran out: supervisor 'audit-supervisor': "
        "restarting actor 'auditor' would be restart 3 within 10s, over the intensity 2\n"
    )
