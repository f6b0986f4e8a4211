"""The command under hostile conditions: rewrites that fail half-way, outputs
that cannot be written, Ctrl-C; and the messages and help that say so."""

from __future__ import annotations

import argparse
import errno
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import NoReturn

import pytest
import trio

from replica.driver import main
from replica.driver.cli import _run
from replica.driver.cli._main import build_parser
from replica.driver.run import _paths

SCRIPT = str(Path(sys.executable).parent / "trio-reconcile")
WRONG = "# a spec whose expected block is wrong\nsettle\n----\nwrong\n"
RIGHT = "# a spec whose expected block is wrong\nsettle\n----\nok\n"
ERROR = "trio-reconcile: error: "


def no_space(*args: object, **kwargs: object) -> NoReturn:
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


@pytest.fixture
def spec(tmp_path: Path) -> Path:
    path = tmp_path / "wrong.spec"
    path.write_text(WRONG, encoding="utf-8")
    return path


def deny_writes_to(monkeypatch: pytest.MonkeyPatch, folder: Path) -> None:
    """``os.access`` says ``folder`` cannot be written (as it would for a
    read-only folder, even when the tests run as root)."""
    real_access = os.access
    denied = os.path.realpath(folder)

    def access(path: str, mode: int) -> bool:
        return os.path.realpath(path) != denied and real_access(path, mode)

    monkeypatch.setattr(os, "access", access)


# --rewrite replaces the spec whole or not at all.


def test_rewrite_keeps_the_specs_permissions(
    spec: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec.chmod(0o640)
    assert main(["run", str(spec), "--rewrite"]) == 0
    assert spec.read_text(encoding="utf-8") == RIGHT
    assert spec.stat().st_mode & 0o777 == 0o640
    assert capsys.readouterr().out == f"rewrote {spec} (1 stanzas, P=1 W=1 two runtimes)\n"


def test_rewrite_through_a_symbolic_link_rewrites_the_file_it_names(
    spec: Path, tmp_path: Path
) -> None:
    link = tmp_path / "link.spec"
    link.symlink_to(spec)
    assert main(["run", str(link), "--rewrite"]) == 0
    assert link.is_symlink()
    assert spec.read_text(encoding="utf-8") == RIGHT


def test_a_rewrite_that_cannot_replace_the_spec_exits_2_and_leaves_it_unchanged(
    spec: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(os, "replace", no_space)
    assert main(["run", str(spec), "--rewrite"]) == 2
    assert capsys.readouterr() == (
        "",
        f"{ERROR}cannot rewrite {spec}: No space left on device\n",
    )
    assert spec.read_text(encoding="utf-8") == WRONG
    assert list(tmp_path.iterdir()) == [spec]  # no temporary file left behind


def test_a_rewrite_that_fills_the_disk_while_writing_leaves_the_spec_unchanged(
    spec: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(os, "fsync", no_space)
    assert main(["run", str(spec), "--rewrite"]) == 2
    assert capsys.readouterr().err == f"{ERROR}cannot rewrite {spec}: No space left on device\n"
    assert spec.read_text(encoding="utf-8") == WRONG
    assert list(tmp_path.iterdir()) == [spec]


def test_ctrl_c_during_a_rewrite_leaves_the_spec_unchanged(
    spec: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def interrupt(descriptor: int) -> NoReturn:
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "fsync", interrupt)
    assert main(["run", str(spec), "--rewrite"]) == 130
    assert spec.read_text(encoding="utf-8") == WRONG
    assert list(tmp_path.iterdir()) == [spec]


def test_rewrite_in_a_folder_that_cannot_be_written_exits_2_before_anything_runs(
    spec: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    deny_writes_to(monkeypatch, tmp_path)
    monkeypatch.setenv("REWRITE", "1")
    assert main(["run", str(spec)]) == 2
    folder = os.path.realpath(tmp_path)
    assert capsys.readouterr() == (
        "",
        f"{ERROR}cannot rewrite {spec}: cannot write to folder {folder}\n",
    )
    assert spec.read_text(encoding="utf-8") == WRONG


# Output paths are checked before anything runs or is rewritten.

OUTPUTS = [
    ("run", "--trace"),
    ("run", "--chrome-trace"),
    ("run", "--timeline"),
    ("demo", "--timeline"),
]


def command(spec: Path, name: str, option: str, path: Path | str) -> list[str]:
    if name == "demo":
        return ["demo", option, str(path)]
    return ["run", str(spec), "--rewrite", option, str(path)]


@pytest.mark.parametrize(("name", "option"), OUTPUTS)
def test_an_output_in_a_missing_folder_exits_2_before_anything_runs(
    spec: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, option: str
) -> None:
    path = tmp_path / "missing" / "out"
    assert main(command(spec, name, option, path)) == 2
    assert capsys.readouterr() == (
        "",
        f"{ERROR}{option} {path}: folder {tmp_path / 'missing'} does not exist\n",
    )
    assert spec.read_text(encoding="utf-8") == WRONG


@pytest.mark.parametrize(("name", "option"), OUTPUTS)
def test_an_output_that_is_a_folder_exits_2_before_anything_runs(
    spec: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, option: str
) -> None:
    assert main(command(spec, name, option, tmp_path)) == 2
    assert capsys.readouterr() == ("", f"{ERROR}{option} {tmp_path}: is a folder\n")
    assert spec.read_text(encoding="utf-8") == WRONG


@pytest.mark.parametrize(("name", "option"), OUTPUTS)
def test_an_output_under_a_file_exits_2_before_anything_runs(
    spec: Path, capsys: pytest.CaptureFixture[str], name: str, option: str
) -> None:
    path = spec / "out"
    assert main(command(spec, name, option, path)) == 2
    assert capsys.readouterr() == ("", f"{ERROR}{option} {path}: {spec} is not a folder\n")
    assert spec.read_text(encoding="utf-8") == WRONG


@pytest.mark.parametrize(("name", "option"), OUTPUTS)
def test_an_output_in_a_folder_that_cannot_be_written_exits_2_before_anything_runs(
    spec: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    name: str,
    option: str,
) -> None:
    folder = tmp_path / "read-only"
    folder.mkdir()
    deny_writes_to(monkeypatch, folder)
    path = folder / "out"
    assert main(command(spec, name, option, path)) == 2
    assert capsys.readouterr() == ("", f"{ERROR}{option} {path}: cannot write to folder {folder}\n")
    assert spec.read_text(encoding="utf-8") == WRONG


def test_an_existing_output_that_cannot_be_written_exits_2_before_anything_runs(
    spec: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    trace = tmp_path / "trace.jsonl"
    trace.write_text("old\n", encoding="utf-8")
    deny_writes_to(monkeypatch, trace)
    assert main(["run", str(spec), "--rewrite", "--trace", str(trace)]) == 2
    assert capsys.readouterr() == ("", f"{ERROR}--trace {trace}: the file is not writable\n")
    assert spec.read_text(encoding="utf-8") == WRONG


@pytest.mark.parametrize("path", ["", "missing/"])
def test_an_output_that_is_not_a_file_name_exits_2_before_anything_runs(
    spec: Path, capsys: pytest.CaptureFixture[str], path: str
) -> None:
    assert main(["run", str(spec), "--rewrite", "--trace", path]) == 2
    assert capsys.readouterr() == ("", f"{ERROR}--trace {path!r}: not a file name\n")
    assert spec.read_text(encoding="utf-8") == WRONG


def test_an_empty_simulate_out_exits_2_before_anything_runs(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["simulate", "--out", ""]) == 2
    assert capsys.readouterr() == ("", f"{ERROR}--out '': not a folder name\n")


def test_an_output_that_is_one_of_the_specs_is_refused(
    spec: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", str(spec), "--trace", str(spec)]) == 2
    assert capsys.readouterr() == (
        "",
        f"{ERROR}--trace {spec}: the same file as spec {spec}\n",
    )
    assert spec.read_text(encoding="utf-8") == WRONG


def test_two_outputs_naming_the_same_file_are_refused(
    spec: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    assert main(["run", str(spec), "--trace", str(out), "--timeline", str(out)]) == 2
    assert capsys.readouterr() == (
        "",
        f"{ERROR}--timeline {out}: the same file as --trace {out}\n",
    )


def test_simulate_out_that_is_a_file_exits_2_before_anything_runs(
    spec: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["simulate", "--out", str(spec)]) == 2
    assert capsys.readouterr() == ("", f"{ERROR}--out {spec}: is not a folder\n")


def test_simulate_out_in_a_missing_folder_exits_2_before_anything_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "missing" / "failures"
    assert main(["simulate", "--out", str(out)]) == 2
    assert capsys.readouterr() == (
        "",
        f"{ERROR}--out {out}: folder {tmp_path / 'missing'} does not exist\n",
    )


def test_an_output_that_fails_to_write_after_the_run_exits_2_with_one_line(
    spec: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_paths, "open", no_space, raising=False)
    trace = tmp_path / "trace.jsonl"
    assert main(["run", str(spec), "--trace", str(trace)]) == 2
    assert capsys.readouterr().err == f"{ERROR}--trace {trace}: No space left on device\n"


def test_an_output_that_fails_to_write_after_the_run_leaves_every_spec_unrewritten(
    spec: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_paths, "open", no_space, raising=False)
    trace = tmp_path / "trace.jsonl"
    assert main(["run", str(spec), "--rewrite", "--trace", str(trace)]) == 2
    assert capsys.readouterr() == ("", f"{ERROR}--trace {trace}: No space left on device\n")
    assert spec.read_text(encoding="utf-8") == WRONG


# The check opens each output for writing: what the kernel refuses is found
# before anything runs.


def test_an_output_whose_name_is_too_long_exits_2_before_anything_is_rewritten(
    spec: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = tmp_path / ("a" * 300)
    assert main(["run", str(spec), "--rewrite", "--trace", str(trace)]) == 2
    assert capsys.readouterr() == ("", f"{ERROR}--trace {trace}: File name too long\n")
    assert spec.read_text(encoding="utf-8") == WRONG


def test_an_output_on_a_read_only_file_system_exits_2_before_anything_is_rewritten(
    spec: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    timeline = tmp_path / "t.svg"
    real_open = os.open

    def read_only(path: str, flags: int, mode: int = 0o777) -> int:
        if path == str(timeline):
            raise OSError(errno.EROFS, os.strerror(errno.EROFS))
        return real_open(path, flags, mode)

    monkeypatch.setattr(os, "open", read_only)
    assert main(["run", str(spec), "--rewrite", "--timeline", str(timeline)]) == 2
    assert capsys.readouterr() == ("", f"{ERROR}--timeline {timeline}: Read-only file system\n")
    assert spec.read_text(encoding="utf-8") == WRONG


def test_a_new_output_is_not_left_behind_when_the_command_stops_before_writing_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.spec"
    bad.write_text("frobnicate\n----\nok\n", encoding="utf-8")
    trace = tmp_path / "trace.jsonl"
    assert main(["run", str(bad), "--trace", str(trace)]) == 2
    assert capsys.readouterr().err.startswith(f"{bad}:1: ")
    assert sorted(tmp_path.iterdir()) == [bad]


def test_an_existing_output_keeps_its_content_when_the_command_stops_before_writing_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.spec"
    bad.write_text("frobnicate\n----\nok\n", encoding="utf-8")
    trace = tmp_path / "trace.jsonl"
    trace.write_text("old\n", encoding="utf-8")
    assert main(["run", str(bad), "--trace", str(trace)]) == 2
    assert trace.read_text(encoding="utf-8") == "old\n"


def test_a_rewrite_whose_folder_refuses_a_new_file_exits_2_before_anything_runs(
    spec: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def read_only(*args: object, **kwargs: object) -> NoReturn:
        raise OSError(errno.EROFS, os.strerror(errno.EROFS))

    monkeypatch.setattr(tempfile, "mkstemp", read_only)
    assert main(["run", str(spec), "--rewrite"]) == 2
    folder = os.path.realpath(tmp_path)
    assert capsys.readouterr() == (
        "",
        f"{ERROR}cannot rewrite {spec}: folder {folder}: Read-only file system\n",
    )
    assert spec.read_text(encoding="utf-8") == WRONG


def test_a_simulate_out_whose_name_is_too_long_exits_2_before_anything_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / ("a" * 300)
    assert main(["simulate", "--out", str(out)]) == 2
    assert capsys.readouterr() == ("", f"{ERROR}--out {out}: File name too long\n")
    assert list(tmp_path.iterdir()) == []


# Ctrl-C: exit 130 with one line.


def test_ctrl_c_exits_130_with_one_line(
    spec: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def interrupted(*args: object, **kwargs: object) -> NoReturn:
        raise KeyboardInterrupt

    monkeypatch.setattr(_run, "run_spec", interrupted)
    assert main(["run", str(spec)]) == 130
    assert capsys.readouterr() == ("", "trio-reconcile: interrupted\n")


def test_ctrl_c_anywhere_in_an_exception_group_exits_130(
    spec: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def interrupted(*args: object, **kwargs: object) -> NoReturn:
        inner = BaseExceptionGroup("nursery", [KeyboardInterrupt(), RuntimeError("cancelled")])
        raise BaseExceptionGroup("run", [inner])

    monkeypatch.setattr(_run, "run_spec", interrupted)
    assert main(["run", str(spec)]) == 130
    assert capsys.readouterr() == ("", "trio-reconcile: interrupted\n")


def test_an_exception_group_without_ctrl_c_is_not_swallowed(
    spec: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: object, **kwargs: object) -> NoReturn:
        raise ExceptionGroup("run", [ValueError("a bug")])

    monkeypatch.setattr(_run, "run_spec", broken)
    with pytest.raises(ExceptionGroup):
        main(["run", str(spec)])


def trio_out_of_memory() -> BaseException:
    error = trio.TrioInternalError("internal error in Trio - please file a bug!")
    error.__cause__ = MemoryError()
    return error


@pytest.mark.parametrize(
    "error",
    [
        MemoryError(),
        trio_out_of_memory(),
        BaseExceptionGroup("run", [BaseExceptionGroup("nursery", [MemoryError()])]),
    ],
    ids=["alone", "trio", "group"],
)
def test_running_out_of_memory_exits_1_with_one_line(
    spec: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    error: BaseException,
) -> None:
    # It ended the command with MemoryError and TrioInternalError tracebacks.
    def exhausted(*args: object, **kwargs: object) -> NoReturn:
        raise error

    monkeypatch.setattr(_run, "run_spec", exhausted)
    assert main(["run", str(spec)]) == 1
    assert capsys.readouterr() == ("", "trio-reconcile: error: out of memory\n")


def test_an_internal_error_of_trio_not_for_want_of_memory_is_not_swallowed(
    spec: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: object, **kwargs: object) -> NoReturn:
        raise trio.TrioInternalError("a bug") from ValueError("a bug")

    monkeypatch.setattr(_run, "run_spec", broken)
    with pytest.raises(trio.TrioInternalError):
        main(["run", str(spec)])


def test_ctrl_c_while_the_command_loads_exits_130_with_one_line(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import types

    import _trio_reconcile_cli

    class Loading(types.ModuleType):
        def __getattr__(self, name: str) -> NoReturn:
            raise KeyboardInterrupt

    # The console script's entry point imports the command inside main().
    monkeypatch.setitem(sys.modules, "replica.driver", Loading("replica.driver"))
    assert _trio_reconcile_cli.main() == 130
    assert capsys.readouterr() == ("", "trio-reconcile: interrupted\n")


def test_the_console_script_enters_through_the_shim() -> None:
    from importlib.metadata import entry_points

    (script,) = entry_points(group="console_scripts", name="trio-reconcile")
    assert script.value == "_trio_reconcile_cli:main"


def test_sigint_exits_130_with_one_line(tmp_path: Path) -> None:
    process = subprocess.Popen(
        [SCRIPT, "simulate", "--programs", "1000000", "--out", str(tmp_path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # A background job may inherit SIGINT ignored; Python then never raises
        # KeyboardInterrupt. Give the child the default disposition.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        assert process.stdout is not None
        first = process.stdout.readline()  # running: the first program is done
        assert first.startswith("[1/1000000] ")
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert (process.returncode, err) == (130, "trio-reconcile: interrupted\n")


# Messages and help.


def test_the_bare_command_names_every_command(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        f"{ERROR}a command is required (run, workflow, simulate, demo, explore or serve)"
    )


def test_every_option_and_positional_of_every_command_has_help() -> None:
    parser = build_parser()
    (commands,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    names = ("run", "workflow", "simulate", "demo", "explore", "serve")
    assert tuple(commands.choices) == parser.commands == names
    missing = [
        f"{name} {action.dest}"
        for name, command in commands.choices.items()
        for action in command._actions
        if not action.help
    ]
    assert missing == []


@pytest.mark.parametrize("name", ["run", "workflow", "simulate", "demo", "explore"])
def test_every_commands_help_ends_with_its_exit_statuses(
    capsys: pytest.CaptureFixture[str], name: str
) -> None:
    assert main([name, "--help"]) == 0
    out = capsys.readouterr().out
    assert "\nexit status:\n  0    " in out
    assert "\n  130  interrupted (Ctrl-C)\n" in out


def test_run_help_states_the_limits(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--help"]) == 0
    out = capsys.readouterr().out
    assert "  a spec file is a regular file of at most 16 MiB\n" in out
    assert "  a write holds at most 1,000,000 rows; a spec writes at most 4,000,000 in all\n" in out
    assert "  timeout-secs is at most 1,000,000 (virtual seconds)\n" in out
    assert "  a key (key=[..]) has at most 64 columns\n" in out
    assert "  literals=[..] holds at most 100,000 values\n" in out
