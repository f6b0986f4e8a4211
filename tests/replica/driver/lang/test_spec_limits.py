"""Spec files at and past their limits: numbers that do not fit, files that
are not files or are too big, rows past the write limits, and body fields
split on ASCII spaces only. Bad input exits 2 naming the file (and line)
before anything runs; a body value out of int64 is the stanza's output."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from replica.driver import main
from replica.driver.lang._spec import RowError, SpecError, parse_row, parse_spec
from replica.model import GlobalId

SETUP = "create-instance\n----\nok\n\ninitialization-complete\n----\nok\n\n"
TOO_LARGE = "number too large to fit in target type"
TOO_SMALL = "number too small to fit in target type"


def bigint_error(value: str, reason: str) -> str:
    return (
        f'error: parsing "{value}" as int64: invalid input syntax for type bigint: '
        f'{reason}: "{value}"'
    )


@pytest.fixture
def spec(tmp_path: Path) -> Path:
    return tmp_path / "limits.spec"


def run_text(spec: Path, text: str) -> int:
    spec.write_text(text, encoding="utf-8")
    return main(["run", str(spec)])


@pytest.mark.parametrize(
    ("directive", "message"),
    [
        (
            "peek id=1 ts=18446744073709551616",
            "peek: bad value '18446744073709551616' for 'ts': "
            "a time is at most 18446744073709551615 (a u64)",
        ),
        (
            "schedule id=99999999999999999999",
            "schedule: bad value '99999999999999999999' for 'id': "
            "an id is at most 18446744073709551615 (a u64)",
        ),
        (
            f"advance shard=s upper={'9' * 5000}",
            "advance: bad value '99999999999999999999'... (5000 characters) for 'upper': "
            "a time is at most 18446744073709551615 (a u64)",
        ),
        (
            "define-index source=1 index=2 shard=s key=[0,18446744073709551616] as-of=0",
            "define-index: bad value '[0,18446744073709551616]' for 'key': "
            "a key column is at most 18446744073709551615 (a u64)",
        ),
        (
            "write-single-ts shard=s ts=0 count=1000000000000",
            "write-single-ts: bad value '1000000000000' for 'count': "
            "a count is at most 1000000 (the rows a write may hold)",
        ),
        (
            f"peek id=1 ts=0 timeout-secs={'1' * 309}",
            f"peek: bad value '{'1' * 20}'... (309 characters) for 'timeout-secs': "
            "timeout-secs is at most 1000000 seconds",
        ),
        (
            "count id=1 ts=0 timeout-secs=1000000.5",
            "count: bad value '1000000.5' for 'timeout-secs': "
            "timeout-secs is at most 1000000 seconds",
        ),
    ],
)
def test_a_header_number_out_of_range_exits_2_naming_file_and_line(
    spec: Path, capsys: pytest.CaptureFixture[str], directive: str, message: str
) -> None:
    assert run_text(spec, f"{SETUP}{directive}\n----\nok\n") == 2
    assert capsys.readouterr() == ("", f"{spec}:9: {message}\n")


def test_the_largest_u64_is_a_valid_time_and_id() -> None:
    top = 2**64 - 1
    (stanza,) = parse_spec(f"peek id={top} ts={top}\n----\n", "x.spec").stanzas
    assert stanza.args == {"id": GlobalId.user(top), "ts": top}


def test_leading_zeros_do_not_count_against_a_header_number() -> None:
    (stanza,) = parse_spec(f"schedule id={'0' * 30}7\n----\nok\n", "x.spec").stanzas
    assert stanza.args == {"id": GlobalId.user(7)}


def key_of(columns: int) -> str:
    return "[" + ",".join(["0"] * columns) + "]"


def test_a_key_of_more_than_64_columns_exits_2_naming_file_and_line(
    spec: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    key = key_of(1_000_000)
    directive = f"define-index source=1 index=2 shard=s key={key} as-of=0"
    assert run_text(spec, f"{SETUP}{directive}\n----\nok\n") == 2
    assert capsys.readouterr() == (
        "",
        f"{spec}:9: define-index: bad value '[0,0,0,0,0,0,0,0,0,0'... (2000001 characters) "
        "for 'key': a key has at most 64 columns (this one has 1000000)\n",
    )


def test_an_exports_key_of_more_than_64_columns_is_bad_input() -> None:
    text = f"create-dataflow as-of=0\n  export index=2 on=1 key={key_of(65)}\n----\nok\n"
    with pytest.raises(
        SpecError,
        match=(
            r"^x\.spec:2: create-dataflow: export: bad value '\[0,0,0,0,0,0,0,0,0,0'\.\.\. "
            r"\(131 characters\) for 'key': a key has at most 64 columns \(this one has 65\)$"
        ),
    ):
        parse_spec(text, "x.spec")


def test_a_key_of_64_columns_is_read() -> None:
    text = f"define-index source=1 index=2 shard=s key={key_of(64)} as-of=0\n----\nok\n"
    (stanza,) = parse_spec(text, "x.spec").stanzas
    assert stanza.args["key"] == (0,) * 64


def test_more_than_100000_literals_exit_2_naming_file_and_line(
    spec: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    literals = "[" + ",".join(["5"] * 100_001) + "]"
    assert run_text(spec, f"{SETUP}peek-count id=1 ts=0 literals={literals}\n----\n0\n") == 2
    assert capsys.readouterr() == (
        "",
        f"{spec}:9: peek-count: bad value '[5,5,5,5,5,5,5,5,5,5'... (200003 characters) "
        "for 'literals': literals= holds at most 100000 values (this one has 100001)\n",
    )


def test_100000_literals_are_read() -> None:
    literals = "[" + ",".join(["5"] * 100_000) + "]"
    (stanza,) = parse_spec(f"peek-count id=1 ts=0 literals={literals}\n----\n0\n", "x.spec").stanzas
    assert stanza.args["literals"] == (5,) * 100_000


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ("9223372036854775808", TOO_LARGE),
        ("-9223372036854775809", TOO_SMALL),
        ("9" * 5000, TOO_LARGE),
        ("-" + "9" * 5000, TOO_SMALL),
    ],
)
def test_a_body_integer_out_of_int64_is_the_stanzas_error_line(
    spec: Path, capsys: pytest.CaptureFixture[str], value: str, reason: str
) -> None:
    text = f"write-rows shard=s ts=0\n  {value} x\n----\n{bigint_error(value, reason)}\n"
    assert run_text(spec, text) == 0
    assert capsys.readouterr() == ("ok " + str(spec) + ": 1 stanzas (P=1 W=1 two runtimes)\n", "")


def test_a_write_with_a_body_value_out_of_range_writes_nothing(
    spec: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    value = "9223372036854775808"
    text = (
        f"write-rows shard=s ts=0\n  1 a\n  {value} b\n----\n{bigint_error(value, TOO_LARGE)}\n\n"
        "write-rows shard=s ts=0\n  1 a\n----\nwrote 1\n"
    )
    assert run_text(spec, text) == 0, capsys.readouterr().out


def test_the_int64_bounds_are_integers() -> None:
    assert parse_row("9223372036854775807 -9223372036854775808 -0007") == (
        2**63 - 1,
        -(2**63),
        -7,
    )


def test_a_body_integer_too_long_for_int_raises_a_row_error_not_a_value_error() -> None:
    with pytest.raises(RowError, match=r"^parsing \"9{5000}\" as int64: .*: \"9{5000}\"$"):
        parse_row("9" * 5000)


def test_body_fields_split_on_ascii_spaces_only() -> None:
    assert parse_row("a\u00a0b  c\u3000d\te\x1cf ") == ("a\u00a0b", "c\u3000d\te\x1cf")


def test_a_body_line_keeps_other_whitespace_at_its_ends_and_a_blank_one_is_no_line() -> None:
    text = "write-rows shard=s ts=0\n  1 \u00a0x\u3000\t\n  \t\n----\nwrote 1\n"
    (stanza,) = parse_spec(text, "x.spec").stanzas
    assert stanza.body == ("1 \u00a0x\u3000",)


def test_fields_with_unicode_whitespace_are_written_and_read_back_whole(
    spec: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = (
        f"{SETUP}write-rows shard=s ts=0\n  1 x\u00a0y\n  2 \u3000\n  3 a\x1cb\n----\nwrote 3\n\n"
        "define-index source=1 index=2 shard=s key=[0] as-of=0\n----\nok\n\n"
        "schedule id=2\n----\nok\n\n"
        'peek id=2 ts=0\n----\n1 "x\u00a0y"\n2 "\u3000"\n3 "a\\u001cb"\n'
    )
    assert run_text(spec, text) == 0, capsys.readouterr().out


def test_a_fifo_as_the_spec_is_refused_without_opening_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fifo = tmp_path / "pipe.spec"
    os.mkfifo(fifo)
    assert main(["run", str(fifo)]) == 2
    assert capsys.readouterr() == ("", f"{fifo}: not a regular file\n")


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="no /dev/zero")
def test_dev_zero_as_the_spec_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "/dev/zero"]) == 2
    assert capsys.readouterr() == ("", "/dev/zero: not a regular file\n")


def test_a_spec_named_in_a_folder_that_is_not_a_regular_file_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    os.mkfifo(tmp_path / "fifo.spec")
    assert main(["run", str(tmp_path)]) == 2
    assert capsys.readouterr() == ("", f"{tmp_path / 'fifo.spec'}: not a regular file\n")


def test_a_spec_larger_than_16_mib_is_refused(
    spec: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec.write_bytes(b"#" * (16 * 1024 * 1024 + 1))
    assert main(["run", str(spec)]) == 2
    assert capsys.readouterr() == ("", f"{spec}: larger than 16 MiB (the limit for a spec file)\n")


def test_a_spec_of_exactly_16_mib_is_read(spec: Path, capsys: pytest.CaptureFixture[str]) -> None:
    stanza = b"settle\n----\nok\n\n"
    spec.write_bytes(stanza + b"#" * (16 * 1024 * 1024 - len(stanza) - 1) + b"\n")
    assert main(["run", str(spec)]) == 0
    assert capsys.readouterr().out == f"ok {spec}: 1 stanzas (P=1 W=1 two runtimes)\n"


def test_a_write_rows_body_past_the_row_limit_is_bad_input() -> None:
    text = "write-rows shard=s ts=0\n" + "  1\n" * 1_000_001 + "----\n"
    message = r"^x\.spec:1: write-rows: 1000001 body rows, more than the 1000000 a write may hold$"
    with pytest.raises(SpecError, match=message):
        parse_spec(text, "x.spec")


def test_the_rows_a_spec_writes_in_all_are_limited() -> None:
    write = "write-single-ts shard=s ts={} count=1000000\n----\nwrote 1000000\n\n"
    text = "".join(write.format(ts) for ts in range(5))
    with pytest.raises(
        SpecError,
        match=r"^x\.spec:17: write-single-ts: the spec writes more than 4000000 rows in all$",
    ):
        parse_spec(text, "x.spec")


def test_a_missing_file_is_reported_without_a_line_number(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "none.spec"
    assert main(["run", str(missing)]) == 2
    assert capsys.readouterr() == ("", f"{missing}: cannot read: No such file or directory\n")
