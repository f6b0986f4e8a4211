"""Input made safe to show on a terminal: a spec's bytes, a file's name or an
argument quoted in a message must not move the cursor, clear the screen,
ring the bell or reorder the line it is on.

The escaping is Python's ``repr``, the one ``unknown directive 'x'`` and
every other ``{value!r}`` of the command already use: :func:`escaped` writes
each character ``repr`` would escape as ``repr`` writes it, without adding
quotes, so a name reads the same quoted or bare. Those are the characters
``str.isprintable`` refuses, every Unicode "Other" and "Separator" but the
ASCII space: the C0 controls (newline, carriage return, tab, ESC, BEL
included), DEL, the C1 controls (U+0080 to U+009F, CSI among them), the bidi
embeddings, overrides and isolates (U+202A to U+202E, U+2066 to U+2069) and
the other invisible format characters, the line and paragraph separators,
the spaces other than U+0020, and unassigned, private-use and surrogate
code points (a file name that is not UTF-8 arrives with surrogates).

A backslash is kept as it is, so escaping is idempotent: a message built
with ``repr`` or :func:`escaped` goes through :func:`escaped` unchanged,
which lets the command escape every line it writes to stderr
(:func:`print_error`, :class:`EscapingFormatter`) as a last line of defence
without escaping twice. What a spec's output blocks hold is not written
through here: a row's text is rendered as the spec format defines
(:func:`~replica.driver.lang._data.render_datum`: a string double-quoted, its
quotes and backslashes escaped and its control characters JSON-style) and an
expected block as the spec wrote it.
"""

from __future__ import annotations

import logging
import sys
from types import TracebackType


def escaped(text: str) -> str:
    """``text`` with each character that is not printable (``str.isprintable``)
    written as ``repr`` writes it (``\\x1b``, ``\\r``, ``\\n``, ``\\x9b``,
    ``\\u202e``), and nothing else changed: the result holds no control
    character and no newline."""
    if text.isprintable():
        return text
    return "".join(char if char.isprintable() else repr(char)[1:-1] for char in text)


def print_error(line: str) -> None:
    """Write ``line`` to stderr, :func:`escaped`: one line, whatever the
    input it quotes."""
    print(escaped(line), file=sys.stderr)


class EscapingFormatter(logging.Formatter):
    """A log formatter whose records are :func:`escaped` (a record's message
    may quote a spec's path or a reason naming its input): the message on one
    line, and each line of a traceback on its own."""

    def formatMessage(self, record: logging.LogRecord) -> str:
        return escaped(super().formatMessage(record))

    def formatException(
        self,
        ei: tuple[type[BaseException], BaseException, TracebackType | None]
        | tuple[None, None, None],
    ) -> str:
        return _escaped_lines(super().formatException(ei))

    def formatStack(self, stack_info: str) -> str:
        return _escaped_lines(super().formatStack(stack_info))


def _escaped_lines(text: str) -> str:
    return "\n".join(escaped(line) for line in text.split("\n"))
