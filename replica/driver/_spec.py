"""Spec files (SPEC_FORMAT.md): parsing and validation, before anything runs.

A stanza is a directive line, body lines indented by at least two spaces, a
line that is exactly ``----``, and the expected output up to the next blank
line or the end of the file. Any malformed input is a :class:`SpecError`
naming ``FILE:LINE``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import attrs

DIVIDER = "----"
RUNTIMES = ("maintenance", "interactive")


class SpecError(Exception):
    """Bad input in a spec file: ``FILE:LINE: message``."""

    def __init__(self, path: str, line: int, message: str) -> None:
        super().__init__(f"{path}:{line}: {message}")
        self.path, self.line, self.message = path, line, message


Value = int | str | tuple[int, ...]

_INT = re.compile(r"-?[0-9]+")
_TIME = re.compile(r"[0-9]+")
_SECONDS = re.compile(r"[0-9]+(\.[0-9]+)?")
_LIST = re.compile(r"\[[0-9]+(,[0-9]+)*\]")


def _time(text: str) -> Value:
    if not _TIME.fullmatch(text):
        raise ValueError("a time is a whole number >= 0")
    return int(text)


def _id(text: str) -> Value:
    if not _TIME.fullmatch(text):
        raise ValueError("an id is a whole number >= 0")
    return int(text)


def _count(text: str) -> Value:
    return _id(text)


def _columns(text: str) -> Value:
    if not _LIST.fullmatch(text):
        raise ValueError("a list is written [0] or [0,1]")
    return tuple(int(part) for part in text[1:-1].split(","))


def _seconds(text: str) -> Value:
    if not _SECONDS.fullmatch(text):
        raise ValueError("timeout-secs is a number of seconds")
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
        data = path.read_bytes()
    except OSError as error:
        raise SpecError(shown, 0, f"cannot read: {error.strerror}") from None
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
            (lines[i].startswith("  ") and lines[i].strip()) or lines[i].startswith("#")
        ):
            if not lines[i].startswith("#"):
                body.append(lines[i].strip())
            i += 1
        if i >= len(lines) or lines[i] != DIVIDER:
            raise SpecError(path, number, f"missing {DIVIDER} after directive {name!r}")
        if body and not signature.body:
            raise SpecError(path, number + 1, f"directive {name!r} takes no body")
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
                path, number, f"{name}: bad value {value!r} for {key!r}: {error}"
            ) from None
    missing = [key for key in signature.required if key not in args]
    if missing:
        raise SpecError(path, number, f"{name}: missing key {', '.join(repr(k) for k in missing)}")
    return name, args


def as_int(value: Value) -> int:
    """A validated argument known to be an integer."""
    assert isinstance(value, int), f"{value!r} is not an integer"
    return value


def as_str(value: Value) -> str:
    """A validated argument known to be a string."""
    assert isinstance(value, str), f"{value!r} is not a string"
    return value


def parse_row(text: str) -> tuple[int | str, ...]:
    """A body row: fields separated by spaces; an integer-looking field is an integer."""
    return tuple(int(field) if _INT.fullmatch(field) else field for field in text.split())
