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
import warnings
from collections.abc import Callable, Iterator

import trio

from ._core._envelope import Address, current_address
from ._core._errors import MockClockWarning

# Modules whose waits something outside the run ends: these are not deadlocks.
_OUTSIDE_WAITS = ("trio._core._io_", "trio._threads", "trio._subprocess", "trio._signals")


class DeadlockWatch:
    """Installed on a ``MockClock`` for one run; ``report`` is set once a
    deadlock was found (and the run's ``scope`` cancelled)."""

    def __init__(
        self, clock: trio.abc.Clock, scope: trio.CancelScope, time_limit: float | None = None
    ) -> None:
        autojump: Callable[[], None] | None = getattr(clock, "_autojump", None)
        if autojump is None:
            raise RuntimeError(
                "trio's MockClock has no _autojump hook; actors.run cannot detect deadlocks "
                f"with trio {trio.__version__} (see the trio range in pyproject.toml)"
            )
        self._clock = clock
        self._autojump = autojump
        self._scope = scope
        self._time_limit = time_limit
        self._start = trio.current_time()
        self.report: str | None = None
        self.timed_out = False
        """Whether the report is of the time limit, not of a deadlock."""
        self.warned = False
        """Whether the run was warned that a task waits for I/O on the mock clock."""
        self._io_seen = 0
        setattr(clock, "_autojump", self._check)  # noqa: B010 (a method of a final class)

    def remove(self) -> None:
        """Give the clock its own ``_autojump`` back."""
        vars(self._clock).pop("_autojump", None)

    def _check(self) -> None:
        if self.report is None:
            now = trio.current_time()
            statistics = trio.lowlevel.current_statistics()
            following = now + statistics.seconds_to_next_deadline
            if not self.warned and following < math.inf:
                self._check_io(statistics)
            limit = self._time_limit
            if limit is not None and self._start + limit < following < math.inf:
                # Past the limit, whatever the tasks wait on (a socket, a
                # thread: time would jump on past it while they wait).
                self.timed_out = True
                self._end(
                    f"time limit of {limit:g}s reached at {now - self._start:g}s: every task "
                    f"waits and the next deadline, at {following - self._start:g}s, is past it",
                    list(_waits()),
                )
                return
            if following == math.inf:
                waits = list(_waits())
                if not any(outside for _, outside in waits):
                    self._end(
                        f"deadlock at {now:g}s: every task waits and no deadline is pending, "
                        "so nothing can wake them",
                        waits,
                    )
                    return
        self._autojump()

    def _end(self, why: str, waits: list[tuple[str, bool]]) -> None:
        """End the run: ``why``, then what each task waits on, is the report."""
        self.report = why + ":\n" + "\n".join(f"  {line}" for line, _ in sorted(waits))
        self._scope.cancel()

    def _check_io(self, statistics: trio.lowlevel.RunStatistics) -> None:
        """Time is about to jump: warn (once) if a task of the run waits for
        I/O. The I/O manager's count says whether any task does, without
        walking the tasks; the tasks are walked only when it changes."""
        count = io_waiters(statistics)
        if count <= _TRIOS_OWN_IO_WAITERS or count == self._io_seen:
            return
        self._io_seen = count
        waiting = sorted(_io_waits())
        if waiting:
            self.warned = True
            warnings.warn(
                f"actors.run is on trio's MockClock, and virtual time jumps ahead while "
                f"{waiting[0]}: its timeouts fire at once, whatever the peer does. Run "
                "an application that does I/O with clock=actors.RealClock()",
                MockClockWarning,
                stacklevel=1,
            )


def io_waiters(statistics: trio.lowlevel.RunStatistics) -> int:
    """How many tasks of the run wait on a socket or file, by the I/O
    manager's statistics: epoll's readers and writers, kqueue's waiters (on
    Windows, whose I/O manager counts otherwise, the warning is not given)."""
    io = statistics.io_statistics
    names = ("tasks_waiting_read", "tasks_waiting_write", "tasks_waiting")
    counts = (getattr(io, name, 0) for name in names)
    return sum(count for count in counts if isinstance(count, int))


_TRIOS_OWN_IO_WAITERS = 1
"""Trio's entry-queue task always waits to read its wake-up socket (pinned by
``tests/actors/test_deadlock.py``)."""


def _tasks(task: trio.lowlevel.Task) -> Iterator[trio.lowlevel.Task]:
    yield task
    for nursery in task.child_nurseries:
        for child in nursery.child_tasks:
            yield from _tasks(child)


def _module(frame: types.FrameType) -> str:
    return str(frame.f_globals.get("__name__", ""))


def _waiting_tasks() -> Iterator[tuple[trio.lowlevel.Task, list[types.FrameType]]]:
    """Each task of the run outside Trio's own, with its await frames."""
    root = trio.lowlevel.current_root_task()
    assert root is not None, "called inside a run"
    for task in _tasks(root):
        frames = [frame for frame, _ in task.iter_await_frames()]
        if not frames or _module(frames[0]).startswith("trio._core."):
            continue  # trio's own tasks (the run's init, its entry queue)
        if frames[0].f_code.co_qualname == "Timekeeper._run":
            continue  # a system's timer task, idle: nothing is scheduled
        yield task, frames


def _waits() -> Iterator[tuple[str, bool]]:
    """Each task of the run outside Trio's own, as (what it waits on, whether
    something outside the run can end the wait)."""
    for task, frames in _waiting_tasks():
        outside = any(_module(frame).startswith(_OUTSIDE_WAITS) for frame in frames)
        yield f"{_who(task, frames[0])} {_what(frames)}", outside


def _io_waits() -> Iterator[str]:
    """What each task of the run that waits for I/O waits on."""
    for task, frames in _waiting_tasks():
        if any(_module(frame).startswith(_OUTSIDE_WAITS[0]) for frame in frames):
            yield f"{_who(task, frames[0])} {_what(frames)}"


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
    if where in ("ActorRef.tell", "_Cell.tell_directly", "_Cell.put", "Sequencer._deliver_waiting"):
        cell = local.get("cell", local.get("self"))
        return f"waits for room in the mailbox of actor {_name_of(cell)}"
    if where in ("_Cell.wait_incarnation_end", "ActorRef.wait_stopped", "stop_last_first"):
        cell = local.get("cell", local.get("self"))
        return f"waits for actor {_name_of(cell)} to stop"
    if where.startswith("Supervisor."):
        return "waits to be restarted"
    return None
