"""Input quoted in what the command prints is escaped: a spec's bytes, a
file's name or an argument cannot clear the screen, ring the bell or reorder
a line (``_escape``). Each kind of message gets each kind of character; the
printed line holds no control character and shows the escape (``repr``'s
notation, ``\\x1bc``), and the expected and actual blocks of a mismatch stay
as the spec format writes them."""

from __future__ import annotations

import logging
import os
import shlex
import subprocess
import sys
import unicodedata
from pathlib import Path

import pytest

from replica.driver import main
from replica.driver.lang._escape import EscapingFormatter, escaped

# Characters that reach a message from a spec's text: not whitespace to the
# header's tokenizer, no bracket (a list) and no quote (a string).
IN_SPECS = [
    pytest.param("\x1bc", id="esc-reset"),
    pytest.param("\x1b7\x1b8", id="esc-cursor"),
    pytest.param("\x07", id="bel"),
    pytest.param("\x7f", id="del"),
    pytest.param("\x9b2J", id="c1-csi"),
    pytest.param("\x90q", id="c1-dcs"),
    pytest.param("\u202e", id="bidi-override"),
    pytest.param("\u2066", id="bidi-isolate"),
]
# A carriage return (and a newline) too, in a name or an argument: a spec's
# text refuses a lone one before anything quotes it.
IN_NAMES = [
    *IN_SPECS,
    pytest.param("\r", id="cr"),
    pytest.param("\n", id="newline"),
    pytest.param("\x1b[2J\x1b[H", id="esc-clear"),
]

DATAFLOW = """\
create-dataflow as-of=0
  import source=100 shard=s upper=1
  build id=110
    {plan}
      Get u100
  export index=111 on=110 key=[0]
----
ok
"""
SPECS = {
    "directive-in-an-unterminated-list": "{x}all [1\n----\nok\n",
    "directive-in-an-unterminated-string": '{x}all "x\n----\nok\n',
    "unknown-directive": "{x}all\n----\nok\n",
    "header-value": "schedule id={x}\n----\nok\n",
    "header-key": "schedule {x}=1\n----\nok\n",
    "header-flag": "create-dataflow as-of=0 {x}\n----\nok\n",
    "schema-column": "define-schema name=s\n  a {x} b c\n----\nok\n",
    "configuration-row": "update-configuration\n  {x}\n----\nok\n",
    "plan-operator": DATAFLOW.replace("{plan}", "{x}Map (#0)"),
    "plan-string-token": DATAFLOW.replace("{plan}", 'Map (#0 "a{x}")'),
    "plan-table-function": DATAFLOW.replace("{plan}", 'FlatMap "a{x}"(1)'),
    "plan-string-escape": DATAFLOW.replace("{plan}", 'Map ("\\{x}")'),
    "plan-type": DATAFLOW.replace("{plan}", "Map (null::b{x})"),
    "plan-id": DATAFLOW.replace("{plan}", "Get u1{x}"),
}


def assert_escaped(printed: str, raw: str) -> None:
    """``printed`` holds no control character (and no newline but its lines'
    ends) and its last line shows ``raw`` escaped."""
    lines = printed.split("\n")
    assert lines[-1] == "", printed
    assert all(line.isprintable() for line in lines), printed
    assert escaped(raw) in lines[-2], printed


@pytest.mark.parametrize("kind", SPECS)
@pytest.mark.parametrize("raw", IN_SPECS)
def test_a_spec_error_escapes_the_input_it_quotes(
    kind: str, raw: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = tmp_path / "r6.spec"
    spec.write_text(SPECS[kind].replace("{x}", raw), encoding="utf-8")
    assert main(["run", str(spec)]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith(f"{spec}:")
    assert err.count("\n") == 1
    # A plan's lexer names the first character it cannot read, and an
    # unknown escape is a backslash and one character.
    first = kind in ("plan-operator", "plan-type", "plan-string-escape")
    assert_escaped(err, raw[0] if first else raw)


def test_the_issues_example_is_escaped(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = tmp_path / "r6.spec"
    spec.write_text("\x1b[2J\x1b[Hall: [1\n----\nok\n", encoding="utf-8")
    assert main(["run", str(spec)]) == 2
    assert capsys.readouterr().err == (
        f"{spec}:1: \\x1b[2J\\x1b[Hall:: unterminated list (a [ without its closing ])\n"
    )


def test_an_input_already_quoted_is_not_escaped_twice(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = tmp_path / "r6.spec"
    spec.write_text("\x1bc\\x1b\n----\nok\n", encoding="utf-8")
    assert main(["run", str(spec)]) == 2
    assert capsys.readouterr().err == f"{spec}:1: unknown directive '\\x1bc\\\\x1b'\n"


@pytest.mark.parametrize("raw", IN_NAMES)
@pytest.mark.parametrize("kind", ["bad-input", "unreadable", "empty-folder"])
def test_a_spec_error_escapes_the_files_name(
    kind: str, raw: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / f"r6{raw}.spec"
    if kind == "bad-input":
        path.write_text("no-such-directive\n----\nok\n", encoding="utf-8")
    elif kind == "empty-folder":
        path = tmp_path / f"specs{raw}"
        path.mkdir()
    assert main(["run", str(path)]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.count("\n") == 1
    assert_escaped(err, str(path))


@pytest.mark.parametrize("raw", IN_NAMES)
@pytest.mark.parametrize(
    "argv",
    [
        pytest.param(["demo", "{x}"], id="unrecognized-argument"),
        pytest.param(["workflow", "{x}"], id="invalid-choice"),
        pytest.param(["run", "--workers", "{x}", "a.spec"], id="invalid-value"),
        pytest.param(["run", "--topologies", "{x}", "a.spec"], id="topology"),
        pytest.param(["explore", "--replay", "1:{x}2=1", "a.spec"], id="schedule"),
        pytest.param(["run", "--trace", "{tmp}/no{x}/t.jsonl", "{spec}"], id="output-file"),
        pytest.param(["simulate", "--out", "{tmp}/no{x}/out"], id="output-folder"),
        pytest.param(["run", "--spawn", "--persist", "{x}:x", "{spec}"], id="persist-url"),
        pytest.param(
            ["run", "--spawn", "--persist", "sqlite:{tmp}/no{x}/db", "{spec}"], id="persist-path"
        ),
        pytest.param(
            [
                *("serve", "--process", "0", "--listen", "127.0.0.1:1"),
                *("--peers", "127.0.0.1:1", "--shards", "127.0.0.1:2"),
                *("--secret-file", "{tmp}/no{x}"),
            ],
            id="secret-file",
        ),
    ],
)
def test_an_argument_error_escapes_the_argument(
    argv: list[str], raw: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = tmp_path / "ok.spec"
    spec.write_text("settle\n----\nok\n", encoding="utf-8")
    given = [
        part.replace("{x}", raw).replace("{tmp}", str(tmp_path)).replace("{spec}", str(spec))
        for part in argv
    ]
    assert main(given) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.split("\n")[-2].startswith("trio-reconcile")
    assert_escaped(err, raw)


@pytest.mark.parametrize("raw", IN_SPECS)
def test_a_mismatch_escapes_its_directive_line_and_keeps_its_blocks(
    raw: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = tmp_path / f"r{raw}.spec"
    spec.write_text(
        "create-instance\n----\nok\n\ninitialization-complete\n----\nok\n\n"
        f'write-rows shard="s{raw}" ts=0\n  1 a{raw}\n----\nwrote 2{raw}\n\n'
        f"define-index source=1 index=2 shard=s{raw} key=[0] as-of=0\n----\nok\n\n"
        f"schedule id=2\n----\nok\n\n"
        f"peek id=2 ts=0\n----\n1 a{raw}\n",
        encoding="utf-8",
    )
    assert main(["run", str(spec), "--seed", "3"]) == 1
    shown = escaped(str(spec))
    assert capsys.readouterr().out.split("\n") == [
        f'{shown}:9: write-rows shard="s{escaped(raw)}" ts=0',
        "  expected:",
        f"    wrote 2{raw}",  # the spec's text, as it wrote it
        "  actual:",
        "    wrote 1",
        f"{shown}:22: peek id=2 ts=0",
        "  expected:",
        f"    1 a{raw}",
        "  actual:",
        f"    1 {escaped_json(f'a{raw}')}",  # a row's text, as SPEC_FORMAT.md renders it
        f"FAIL {shown}: 2 of 6 stanzas differ (P=1 W=1 two runtimes)",
        "",
    ]


def escaped_json(text: str) -> str:
    """A text field as SPEC_FORMAT.md's rows write it: JSON escapes for
    ``"``, ``\\`` and the control characters only."""
    out = "".join(f"\\u{ord(c):04x}" if unicodedata.category(c) == "Cc" else c for c in text)
    return f'"{out}"'


@pytest.mark.parametrize("raw", IN_NAMES)
@pytest.mark.parametrize(
    "options",
    [
        pytest.param([], id="run"),
        pytest.param(["--rewrite"], id="rewrite"),
        pytest.param(["--check-determinism"], id="check-determinism"),
        pytest.param(["--topologies", "two-w1"], id="topologies"),
        pytest.param(["explore", "--budget", "1"], id="explore"),
    ],
)
def test_what_a_run_prints_escapes_the_specs_name(
    options: list[str], raw: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = tmp_path / f"r6{raw}.spec"
    spec.write_text("settle\n----\nok\n", encoding="utf-8")
    command = ["explore", str(spec), *options[1:]] if options[:1] == ["explore"] else []
    assert main(command or ["run", str(spec), *options]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    assert all(line.isprintable() for line in out.split("\n")), out
    assert escaped(str(spec)) in out


def test_a_failing_exploration_escapes_the_specs_name_in_its_replay_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = tmp_path / "r6\x1bc.spec"
    spec.write_text("settle\n----\nwrong\n", encoding="utf-8")
    assert main(["explore", str(spec), "--budget", "1"]) == 1
    out = capsys.readouterr().out
    assert all(line.isprintable() for line in out.split("\n")), out
    assert f"  replay: trio-reconcile explore {shlex.quote(escaped(str(spec)))} " in out


# The helper and the log records.


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("plain text, é, 日本, emoji \U0001f600", "plain text, é, 日本, emoji \U0001f600"),
        ("\x1b[2J\x1b[H", "\\x1b[2J\\x1b[H"),
        ("a\rb\nc\td\x00", "a\\rb\\nc\\td\\x00"),
        ("\x07\x7f", "\\x07\\x7f"),
        ("\x80\x85\x9b\x9f", "\\x80\\x85\\x9b\\x9f"),
        ("\u202a\u202b\u202c\u202d\u202e", "\\u202a\\u202b\\u202c\\u202d\\u202e"),
        ("\u2066\u2067\u2068\u2069", "\\u2066\\u2067\\u2068\\u2069"),
        ("\u200b\u2028\xa0", "\\u200b\\u2028\\xa0"),
        ("\udc9b", "\\udc9b"),
    ],
)
def test_escaped_writes_what_repr_escapes_as_repr_does(text: str, shown: str) -> None:
    assert escaped(text) == shown == repr(text)[1:-1]
    assert escaped(shown) == shown


def test_escaped_keeps_backslashes_and_quotes_so_it_never_escapes_twice() -> None:
    assert escaped("a\\x1b 'quoted' \"too\"") == "a\\x1b 'quoted' \"too\""


def fail(message: str) -> None:
    raise ValueError(message)


def test_the_log_formatter_escapes_a_message_and_each_line_of_a_traceback() -> None:
    formatter = EscapingFormatter("%(levelname)s %(name)s: %(message)s")
    try:
        fail("bad \x1bc value")
    except ValueError:
        info = sys.exc_info()
    record = logging.LogRecord("x", logging.WARNING, __file__, 1, "%s: \x07\n", ("r\x9b",), info)
    lines = formatter.format(record).split("\n")
    assert lines[0] == "WARNING x: r\\x9b: \\x07\\n"
    assert lines[1] == "Traceback (most recent call last):"
    assert lines[-1] == "ValueError: bad \\x1bc value"
    assert all(line.isprintable() for line in lines)


def test_a_spawned_run_logs_the_specs_name_escaped(tmp_path: Path) -> None:
    """``-vv run --spawn``: the log lines quoting a spec's path (its start),
    the replica processes' included, hold no control character."""
    spec = tmp_path / "r6\x1bc\x9b2J.spec"
    spec.write_text("create-instance\n----\nok\n", encoding="utf-8")
    command = [sys.executable, "-m", "replica.driver", "-vv", "run", "--spawn", str(spec)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    result = subprocess.run(command, capture_output=True, timeout=120, check=False, env=env)
    err = result.stderr.decode("utf-8", "backslashreplace")
    assert result.returncode == 0, err
    assert f"{escaped(str(spec))}: starts on 1 ready replica processes" in err
    assert all(line.isprintable() for line in err.split("\n")), err
