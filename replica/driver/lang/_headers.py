"""Directive lines, a stanza's first (README.md, The ``trio-reconcile``
command): tokens, arguments, flags, and what each directive accepts.

A header splits on whitespace, a ``"..."`` string and a ``[...]`` list being
one token each (the real driver's ``tokenize``). ``key=value`` is an argument,
parsed by the directive's :class:`Signature`; any other token is a flag, or,
for ``metrics``, the metric's name. Unlike the real driver, which ignores
them, unknown keys and flags are bad input (this project's rule), and so is
a key given twice.

Lists are bounded where they are read, before their entries are: a key
(``key=[..]``) has at most :data:`MAX_KEY_COLUMNS` columns and ``literals=``
at most :data:`MAX_LITERALS` entries.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

import attrs

from replica.model._ids import U64_MAX, GlobalId

from ._data import RUST_WHITESPACE, rust_integer
from ._errors import DriverError

ROWS_PER_WRITE = 1_000_000
ROWS_PER_SPEC = 4_000_000
MAX_TIMEOUT_SECS = 1_000_000
MAX_ROW_BYTES = 1 << 20
MAX_KEY_COLUMNS = 64
MAX_LITERALS = 100_000


class InputError(DriverError):
    """Bad input at line ``line`` of a spec; the parser adds the file's name."""

    def __init__(self, line: int, message: str) -> None:
        super().__init__(message)
        self.line, self.message = line, message


Value = int | str | GlobalId | tuple[int, ...]
Parse = Callable[[str], Value]

DIGITS = re.compile(r"[0-9]+")
"""A whole number in ASCII digits (``int`` would take ``٣``, ``+3`` or `` 3``)."""
_SECONDS = re.compile(r"[0-9]+(\.[0-9]+)?")
_COLUMNS = re.compile(r"\[ *[0-9]+ *(, *[0-9]+ *)*\]")
_ID = re.compile(r"(si|s|u|t)?(.*)", re.DOTALL)
_METRIC = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")


def whole(text: str, what: str, most: int = U64_MAX, bound: str = "a u64") -> int:
    """``text`` as a whole number from 0 to ``most``, its length checked
    before :func:`int` (which refuses more than 4,300 digits)."""
    if not DIGITS.fullmatch(text):
        raise ValueError(f"{what} is a whole number >= 0")
    if len(text.lstrip("0")) > len(str(most)) or int(text) > most:
        raise ValueError(f"{what} is at most {most} ({bound})")
    return int(text)


def _time(text: str) -> Value:
    return whole(text, "a time")


def _id(text: str) -> Value:
    """``1001`` or ``u1001`` (user), ``s12``, ``si3``, ``t4000``."""
    match = _ID.fullmatch(text)
    assert match is not None
    if not DIGITS.fullmatch(match[2]):
        raise ValueError("an id is a whole number >= 0, optionally prefixed u, s, si or t")
    return GlobalId(match[1] or "u", whole(match[2], "an id"))


def _count(text: str) -> Value:
    return whole(text, "a count", ROWS_PER_WRITE, "the rows a write may hold")


def _times(text: str) -> Value:
    value = whole(text, "n-ts")
    if value == 0:
        raise ValueError("n-ts is at least 1 (the rows go to times 0 .. n-ts - 1)")
    return value


def _row_bytes(text: str) -> Value:
    return whole(text, "row-bytes", MAX_ROW_BYTES, "1 MiB")


def _number(text: str) -> Value:
    return whole(text, "a number")


def _columns(text: str) -> Value:
    _check_length(text, MAX_KEY_COLUMNS, "a key has at most {most} columns (this one has {n})")
    if text[1:-1].strip(" ") == "" and text[:1] == "[" and text[-1:] == "]":
        return ()  # no key columns, as the real driver reads [] (every row one key)
    if not _COLUMNS.fullmatch(text):
        raise ValueError("a list is written [], [0] or [0,1]")
    return tuple(whole(part.strip(" "), "a key column") for part in text[1:-1].split(","))


def _literals(text: str) -> Value:
    """``[]``, ``[5]``, ``[1999,5,-3]``: each a ``bigint``, as the real
    driver packs a literal into a one-column row."""
    if not (text.startswith("[") and text.endswith("]")):
        raise ValueError("a list is written [], [5] or [1999,5,500]")
    _check_length(text, MAX_LITERALS, "literals= holds at most {most} values (this one has {n})")
    inner = text[1:-1].strip(" ")
    if not inner:
        return ()
    values = []
    for part in inner.split(","):
        try:
            values.append(rust_integer(part.strip(" "), 64))
        except ValueError as error:
            raise ValueError(f"literal {part.strip(' ')!r} is not a bigint: {error}") from None
    return tuple(values)


def _check_length(text: str, most: int, message: str) -> None:
    """Refuse a list of more than ``most`` entries, counted by its commas
    before any entry is read; ``message`` is formatted with ``most`` and
    ``n``, the entries."""
    entries = text.count(",") + 1
    if entries > most:
        raise ValueError(message.format(most=most, n=entries))


def _seconds(text: str) -> Value:
    if not _SECONDS.fullmatch(text):
        raise ValueError("timeout-secs is a number of seconds")
    if float(text) > MAX_TIMEOUT_SECS:
        raise ValueError(f"timeout-secs is at most {MAX_TIMEOUT_SECS} seconds")
    return text


def _name(text: str) -> Value:
    """A name (a shard, a schema, a dataflow): ``"..."`` quotes removed."""
    if len(text) >= 2 and text.startswith('"') and text.endswith('"'):
        text = text[1:-1]
    if not text:
        raise ValueError("a name is not empty")
    return text


def _metric(text: str) -> Value:
    if not _METRIC.fullmatch(text):
        raise ValueError("a metric's name is letters, digits, _ and : (not first a digit)")
    return text


def _bool(text: str) -> Value:
    """Rust's ``bool::from_str``: ``true`` or ``false``, nothing else."""
    if text not in ("true", "false"):
        raise ValueError("a bool is true or false")
    return text


def _text(text: str) -> Value:
    return text


RUNTIMES = ("maintenance", "interactive")


def _runtime(text: str) -> Value:
    if text not in RUNTIMES:
        raise ValueError(f"runtime is {' or '.join(RUNTIMES)}")
    return text


@attrs.frozen
class Signature:
    """The keys a directive takes (required and optional, each with its
    parser), its flags, and whether it takes body lines; ``positional``
    names the one token
    without ``=`` it takes instead of a flag (``metrics NAME``)."""

    required: Mapping[str, Parse] = attrs.field(factory=dict)
    optional: Mapping[str, Parse] = attrs.field(factory=dict)
    flags: frozenset[str] = frozenset()
    any_keys: bool = False
    body: bool = False
    positional: tuple[str, Parse] | None = None


_READ: dict[str, Parse] = {"timeout-secs": _seconds}
_SYNTHETIC: dict[str, Parse] = {"start": _number, "row-bytes": _row_bytes, "schema": _name}

DIRECTIVES: dict[str, Signature] = {
    # The real driver's instance options; the model has no wall-clock expiration
    # and no arrangement compression, so they change nothing it prints.
    "create-instance": Signature(
        optional={"expiration-offset": _text, "arrangement-dictionary-compression": _bool},
        body=True,
    ),
    "update-configuration": Signature(any_keys=True, body=True),
    "initialization-complete": Signature(),
    "reconnect": Signature(),
    "define-schema": Signature({"name": _name}, body=True),
    "write-rows": Signature({"shard": _name, "ts": _time}, {"schema": _name}, body=True),
    "write-single-ts": Signature({"shard": _name, "ts": _time, "count": _count}, _SYNTHETIC),
    "write-spread": Signature({"shard": _name, "count": _count, "n-ts": _times}, _SYNTHETIC),
    "advance": Signature({"shard": _name, "upper": _time}),
    "define-index": Signature(
        {"source": _id, "index": _id, "shard": _name, "key": _columns, "as-of": _time},
        {"upper": _time, "schema": _name},
    ),
    "create-dataflow": Signature(
        {"as-of": _time},
        {"name": _name, "until": _time},
        frozenset({"optimize", "defer"}),
        body=True,
    ),
    "submit-dataflow": Signature({"name": _name}),
    "explain": Signature(
        optional={"ref": _name, "as-of": _time, "until": _time},
        flags=frozenset({"optimize"}),
        body=True,
    ),
    "schedule": Signature({"id": _id}),
    "allow-writes": Signature({"id": _id}),
    "allow-compaction": Signature({"id": _id}, {"frontier": _time, "since": _time}),
    "drop": Signature({"id": _id}),
    "await-frontier": Signature({"id": _id, "ts": _time}, _READ, frozenset({"allow-timeout"})),
    "peek": Signature({"id": _id, "ts": _time}, {**_READ, "schema": _name}),
    "peek-count": Signature({"id": _id, "ts": _time}, {**_READ, "literals": _literals}),
    "count": Signature({"id": _id, "ts": _time}, _READ),
    "await-subscribe": Signature({"id": _id, "up-to": _time}, _READ),
    "metrics": Signature(
        {"max": _number}, {**_READ, "minus": _metric}, positional=("metric", _metric)
    ),
    "hold": Signature({"runtime": _runtime}),
    "release": Signature({"runtime": _runtime}),
    "settle": Signature(),
}

# The sub-commands of a `create-dataflow` body.
IMPORT_SOURCE = Signature({"source": _id, "shard": _name, "upper": _time}, {"schema": _name})
IMPORT_INDEX = Signature({"index": _id})
BUILD = Signature({"id": _id})
EXPORTS: dict[str, Signature] = {
    "index": Signature(
        {"index": _id, "on": _id, "key": _columns}, {"kind": _name}, frozenset({"transient"})
    ),
    "materialized-view": Signature(
        {"kind": _name, "sink": _id, "on": _id, "shard": _name}, {"schema": _name}
    ),
    "subscribe": Signature(
        {"kind": _name, "sink": _id, "on": _id}, {"schema": _name, "up-to": _time}
    ),
}


def tokenize(text: str) -> list[str]:
    """Whitespace-separated tokens, a ``"..."`` string and a ``[...]`` list
    (outside a string) one token each, quotes and brackets kept. Raises
    :class:`ValueError` for a string or a list left open."""
    tokens: list[str] = []
    current: list[str] = []
    depth, quoted = 0, False
    for char in text:
        if char == '"':
            quoted = not quoted
        elif char == "[" and not quoted:
            depth += 1
        elif char == "]" and not quoted:
            depth -= 1
        elif char in RUST_WHITESPACE and not quoted and depth == 0:
            if current:
                tokens.append("".join(current))
                current = []
            continue
        current.append(char)
    if quoted:
        raise ValueError('unterminated string (a " without its closing ")')
    if depth:
        raise ValueError("unterminated list (a [ without its closing ])")
    if current:
        tokens.append("".join(current))
    return tokens


@attrs.frozen
class Arguments:
    """A header's parsed tokens after its verb."""

    args: dict[str, Value]
    flags: tuple[str, ...]


def parse_arguments(what: str, tokens: list[str], signature: Signature) -> Arguments:
    """``tokens`` checked against ``signature``; :class:`ValueError` with a
    message naming ``what`` (the directive, or ``create-dataflow: export``)."""
    args: dict[str, Value] = {}
    flags: list[str] = []
    for token in tokens:
        key, equals, value = token.partition("=")
        if not equals:
            _flag(what, token, signature, args, flags)
            continue
        if not key or not value:
            raise ValueError(f"{what}: malformed argument {token!r} (want key=value)")
        if key in args:
            raise ValueError(f"{what}: key {key!r} given twice")
        parse = signature.required.get(key) or signature.optional.get(key)
        if parse is None:
            if not signature.any_keys:
                raise ValueError(f"{what}: unknown key {key!r}")
            parse = _verbatim
        try:
            args[key] = parse(value)
        except ValueError as error:
            raise ValueError(f"{what}: bad value {_shown(value)} for {key!r}: {error}") from None
    if signature.positional is not None and signature.positional[0] not in args:
        raise ValueError(f"{what}: missing the {signature.positional[0]}'s name ({what} NAME ...)")
    missing = [key for key in signature.required if key not in args]
    if missing:
        raise ValueError(f"{what}: missing key {', '.join(repr(k) for k in missing)}")
    return Arguments(args, tuple(flags))


def _flag(
    what: str, token: str, signature: Signature, args: dict[str, Value], flags: list[str]
) -> None:
    if signature.positional is not None and signature.positional[0] not in args:
        name, parse = signature.positional
        try:
            args[name] = parse(token)
        except ValueError as error:
            raise ValueError(f"{what}: bad {name} name {_shown(token)}: {error}") from None
        return
    if not signature.flags:
        raise ValueError(f"{what}: malformed argument {token!r} (want key=value)")
    if token not in signature.flags:
        known = ", ".join(sorted(signature.flags))
        raise ValueError(f"{what}: unknown flag {token!r} (it takes {known})")
    if token in flags:
        raise ValueError(f"{what}: flag {token!r} given twice")
    flags.append(token)


def _verbatim(text: str) -> Value:
    return text


def _shown(value: str, most: int = 40) -> str:
    """``value`` quoted for a message, cut short when longer than ``most``."""
    if len(value) <= most:
        return repr(value)
    return f"{value[: most // 2]!r}... ({len(value)} characters)"


def as_int(value: Value) -> int:
    """A validated argument known to be a number."""
    assert isinstance(value, int), f"{value!r} is not a number"
    return value


def as_str(value: Value) -> str:
    """A validated argument known to be a string."""
    assert isinstance(value, str), f"{value!r} is not a string"
    return value


def as_id(value: Value) -> GlobalId:
    """A validated argument known to be an id."""
    assert isinstance(value, GlobalId), f"{value!r} is not an id"
    return value


def as_list(value: Value) -> tuple[int, ...]:
    """A validated argument known to be a list of numbers."""
    assert isinstance(value, tuple), f"{value!r} is not a list"
    assert not isinstance(value, GlobalId), f"{value!r} is not a list"
    return value
