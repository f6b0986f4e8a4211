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


def check_trio_thread(token: trio.lowlevel.TrioToken, call: str, instead: str) -> None:
    """Raise :class:`RuntimeError` unless the caller runs in the Trio thread of
    ``token``: how a synchronous entry point refuses a foreign thread before it
    touches anything. ``call`` names the call; ``instead`` is what to write."""
    try:
        current = trio.lowlevel.current_trio_token()
    except RuntimeError:
        current = None
    if current is not token:
        raise RuntimeError(
            f"{call} was called from a thread other than its actor system's trio thread; "
            f"from another thread, call {instead}"
        )
