"""``trio-reconcile run`` takes folders as well as files: a folder stands for
every ``*.spec`` file directly in it, sorted by name."""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import NoReturn

import pytest

from replica.driver import main

PASSES = "settle\n----\nok\n"
TOPOLOGY = "(P=1 W=1 two runtimes)"


def ok(path: Path | str) -> str:
    return f"ok {path}: 1 stanzas {TOPOLOGY}"


def test_a_folder_runs_every_spec_directly_in_it_sorted_by_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in ["b.spec", "a.spec", "B.spec", "a.spec.txt", "notes.txt", ".hidden.spec"]:
        (tmp_path / name).write_text(PASSES, encoding="utf-8")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "c.spec").write_text(PASSES, encoding="utf-8")
    (tmp_path / "folder.spec").mkdir()
    assert main(["run", str(tmp_path)]) == 0
    assert capsys.readouterr() == (
        "".join(f"{ok(tmp_path / name)}\n" for name in ["B.spec", "a.spec", "b.spec"]),
        "",
    )


def test_files_and_folders_run_in_the_order_given(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "folder"
    folder.mkdir()
    (folder / "inside.spec").write_text(PASSES, encoding="utf-8")
    first, last = tmp_path / "first.spec", tmp_path / "last.spec"
    first.write_text(PASSES, encoding="utf-8")
    last.write_text(PASSES, encoding="utf-8")
    assert main(["run", str(first), str(folder), str(last)]) == 0
    assert capsys.readouterr().out.splitlines() == [
        ok(first),
        ok(folder / "inside.spec"),
        ok(last),
    ]


def test_a_folder_given_with_a_trailing_slash_names_its_specs_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "a.spec").write_text(PASSES, encoding="utf-8")
    assert main(["run", f"{tmp_path}/"]) == 0
    assert capsys.readouterr().out == f"{ok(tmp_path / 'a.spec')}\n"


def test_an_empty_folder_is_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", str(tmp_path)]) == 2
    assert capsys.readouterr() == (
        "",
        f"{tmp_path}: no *.spec file directly in the folder "
        "(folders are not searched recursively)\n",
    )


def test_a_folder_whose_specs_are_all_in_sub_folders_is_bad_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "notes.txt").write_text("", encoding="utf-8")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "a.spec").write_text(PASSES, encoding="utf-8")
    assert main(["run", str(tmp_path)]) == 2
    assert capsys.readouterr().err == (
        f"{tmp_path}: no *.spec file directly in the folder "
        "(folders are not searched recursively)\n"
    )


def test_a_folder_without_a_spec_runs_nothing_even_after_a_good_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = tmp_path / "good.spec"
    good.write_text(PASSES, encoding="utf-8")
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["run", str(good), str(empty)]) == 2
    assert capsys.readouterr().out == ""


def test_a_folder_that_cannot_be_listed_is_bad_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def denied(path: str) -> NoReturn:
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), path)

    monkeypatch.setattr(os, "listdir", denied)
    assert main(["run", str(tmp_path)]) == 2
    assert capsys.readouterr() == ("", f"{tmp_path}: cannot list the folder: Permission denied\n")


def test_rewrite_of_a_folder_rewrites_each_of_its_specs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in ["a.spec", "b.spec"]:
        (tmp_path / name).write_text("settle\n----\nwrong\n", encoding="utf-8")
    assert main(["run", str(tmp_path), "--rewrite"]) == 0
    assert [(tmp_path / name).read_text(encoding="utf-8") for name in ["a.spec", "b.spec"]] == [
        PASSES,
        PASSES,
    ]
    assert capsys.readouterr().out == "".join(
        f"rewrote {tmp_path / name} (1 stanzas, P=1 W=1 two runtimes)\n"
        for name in ["a.spec", "b.spec"]
    )


def test_an_output_that_is_a_spec_of_a_folder_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = tmp_path / "a.spec"
    spec.write_text(PASSES, encoding="utf-8")
    assert main(["run", str(tmp_path), "--trace", str(spec)]) == 2
    assert capsys.readouterr() == (
        "",
        f"trio-reconcile: error: --trace {spec}: the same file as spec {spec}\n",
    )
    assert spec.read_text(encoding="utf-8") == PASSES


def test_run_help_says_what_a_folder_stands_for(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--help"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert (
        "SPEC spec files (in the language the README describes) or folders, "
        "run in order; a folder stands for every "
        "*.spec file directly in it (not in its sub-folders; hidden files aside), sorted by "
        "name, and a folder without one is bad input"
    ) in out
