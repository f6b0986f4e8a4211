"""Where the library tells the explorer's reduction what a step touches.

The schedule explorer's reduction (``actors.testing``, docs/actors.md
"Reduction") treats the steps of two tasks as independent unless they touch
a common object. Trio's channels, events, locks and parking lots, wake-ups,
spawns and cancellations are seen from outside; what only the library knows
(a message put in another actor's mailbox, a reply completed, a state read
across actors) it reports here. With no exploration recording (always, but
in the explorer's runs), each call is one global read.
"""

from __future__ import annotations

import contextvars
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from ._envelope import Address


class Sink(Protocol):
    def touch(self, obj: object) -> None: ...

    def touch_actor(self, address: Address) -> None: ...


# The recorder of the run in progress, if it records.
sink: Sink | None = None


def touch(obj: object) -> None:
    """Record that the running step reads or writes ``obj`` (shared by
    tasks of more than one actor)."""
    if sink is not None:
        sink.touch(obj)


def touch_actor(address: Address) -> None:
    """Record that the running step reads or writes the state of the actor
    at ``address`` (its mailbox, its cell)."""
    if sink is not None:
        sink.touch_actor(address)


# What every step of a task touches (see share).
standing: contextvars.ContextVar[tuple[object, ...]] = contextvars.ContextVar(
    "actors_shared", default=()
)


def share(*objects: object) -> None:
    """Record that every step of the calling task from now on (this one too)
    (and of the tasks it spawns from now on) reads or writes ``objects``."""
    standing.set((*standing.get(), *objects))
    for obj in objects:
        touch(obj)


# What the steps of a task outside every actor belong to (see belong).
owner: contextvars.ContextVar[object] = contextvars.ContextVar("actors_owner", default=None)


def belong(obj: object) -> None:
    """Record that the calling task (outside every actor), and the tasks it
    spawns from now on, keep their state in ``obj``: their steps touch it
    instead of the one object all tasks outside actors share (this step
    too)."""
    owner.set(obj)
    touch(obj)
