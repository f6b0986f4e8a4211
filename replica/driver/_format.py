"""How rows are printed (SPEC_FORMAT.md, Rows)."""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable

from replica import Datum, Row

_SHORT = {
    '"': '\\"',
    "\\": "\\\\",
    "\b": "\\b",
    "\f": "\\f",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
}


def _escape(char: str) -> str:
    short = _SHORT.get(char)
    if short is not None:
        return short
    if unicodedata.category(char) == "Cc":
        return f"\\u{ord(char):04x}"
    return char


def format_field(value: Datum) -> str:
    """Integers bare; ``true``/``false``; ``null``; strings double-quoted with
    JSON escaping: only ``"``, ``\\`` and control characters (Unicode category
    Cc) are escaped; every other character, non-ASCII included, is written as
    it is."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    return '"' + "".join(_escape(char) for char in value) + '"'


def format_rows(rows: Iterable[Row]) -> list[str]:
    """One line a row, sorted as text; a row with multiplicity k appears k times."""
    return sorted(" ".join(format_field(value) for value in row) for row in rows)
