"""The reply half of an ``ask``."""

from __future__ import annotations

from typing import Generic, TypeVar, final

import outcome
import trio

from ._errors import AlreadyRepliedError
from ._util import NoPublicConstructor

R = TypeVar("R")


@final
class Reply(Generic[R], metaclass=NoPublicConstructor):
    """Where the answer to one ``ask`` goes. The handler completes it exactly once,
    with :meth:`send` or :meth:`fail`; a second completion raises
    :class:`~actors.AlreadyRepliedError` and changes nothing.

    The asker parks on the reply directly (no channel, no extra task), so a
    round trip costs one wake-up each way. A reply that arrives after the asker
    gave up (timeout or cancellation) is kept here and read by no one.
    """

    __slots__ = ("_actor", "_result", "_seq", "_waiter")

    def __init__(self, actor: str, seq: int) -> None:
        self._actor = actor
        self._seq = seq
        # Invariant: at most one of _result and _waiter is set.
        self._result: outcome.Outcome[R] | None = None
        self._waiter: trio.lowlevel.Task | None = None

    def __repr__(self) -> str:
        state = "pending" if self._result is None else "done"
        return f"<Reply to message {self._seq} of actor {self._actor!r}: {state}>"

    @property
    def done(self) -> bool:
        """Whether the reply was already sent or failed."""
        return self._result is not None

    def send(self, value: R) -> None:
        """Complete the ask with ``value``. Never blocks, never checkpoints."""
        self._settle(outcome.Value(value))

    def fail(self, error: BaseException) -> None:
        """Complete the ask by raising ``error`` in the asker."""
        self._settle(outcome.Error(error))

    def _settle(self, result: outcome.Outcome[R]) -> None:
        if self._result is not None:
            raise AlreadyRepliedError(
                f"reply to message {self._seq} of actor {self._actor!r} was already sent"
            )
        waiter = self._waiter
        if waiter is None:
            self._result = result
        else:
            self._waiter = None
            self._result = result
            trio.lowlevel.reschedule(waiter, result)

    async def _wait(self) -> R:
        """Park until the reply is completed, then return it or raise its error.

        A checkpoint. If cancelled, nothing is consumed: the reply, when it comes,
        is kept and never read.
        """
        result = self._result
        if result is not None:
            await trio.lowlevel.checkpoint()
            return result.unwrap()
        self._waiter = trio.lowlevel.current_task()

        def abort(_: trio.lowlevel.RaiseCancelT) -> trio.lowlevel.Abort:
            self._waiter = None
            return trio.lowlevel.Abort.SUCCEEDED

        value: R = await trio.lowlevel.wait_task_rescheduled(abort)
        return value
