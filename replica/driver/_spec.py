"""Spec files (SPEC_FORMAT.md): parsing and validation, before anything runs.

A stanza is a directive line, body lines indented by at least two spaces, a
line that is exactly ``----``, and the expected output up to the next blank
line or the end of the file. Any malformed input is a :class:`SpecError`
naming ``FILE:LINE`` (or only ``FILE`` when the file itself is refused).

Limits, all checked before anything runs:

- a spec file is a regular file of at most 16 MiB (:data:`MAX_SPEC_BYTES`);
- ids, times and key columns fit in an unsigned 64-bit integer (Materialize's
  ids and timestamps are u64);
- a write holds at most 1,000,000 rows (:data:`ROWS_PER_WRITE`: a
  ``write-single-ts`` count, or a ``write-rows`` body), and a spec writes at
  most 4,000,000 rows in all (:data:`ROWS_PER_SPEC`);
- ``timeout-secs`` is at most 1,000,000 seconds of virtual time
  (:data:`MAX_TIMEOUT_SECS`).

A body field that looks like an integer is an int64; one out of that range
is not bad input but the stanza's output (:class:`RowError`), as in the real
driver.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Callable
from pathlib import Path

import attrs

DIVIDER = "----"
RUNTIMES = ("maintenance", "interactive")

MAX_SPEC_BYTES = 16 * 1024 * 1024
ROWS_PER_WRITE = 1_000_000
ROWS_PER_SPEC = 4_000_000
MAX_TIMEOUT_SECS = 1_000_000
U64_MAX = 2**64 - 1
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


class SpecError(Exception):
    """Bad input in a spec file: ``FILE:LINE: message``, or ``FILE: message``
    when ``line`` is None (the file cannot be read at all)."""

    def __init__(self, path: str, line: int | None, message: str) -> None:
        super().__init__(f"{path}: {message}" if line is None else f"{path}:{line}: {message}")
        self.path, self.line, self.message = path, line, message


class RowError(Exception):
    """A body row that does not parse; the stanza prints ``error: <message>``."""


Value = int | str | tuple[int, ...]

_INT = re.compile(r"-?[0-9]+")
_TIME = re.compile(r"[0-9]+")
_SECONDS = re.compile(r"[0-9]+(\.[0-9]+)?")
_LIST = re.compile(r"\[[0-9]+(,[0-9]+)*\]")


def _whole(text: str, what: str, most: int = U64_MAX, bound: str = "a u64") -> int:
    """``text`` as a whole number from 0 to ``most``, its length checked
    before :func:`int` (which refuses more than 4,300 digits)."""
    if not _TIME.fullmatch(text):
        raise ValueError(f"{what} is a whole number >= 0")
    if len(text.lstrip("0")) > len(str(most)) or int(text) > most:
        raise ValueError(f"{what} is at most {most} ({bound})")
    return int(text)


def _time(text: str) -> Value:
    return _whole(text, "a time")


def _id(text: str) -> Value:
    return _whole(text, "an id")


def _count(text: str) -> Value:
    return _whole(text, "a count", ROWS_PER_WRITE, "the rows a write may hold")


def _columns(text: str) -> Value:
    if not _LIST.fullmatch(text):
        raise ValueError("a list is written [0] or [0,1]")
    return tuple(_whole(part, "a key column") for part in text[1:-1].split(","))


def _seconds(text: str) -> Value:
    if not _SECONDS.fullmatch(text):
        raise ValueError("timeout-secs is a number of seconds")
    if float(text) > MAX_TIMEOUT_SECS:
        raise ValueError(f"timeout-secs is at most {MAX_TIMEOUT_SECS} seconds")
    return text


def _name(text: str) -> Value:
    return text


def _runtime(text: str) -> Value:
    if text not in RUNTIMES:
        raise ValueError(f"runtime is {' or '.join(RUNTIMES)}")
    return text


Parse = Callable[[str], Value]


@attrs.frozen
class Signature:
    """The keys a directive takes: required and optional, each with its parser."""

    required: dict[str, Parse] = attrs.field(factory=dict)
    optional: dict[str, Parse] = attrs.field(factory=dict)
    any_keys: bool = False
    body: bool = False


_READ: dict[str, Parse] = {"timeout-secs": _seconds}

DIRECTIVES: dict[str, Signature] = {
    "create-instance": Signature(),
    "update-configuration": Signature(any_keys=True),
    "initialization-complete": Signature(),
    "reconnect": Signature(),
    "write-rows": Signature({"shard": _name, "ts": _time}, body=True),
    "write-single-ts": Signature({"shard": _name, "ts": _time, "count": _count}),
    "advance": Signature({"shard": _name, "upper": _time}),
    "define-index": Signature(
        {"source": _id, "index": _id, "shard": _name, "key": _columns, "as-of": _time},
        {"upper": _time},
    ),
    "schedule": Signature({"id": _id}),
    "allow-compaction": Signature({"id": _id, "since": _time}),
    "drop": Signature({"id": _id}),
    "await-frontier": Signature({"id": _id, "ts": _time}, _READ),
    "peek": Signature({"id": _id, "ts": _time}, _READ),
    "count": Signature({"id": _id, "ts": _time}, _READ),
    "hold": Signature({"runtime": _runtime}),
    "release": Signature({"runtime": _runtime}),
    "settle": Signature(),
}


@attrs.frozen
class Stanza:
    """One directive and its expected output. ``line`` is the directive's line
    (1-based); the expected block starts after ``divider_line`` and ends before
    ``end_line`` (a blank line's number, or one past the file's last line)."""

    line: int
    name: str
    args: dict[str, Value]
    body: tuple[str, ...]
    divider_line: int
    end_line: int
    expected: tuple[str, ...]


@attrs.frozen
class Spec:
    path: str
    lines: tuple[str, ...]
    stanzas: tuple[Stanza, ...]
    trailing_newline: bool


def read_spec(path: Path, display: str | None = None) -> Spec:
    """Read and validate ``path``; raise :class:`SpecError` on bad input."""
    shown = str(path) if display is None else display
    try:
        # Stat first: opening a FIFO or a device may block or have effects.
        if not stat.S_ISREG(os.stat(path).st_mode):
            raise SpecError(shown, None, "not a regular file")
        with open(os.open(path, os.O_RDONLY | os.O_NONBLOCK), "rb") as file:
            data = file.read(MAX_SPEC_BYTES + 1)
    except OSError as error:
        raise SpecError(shown, None, f"cannot read: {error.strerror}") from None
    if len(data) > MAX_SPEC_BYTES:
        raise SpecError(
            shown, None, f"larger than {MAX_SPEC_BYTES >> 20} MiB (the limit for a spec file)"
        )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data[: error.start].count(b"\n") + 1
        raise SpecError(shown, line, "the file is not valid UTF-8") from None
    if text.startswith("\ufeff"):
        raise SpecError(shown, 1, "the file starts with a byte order mark")
    if "\r" in text:
        line = text[: text.index("\r")].count("\n") + 1
        raise SpecError(shown, line, "carriage return in a line (lines end with LF only)")
    return parse_spec(text, shown)


def parse_spec(text: str, path: str) -> Spec:
    lines = text.split("\n")
    trailing = text.endswith("\n")
    if trailing:
        lines.pop()
    stanzas: list[Stanza] = []
    rows = 0
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.strip() == "" or line.startswith("#"):
            i += 1
            continue
        number = i + 1
        name, args = _directive(path, number, line)
        signature = DIRECTIVES[name]
        i += 1
        body: list[str] = []
        while i < len(lines) and (
            (lines[i].startswith("  ") and lines[i].strip(" ")) or lines[i].startswith("#")
        ):
            if not lines[i].startswith("#"):
                body.append(lines[i].strip(" "))
            i += 1
        if i >= len(lines) or lines[i] != DIVIDER:
            raise SpecError(path, number, f"missing {DIVIDER} after directive {name!r}")
        if body and not signature.body:
            raise SpecError(path, number + 1, f"directive {name!r} takes no body")
        if len(body) > ROWS_PER_WRITE:
            raise SpecError(
                path,
                number,
                f"{name}: {len(body)} body rows, more than the {ROWS_PER_WRITE} a write may hold",
            )
        rows += as_int(args["count"]) if name == "write-single-ts" else len(body)
        if rows > ROWS_PER_SPEC:
            raise SpecError(
                path, number, f"{name}: the spec writes more than {ROWS_PER_SPEC} rows in all"
            )
        divider = i + 1
        i += 1
        expected: list[str] = []
        while i < len(lines) and lines[i].strip() != "":
            expected.append(lines[i])
            i += 1
        stanzas.append(Stanza(number, name, args, tuple(body), divider, i + 1, tuple(expected)))
    return Spec(path, tuple(lines), tuple(stanzas), trailing)


def _directive(path: str, number: int, line: str) -> tuple[str, dict[str, Value]]:
    if line.startswith(" "):
        raise SpecError(path, number, "a directive starts in the first column")
    words = line.split()
    name = words[0]
    signature = DIRECTIVES.get(name)
    if signature is None:
        raise SpecError(path, number, f"unknown directive {name!r}")
    args: dict[str, Value] = {}
    for word in words[1:]:
        key, equals, value = word.partition("=")
        if not equals or not key or not value:
            raise SpecError(path, number, f"{name}: malformed argument {word!r} (want key=value)")
        if key in args:
            raise SpecError(path, number, f"{name}: key {key!r} given twice")
        parse = signature.required.get(key) or signature.optional.get(key)
        if parse is None:
            if not signature.any_keys:
                raise SpecError(path, number, f"{name}: unknown key {key!r}")
            parse = _name
        try:
            args[key] = parse(value)
        except ValueError as error:
            raise SpecError(
                path, number, f"{name}: bad value {_shown(value)} for {key!r}: {error}"
            ) from None
    missing = [key for key in signature.required if key not in args]
    if missing:
        raise SpecError(path, number, f"{name}: missing key {', '.join(repr(k) for k in missing)}")
    return name, args


def _shown(value: str, most: int = 40) -> str:
    """``value`` quoted for a message, cut short when longer than ``most``."""
    if len(value) <= most:
        return repr(value)
    return f"{value[: most // 2]!r}... ({len(value)} characters)"


def as_int(value: Value) -> int:
    """A validated argument known to be an integer."""
    assert isinstance(value, int), f"{value!r} is not an integer"
    return value


def as_str(value: Value) -> str:
    """A validated argument known to be a string."""
    assert isinstance(value, str), f"{value!r} is not a string"
    return value


def parse_row(text: str) -> tuple[int | str, ...]:
    """A body row: fields separated by ASCII spaces (only: a field may hold any
    other character, other whitespace included); an integer-looking field is an
    int64. Raises :class:`RowError`, in the real driver's words, for one out of
    that range."""
    return tuple(_field(field) for field in text.split(" ") if field)


def _field(text: str) -> int | str:
    if not _INT.fullmatch(text):
        return text
    # Check the length before int(), which refuses more than 4,300 digits.
    if len(text.lstrip("-").lstrip("0")) <= len(str(INT64_MAX)):
        value = int(text)
        if INT64_MIN <= value <= INT64_MAX:
            return value
    side = "small" if text.startswith("-") else "large"
    raise RowError(
        f'parsing "{text}" as int64: invalid input syntax for type bigint: '
        f'number too {side} to fit in target type: "{text}"'
    )
