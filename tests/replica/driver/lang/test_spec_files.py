"""Spec files: malformed input is refused with FILE:LINE and exit 2, before
anything runs; rows print as the format says."""

from __future__ import annotations

from pathlib import Path

import pytest

from replica.driver import main
from replica.driver.lang._data import render_datum as format_field
from replica.driver.lang._data import render_rows as format_rows
from replica.driver.lang._spec import parse_row, parse_spec, rewrite

GOOD = "create-instance\n----\nok\n"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("bogus-directive\n----\nok\n", "1: unknown directive 'bogus-directive'"),
        ("create-instance\nok\n", "1: missing ---- after directive 'create-instance'"),
        (
            "create-instance\n\ninitialization-complete\n----\nok\n",
            "1: missing ---- after directive 'create-instance'",
        ),
        ("schedule\n----\nok\n", "1: schedule: missing key 'id'"),
        ("schedule id=1 color=red\n----\nok\n", "1: schedule: unknown key 'color'"),
        (
            "schedule id=x\n----\nok\n",
            "1: schedule: bad value 'x' for 'id': "
            "an id is a whole number >= 0, optionally prefixed u, s, si or t",
        ),
        (
            "define-index source=1 index=2 shard=s key=0 as-of=0\n----\nok\n",
            "1: define-index: bad value '0' for 'key': a list is written [], [0] or [0,1]",
        ),
        ("schedule id\n----\nok\n", "1: schedule: malformed argument 'id' (want key=value)"),
        ("schedule id=1 id=2\n----\nok\n", "1: schedule: key 'id' given twice"),
        (
            "hold runtime=both\n----\nok\n",
            "1: hold: bad value 'both' for 'runtime': runtime is maintenance or interactive",
        ),
        (
            "peek id=1 ts=0 timeout-secs=soon\n----\nok\n",
            "1: peek: bad value 'soon' for 'timeout-secs': timeout-secs is a number of seconds",
        ),
        ("settle\n  1 2\n----\nok\n", "2: directive 'settle' takes no body"),
        (GOOD + "\n  indented\n----\n", "5: a directive starts in the first column"),
        (
            "define-index source=1 index=2 shard=s key=[x] as-of=0\n----\nok\n",
            "1: define-index: bad value '[x]' for 'key': a list is written [], [0] or [0,1]",
        ),
    ],
)
def test_malformed_specs_exit_2_naming_file_and_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, message: str
) -> None:
    spec = tmp_path / "bad.spec"
    spec.write_text(text, encoding="utf-8")
    assert main(["run", str(spec)]) == 2
    captured = capsys.readouterr()
    assert captured.err == f"{spec}:{message}\n"
    assert captured.out == ""  # nothing ran


def test_a_file_that_is_not_utf8_is_bad_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = tmp_path / "latin1.spec"
    spec.write_bytes(b"create-instance\n----\nok\n\n# caf\xe9\n")
    assert main(["run", str(spec)]) == 2
    assert capsys.readouterr().err == f"{spec}:5: the file is not valid UTF-8\n"


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (
            b"create-instance\n----\nok\r\n\nschedule id=1\r\n----\rok\n",
            "6: carriage return not followed by a line feed",
        ),
        (b"\xef\xbb\xbfcreate-instance\n----\nok\n", "1: the file starts with a byte order mark"),
    ],
)
def test_a_lone_carriage_return_and_a_byte_order_mark_are_bad_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], data: bytes, message: str
) -> None:
    spec = tmp_path / "windows.spec"
    spec.write_bytes(data)
    assert main(["run", str(spec)]) == 2
    assert capsys.readouterr().err == f"{spec}:{message}\n"


def test_a_crlf_file_runs_as_its_lf_twin_does(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = (
        "# written on Windows\n"
        "create-instance\n----\nok\n\n"
        "initialization-complete\n----\nok\n\n"
        "write-rows shard=s ts=0\n  1 a\n  2 b \n----\nwrote 2\n\n"
        "define-index source=1 index=2 shard=s key=[0] as-of=0 upper=1\n----\nok\n\n"
        "schedule id=2\n----\nok\n\n"
        'peek id=2 ts=0\n----\n1 "a"\n2 "b"\n'
    )
    spec = tmp_path / "windows.spec"
    spec.write_bytes(text.replace("\n", "\r\n").encode())
    assert main(["run", str(spec)]) == 0
    assert "ok" in capsys.readouterr().out


def test_a_crlf_file_is_rewritten_with_crlf() -> None:
    text = "create-instance\r\n----\r\nwrong\r\n\r\n# done\r\n"
    spec = parse_spec(text, "x.spec")
    assert spec.stanzas[0].expected == ("wrong",)
    assert rewrite(spec, [["ok"]]) == text.replace("wrong", "ok")


def test_a_comment_between_a_directive_and_its_divider_is_a_comment() -> None:
    text = "write-rows shard=s ts=0\n  1\n# a note\n  2\n----\nwrote 2\n"
    (stanza,) = parse_spec(text, "x.spec").stanzas
    assert (stanza.body, stanza.expected) == (("1", "2"), ("wrote 2",))


def test_a_bad_file_stops_every_file_from_running(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good, bad = tmp_path / "good.spec", tmp_path / "bad.spec"
    good.write_text(GOOD, encoding="utf-8")
    bad.write_text("nope\n----\n", encoding="utf-8")
    assert main(["run", str(good), str(bad)]) == 2
    assert capsys.readouterr().out == ""


def test_a_missing_file_is_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", str(tmp_path / "none.spec")]) == 2
    assert "cannot read" in capsys.readouterr().err


def test_comments_blank_lines_and_empty_expected_blocks_parse() -> None:
    spec = parse_spec("# a comment\n\nsettle\n----\n\ncreate-instance\n----\nok\n", "x.spec")
    assert [(s.line, s.name, s.expected) for s in spec.stanzas] == [
        (3, "settle", ()),
        (6, "create-instance", ("ok",)),
    ]


def test_update_configuration_takes_any_keys() -> None:
    (stanza,) = parse_spec("update-configuration a=1 b=x\n----\nok\n", "x.spec").stanzas
    assert stanza.args == {"a": "1", "b": "x"}


def test_body_fields_that_look_like_integers_are_integers() -> None:
    assert parse_row('1 -2 x3 3x "q"') == (1, -2, "x3", "3x", '"q"')


def test_rows_print_sorted_as_text_with_json_escaped_strings() -> None:
    rows = [(2, "b"), ("z",), (1, 'say"hi"'), (1, "tab\there"), (1, "é\\"), (10, "x")]
    # Sorted as text, as the real driver sorts its lines: "10" before "2",
    # '"' before digits.
    assert format_rows(rows) == [
        '"z"',
        '1 "say\\"hi\\""',
        '1 "tab\\there"',
        '1 "é\\\\"',
        '10 "x"',
        '2 "b"',
    ]
    assert format_field("\u0001") == '"\\u0001"'
    assert format_field("del\x7f c1\x85 é") == '"del\\u007f c1\\u0085 é"'
