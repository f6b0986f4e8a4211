"""Small helpers shared by the package's modules."""

from __future__ import annotations

from typing import Any, NoReturn, TypeVar

import trio

T = TypeVar("T")


class NoPublicConstructor(type):
    """A metaclass for classes only the framework builds.

    Calling the class raises :class:`TypeError`; the framework builds instances
    with ``cls._create(...)``.
    """

    def __call__(cls, *args: object, **kwargs: object) -> NoReturn:
        raise TypeError(f"{cls.__module__}.{cls.__qualname__} has no public constructor")

    def _create(cls: type[T], *args: Any, **kwargs: Any) -> T:
        return super().__call__(*args, **kwargs)  # type: ignore[misc, no-any-return]


def in_trio_thread(token: trio.lowlevel.TrioToken) -> bool:
    """Whether the caller runs in the Trio run of ``token``: how an entry
    point checks its thread before it touches anything (cheaply: the message
    of :func:`foreign_thread_error` is built only when this is false)."""
    try:
        return trio.lowlevel.current_trio_token() is token
    except RuntimeError:
        return False


def foreign_thread_error(call: str, instead: str) -> RuntimeError:
    """The error of an entry point called outside its system's Trio run:
    ``call`` names the call; ``instead`` is what to write."""
    return RuntimeError(
        f"{call} was called from a thread other than its actor system's trio thread; "
        f"from another thread, call {instead}"
    )
