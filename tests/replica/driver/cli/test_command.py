"""The ``trio-reconcile`` command end to end, in a subprocess."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ....paths import ROOT

SPECS = ROOT / "replica" / "driver" / "specs"
EXTERNAL = ROOT.parent / "shared" / "external" / "reconciliation.spec"
SCRIPT = str(Path(sys.executable).parent / "trio-reconcile")
BUNDLED = sorted(path.name for path in SPECS.glob("*.spec"))


def trio_reconcile(
    *args: str, cwd: Path | None = None, **env: str
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [SCRIPT, *args],
        capture_output=True,
        text=True,
        check=False,
        cwd=cwd,
        env={**os.environ, **env},
    )


def test_every_bundled_spec_passes_with_both_runtimes() -> None:
    # The installed command, on the largest of its topologies; every spec on
    # every topology is tests/replica/driver/run/test_bundled_specs.py.
    topology = ["--processes", "2", "--workers", "2"]
    result = trio_reconcile("run", *(str(SPECS / name) for name in BUNDLED), *topology)
    assert result.returncode == 0, result.stdout + result.stderr
    assert len([line for line in result.stdout.splitlines() if line.startswith("ok ")]) == len(
        BUNDLED
    )


@pytest.mark.skipif(not EXTERNAL.is_file(), reason="../shared/external is not here")
@pytest.mark.parametrize("runtimes", ["--solo", "--interactive"])
@pytest.mark.parametrize("workers", ["1", "2"])
def test_the_real_drivers_reconciliation_spec_runs_unchanged(runtimes: str, workers: str) -> None:
    result = trio_reconcile("run", str(EXTERNAL), runtimes, "--workers", workers)
    assert result.returncode == 0, result.stdout + result.stderr


def test_without_the_barrier_the_recreate_spec_fails_where_the_race_bites() -> None:
    spec = SPECS / "two_runtime_recreate_index.spec"
    result = trio_reconcile("run", str(spec), "--no-barrier")
    assert result.returncode == 1
    assert result.stdout.splitlines()[:8] == [
        f"{spec}:78: peek id=1001 ts=1 timeout-secs=10",
        "  expected:",
        '    1 "alpha"',
        '    2 "beta"',
        '    3 "gamma"',
        "  actual:",
        "    error: timed out after 10s",
        f"FAIL {spec}: 1 of 18 stanzas differ (P=1 W=1 two runtimes, no barrier)",
    ]


def test_rewrite_fixes_expected_blocks_and_then_the_spec_passes(tmp_path: Path) -> None:
    spec = tmp_path / "rewrite.spec"
    original = (SPECS / "rows.spec").read_text(encoding="utf-8")
    broken = original.replace('-5 "neg"\n', "wrong\n").replace("----\n9\n", "----\n8\nextra\n")
    assert broken != original
    spec.write_text(broken, encoding="utf-8")
    assert trio_reconcile("run", str(spec)).returncode == 1
    assert trio_reconcile("run", str(spec), "--rewrite").returncode == 0
    assert spec.read_text(encoding="utf-8") == original
    spec.write_text(broken, encoding="utf-8")
    assert trio_reconcile("run", str(spec), REWRITE="1").returncode == 0
    assert spec.read_text(encoding="utf-8") == original
    assert trio_reconcile("run", str(spec)).returncode == 0


def test_the_workflow_runs_from_the_installed_package_in_any_directory(tmp_path: Path) -> None:
    result = trio_reconcile("workflow", "two-runtime-compute", cwd=tmp_path)
    assert result.returncode == 0, result.stdout
    rows = result.stdout.splitlines()
    assert len([row for row in rows if row.endswith("stanzas)")]) == 4 * len(BUNDLED)
    assert rows[-1] == "workflow two-runtime-compute: passed"


def test_the_demo_shows_the_race_and_the_fix(tmp_path: Path) -> None:
    result = trio_reconcile("demo", cwd=tmp_path)
    assert result.returncode == 0, result.stdout
    assert "   final read: error: timed out after 10s" in result.stdout
    assert '   final read: 1 "alpha" | 2 "beta" | 3 "gamma"' in result.stdout
    assert "peer u1001@0 bound to publisher #1, frozen: its publisher was dropped" in result.stdout


def test_a_trace_file_can_be_written(tmp_path: Path) -> None:
    trace = tmp_path / "trace.jsonl"
    result = trio_reconcile("run", str(SPECS / "drops.spec"), "--trace", str(trace))
    assert result.returncode == 0
    assert '"kind": "delivered"' in trace.read_text(encoding="utf-8")


@pytest.mark.parametrize(
    "args",
    [
        ["run"],
        ["run", "x.spec", "--workers", "0"],
        ["run", "x.spec", "--solo", "--interactive"],
        ["workflow", "nope"],
        ["frobnicate"],
    ],
)
def test_bad_arguments_exit_2(args: list[str]) -> None:
    result = trio_reconcile(*args)
    assert result.returncode == 2
    assert "error:" in result.stderr


def test_no_command_is_a_usage_error() -> None:
    result = trio_reconcile()
    assert result.returncode == 2
    assert result.stderr.splitlines()[-1] == (
        "trio-reconcile: error: a command is required "
        "(run, workflow, simulate, demo, explore or serve)"
    )
    assert shutil.which(SCRIPT) is not None
