"""Configuration rows (a ``create-instance`` or ``update-configuration``
body): ``name type value``, the value checked against the type as the real
driver's ``parse_config_val`` checks it."""

from __future__ import annotations

import re
from collections.abc import Sequence

from ._data import DataError, rust_debug, rust_integer
from ._headers import InputError, tokenize
from ._plan_syntax import BodyLine


def settings(lines: Sequence[BodyLine]) -> tuple[tuple[str, str], ...]:
    """Configuration rows ``name type value``; the value checked against the
    type as the real driver's ``parse_config_val`` checks it."""
    settings = []
    for line in lines:
        tokens = _tokens(line, "configuration")
        if len(tokens) != 3:
            raise InputError(
                line.number,
                f"a configuration row is `name type value`, not {line.text!r}",
            )
        name, type, value = tokens
        _check_setting(type, value)
        settings.append((name, value))
    return tuple(settings)


_RUST_FLOAT = re.compile(
    r"[+-]?(?:(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|(?i:inf|infinity|nan))"
)


def _check_setting(type: str, value: str) -> None:
    problem = None
    if type == "bool":
        if value not in ("true", "false", "on", "off"):
            problem = "provided string was not `true` or `false`"
    elif type in ("u32", "usize"):
        try:
            rust_integer(value, 32 if type == "u32" else 64, signed=False)
        except ValueError as error:
            problem = str(error)
    elif type == "f64":
        if not value:
            problem = "cannot parse float from empty string"
        elif not _RUST_FLOAT.fullmatch(value):
            problem = "invalid float literal"
    elif type not in ("string", "duration"):
        raise DataError(
            f"unsupported config type {rust_debug(type)}; use bool/u32/usize/f64/duration/string"
        )
    if problem is not None:
        raise DataError(f"config value {rust_debug(value)} is not a valid {type}: {problem}")


def _tokens(line: BodyLine, what: str) -> list[str]:
    try:
        return tokenize(line.text)
    except ValueError as error:
        raise InputError(line.number, f"{what}: {error}") from None
