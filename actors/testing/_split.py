"""A ``dfs`` shared between processes (``explore``'s ``jobs``).

Iterative deepening runs the default schedule (level 0), then every
schedule of one deviation from it, of two, and so on; a schedule of a
deeper level extends one of the level before after that one's last
deviation, so its first deviation from the default run is that one's. So
the first deviations, each with every schedule that begins with it at every
level, part the whole search into disjoint subtrees. As level 1 begins, the
process forks a worker for each share but its own (:func:`os.fork`: the
default run, its states and the plays observed come along, nothing is
sent); each runs every level of the subtrees of its share of the first
deviations (``_Dfs._ours``), walking only its own runs at the deeper
levels and merging only into states it, or the default run, explored on
from. At its end a worker sends what its runs add up to
through a pipe, or, at its first failing run, that run's schedule (which
the first process replays, minimises and confirms itself: an exception need
not pickle), and leaves with :func:`os._exit`: nothing of the caller's runs
in it. The first process reads each worker's report after each of its own
runs (a failure ends its part too) and, its part done, waits for the rest.

Each worker explores its subtrees as the one process would, except for the
merges into states another worker explored: so the workers together may run
more schedules than one process, never fewer than they must; an exploration
that fails nowhere counts the same in every run of it. Where two shares
each have a failure, which is reported is whichever was found first.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import select
import signal
import struct
import sys
import traceback
from typing import Any

import attrs

from ._schedule import ExplorationError

_LENGTH = struct.Struct("<Q")

MAX_JOBS = 64
"""The most processes an exploration may be shared between
(each a fork of the whole search, memory and all)."""

# What a worker's program may raise that is no failure: it ends the
# exploration, and is raised in the first process as itself.
_PASSED_ON = {kind.__name__: kind for kind in (KeyboardInterrupt, SystemExit, GeneratorExit)}


class WorkerError(ExplorationError, RuntimeError):
    """A worker process of a shared exploration (``explore(jobs=)``) ended
    without its report, or with an error of its own (its traceback is in
    the message)."""


@attrs.define
class _Child:
    pid: int
    fd: int
    report: dict[str, Any] | None = None


@attrs.define
class Split:
    """The processes sharing one exploration: this one's index
    among them and, in the first, the others."""

    workers: int
    index: int = 0
    _children: list[_Child] = attrs.Factory(list)
    _report_fd: int = -1
    _parent: int = -1

    @property
    def is_worker(self) -> bool:
        """Whether this is a forked worker (not the caller's process)."""
        return self.index > 0

    def fork(self) -> tuple[int, int]:
        """Fork the other workers; this process's share, (index, workers)."""
        for stream in (sys.stdout, sys.stderr):
            stream.flush()  # or the child would write what is buffered again
        for index in range(1, self.workers):
            read, write = os.pipe()
            # A Ctrl-C waits until the child is recorded (and so reaped).
            mask = _block_interrupts()
            try:
                pid = os.fork()
            except BaseException:
                _restore(mask)
                os.close(read)
                os.close(write)
                raise
            if pid == 0:  # pragma: no cover (measured in the parent only)
                # Ctrl-C is the caller's: it ends the exploration, and this worker with it.
                signal.signal(signal.SIGINT, signal.SIG_IGN)
                _restore(mask)
                os.close(read)
                for child in self._children:
                    os.close(child.fd)
                self._children = []
                self.index, self._report_fd, self._parent = index, write, os.getppid()
                _die_with_parent()
                return index, self.workers
            self._children.append(_Child(pid, read))
            _restore(mask)
            os.close(write)
        return 0, self.workers

    # In a worker -----------------------------------------------------------------

    def orphaned(self) -> bool:
        """Whether the process that forked this worker is gone."""
        return self.is_worker and os.getppid() != self._parent

    def leave(self, report: dict[str, Any]) -> None:  # pragma: no cover (in a worker)
        """Send ``report`` and end this worker (never returns)."""
        code = 0
        try:
            data = pickle.dumps(report, protocol=pickle.HIGHEST_PROTOCOL)
            _write_all(self._report_fd, _LENGTH.pack(len(data)) + data)
        except BaseException:
            code = 1
        finally:
            for stream in (sys.stdout, sys.stderr):
                try:
                    stream.flush()
                except BaseException:
                    code = 1
            os._exit(code)

    def fail(self, error: BaseException) -> None:  # pragma: no cover (in a worker)
        """End this worker with ``error`` reported (never returns, never
        raises: whatever ``error`` does when converted, the report says
        what it could; an unsendable one ends the worker without one)."""
        try:
            report = _failure(error)
        except BaseException:
            report = {"error": "WorkerError", "message": _text(error), "traceback": ""}
        self.leave(report)

    # In the first process --------------------------------------------------------

    def poll(self) -> bool:
        """Receive the reports that arrived (waiting for none): whether one
        ends the exploration (a failure or an error)."""
        waiting = [child for child in self._children if child.report is None]
        if waiting:
            # (poll, not select: a caller may have descriptors past 1023 open)
            poller = select.poll()
            for child in waiting:
                poller.register(child.fd, select.POLLIN)
            ready = {fd for fd, _ in poller.poll(0)}
            for child in waiting:
                if child.fd in ready:
                    self._receive(child)
        return any(child.report is not None and _ends(child.report) for child in self._children)

    def reports(self, *, wait: bool = True) -> list[dict[str, Any]]:
        """Every worker's report, in the order of their shares, each waited
        for unless not ``wait`` (then those received)."""
        if wait:
            for child in self._children:
                if child.report is None:
                    self._receive(child)
        return [child.report for child in self._children if child.report is not None]

    def _receive(self, child: _Child) -> dict[str, Any]:
        header = _read_exactly(child.fd, _LENGTH.size)
        report: dict[str, Any]
        if len(header) < _LENGTH.size:
            report = {"error": "WorkerError", "message": _ended(child), "traceback": ""}
        else:
            (length,) = _LENGTH.unpack(header)
            data = _read_exactly(child.fd, length)
            if len(data) < length:
                report = {"error": "WorkerError", "message": _ended(child), "traceback": ""}
            else:
                try:
                    report = pickle.loads(data)
                except Exception as error:
                    report = {
                        "error": "WorkerError",
                        "message": f"worker process {child.pid} sent a report that does not "
                        f"unpickle here: {error!r}",
                        "traceback": "",
                    }
        child.report = report
        return report

    def close(self) -> None:
        """End the workers still running, and reap them all."""
        for child in self._children:
            if child.report is None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(child.pid, signal.SIGKILL)
            with contextlib.suppress(ChildProcessError):
                os.waitpid(child.pid, 0)
            os.close(child.fd)
        self._children = []


def _failure(error: BaseException) -> dict[str, Any]:  # pragma: no cover (in a worker)
    """The report of ``error``: a kind passed on (or a subclass of one: the
    first of them in its method resolution order) under the built-in kind's
    name, with its arguments (as stored, whatever ``args`` a subclass
    defines) and a SystemExit's code, pickled where they pickle (else its
    text), to be raised again as that kind."""
    kind = next(
        (
            klass.__name__
            for klass in type(error).__mro__
            if _PASSED_ON.get(klass.__name__) is klass
        ),
        None,
    )
    message = _text(error)
    try:
        arguments = pickle.dumps(_ARGS.__get__(error, BaseException))
    except BaseException:
        arguments = pickle.dumps((message,))
    code: bytes | None = None
    if isinstance(error, SystemExit):
        with contextlib.suppress(BaseException):
            code = pickle.dumps(_CODE.__get__(error, SystemExit))
    try:
        text = "".join(traceback.format_exception(error))
    except BaseException:
        text = ""
    return {
        "error": kind if kind is not None else _name(error),
        "message": message,
        "arguments": arguments,
        "code": code,
        "traceback": text,
    }


# The arguments and exit code as BaseException and SystemExit store them (a
# subclass's own ``args`` or ``code`` property is not asked).
_ARGS = BaseException.__dict__["args"]
_CODE = SystemExit.__dict__["code"]


def _name(error: BaseException) -> str:
    try:
        return str(type.__dict__["__name__"].__get__(type(error)))
    except BaseException:
        return "BaseException"


def _text(error: BaseException) -> str:
    """``str(error)``, or what it is where that raises."""
    try:
        return str(error)
    except BaseException:
        return f"<{_name(error)} whose str() raised>"


def passed_on(report: dict[str, Any]) -> BaseException | None:
    """The exception a worker's ``report`` says its program raised that
    ends the exploration as itself (KeyboardInterrupt, SystemExit,
    GeneratorExit), made again (with its text where its arguments do not
    unpickle here); None for any other report."""
    kind = _PASSED_ON.get(report.get("error", ""))
    if kind is None:
        return None
    message = report.get("message", "")
    try:
        arguments = pickle.loads(report["arguments"])
        made = kind(*arguments) if isinstance(arguments, tuple) else kind(message)
    except Exception:
        made = kind(message)
    if isinstance(made, SystemExit) and report.get("code") is not None:
        with contextlib.suppress(Exception):
            made.code = pickle.loads(report["code"])
    return made


def _block_interrupts() -> set[int | signal.Signals] | None:
    """Block SIGINT for this thread, where it can be: the mask before."""
    if not hasattr(signal, "pthread_sigmask"):
        return None
    return signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})


def _restore(mask: set[int | signal.Signals] | None) -> None:
    if mask is not None:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)


def _die_with_parent() -> None:  # pragma: no cover (in a worker)
    """Have the kernel kill this worker when the process that forked it
    ends (Linux's PR_SET_PDEATHSIG), so that even a worker whose program
    never returns is not left behind; elsewhere, a worker sees it between
    runs (Split.orphaned)."""
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # 1: PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return


def _ends(report: dict[str, Any]) -> bool:
    return "error" in report or report["failed"] is not None


def _ended(child: _Child) -> str:
    return f"worker process {child.pid} ended without a report"


def _write_all(fd: int, data: bytes) -> None:  # pragma: no cover (in a worker)
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _read_exactly(fd: int, count: int) -> bytes:
    chunks = []
    while count:
        chunk = os.read(fd, min(count, 1 << 20))
        if not chunk:
            break
        chunks.append(chunk)
        count -= len(chunk)
    return b"".join(chunks)
