"""Typed data in the real test driver's language (README.md, The
``trio-reconcile`` command): schemas, rows, and how rows print.

A schema is columns of a scalar type, nullable or not. Rows written in a
script's body are typed against one, value by value, failing with the real
driver's messages (its ``cell_from_token`` over ``mz_repr::strconv``);
synthetic rows are a function of their index; and rows print as the real
driver prints them: datums joined by single spaces, the lines sorted as text.

Rows are tuples of :data:`replica.Datum`: ``int`` for the integer types,
``str``, ``bool``, ``float`` for ``double``, ``None`` for NULL.
"""

from __future__ import annotations

import enum
import math
import re
import unicodedata
from collections.abc import Iterable, Iterator, Sequence
from decimal import Decimal

import attrs

from replica.model import Datum, Row, Update, consolidate

from ._errors import DriverError

DEFAULT_ROW_BYTES = 64

# Rust's `char::is_whitespace` (Unicode White_Space), which `str::trim` strips.
# Python's `str.strip()` also strips U+001C..U+001F, which Rust keeps.
RUST_WHITESPACE = (
    "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006"
    "\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
)


class DataError(DriverError):
    """Data that does not fit: the stanza prints ``error: <message>``."""


class RowError(DataError):
    """A row, or a value in one, that does not fit its schema."""


class ScalarType(enum.StrEnum):
    SMALLINT = "smallint"
    INTEGER = "integer"
    BIGINT = "bigint"
    BOOLEAN = "boolean"
    TEXT = "text"
    DOUBLE = "double"
    NUMERIC = "numeric"  # a sum's results; no schema declares it


# The real driver's names (case-insensitive), and `double` for this project.
_TYPE_NAMES = {
    "int16": ScalarType.SMALLINT,
    "smallint": ScalarType.SMALLINT,
    "int32": ScalarType.INTEGER,
    "int": ScalarType.INTEGER,
    "integer": ScalarType.INTEGER,
    "int64": ScalarType.BIGINT,
    "bigint": ScalarType.BIGINT,
    "bool": ScalarType.BOOLEAN,
    "boolean": ScalarType.BOOLEAN,
    "string": ScalarType.TEXT,
    "text": ScalarType.TEXT,
    "double": ScalarType.DOUBLE,
    "float8": ScalarType.DOUBLE,
    "float64": ScalarType.DOUBLE,
}


def scalar_type(name: str) -> ScalarType:
    """The type a ``define-schema`` column names; :class:`DataError` in the
    real driver's words for any other name."""
    found = _TYPE_NAMES.get(name.lower())
    if found is None:
        raise DataError(f"unsupported column type {rust_debug(name.lower())}")
    return found


@attrs.frozen
class ColumnType:
    scalar: ScalarType
    nullable: bool = False

    def __str__(self) -> str:
        return f"{self.scalar} nullable" if self.nullable else str(self.scalar)


@attrs.frozen
class Column:
    name: str
    type: ColumnType


@attrs.frozen
class Schema:
    """The columns of a collection, in order."""

    columns: tuple[Column, ...]

    @property
    def arity(self) -> int:
        return len(self.columns)

    @property
    def types(self) -> tuple[ColumnType, ...]:
        return tuple(column.type for column in self.columns)


SAMPLE_SCHEMA = Schema(
    (
        Column("id", ColumnType(ScalarType.BIGINT)),
        Column("payload", ColumnType(ScalarType.TEXT)),
    )
)
"""The schema a command without ``schema=`` uses."""


# Parsing values.


_SEPARATORS = frozenset(" \t")


def split_values(line: str) -> list[str]:
    """A body row's values: separated by ASCII spaces and tabs (only: other
    whitespace, such as a no-break space, is part of a value), a ``"..."``
    group being one value (its quotes kept until :func:`parse_value`).
    Raises :class:`ValueError` for a ``"`` without its closing one."""
    if '"' not in line:
        return [value for value in line.replace("\t", " ").split(" ") if value]
    values: list[str] = []
    current: list[str] = []
    quoted = False
    for char in line:
        if char in _SEPARATORS and not quoted:
            if current:
                values.append("".join(current))
                current = []
            continue
        if char == '"':
            quoted = not quoted
        current.append(char)
    if quoted:
        raise ValueError('unterminated string (a " without its closing ")')
    if current:
        values.append("".join(current))
    return values


def parse_rows(schema: Schema, rows: Iterable[Sequence[str]]) -> tuple[Row, ...]:
    """Each row's values typed by ``schema``; :class:`RowError` for the first
    row (0-based) with the wrong number of values or a value that does not
    parse, checked row by row as the real driver does."""
    parsed: list[Row] = []
    for number, values in enumerate(rows):
        if len(values) != schema.arity:
            raise RowError(
                f"row {number} has {len(values)} values but schema has {schema.arity} columns"
            )
        parsed.append(
            tuple(
                parse_value(value, column.type)
                for value, column in zip(values, schema.columns, strict=True)
            )
        )
    return tuple(parsed)


def parse_value(token: str, type: ColumnType) -> Datum:
    """One value as the real driver types it: bare ``null`` is NULL, integers
    and booleans as ``mz_repr::strconv`` parses them, text with one pair of
    enclosing quotes removed."""
    if token == "null":
        if not type.nullable:
            raise RowError("null value in non-nullable column")
        return None
    match type.scalar:
        case ScalarType.SMALLINT:
            return _integer(token, "int16", "smallint", 16)
        case ScalarType.INTEGER:
            return _integer(token, "int32", "integer", 32)
        case ScalarType.BIGINT:
            return _integer(token, "int64", "bigint", 64)
        case ScalarType.BOOLEAN:
            return _boolean(token)
        case ScalarType.DOUBLE:
            return _double(token)
        case ScalarType.TEXT:
            if len(token) >= 2 and token.startswith('"') and token.endswith('"'):
                return token[1:-1]
            return token
        case ScalarType.NUMERIC:
            raise AssertionError("no schema has a numeric column")


def parse_int64(token: str) -> int:
    """``token`` as a ``bigint``, or :class:`RowError` in the driver's words."""
    return _integer(token, "int64", "bigint", 64)


_SHORT_INTEGER = re.compile(r"[+-]?[0-9]{1,18}")


def rust_integer(text: str, bits: int, signed: bool = True) -> int:
    """Rust's ``str::parse`` of an integer type of ``bits`` bits: an optional
    sign, then ASCII digits. Raises :class:`ValueError` with Rust's message,
    for the first problem reading left to right, before ``int()`` sees a
    number too long for it."""
    if _SHORT_INTEGER.fullmatch(text) and (signed or text[0] != "-"):
        value = int(text)
        if (-(2 ** (bits - 1)) if signed else 0) <= value < 2 ** (bits - (1 if signed else 0)):
            return value
    if not text:
        raise ValueError("cannot parse integer from empty string")
    negative = signed and text[0] == "-"
    digits = text[1:] if text[0] == "+" or negative else text
    if not digits:
        raise ValueError("invalid digit found in string")
    most = 2 ** (bits - 1) if negative else (2 ** (bits - 1) - 1 if signed else 2**bits - 1)
    value = 0
    for char in digits:
        if not "0" <= char <= "9":
            raise ValueError("invalid digit found in string")
        value = value * 10 + ord(char) - ord("0")
        if value > most:
            side = "small" if negative else "large"
            raise ValueError(f"number too {side} to fit in target type")
    return -value if negative else value


def _integer(token: str, kind: str, type_name: str, bits: int) -> int:
    try:
        return rust_integer(token.strip(RUST_WHITESPACE), bits)
    except ValueError as error:
        raise RowError(
            f"parsing {rust_debug(token)} as {kind}: "
            f"invalid input syntax for type {type_name}: {error}: {quoted(token)}"
        ) from None


_TRUE = frozenset({"t", "tr", "tru", "true", "y", "ye", "yes", "on", "1"})
_FALSE = frozenset({"f", "fa", "fal", "fals", "false", "n", "no", "of", "off", "0"})


def _boolean(token: str) -> bool:
    text = token.strip(RUST_WHITESPACE).lower()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise RowError(
        f"parsing {rust_debug(token)} as bool: invalid input syntax for type boolean: "
        f"{quoted(token)}"
    )


_FLOAT = re.compile(
    r"[+-]?(?:(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:e[+-]?[0-9]+)?|inf|infinity|nan)", re.IGNORECASE
)
_FLOAT_ZERO = re.compile(r"[-+]?0+(\.0+)?(e|$)", re.IGNORECASE)
_FLOAT_INFINITE = re.compile(r"[-+]?inf", re.IGNORECASE)


NAN = float("nan")
"""The one NaN rows hold: Python's NaN equals only itself, so one object
makes every NaN datum equal, as Materialize's ordered floats are."""


def _double(token: str) -> float:
    """As ``strconv::parse_float64`` would (the real driver has no ``double``
    column; this is the same parser its SQL layer uses)."""
    text = token.strip(RUST_WHITESPACE)
    if not _FLOAT.fullmatch(text):
        raise RowError(
            f"parsing {rust_debug(token)} as float64: "
            f"invalid input syntax for type double precision: {quoted(token)}"
        )
    value = float(text)
    if (math.isinf(value) and not _FLOAT_INFINITE.match(text)) or (
        value == 0 and not _FLOAT_ZERO.match(text)
    ):
        raise RowError(
            f"parsing {rust_debug(token)} as float64: "
            f"{quoted(token)} is out of range for type double precision"
        )
    if value != value:
        return NAN  # one NaN: rows with it group, join and consolidate as equal
    return value + 0.0  # -0 is 0 (rows compare by value; the result must not depend on order)


# Synthetic rows.


@attrs.frozen
class Synthetic:
    """Rows ``start`` .. ``start + count - 1`` of ``schema``, made on demand:
    in row ``i`` a ``bigint`` is ``i``, an ``integer`` ``i mod 2^31``, a
    ``smallint`` ``i mod 2^15``, a ``boolean`` whether ``i`` is even, a
    ``double`` ``float(i)``, and a ``text`` ``i`` left-padded with zeros to
    ``width`` characters (never cut). Never NULL."""

    schema: Schema
    start: int
    count: int
    width: int = DEFAULT_ROW_BYTES

    def __len__(self) -> int:
        return self.count

    def __iter__(self) -> Iterator[Row]:
        types = [column.type.scalar for column in self.schema.columns]
        for i in range(self.start, self.start + self.count):
            yield tuple(_synthetic(scalar, i, self.width) for scalar in types)


def _synthetic(scalar: ScalarType, i: int, width: int) -> Datum:
    match scalar:
        case ScalarType.SMALLINT:
            return i % 2**15
        case ScalarType.INTEGER:
            return i % 2**31
        case ScalarType.BIGINT:
            return i
        case ScalarType.BOOLEAN:
            return i % 2 == 0
        case ScalarType.DOUBLE:
            return float(i)
        case ScalarType.TEXT:
            return str(i).rjust(width, "0")
        case ScalarType.NUMERIC:
            raise AssertionError("no schema has a numeric column")


# Rendering.


def render_rows(rows: Iterable[Row]) -> list[str]:
    """One line a row (a row with multiplicity k, k times), sorted as text:
    ``10 "x"`` before ``9 "y"``, as the real driver sorts its lines."""
    return sorted(render_row(row) for row in rows)


def render_updates(updates: Iterable[Update]) -> list[str]:
    """A subscribe's updates as ``<ts> <diff> <datums>`` lines: consolidated
    by ``(time, row)``, net-zero ones dropped, sorted as text."""
    return sorted(f"{time} {diff} {render_row(row)}" for row, time, diff in consolidate(updates))


def render_row(row: Row) -> str:
    return " ".join(render_datum(datum) for datum in row)


def render_datum(datum: Datum) -> str:
    """``null``, ``true``/``false``, integers bare, doubles as Rust prints an
    ``f64``, strings double-quoted: ``"`` and ``\\`` escaped, and control
    characters JSON-style (``\\n``, ``\\u001c``); every other character as it
    is."""
    match datum:
        case None:
            return "null"
        case bool():
            return "true" if datum else "false"
        case int():
            return str(datum)
        case float():
            return rust_float(datum)
        case str():
            return '"' + "".join(_escape(char) for char in datum) + '"'


_SHORT_ESCAPES = {
    '"': '\\"',
    "\\": "\\\\",
    "\b": "\\b",
    "\f": "\\f",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
}


def _escape(char: str) -> str:
    short = _SHORT_ESCAPES.get(char)
    if short is not None:
        return short
    if unicodedata.category(char) == "Cc":
        return f"\\u{ord(char):04x}"
    return char


def rust_float(value: float) -> str:
    """An ``f64`` as Rust's ``Display`` writes it: the shortest digits that
    read back, never an exponent, no trailing ``.0``; ``NaN``, ``inf``."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    text = format(Decimal(repr(value)), "f")
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return text


# Rust's ways of quoting a string in a message.


def quoted(text: str) -> str:
    """``mz_ore``'s ``quoted()``: double quotes around, only ``"`` escaped."""
    return '"' + text.replace('"', '\\"') + '"'


_DEBUG_ESCAPES = {"\0": "\\0", "\t": "\\t", "\r": "\\r", "\n": "\\n", '"': '\\"', "\\": "\\\\"}
# Characters Rust's `{:?}` writes as `\u{..}`: not printable, or combining.
_UNPRINTABLE = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp", "Zs", "Mn", "Me"})


def rust_debug(text: str) -> str:
    """A string as Rust's ``{:?}`` writes it (``"a\\"b"``, ``"\\u{a0}"``);
    which characters count as unprintable follows Unicode categories, close
    to Rust's own table."""
    out = ['"']
    for char in text:
        escape = _DEBUG_ESCAPES.get(char)
        if escape is not None:
            out.append(escape)
        elif char != " " and unicodedata.category(char) in _UNPRINTABLE:
            out.append(f"\\u{{{ord(char):x}}}")
        else:
            out.append(char)
    out.append('"')
    return "".join(out)
