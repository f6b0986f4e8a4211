"""Typed data in the driver's language: values typed by their column with the
real driver's messages, synthetic rows, and rows printed as the real driver
prints them."""

from __future__ import annotations

import pytest

from replica.driver.lang._data import (
    SAMPLE_SCHEMA,
    Column,
    ColumnType,
    DataError,
    RowError,
    ScalarType,
    Schema,
    Synthetic,
    parse_rows,
    parse_value,
    render_datum,
    render_rows,
    render_updates,
    rust_debug,
    scalar_type,
    split_values,
)
from replica.model import Datum

BIGINT = ColumnType(ScalarType.BIGINT)
INTEGER = ColumnType(ScalarType.INTEGER)
SMALLINT = ColumnType(ScalarType.SMALLINT)
BOOLEAN = ColumnType(ScalarType.BOOLEAN)
TEXT = ColumnType(ScalarType.TEXT)
DOUBLE = ColumnType(ScalarType.DOUBLE)


def schema(*types: ColumnType) -> Schema:
    return Schema(tuple(Column(f"c{i}", type) for i, type in enumerate(types)))


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("bigint", ScalarType.BIGINT),
        ("INT64", ScalarType.BIGINT),
        ("int", ScalarType.INTEGER),
        ("int32", ScalarType.INTEGER),
        ("Integer", ScalarType.INTEGER),
        ("int16", ScalarType.SMALLINT),
        ("smallint", ScalarType.SMALLINT),
        ("bool", ScalarType.BOOLEAN),
        ("boolean", ScalarType.BOOLEAN),
        ("string", ScalarType.TEXT),
        ("text", ScalarType.TEXT),
        ("double", ScalarType.DOUBLE),
        ("float8", ScalarType.DOUBLE),
    ],
)
def test_column_type_names_are_the_real_drivers_in_any_case(
    name: str, expected: ScalarType
) -> None:
    assert scalar_type(name) is expected


def test_an_unsupported_column_type_is_named_lowercased_as_the_real_driver_does() -> None:
    with pytest.raises(DataError, match=r'^unsupported column type "float4"$'):
        scalar_type("FLOAT4")


def test_the_sample_schema_is_a_bigint_id_and_a_text_payload() -> None:
    assert [(c.name, str(c.type)) for c in SAMPLE_SCHEMA.columns] == [
        ("id", "bigint"),
        ("payload", "text"),
    ]


@pytest.mark.parametrize(
    ("token", "type", "value"),
    [
        ("7", BIGINT, 7),
        ("+7", BIGINT, 7),
        ("-0007", BIGINT, -7),
        ("9223372036854775807", BIGINT, 2**63 - 1),
        ("-9223372036854775808", BIGINT, -(2**63)),
        ("2147483647", INTEGER, 2**31 - 1),
        ("-32768", SMALLINT, -(2**15)),
        ("\u00a05\u3000", BIGINT, 5),
        ("alpha", TEXT, "alpha"),
        ('"a b"', TEXT, "a b"),
        ('"null"', TEXT, "null"),
        ('"', TEXT, '"'),
        ('a"b"', TEXT, 'a"b"'),
        ("1.5", DOUBLE, 1.5),
        ("-Infinity", DOUBLE, float("-inf")),
        (".5e1", DOUBLE, 5.0),
        ("null", ColumnType(ScalarType.TEXT, nullable=True), None),
        ("null", ColumnType(ScalarType.BIGINT, nullable=True), None),
    ],
)
def test_a_value_is_typed_by_its_column(token: str, type: ColumnType, value: object) -> None:
    assert parse_value(token, type) == value


@pytest.mark.parametrize(
    ("token", "expected"),
    [(t, True) for t in ("t", "tr", "tru", "true", "y", "ye", "yes", "on", "1", " TRUE ")]
    + [(f, False) for f in ("f", "fa", "fal", "fals", "false", "n", "no", "of", "off", "0")],
)
def test_booleans_take_postgres_spellings_and_their_prefixes(token: str, expected: bool) -> None:
    assert parse_value(token, BOOLEAN) is expected


@pytest.mark.parametrize(
    ("token", "type", "message"),
    [
        (
            "not-an-int",
            BIGINT,
            'parsing "not-an-int" as int64: invalid input syntax for type bigint: '
            'invalid digit found in string: "not-an-int"',
        ),
        (
            "9223372036854775808",
            BIGINT,
            'parsing "9223372036854775808" as int64: invalid input syntax for type bigint: '
            'number too large to fit in target type: "9223372036854775808"',
        ),
        (
            "-9223372036854775809",
            BIGINT,
            'parsing "-9223372036854775809" as int64: invalid input syntax for type bigint: '
            'number too small to fit in target type: "-9223372036854775809"',
        ),
        (
            "2147483648",
            INTEGER,
            'parsing "2147483648" as int32: invalid input syntax for type integer: '
            'number too large to fit in target type: "2147483648"',
        ),
        (
            "32768",
            SMALLINT,
            'parsing "32768" as int16: invalid input syntax for type smallint: '
            'number too large to fit in target type: "32768"',
        ),
        (
            "-",
            SMALLINT,
            'parsing "-" as int16: invalid input syntax for type smallint: '
            'invalid digit found in string: "-"',
        ),
        (
            '"5"',
            BIGINT,
            'parsing "\\"5\\"" as int64: invalid input syntax for type bigint: '
            'invalid digit found in string: "\\"5\\""',
        ),
        (
            "x\u00a0y",
            BIGINT,
            'parsing "x\\u{a0}y" as int64: invalid input syntax for type bigint: '
            'invalid digit found in string: "x\u00a0y"',
        ),
        (
            "maybe",
            BOOLEAN,
            'parsing "maybe" as bool: invalid input syntax for type boolean: "maybe"',
        ),
        (
            "1.5.2",
            DOUBLE,
            'parsing "1.5.2" as float64: invalid input syntax for type double precision: "1.5.2"',
        ),
        (
            "1e999",
            DOUBLE,
            'parsing "1e999" as float64: "1e999" is out of range for type double precision',
        ),
        ("null", TEXT, "null value in non-nullable column"),
        ("null", BIGINT, "null value in non-nullable column"),
    ],
)
def test_a_value_that_does_not_parse_fails_in_the_real_drivers_words(
    token: str, type: ColumnType, message: str
) -> None:
    with pytest.raises(RowError) as raised:
        parse_value(token, type)
    assert str(raised.value) == message


def test_an_integer_thousands_of_digits_long_fails_before_int_sees_it() -> None:
    with pytest.raises(RowError, match=r"^parsing \"9{5000}\" as int64: .*: \"9{5000}\"$"):
        parse_value("9" * 5000, BIGINT)


def test_the_first_problem_reading_left_to_right_is_the_one_reported() -> None:
    with pytest.raises(RowError, match=r"number too large to fit in target type"):
        parse_value("99999999999999999999x", BIGINT)
    with pytest.raises(RowError, match=r"invalid digit found in string"):
        parse_value("1x99999999999999999999", BIGINT)


def test_row_values_split_on_ascii_spaces_and_tabs_and_a_quoted_group_is_one_value() -> None:
    assert split_values(' 1  "a b"\u00a0c\td "" x"y z" ') == [
        "1",
        '"a b"\u00a0c',
        "d",
        '""',
        'x"y z"',
    ]
    assert split_values("1\ta") == ["1", "a"]


def test_an_unterminated_quote_in_a_row_is_refused() -> None:
    with pytest.raises(ValueError, match=r'^unterminated string \(a " without its closing "\)$'):
        split_values('1 "alpha')


def test_rows_are_typed_by_their_schema() -> None:
    rows = parse_rows(
        schema(BIGINT, BOOLEAN, ColumnType(ScalarType.TEXT, nullable=True)),
        [
            ["1000", "true", "alpha"],
            ["1001", "false", "null"],
        ],
    )
    assert rows == ((1000, True, "alpha"), (1001, False, None))


def test_a_row_of_the_wrong_arity_is_named_by_its_0_based_number() -> None:
    with pytest.raises(RowError, match=r"^row 1 has 1 values but schema has 2 columns$"):
        parse_rows(SAMPLE_SCHEMA, [["1", "a"], ["2"], ["x", "b"]])


def test_rows_are_checked_one_after_another_arity_first() -> None:
    with pytest.raises(RowError, match=r'^parsing "x" as int64: '):
        parse_rows(SAMPLE_SCHEMA, [["x", "a"], ["2"]])


def test_synthetic_rows_of_the_sample_schema_are_i_and_i_zero_padded_to_64() -> None:
    rows = list(Synthetic(SAMPLE_SCHEMA, 5000, 2))
    assert rows == [(5000, "5000".rjust(64, "0")), (5001, "5001".rjust(64, "0"))]


def test_row_bytes_sets_the_padding_and_never_cuts_a_longer_number() -> None:
    assert list(Synthetic(SAMPLE_SCHEMA, 99, 2, width=2)) == [(99, "99"), (100, "100")]


def test_synthetic_columns_follow_their_type() -> None:
    everything = schema(INTEGER, SMALLINT, BOOLEAN, DOUBLE, ColumnType(ScalarType.TEXT, True))
    rows = list(Synthetic(everything, 2**31 + 3, 2, width=3))
    i = 2**31 + 3
    assert rows == [
        (3, i % 2**15, False, float(i), str(i)),
        (4, (i + 1) % 2**15, True, float(i + 1), str(i + 1)),
    ]


def test_synthetic_rows_are_counted_without_being_made() -> None:
    assert len(Synthetic(SAMPLE_SCHEMA, 0, 1_000_000)) == 1_000_000


@pytest.mark.parametrize(
    ("datum", "text"),
    [
        (None, "null"),
        (True, "true"),
        (False, "false"),
        (-5, "-5"),
        ("alpha", '"alpha"'),
        ('say"hi"', '"say\\"hi\\""'),
        ("back\\slash", '"back\\\\slash"'),
        ("tab\there\n", '"tab\\there\\n"'),
        ("\x1c\x7f\x85", '"\\u001c\\u007f\\u0085"'),
        ("héllo \u00a0\u3000", '"héllo \u00a0\u3000"'),
        ("", '""'),
        (1.0, "1"),
        (1.5, "1.5"),
        (0.1, "0.1"),
        (1e20, "100000000000000000000"),
        (1e-7, "0.0000001"),
        (-0.0, "-0"),
        (float("nan"), "NaN"),
        (float("inf"), "inf"),
        (float("-inf"), "-inf"),
    ],
)
def test_datums_print_as_the_real_driver_prints_them(datum: Datum, text: str) -> None:
    assert render_datum(datum) == text


def test_rows_print_one_a_line_sorted_as_text_not_by_value() -> None:
    rows = [(9, "y"), (10, "x"), (-5, "n"), (10, "x"), (None, "z")]
    assert render_rows(rows) == ['-5 "n"', '10 "x"', '10 "x"', '9 "y"', 'null "z"']


def test_a_zero_column_row_prints_as_an_empty_line() -> None:
    assert render_rows([(), ()]) == ["", ""]


def test_subscribe_updates_consolidate_by_time_and_row_and_drop_net_zero() -> None:
    updates = [
        ((2, "b"), 0, 1),
        ((1, "a"), 0, 1),
        ((1, "a"), 1, -1),
        ((3, "c"), 1, 1),
        ((3, "c"), 1, -1),
        ((2, "b"), 0, 1),
        ((10, "j"), 1, 1),
    ]
    assert render_updates(updates) == ['0 1 1 "a"', '0 2 2 "b"', '1 -1 1 "a"', '1 1 10 "j"']


def test_a_string_in_a_message_is_quoted_as_rusts_debug_quotes_it() -> None:
    assert rust_debug('a"b\\c\n\t\0\u00a0\u0301é ') == '"a\\"b\\\\c\\n\\t\\0\\u{a0}\\u{301}é "'


def test_every_nan_is_the_same_datum_and_minus_zero_is_zero() -> None:
    double = ColumnType(ScalarType.DOUBLE, nullable=False)
    nans = [parse_value(text, double) for text in ("nan", "NaN", "-nan")]
    assert all(value is nans[0] for value in nans)
    assert {(value, "x") for value in nans} == {(nans[0], "x")}
    assert render_datum(parse_value("-0", double)) == "0"
