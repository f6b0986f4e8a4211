"""The reply half of an ``ask``."""

from __future__ import annotations

import enum
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Generic, TypeVar, final

import outcome
import trio
from trio._core._run import GLOBAL_RUN_CONTEXT

from . import _footprint
from ._envelope import current_address
from ._errors import ActorError, AlreadyRepliedError
from ._trace import EventKind, TraceEvent
from ._util import NoPublicConstructor, foreign_thread_error, in_trio_thread

if TYPE_CHECKING:
    from ._envelope import Envelope
    from ._timekeeper import Timekeeper
    from ._trace import Tracer

logger = logging.getLogger("actors")

R = TypeVar("R")
R_contra = TypeVar("R_contra", contravariant=True)


class _ExpiredError(Exception):
    """Raised in an asker by the system's timekeeper: its deadline came."""


class _OrphanedError(Exception):
    """Raised in an asker by the system's timekeeper: it ended before the
    ask's deadline, so the asker keeps the deadline itself."""


class _Completion(enum.Enum):
    """How a reply was completed."""

    SENT = "sent"
    FAILED = "failed"
    WITHDRAWN = "withdrawn"
    """Failed by the framework: the actor asked ended and will never answer."""


_SENT = _Completion.SENT  # (a global: an enum member's lookup costs more)


@final
class Reply(Generic[R_contra], metaclass=NoPublicConstructor):
    """Where the answer to one ``ask`` goes.

    The rules:

    * Whoever holds the reply completes it once, with :meth:`send` or
      :meth:`fail`; both return ``True``. The actor asked may hand the reply on
      (to another actor, in a message) and let that one answer.
    * A second completion raises :class:`~actors.AlreadyRepliedError`, naming
      how the reply was completed, and changes nothing.
    * The framework fails the reply itself only when no answer can come: the
      actor asked ended before taking the message
      (:class:`~actors.ActorStoppedError`), or failed
      (:class:`~actors.ActorFailedError`) or was cancelled
      (:class:`~actors.ActorStoppedError`) after taking it and before the reply
      was completed, even if it had handed the reply on.
    * A graceful stop (the behaviour returns) fails none of the replies of the
      messages the behaviour took: a reply handed on stays valid. One that
      nobody ever completes leaves the asker waiting until its timeout.
    * :meth:`send` or :meth:`fail` on a reply the framework failed is a late
      answer: it returns ``False``, changes nothing (the asker already has its
      error), and is recorded as a ``discarded`` trace event and an INFO log
      record.

    The asker parks on the reply directly (no channel, no extra task), so a
    round trip costs one wake-up each way. A reply completed after the asker
    gave up (timeout or cancellation) is kept here and read by no one.
    """

    __slots__ = (
        "_abandoned",
        "_actor",
        "_completion",
        "_envelope",
        "_notify",
        "_number",
        "_result",
        "_seq",
        "_table",
        "_taken",
        "_token",
        "_tracer",
        "_waiter",
    )

    def __init__(
        self, actor: str, seq: int, tracer: Tracer | None, token: trio.lowlevel.TrioToken
    ) -> None:
        self._actor = actor
        self._seq = seq
        self._tracer = tracer
        self._token = token
        # Invariant: _result and _completion are both set or both None, and at
        # most one of _result and _waiter is set.
        self._result: outcome.Outcome[Any] | None = None
        self._completion: _Completion | None = None
        self._waiter: trio.lowlevel.Task | None = None
        # Called with the result once the reply is completed, instead of a
        # waiting task being woken: how a node (actors.net) learns the answer
        # to an ask that came over a connection, without a task per ask.
        self._notify: Callable[[outcome.Outcome[Any]], None] | None = None
        # The ask's bookkeeping in its actor's cell (the reply is the entry
        # of ``cell.pending``, no object of its own): the envelope its
        # message went in, and whether the actor took it.
        self._envelope: Envelope[object] | None = None
        self._taken = False
        # The asker gave up (see ``abandoned``).
        self._abandoned = False
        # An ask of a remote actor: the node's table of its asks in flight
        # this reply waits in, under ``_number`` (set with it), which the
        # asker leaves when it returns, answered or not.
        self._table: dict[int, Reply[Any]] | None = None
        self._number: int

    def __repr__(self) -> str:
        state = "pending" if self._completion is None else self._completion.value
        return f"<Reply to message {self._seq} of actor {self._actor!r}: {state}>"

    @property
    def _name(self) -> str:
        return f"reply to message {self._seq} of actor {self._actor!r}"

    @property
    def abandoned(self) -> bool:
        """Whether the asker gave up on this reply (it timed out or was
        cancelled, or, asked from another node, that node said so or its
        connection went down): an answer now is read by no one. A handler
        with a long job may check it and stop early. A remote ask whose
        message was still in the mailbox when its asker gave up is taken
        out of the mailbox and never delivered."""
        return self._abandoned

    @property
    def done(self) -> bool:
        """Whether the reply was already completed (sent, failed, or failed by
        the framework)."""
        _footprint.touch(self)
        return self._completion is not None

    def send(self, value: R_contra) -> bool:
        """Complete the ask with ``value`` and return ``True``; return ``False``
        for a late answer (see the class docs). Never blocks, never checkpoints.

        Only from the Trio thread of the asker's system: any other thread gets
        :class:`RuntimeError`, and the reply is unchanged. From a worker
        thread, call ``trio.from_thread.run_sync(reply.send, value)``.
        """
        _footprint.touch(self)
        try:  # in_trio_thread, inline (every ask's answer comes this way)
            here = GLOBAL_RUN_CONTEXT.runner.trio_token is self._token
        except AttributeError:
            here = False
        if not here:
            raise foreign_thread_error(
                f"send on {self._name}", "trio.from_thread.run_sync(reply.send, value)"
            )
        if self._completion is None:  # the usual case
            self._settle(outcome.Value(value), _SENT)
            return True
        return self._complete(outcome.Value(value), _Completion.SENT)

    def _answer(self, value: R_contra) -> None:
        """:meth:`send` of a pending reply by the framework, in the Trio
        thread of its system (a node handing on the answer its peer sent):
        :meth:`_settle` without the thread check."""
        assert self._completion is None, "only a pending reply is answered"
        self._settle(outcome.Value(value), _SENT)

    def fail(self, error: BaseException) -> bool:
        """Complete the ask by raising ``error`` in the asker and return
        ``True``; return ``False`` for a late answer (see the class docs).
        Only from the Trio thread of the asker's system, like :meth:`send`."""
        _footprint.touch(self)
        if not in_trio_thread(self._token):
            raise foreign_thread_error(
                f"fail on {self._name}", "trio.from_thread.run_sync(reply.fail, error)"
            )
        return self._complete(outcome.Error(error), _Completion.FAILED)

    def _withdraw(self, error: ActorError) -> None:
        """Fail the reply for the framework: its actor will never answer."""
        _footprint.touch(self)
        assert self._completion is None, "only a pending reply is withdrawn"
        self._envelope = None  # (see Inbox.__anext__)
        self._settle(outcome.Error(error), _Completion.WITHDRAWN)

    def _expire(self) -> None:
        """The ask's deadline came: the asker stops waiting (with
        :class:`_ExpiredError`), if it still waits."""
        _footprint.touch(self)
        self._interrupt(_ExpiredError())

    def _orphan(self) -> None:
        """The timekeeper ended: the asker keeps its deadline itself."""
        _footprint.touch(self)
        self._interrupt(_OrphanedError())

    def _interrupt(self, error: Exception) -> None:
        _footprint.touch(self)
        waiter = self._waiter
        if waiter is not None:
            self._waiter = None
            trio.lowlevel.reschedule(waiter, outcome.Error(error))

    def _complete(self, result: outcome.Outcome[R_contra], completion: _Completion) -> bool:
        _footprint.touch(self)
        if self._completion is _Completion.WITHDRAWN:
            self._discard(completion)
            return False
        if self._completion is not None:
            raise AlreadyRepliedError(f"{self._name} was already {self._completion.value}")
        self._settle(result, completion)
        return True

    def _settle(self, result: outcome.Outcome[R_contra], completion: _Completion) -> None:
        self._result = result
        self._completion = completion
        waiter = self._waiter
        if waiter is not None:
            self._waiter = None
            GLOBAL_RUN_CONTEXT.runner.reschedule(waiter, result)
        elif self._notify is not None:
            self._notify(result)

    def _discard(self, completion: _Completion) -> None:
        sender = current_address.get()
        logger.info(
            "%s was %s late%s and discarded: the ask already failed",
            self._name,
            completion.value,
            "" if sender is None else f" by {sender.name!r}",
        )
        if self._tracer is not None:
            self._tracer.record(
                TraceEvent(
                    trio.current_time(),
                    self._actor,
                    EventKind.DISCARDED,
                    self._seq,
                    None if sender is None else sender.name,
                )
            )

    def _wait(self: Reply[R]) -> Awaitable[R]:
        """Park until the reply is completed, then return it or raise its
        error: call it and await the result at once. Not a coroutine of its
        own, so that an ask's wait is one frame fewer to suspend and resume:
        the asker parks in trio's ``wait_task_rescheduled`` right in the frame
        of its ``ask``.

        A checkpoint. If cancelled, nothing is consumed: the reply, when it comes,
        is kept and never read.
        """
        _footprint.touch(self)
        if self._result is not None:
            return self._done()
        self._waiter = trio.lowlevel.current_task()
        return trio.lowlevel.wait_task_rescheduled(self._abort)  # noqa: ASYNC105 (awaited at once)

    async def _done(self: Reply[R]) -> R:
        _footprint.touch(self)
        await trio.lowlevel.checkpoint()
        result: outcome.Outcome[R] | None = self._result
        assert result is not None, "a completed reply has its result"
        return result.unwrap()

    def _abort(self, _: trio.lowlevel.RaiseCancelT) -> trio.lowlevel.Abort:
        _footprint.touch(self)
        self._waiter = None
        return trio.lowlevel.Abort.SUCCEEDED


class _Deadline:
    """The deadline of an ask with a timeout, in the system's timer heap
    (see :mod:`._timers`): made only for such asks."""

    __slots__ = ("reply", "scheduled")

    def __init__(self, reply: Reply[Any]) -> None:
        self.reply = reply
        # Its deadline is in the system's timer heap and still wanted.
        self.scheduled = False

    def due(self, timekeeper: Timekeeper, when: float) -> None:
        """Its deadline came: the asker stops waiting."""
        self.scheduled = False
        self.reply._expire()

    def orphaned(self) -> None:
        """The timer task ended before the deadline: the asker keeps it itself."""
        self.scheduled = False
        self.reply._orphan()
