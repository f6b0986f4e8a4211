"""Spec files, in the real test driver's language with this project's
additions (README.md, The ``trio-reconcile`` command): parsing and
validation, before anything runs.

A stanza is a directive line, body lines (indented or not) up to a line that
is exactly ``----``, then the expected output up to the next blank line or the
end of the file; a second ``----`` right after the first opens a block that
may hold blank lines and ends at the next ``----`` ``----`` pair. Column-0
``#`` lines are comments, inside a stanza too; a blank line inside a stanza is
skipped, unless a directive follows it (then the ``----`` is missing). Each
stanza's payload (:mod:`._payloads`) is resolved from what the file declared
above it (:mod:`._catalog`). Any bad input is a :class:`SpecError` naming
``FILE:LINE`` (or only ``FILE`` when the file itself is refused).

Limits, all checked before anything runs:

- a spec file is a regular file of at most 16 MiB (:data:`MAX_SPEC_BYTES`);
- ids, times and key columns fit in an unsigned 64-bit integer (Materialize's
  ids and timestamps are u64);
- a write holds at most 1,000,000 rows (:data:`ROWS_PER_WRITE`: a ``count``,
  or a ``write-rows`` body), and a spec writes at most 4,000,000 rows in all
  (:data:`ROWS_PER_SPEC`); a synthetic row's text is at most 1 MiB wide, a
  synthetic write at most 256 MiB and a spec's synthetic writes 1 GiB in all;
- ``timeout-secs`` is at most 1,000,000 seconds of virtual time
  (:data:`MAX_TIMEOUT_SECS`).
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Sequence
from pathlib import Path

import attrs

from ._catalog import Catalog, Directive
from ._data import RowError as RowError
from ._data import parse_int64
from ._errors import DriverError
from ._escape import escaped
from ._headers import DIRECTIVES, InputError, Value, parse_arguments, tokenize
from ._headers import MAX_TIMEOUT_SECS as MAX_TIMEOUT_SECS
from ._headers import ROWS_PER_SPEC as ROWS_PER_SPEC
from ._headers import ROWS_PER_WRITE as ROWS_PER_WRITE
from ._headers import as_int as as_int
from ._headers import as_str as as_str
from ._payloads import Payload
from ._plan_syntax import BodyLine

DIVIDER = "----"
MAX_SPEC_BYTES = 16 * 1024 * 1024


class SpecError(DriverError):
    """Bad input in a spec file: ``FILE:LINE: message``, or ``FILE: message``
    when ``line`` is None (the file cannot be read at all). The file's name
    and the message, which may quote the spec's text, are :func:`escaped`
    (``path`` and ``message`` keep them as given)."""

    def __init__(self, path: str, line: int | None, message: str) -> None:
        where = escaped(path) if line is None else f"{escaped(path)}:{line}"
        super().__init__(f"{where}: {escaped(message)}")
        self.path, self.line, self.message = path, line, message


@attrs.frozen
class Stanza:
    """One directive and its expected output. ``line`` is the directive's line
    (1-based); the expected block is the lines after ``divider_line`` and
    before ``end_line`` (a blank line, a closing ``----``, or one past the
    file's last line). ``doubled``: the block is the ``----`` ``----`` form,
    and ``divider_line`` is its second ``----``. ``body`` is the body lines
    without leading and trailing ASCII spaces; ``payload`` is what running the
    stanza does (:mod:`._payloads`)."""

    line: int
    name: str
    args: dict[str, Value]
    body: tuple[str, ...]
    divider_line: int
    end_line: int
    expected: tuple[str, ...]
    flags: tuple[str, ...]
    doubled: bool
    payload: Payload


@attrs.frozen
class Spec:
    path: str
    lines: tuple[str, ...]
    stanzas: tuple[Stanza, ...]
    trailing_newline: bool
    # How the file ends its lines: "\n", or "\r\n" (kept by a rewrite).
    line_ending: str = "\n"

    def join(self, lines: Sequence[str]) -> str:
        """``lines`` as the file's text, with its line endings."""
        text = self.line_ending.join(lines)
        return text + self.line_ending if self.trailing_newline else text


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
    return parse_spec(text, shown)


def parse_spec(text: str, path: str) -> Spec:
    """A spec's text read into stanzas. Lines end with LF or CRLF, as the real
    driver reads them (Rust's ``str::lines``); a CRLF file is rewritten with
    CRLF. A carriage return anywhere else is bad input."""
    line_ending = "\r\n" if "\r\n" in text else "\n"
    text = text.replace("\r\n", "\n")
    if "\r" in text:
        line = text[: text.index("\r")].count("\n") + 1
        raise SpecError(path, line, "carriage return not followed by a line feed")
    lines = text.split("\n")
    trailing = text.endswith("\n")
    if trailing:
        lines.pop()
    try:
        stanzas = _Parser(lines).stanzas()
    except InputError as error:
        raise SpecError(path, error.line, error.message) from None
    return Spec(path, tuple(lines), stanzas, trailing, line_ending)


@attrs.define(eq=False)
class _Parser:
    lines: list[str]
    catalog: Catalog = attrs.field(factory=Catalog)
    # Rows the spec writes in all.
    rows: int = 0

    def stanzas(self) -> tuple[Stanza, ...]:
        stanzas: list[Stanza] = []
        i = 0
        while i < len(self.lines):
            line = self.lines[i]
            if line.strip() == "" or line.startswith("#"):
                i += 1
                continue
            stanza, i = self._stanza(i)
            stanzas.append(stanza)
        return tuple(stanzas)

    def _stanza(self, start: int) -> tuple[Stanza, int]:
        number = start + 1
        line = self.lines[start]
        if line[0].isspace():
            raise InputError(number, "a directive starts in the first column")
        try:
            tokens = tokenize(line)
        except ValueError as error:
            raise InputError(number, f"{line.split()[0]}: {error}") from None
        name = tokens[0]
        signature = DIRECTIVES.get(name)
        if signature is None:
            raise InputError(number, f"unknown directive {name!r}")
        try:
            parsed = parse_arguments(name, tokens[1:], signature)
        except ValueError as error:
            raise InputError(number, str(error)) from None
        body, divider = self._body(start, name)
        if body and not signature.body:
            raise InputError(body[0].number, f"directive {name!r} takes no body")
        self._count_rows(number, name, parsed.args, body)
        directive = Directive(number, name, parsed.args, parsed.flags, tuple(body))
        payload = self.catalog.payload(directive)
        end, expected, doubled = self._expected(divider, number)
        first = divider + 2 if doubled else divider + 1
        texts = tuple(line.text for line in body)
        return Stanza(
            number,
            name,
            parsed.args,
            texts,
            first,
            end + 1,
            expected,
            parsed.flags,
            doubled,
            payload,
        ), (end + 2 if doubled else end)

    def _body(self, start: int, name: str) -> tuple[list[BodyLine], int]:
        """The body lines after the directive on line ``start`` (0-based), and
        the index of its ``----``."""
        body: list[BodyLine] = []
        blank = False
        i = start + 1
        while i < len(self.lines) and self.lines[i] != DIVIDER:
            text = self.lines[i]
            if text.strip(" \t") == "":
                blank = True  # blank (spaces and tabs only): not a body line
            elif blank and not text[0].isspace() and text.split(maxsplit=1)[0] in DIRECTIVES:
                break
            elif not text.startswith("#"):
                stripped = text.lstrip(" ")
                body.append(BodyLine(i + 1, len(text) - len(stripped), stripped.rstrip(" \t")))
            i += 1
        if i >= len(self.lines) or self.lines[i] != DIVIDER:
            raise InputError(start + 1, f"missing {DIVIDER} after directive {name!r}")
        return body, i

    def _expected(self, divider: int, number: int) -> tuple[int, tuple[str, ...], bool]:
        """Where the expected block after the ``----`` at index ``divider``
        ends (the index of the line after it, or of its closing ``----``),
        its lines, and whether it is the ``----`` ``----`` form."""
        lines = self.lines
        i = divider + 1
        if i < len(lines) and lines[i] == DIVIDER:
            i += 1
            while i < len(lines) and not (
                lines[i] == DIVIDER and i + 1 < len(lines) and lines[i + 1] == DIVIDER
            ):
                i += 1
            if i >= len(lines):
                raise InputError(
                    number,
                    f"the {DIVIDER} {DIVIDER} block after line {divider + 1} is never closed "
                    f"(by a {DIVIDER} line and another)",
                )
            return i, tuple(lines[divider + 2 : i]), True
        while i < len(lines) and lines[i].strip() != "":
            i += 1
        return i, tuple(lines[divider + 1 : i]), False

    def _count_rows(
        self, number: int, name: str, args: dict[str, Value], body: list[BodyLine]
    ) -> None:
        if name == "write-rows" and len(body) > ROWS_PER_WRITE:
            raise InputError(
                number,
                f"{name}: {len(body)} body rows, more than the {ROWS_PER_WRITE} a write may hold",
            )
        if name == "write-rows":
            self.rows += len(body)
        elif name in ("write-single-ts", "write-spread"):
            self.rows += as_int(args["count"])
        if self.rows > ROWS_PER_SPEC:
            raise InputError(
                number, f"{name}: the spec writes more than {ROWS_PER_SPEC} rows in all"
            )


def rewrite(spec: Spec, outputs: Sequence[Sequence[str]]) -> str:
    """The spec's text with each stanza's expected block replaced by its
    output (one per stanza, in order), every other line kept as it is. A
    block that the output's blank lines (or a first line ``----``) would cut
    short is written in the ``----`` ``----`` form."""
    lines = list(spec.lines)
    for stanza, output in reversed(list(zip(spec.stanzas, outputs, strict=True))):
        block = list(output)
        doubled = not stanza.doubled and (
            any(line.strip() == "" for line in block) or block[:1] == [DIVIDER]
        )
        if doubled:
            block = [DIVIDER, *block, DIVIDER, DIVIDER]
        lines[stanza.divider_line : stanza.end_line - 1] = block
    return spec.join(lines)


_INT = re.compile(r"-?[0-9]+")


def parse_row(text: str) -> tuple[int | str, ...]:
    """A body row without a schema: fields separated by ASCII spaces (only);
    an integer-looking field is an int64, any other a string. Raises
    :class:`RowError`, in the real driver's words, for one out of range."""
    return tuple(_field(field) for field in text.split(" ") if field)


def _field(text: str) -> int | str:
    return parse_int64(text) if _INT.fullmatch(text) else text
