"""What a program declares for the explorer's reduction (docs/actors.md,
"Reduction"): the state its tasks share outside what the reduction sees by
itself. Public as ``actors.testing.touch``, ``belong``, ``share`` and
``Table``; here, in
the ``actors`` layer, so that an application can declare without loading the
explorer (``actors.testing`` loads it whole).
"""

from __future__ import annotations

from ._core import _footprint
from ._core._footprint import Table as Table


def touch(obj: object) -> None:
    """Declare that the running step reads or writes ``obj``, state that
    tasks of more than one actor share outside what the reduction sees by
    itself (docs/actors.md, "Reduction"). Outside an exploration's run
    with the reduction on, does nothing."""
    _footprint.touch(obj)


def belong(obj: object) -> None:
    """Declare that the calling task, which runs outside every actor, keeps
    its state in ``obj`` (and so do the tasks it spawns from now on): its
    steps touch ``obj``, not the one object that all tasks outside actors
    share by default. Only sound if everything else the task shares with
    other tasks is recorded (docs/actors.md, "Reduction"). Outside an
    exploration's run it only sets a context variable."""
    _footprint.belong(obj)


def share(*objects: object) -> None:
    """Declare that every step of the calling task from now on, and of the
    tasks it spawns from now on, reads or writes ``objects`` (state they
    share with other actors' tasks and read anywhere: a registry, a
    published data structure). Lasts as long as the task; outside an
    exploration's run it only sets a context variable."""
    _footprint.share(*objects)
