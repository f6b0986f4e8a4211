"""How an actor ends, and how another actor learns of it.

An actor *ends* when its task does: its behaviour returned, or raised, or was
cancelled, and no supervisor restarts it. A restart is not an end: the
restarted actor keeps its address, its mailbox and every reference to it.
The way it ended is its :data:`ExitReason`.

A monitor (``inbox.monitor(ref)``) asks for a :class:`Down` message when the
watched actor ends; ``await ref.wait_stopped()`` waits for the end from any
task. These classes are plain data: the bookkeeping is the cell's
(:mod:`._cell`).
"""

from __future__ import annotations

from typing import ClassVar, final

import attrs

from ._envelope import Address


@final
@attrs.frozen
class Normal:
    """The behaviour returned on its own (its loop ended after ``inbox.close()``,
    or it returned with its mailbox still open)."""

    abnormal: ClassVar[bool] = False

    def __str__(self) -> str:
        return "normal"


@final
@attrs.frozen
class Stopped:
    """The behaviour returned after its mailbox was closed from outside: by
    ``ref.stop()``, a supervisor's ``terminate_child``, or the end of the scope
    it lived in (a system's or a supervisor's block)."""

    abnormal: ClassVar[bool] = False

    def __str__(self) -> str:
        return "stopped"


@final
@attrs.frozen
class Failed:
    """The behaviour raised ``error`` while handling the message stamped
    ``seq`` (the envelope it took last), or before it took any (``None``)."""

    error: Exception
    seq: int | None

    abnormal: ClassVar[bool] = True

    def __str__(self) -> str:
        at = "before taking a message" if self.seq is None else f"handling message {self.seq}"
        return f"failed {at}: {self.error!r}"


@final
@attrs.frozen
class Killed:
    """The behaviour was cancelled: ``ref.kill()``, ``system.cancel()``, or the
    cancellation of the scope it lived in (a sibling's escalated failure)."""

    abnormal: ClassVar[bool] = True

    def __str__(self) -> str:
        return "killed"


@final
@attrs.frozen
class NodeDown:
    """The actor lives on another node (a reference from :mod:`actors.net`),
    and the connection to ``node`` was lost before it ended: whether it still
    runs there is unknown from here."""

    node: str

    abnormal: ClassVar[bool] = True

    def __str__(self) -> str:
        return f"node {self.node!r} down"


KILLED = Killed()
"""The one :class:`Killed` the framework hands out (equal to every other)."""

ExitReason = Normal | Stopped | Failed | Killed | NodeDown
"""Why an actor ended. More reasons may come: match with a default case.
``reason.abnormal`` is ``True`` for :class:`Failed`, :class:`Killed` and
:class:`NodeDown`, the ends a transient child is restarted after."""


@final
@attrs.frozen(eq=False)
class Monitor:
    """The handle ``inbox.monitor(ref)`` returns: ``watcher`` asked for a
    :class:`Down` when ``target`` ends. Monitors compare by identity: each call
    makes a new one, and each delivers its own ``Down``."""

    watcher: Address
    target: Address
    number: int
    """The watcher's count of monitors it made (0, 1, 2, ...), for the eye."""

    def __repr__(self) -> str:
        return f"<Monitor {self.number} of {self.target.name!r} by {self.watcher.name!r}>"


@final
@attrs.frozen
class Down:
    """The actor at ``address`` ended for ``reason``; ``monitor`` is the handle
    that asked for this message.

    Delivered exactly once per monitor, into the watcher's mailbox, even when
    the mailbox is full (see :meth:`Inbox.monitor <actors.Inbox.monitor>`)."""

    address: Address
    reason: ExitReason
    monitor: Monitor
