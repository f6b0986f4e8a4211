"""Small helpers shared by the package's modules.

Some read Trio internals, for speed on every message: the run's
``GLOBAL_RUN_CONTEXT.runner`` (its ``trio_token`` and ``clock``) and a memory
channel's ``_state.data``, ``_state.send_tasks`` and
``_state.max_buffer_size``; :func:`send_all_nowait` also extends ``data`` and
raises ``_state.peak_buffer_used``, as ``send_nowait`` does. They are pinned,
with the trio range in ``pyproject.toml``, by
``tests/actors/test_trio_internals.py``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NoReturn, TypeVar

import trio
from trio._core._run import GLOBAL_RUN_CONTEXT

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
    of :func:`foreign_thread_error` is built only when this is false).

    ``trio.lowlevel.current_trio_token() is token``, without its two calls:
    the run's runner, found in a thread-local, holds its token once anyone
    asked for it, as the system did before it made ``token``."""
    try:
        return GLOBAL_RUN_CONTEXT.runner.trio_token is token
    except AttributeError:  # no run in this thread
        return False


def current_time() -> float:
    """``trio.current_time()`` in one call instead of three (every ask with a
    timeout reads the clock). Only inside a run."""
    now: float = GLOBAL_RUN_CONTEXT.runner.clock.current_time()
    return now


def buffered(channel: trio.MemoryReceiveChannel[Any]) -> int:
    """How many values ``channel`` holds in its buffer: its statistics'
    ``current_buffer_used``, without making the statistics."""
    return len(channel._state.data)


def has_queued(channel: trio.MemoryReceiveChannel[Any]) -> bool:
    """Whether ``channel.receive_nowait()`` would return a value now (a
    buffered one, or a waiting sender's), without the cost of its
    ``trio.WouldBlock`` when it would not."""
    state = channel._state
    return bool(state.data or state.send_tasks)


def has_room(channel: trio.MemorySendChannel[Any], count: int) -> bool:
    """Whether ``channel``'s buffer has room for ``count`` more values."""
    state = channel._state
    return len(state.data) + count <= state.max_buffer_size


def send_all_nowait(channel: trio.MemorySendChannel[T], values: Sequence[T]) -> None:
    """``channel.send_nowait(value)`` for each of ``values``, in order, for
    a channel :func:`has_room` for all of them: the first as ``send_nowait``
    (which hands it to a receiver parked on the channel), the rest into the
    buffer at once. Raises as ``send_nowait`` does, before sending anything."""
    if not values:
        return
    channel.send_nowait(values[0])
    state = channel._state
    assert len(state.data) + len(values) - 1 <= state.max_buffer_size, "checked by has_room"
    state.data.extend(values[1:])
    if len(state.data) > state.peak_buffer_used:
        state.peak_buffer_used = len(state.data)


def foreign_thread_error(call: str, instead: str) -> RuntimeError:
    """The error of an entry point called outside its system's Trio run:
    ``call`` names the call; ``instead`` is what to write."""
    return RuntimeError(
        f"{call} was called from a thread other than its actor system's trio thread; "
        f"from another thread, call {instead}"
    )
