"""``trio-reconcile run --topologies``: each spec on several topologies, a
table of the results, the mismatches under their run, and the totals."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from replica.driver import main

PASSES = "settle\n----\nok\n"
WRONG = "settle\n----\nwrong\n"
# Fails with one runtime only: there is no interactive runtime to hold.
TWO_RUNTIMES_ONLY = "hold runtime=interactive\n----\nok\n\nrelease runtime=interactive\n----\nok\n"
HEADER = "spec    solo-w1     solo-w2p2   two-w1      two-w2      two-w2p2"
TOTALS = (
    r"{runs} runs \({specs} specs on {topologies} topologies\): "
    r"{passed} passed, {failed} failed, in \d+\.\ds"
)
ERROR = "trio-reconcile run: error: "


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def specs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder, the current one, so the table's paths are short."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_topologies_all_prints_a_row_per_spec_and_a_column_per_topology(
    specs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write(specs, "a.spec", PASSES)
    write(specs, "b.spec", PASSES)
    assert main(["run", "a.spec", "b.spec", "--topologies", "all"]) == 0
    out, err = capsys.readouterr()
    *table, blank, totals = out.splitlines()
    assert table == [
        HEADER,
        "a.spec  ok          ok          ok          ok          ok",
        "b.spec  ok          ok          ok          ok          ok",
    ]
    assert blank == ""
    assert re.fullmatch(
        TOTALS.format(runs=10, specs=2, topologies=5, passed=10, failed=0), totals
    ), totals
    assert err == ""


def test_a_run_that_fails_shows_its_count_in_its_cell_and_its_mismatches_under_its_topology(
    specs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write(specs, "ok.spec", PASSES)
    write(specs, "wrong.spec", WRONG)
    assert main(["run", "ok.spec", "wrong.spec", "--topologies", "two-w2,solo-w1"]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[:-1] == [
        "spec        two-w2      solo-w1",
        "ok.spec     ok          ok",
        "wrong.spec  FAIL (1)    FAIL (1)",
        "",
        "wrong.spec on two-w2:",
        "wrong.spec:1: settle",
        "  expected:",
        "    wrong",
        "  actual:",
        "    ok",
        "FAIL wrong.spec: 1 of 1 stanzas differ (P=1 W=2 two runtimes)",
        "",
        "wrong.spec on solo-w1:",
        "wrong.spec:1: settle",
        "  expected:",
        "    wrong",
        "  actual:",
        "    ok",
        "FAIL wrong.spec: 1 of 1 stanzas differ (P=1 W=1 solo)",
        "",
    ]
    assert re.fullmatch(
        TOTALS.format(runs=4, specs=2, topologies=2, passed=2, failed=2), lines[-1]
    ), lines[-1]


def test_each_topology_runs_the_replica_it_names(
    specs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write(specs, "two.spec", TWO_RUNTIMES_ONLY)
    assert main(["run", "two.spec", "--topologies", "all"]) == 1
    out = capsys.readouterr().out
    assert out.splitlines()[:2] == [
        "spec      solo-w1     solo-w2p2   two-w1      two-w2      two-w2p2",
        "two.spec  FAIL (2)    FAIL (2)    ok          ok          ok",
    ]
    assert "FAIL two.spec: 2 of 2 stanzas differ (P=1 W=1 solo)\n" in out
    assert "FAIL two.spec: 2 of 2 stanzas differ (P=2 W=2 solo)\n" in out


def test_topologies_take_a_folder(specs: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = specs / "folder"
    folder.mkdir()
    write(folder, "a.spec", PASSES)
    assert main(["run", "folder", "--topologies", "two-w1"]) == 0
    assert capsys.readouterr().out.splitlines()[:2] == [
        "spec           two-w1",
        "folder/a.spec  ok",
    ]


def test_the_options_of_every_run_apply_to_every_topology(
    specs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write(specs, "wrong.spec", WRONG)
    assert main(["run", "wrong.spec", "--topologies", "two-w1", "--no-barrier"]) == 1
    assert "FAIL wrong.spec: 1 of 1 stanzas differ (P=1 W=1 two runtimes, no barrier)\n" in (
        capsys.readouterr().out
    )


def test_a_timeline_with_topologies_draws_a_panel_for_every_run(
    specs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write(specs, "a.spec", PASSES)
    assert main(["run", "a.spec", "--topologies", "solo-w1,two-w2", "--timeline", "t.svg"]) == 0
    svg = (specs / "t.svg").read_text(encoding="utf-8")
    assert "a.spec (P=1 W=1 solo)" in svg
    assert "a.spec (P=1 W=2 two runtimes)" in svg


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (
            "two-w3",
            "unknown topology 'two-w3' (all, or a comma-separated list of "
            "solo-w1, solo-w2p2, two-w1, two-w2, two-w2p2)",
        ),
        (
            "all,two-w1",
            "unknown topology 'all' (all, or a comma-separated list of "
            "solo-w1, solo-w2p2, two-w1, two-w2, two-w2p2)",
        ),
        (
            "two-w1,",
            "unknown topology '' (all, or a comma-separated list of "
            "solo-w1, solo-w2p2, two-w1, two-w2, two-w2p2)",
        ),
        ("two-w1,solo-w1,two-w1", "topology 'two-w1' is named twice"),
    ],
)
def test_a_bad_list_of_topologies_exits_2(
    capsys: pytest.CaptureFixture[str], value: str, message: str
) -> None:
    assert main(["run", "missing.spec", "--topologies", value]) == 2
    assert capsys.readouterr().err.splitlines()[-1] == f"{ERROR}argument --topologies: {message}"


@pytest.mark.parametrize(
    "option",
    [
        ["--workers", "1"],
        ["--processes", "1"],
        ["--solo"],
        ["--interactive"],
        ["--check-determinism"],
    ],
    ids=lambda option: option[0],
)
def test_topologies_with_an_option_that_chooses_one_topology_exit_2(
    specs: Path, capsys: pytest.CaptureFixture[str], option: list[str]
) -> None:
    write(specs, "a.spec", PASSES)
    assert main(["run", "a.spec", "--topologies", "all", *option]) == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        f"{ERROR}argument --topologies: not allowed with argument {option[0]}"
    )


@pytest.mark.parametrize("ask", [["--rewrite"], []], ids=["--rewrite", "REWRITE=1"])
def test_rewrite_with_several_topologies_exits_2_and_rewrites_nothing(
    specs: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, ask: list[str]
) -> None:
    spec = write(specs, "wrong.spec", WRONG)
    monkeypatch.setenv("REWRITE", "0" if ask else "1")
    assert main(["run", "wrong.spec", "--topologies", "two-w1,two-w2", *ask]) == 2
    out, err = capsys.readouterr()
    assert (out, err.splitlines()[-1]) == (
        "",
        f"{ERROR}--rewrite (or REWRITE=1) rewrites from one topology, and --topologies names 2",
    )
    assert spec.read_text(encoding="utf-8") == WRONG


def test_rewrite_with_one_topology_rewrites_from_it(
    specs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = write(specs, "wrong.spec", WRONG)
    assert main(["run", "wrong.spec", "--topologies", "solo-w2p2", "--rewrite"]) == 0
    assert spec.read_text(encoding="utf-8") == PASSES
    assert capsys.readouterr().out == "rewrote wrong.spec (1 stanzas, P=2 W=2 solo)\n"


def test_without_topologies_run_prints_as_before(
    specs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write(specs, "a.spec", PASSES)
    assert main(["run", "a.spec"]) == 0
    assert capsys.readouterr().out == "ok a.spec: 1 stanzas (P=1 W=1 two runtimes)\n"


def test_run_help_names_the_topologies(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--help"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert (
        "--topologies NAMES run each spec on several topologies and print a table (a row a "
        "spec, a column a topology; a cell is ok, or FAIL (n) when n stanzas differed or "
        "invariants broke), the mismatches and the totals: all for the five, or a "
        "comma-separated list of solo-w1, solo-w2p2, two-w1, two-w2, two-w2p2 "
        "(solo: one runtime; two: both; wN: N workers a process; p2: two processes a "
        "runtime); not with --workers, --processes, --solo, --interactive or "
        "--check-determinism, and --rewrite only with one"
    ) in out
