"""One plan line as ``mz-expr-parser`` reads it: a stream of Rust tokens
(identifiers, integer and string literals, punctuation), with whitespace
between tokens free (``on = ( #0 = #2 )``, ``group_by = [ #0 ]``, ``# 1``),
and the :class:`Cursor` that reads them: a bracket's tokens as a cursor of
their own, integer and float literals as ``syn`` reads them. The operators'
own grammar (fixed keyword order) is in :mod:`._plan_operators`; scalar
expressions, a ``Constant``'s rows and aggregates in :mod:`._expressions`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TypeVar

import attrs

from ._errors import DriverError


class MirError(DriverError, ValueError):
    """A plan line the parser rejects: the message says what it wanted."""


# Deeper than any plan line Materialize prints, shallow enough that parsing,
# lowering, evaluating and encoding an expression stay within Python's
# recursion limit.
MAX_EXPR_DEPTH = 64


_TOKEN = re.compile(
    r"""\s*(?:
      (?P<ident>[A-Za-z_][A-Za-z0-9_]*)
    | (?P<number>[0-9][0-9_]*\.[0-9][0-9_]*(?:[eE][+-]?[0-9_]+)?[A-Za-z0-9_]*
                 |[0-9][0-9_]*[eE][+-]?[0-9_]+[A-Za-z0-9_]*
                 |[0-9][0-9A-Za-z_]*)
    | (?P<string>"(?:[^"\\]|\\.)*")
    | (?P<punct>::|!=|>=|<=|==|[\#=<>()\[\],*+\-/%?:.{}!])
    )""",
    re.VERBOSE,
)
_SPACE = re.compile(r"\s*")
_INTEGER = re.compile(
    r"(?P<prefix>0x|0o|0b)?(?P<digits>[0-9A-Fa-f_]+?)(?:[iu](?:8|16|32|64|128|size))?"
)
_FLOAT = re.compile(
    r"(?P<digits>[0-9][0-9_]*(?:\.[0-9][0-9_]*)?(?:[eE][+-]?[0-9_]*[0-9][0-9_]*)?)(?:f32|f64)?"
)
_RADIX = {None: 10, "0x": 16, "0o": 8, "0b": 2}
_DIGITS = {10: "0123456789", 16: "0123456789abcdefABCDEF", 8: "01234567", 2: "01"}
# The most significant digits of an integer literal: a u128's, in each radix.
_MOST_DIGITS = {10: 39, 16: 32, 8: 43, 2: 128}
_CLOSING = {"(": ")", "[": "]", "{": "}"}


@attrs.frozen
class Token:
    kind: str  # ident, number, string, punct
    text: str


def lex(text: str) -> list[Token]:
    """``text``'s tokens; :class:`MirError` at a character no token starts with."""
    tokens: list[Token] = []
    at = _SPACE.match(text).end()  # type: ignore[union-attr]
    while at < len(text):
        match = _TOKEN.match(text, at)
        if match is None:
            raise MirError(f"unexpected character {text[at]!r}")
        kind = match.lastgroup
        assert kind is not None
        tokens.append(Token(kind, match[kind]))
        at = _SPACE.match(text, match.end()).end()  # type: ignore[union-attr]
    return tokens


@attrs.define
class Cursor:
    """Tokens being read, up to the end or a closing bracket."""

    tokens: list[Token]
    at: int = 0
    depth: int = 0  # the brackets around these tokens

    def peek(self, offset: int = 0) -> Token | None:
        at = self.at + offset
        return self.tokens[at] if at < len(self.tokens) else None

    def is_(self, text: str, offset: int = 0) -> bool:
        token = self.peek(offset)
        return token is not None and token.kind != "string" and token.text == text

    def eat(self, text: str) -> bool:
        if self.is_(text):
            self.at += 1
            return True
        return False

    def expect(self, text: str) -> None:
        if not self.eat(text):
            raise MirError(f"expected `{text}`, found {self.describe()}")

    def describe(self) -> str:
        token = self.peek()
        return "the end of the line" if token is None else f"`{token.text}`"

    def done(self) -> bool:
        return self.at >= len(self.tokens)

    def group(self, opening: str) -> Cursor:
        """The tokens inside the bracket ``opening`` starts here, as a cursor
        of their own; this cursor moves past the closing bracket."""
        self.expect(opening)
        depth, start = 1, self.at
        while not self.done():
            token = self.tokens[self.at]
            self.at += 1
            if token.kind == "punct" and token.text in _CLOSING:
                depth += 1
            elif token.kind == "punct" and token.text in _CLOSING.values():
                depth -= 1
                if depth == 0:
                    if self.depth >= MAX_EXPR_DEPTH:
                        raise MirError(f"brackets nest more than {MAX_EXPR_DEPTH} deep")
                    return Cursor(self.tokens[start : self.at - 1], depth=self.depth + 1)
        raise MirError(f"`{opening}` is not closed")

    def finish(self) -> None:
        if not self.done():
            raise MirError(f"unexpected {self.describe()}")

    def integer(self, what: str) -> int:
        """A Rust integer literal's value, as ``syn``'s ``base10_parse``
        reads it: decimal, ``0x``, ``0o`` or ``0b``, ``_`` anywhere after the
        first digit, an integer suffix (``1i64``) ignored."""
        token = self.peek()
        match = None if token is None or token.kind != "number" else _INTEGER.fullmatch(token.text)
        radix = 10 if match is None else _RADIX[match["prefix"]]
        digits = "" if match is None else match["digits"].replace("_", "")
        if not digits or not all(digit in _DIGITS[radix] for digit in digits):
            raise MirError(f"expected {what}, found {self.describe()}")
        assert token is not None
        if len(digits.lstrip("0")) > _MOST_DIGITS[radix]:
            # Past any type a plan's number has (and past the digits Python
            # converts: 4,300 decimal ones raise a ValueError of its own).
            raise MirError(f"number too large to fit in target type: `{_shown(token.text)}`")
        self.at += 1
        return int(digits, radix)

    def float(self) -> float | None:
        """A Rust float literal's value (``1.5``, ``1e3``, ``2f64``), if the
        next token is one; ``None`` if it is not a float."""
        token = self.peek()
        if token is None or token.kind != "number" or token.text.startswith(("0x", "0o", "0b")):
            return None
        if not any(mark in token.text for mark in ".eE") and not token.text.endswith(
            ("f32", "f64")
        ):
            return None
        match = _FLOAT.fullmatch(token.text)
        if match is None:
            raise MirError(f"invalid float literal `{token.text}`")
        self.at += 1
        return float(match["digits"].replace("_", ""))

    def column(self) -> int:
        self.expect("#")
        return self.integer("a column number after `#`")


T = TypeVar("T")


def _shown(text: str) -> str:
    """``text``, cut to its first 40 characters when it is longer."""
    return text if len(text) <= 40 else f"{text[:40]}... ({len(text)} characters)"


def comma_separated(cursor: Cursor, parse: Callable[[Cursor], T]) -> list[T]:
    """Items separated by commas (a trailing comma allowed), up to the end."""
    items: list[T] = []
    while not cursor.done():
        items.append(parse(cursor))
        if cursor.done():
            break
        cursor.expect(",")
    return items
