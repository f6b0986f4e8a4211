"""The errors of the actor framework: one base, one noun per failure."""

from __future__ import annotations

import trio


class ActorError(Exception):
    """Base class of every error raised by the ``actors`` package."""


class ActorStoppedError(ActorError, trio.BrokenResourceError):
    """A message was sent to an actor that stopped; or an ask's actor stopped
    before taking its message, or was cancelled while holding it.

    It is also a :class:`trio.BrokenResourceError`, the error trio raises when the
    receiving side of a channel is gone: code that already handles that one
    handles this one.
    """


class AskTimeoutError(ActorError, trio.TooSlowError):
    """An ``ask`` got no reply within its timeout. Also a :class:`trio.TooSlowError`."""


class AlreadyRepliedError(ActorError):
    """A :class:`~actors.Reply` already sent or failed was completed again.

    A late answer to a reply the framework failed (its actor ended with no
    answer to give, see :class:`~actors.Reply`) is not an error: ``send`` and
    ``fail`` return ``False`` then."""


class ActorNameError(ActorError):
    """An actor was spawned under a name a live actor of the same system holds."""


class RestartIntensityError(ActorError):
    """A supervisor's restart budget is exhausted, so it escalates the failure.

    Its ``__cause__`` is the failure that exhausted the budget.
    """


class ActorFailedError(ActorError):
    """An actor failed while an ask's message was in its hands, so no reply will
    come. Its ``__cause__`` is the actor's failure."""


class DeadlockError(ActorError):
    """:func:`actors.run` found every task blocked with no deadline pending on
    its mock clock, so nothing could ever wake them; the message names each
    waiting actor and task and what it waits on."""


class MockClockWarning(RuntimeWarning):
    """:func:`actors.run` is on trio's ``MockClock`` and a task waits for I/O
    (a socket) while virtual time jumps ahead: that task's timeouts fire at
    once. Warned once a run; run such an application with
    ``clock=actors.RealClock()``."""


class TimeLimitError(ActorError):
    """:func:`actors.run` with a ``time_limit`` found every task blocked and
    the next deadline past the limit: the run is ended there, and the
    message names each waiting actor and task and what it waits on (a run
    that only a periodic timer keeps going ends so)."""
