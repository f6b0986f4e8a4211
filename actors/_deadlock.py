"""Deadlock detection for :func:`actors.run` on Trio's autojump ``MockClock``.

The autojump clock jumps to the next deadline whenever every task is blocked.
With no deadline pending there is nowhere to jump: nothing can ever wake the
tasks, yet Trio keeps polling, and the run hangs in real time. Trio's run loop
calls the clock's private ``_autojump()`` at exactly that moment (every task
blocked, nothing runnable, no I/O event), so :func:`watch_for_deadlock`
replaces that method on the clock instance: when no deadline is pending and no
task waits on something outside the run (I/O, a worker thread, a subprocess,
a signal), it records which tasks wait on what and cancels the run's main
scope; :func:`actors.run` then raises :class:`~actors.DeadlockError` with the
report.

This leans on two Trio internals, pinned in ``pyproject.toml`` and by a test
(``tests/actors/test_deadlock.py``): the run loop calling
``runner.clock._autojump()``, and that method's name on ``MockClock``.
"""

from __future__ import annotations

import math
import types
from collections.abc import Callable, Iterator

import trio

from ._core._envelope import Address, current_address

# Modules whose waits something outside the run ends: these are not deadlocks.
_OUTSIDE_WAITS = ("trio._core._io_", "trio._threads", "trio._subprocess", "trio._signals")


class DeadlockWatch:
    """Installed on a ``MockClock`` for one run; ``report`` is set once a
    deadlock was found (and the run's ``scope`` cancelled)."""

    def __init__(self, clock: trio.abc.Clock, scope: trio.CancelScope) -> None:
        autojump: Callable[[], None] | None = getattr(clock, "_autojump", None)
        if autojump is None:
            raise RuntimeError(
                "trio's MockClock has no _autojump hook; actors.run cannot detect deadlocks "
                f"with trio {trio.__version__} (see the trio range in pyproject.toml)"
            )
        self._clock = clock
        self._autojump = autojump
        self._scope = scope
        self.report: str | None = None
        setattr(clock, "_autojump", self._check)  # noqa: B010 (a method of a final class)

    def remove(self) -> None:
        """Give the clock its own ``_autojump`` back."""
        vars(self._clock).pop("_autojump", None)

    def _check(self) -> None:
        if (
            self.report is None
            and trio.lowlevel.current_statistics().seconds_to_next_deadline == math.inf
        ):
            waits = list(_waits())
            if not any(outside for _, outside in waits):
                self.report = (
                    f"deadlock at {trio.current_time():g}s: every task waits and no deadline "
                    "is pending, so nothing can wake them:\n"
                    + "\n".join(f"  {line}" for line, _ in sorted(waits))
                )
                self._scope.cancel()
                return
        self._autojump()


def _tasks(task: trio.lowlevel.Task) -> Iterator[trio.lowlevel.Task]:
    yield task
    for nursery in task.child_nurseries:
        for child in nursery.child_tasks:
            yield from _tasks(child)


def _module(frame: types.FrameType) -> str:
    return str(frame.f_globals.get("__name__", ""))


def _waits() -> Iterator[tuple[str, bool]]:
    """Each task of the run outside Trio's own, as (what it waits on, whether
    something outside the run can end the wait)."""
    root = trio.lowlevel.current_root_task()
    assert root is not None, "called inside a run"
    for task in _tasks(root):
        frames = [frame for frame, _ in task.iter_await_frames()]
        if not frames or _module(frames[0]).startswith("trio._core."):
            continue  # trio's own tasks (the run's init, its entry queue)
        if frames[0].f_code.co_qualname == "Timekeeper._run":
            continue  # a system's timer task, idle: nothing is scheduled
        outside = any(_module(frame).startswith(_OUTSIDE_WAITS) for frame in frames)
        yield f"{_who(task, frames[0])} {_what(frames)}", outside


def _who(task: trio.lowlevel.Task, outermost: types.FrameType) -> str:
    address = task.context.get(current_address)
    if address is None:
        return f"task {task.name!r}"
    if outermost.f_code.co_qualname == "Spawner._run_actor":
        return f"actor {address.name!r}"
    return f"task {task.name!r} of actor {address.name!r}"


def _what(frames: list[types.FrameType]) -> str:
    """What the innermost frame outside Trio waits on (the task's own
    function, for a task that runs a function of Trio's)."""
    own = [frame for frame in frames if not _module(frame).startswith("trio")]
    frame = own[-1] if own else frames[0]
    described = _described(frame)
    if described is not None:
        return described
    return f"waits in {frame.f_code.co_qualname} ({frame.f_code.co_filename}:{frame.f_lineno})"


def _name_of(value: object) -> str:
    address = getattr(value, "address", None)
    return repr(address.name) if isinstance(address, Address) else repr(value)


def _described(frame: types.FrameType) -> str | None:
    """The wait of one of the framework's own frames, in its terms."""
    if not _module(frame).startswith("actors."):
        return None
    where = frame.f_code.co_qualname
    local = frame.f_locals
    if where in ("Inbox.__anext__", "Inbox.receive", "Inbox._receive_system"):
        return "waits for a message"
    if where in ("ActorRef.ask", "_reply_before"):  # parked in Reply._wait's trap
        reply = local["reply"]
        return f"waits for the reply to message {reply._seq} of actor {reply._actor!r}"
    if where == "Transit.ask":  # an ask with latency on, parked on its answer
        return f"waits for the reply to its message to actor {_name_of(local['cell'])}"
    if where in ("ActorRef.tell", "_Cell.put", "Sequencer._deliver_waiting", "_tell"):
        cell = local.get("cell", local.get("self"))
        return f"waits for room in the mailbox of actor {_name_of(cell)}"
    if where in ("_Cell.wait_incarnation_end", "ActorRef.wait_stopped", "stop_last_first"):
        cell = local.get("cell", local.get("self"))
        return f"waits for actor {_name_of(cell)} to stop"
    if where.startswith("Supervisor."):
        return "waits to be restarted"
    return None
