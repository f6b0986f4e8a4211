"""Collection ids, as the real replica names them: a namespace and a number.

A bare number in a script is a user id (``1001`` is ``u1001``); ``s``, ``si``
and ``t`` name the system, introspection and transient namespaces. Transient
ids belong to query dataflows, which the interactive runtime alone runs.
"""

from __future__ import annotations

import re
from typing import Final

from ._errors import ComputeError

NAMESPACES: Final = ("s", "si", "u", "t")
U64_MAX: Final = 2**64 - 1
_ID = re.compile(r"(si|s|u|t)?([0-9]+)")


class IdError(ComputeError, ValueError):
    """Text that is not a collection id."""


def _check_namespace(value: str) -> None:
    if value not in NAMESPACES:
        raise IdError(f"unknown id namespace {value!r} (one of {', '.join(NAMESPACES)})")


def _check_number(value: int) -> None:
    if not 0 <= value <= U64_MAX:
        raise IdError(f"an id is a number from 0 to {U64_MAX}, not {value}")


class GlobalId(tuple[str, int]):
    """A collection id: ``u1001``, ``t4000``, ``s12``, ``si3`` (its repr too,
    so commands read well in logs).

    The pair ``(namespace, value)``, a tuple underneath: ids key most of the
    replica's dicts, and a tuple hashes and compares without a Python call.
    Ordered by namespace, then number."""

    __slots__ = ()

    def __new__(cls, namespace: str, value: int) -> GlobalId:
        _check_namespace(namespace)
        _check_number(value)
        return tuple.__new__(cls, (namespace, value))

    def __getnewargs__(self) -> tuple[str, int]:
        return (self[0], self[1])

    @property
    def namespace(self) -> str:
        return self[0]

    @property
    def value(self) -> int:
        return self[1]

    @classmethod
    def user(cls, value: int) -> GlobalId:
        return cls("u", value)

    @classmethod
    def transient(cls, value: int) -> GlobalId:
        return cls("t", value)

    @classmethod
    def parse(cls, text: str) -> GlobalId:
        """``1001`` or ``u1001`` (user), ``t4000``, ``s12``, ``si3``; raises
        :class:`IdError` on anything else."""
        match = _ID.fullmatch(text)
        if match is None or len(match[2]) > 20:
            raise IdError(f"not an id: {text!r} (a number, optionally prefixed u, s, si or t)")
        return cls(match[1] or "u", int(match[2]))

    @property
    def is_transient(self) -> bool:
        return self.namespace == "t"

    def __str__(self) -> str:
        return f"{self.namespace}{self.value}"

    def __repr__(self) -> str:
        return str(self)


def as_id(id: GlobalId | int) -> GlobalId:
    """``id`` as a :class:`GlobalId`: a bare number is a user id."""
    return id if isinstance(id, GlobalId) else GlobalId.user(id)
