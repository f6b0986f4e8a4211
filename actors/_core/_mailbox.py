"""Mailboxes: the typed reference senders hold (the inbox an actor reads is
in :mod:`._inbox`; the state both share, the cell, in :mod:`._cell`)."""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable
from typing import Any, Generic, TypeVar, TypeVarTuple, final

import trio
from trio._core._run import GLOBAL_RUN_CONTEXT

from . import _footprint
from ._cell import ActorState, ActorStatistics, _Cell
from ._envelope import Address, Envelope, current_address
from ._errors import ActorError, AskTimeoutError
from ._monitors import ExitReason
from ._reply import Reply, _Deadline, _ExpiredError, _OrphanedError
from ._util import NoPublicConstructor, current_time, foreign_thread_error, in_trio_thread

M_contra = TypeVar("M_contra", contravariant=True)
R = TypeVar("R")
Ts = TypeVarTuple("Ts")


def _timeout_error(cell: _Cell[Any], timeout: float, *, accepted: bool) -> AskTimeoutError:
    name = cell.address.name
    if accepted:
        return AskTimeoutError(f"ask of actor {name!r} got no reply within {timeout:g}s")
    return AskTimeoutError(
        f"ask of actor {name!r} timed out after {timeout:g}s "
        "before its mailbox accepted the message; the message was not sent"
    )


async def _put_before(
    cell: _Cell[M_contra],
    envelope: Envelope[M_contra],
    deadline: float,
    timeout: float,  # noqa: ASYNC109 (only named in the error; the deadline bounds the wait)
) -> None:
    """Put ``envelope`` in a full mailbox before ``deadline``, or raise the
    ask's timeout (the message was not sent): the one wait of an ask that
    takes a cancel scope."""
    with trio.move_on_at(deadline):
        await cell.put(envelope)
        return
    raise _timeout_error(cell, timeout, accepted=False)


async def _reply_before(
    cell: _Cell[Any],
    reply: Reply[R],
    deadline: float,
    timeout: float,  # noqa: ASYNC109 (only named in the error; the deadline bounds the wait)
) -> R:
    """Wait for ``reply`` until ``deadline`` in a cancel scope, or raise the
    ask's timeout: how the asker keeps its deadline once the system's timer
    task ended."""
    with trio.move_on_at(deadline):
        return await reply._wait()
    raise _timeout_error(cell, timeout, accepted=True)


def _seconds(timeout: float, what: str = "ask timeout") -> float:
    """A ``timeout`` (an ask's, or ``what``) as a float >= 0 (``-0.0`` as
    ``0.0``), or :class:`ValueError` (:class:`TypeError` if not a number)."""
    given: object = timeout  # typed float, checked as anything a caller passes
    if not isinstance(given, numbers.Real):
        raise TypeError(f"{what} must be None or a number of seconds, not {timeout!r}")
    if not timeout >= 0:
        raise ValueError(f"{what} must be None or a number of seconds >= 0, not {timeout!r}")
    try:
        return abs(float(timeout))
    except OverflowError:
        raise ValueError(
            f"{what} must be None or a number of seconds >= 0, not a number too large "
            "for a float (math.inf waits as long as it takes)"
        ) from None


@final
class ActorRef(Generic[M_contra], metaclass=NoPublicConstructor):
    """A reference to an actor, typed by the messages it accepts.

    References compare equal when they name the same actor, and stay valid
    across restarts: a restarted actor keeps its mailbox.
    """

    __slots__ = ("_cell",)

    def __init__(self, cell: _Cell[M_contra]) -> None:
        self._cell = cell

    def __repr__(self) -> str:
        return f"<ActorRef {self._cell.address.name!r} ({self._cell.state})>"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ActorRef) and other._cell is self._cell

    def __hash__(self) -> int:
        return hash(self._cell.address)

    @property
    def address(self) -> Address:
        return self._cell.address

    @property
    def name(self) -> str:
        return self._cell.address.name

    def tell_nowait(self, message: M_contra) -> None:
        """Put ``message`` in the mailbox now, or raise :class:`trio.WouldBlock`
        if it is full (nothing is queued then). Raises
        :class:`~actors.ActorStoppedError` if the actor stopped accepting.

        With message latency on (``actors.run(main, latency=...)``), the
        message is sent on its way and this never raises
        :class:`trio.WouldBlock`: see :meth:`tell`.

        Only from the Trio thread of the actor's system: any other thread gets
        :class:`RuntimeError`, and nothing is queued. From a worker thread,
        call ``trio.from_thread.run_sync(ref.tell_nowait, message)``.
        """
        cell = self._cell
        _footprint.touch_actor(cell.address)
        if not in_trio_thread(cell.token):
            raise foreign_thread_error(
                f"tell_nowait to actor {cell.address.name!r}",
                "trio.from_thread.run_sync(ref.tell_nowait, message)",
            )
        if cell.transit is not None:
            cell.transit.tell_nowait(cell, message)
            return
        cell.tell_directly_nowait(message)

    async def tell(self, message: M_contra) -> None:
        """Put ``message`` in the mailbox, waiting for room while it is full.

        A checkpoint. If cancelled, the message was not accepted (and never
        will be). Raises :class:`~actors.ActorStoppedError` if the actor stops
        accepting before there is room.

        With message latency on (``actors.run(main, latency=...)``) it
        returns at once, the message on its way: the mailbox accepts it when
        it arrives, after the messages this sender sent the actor before
        (waiting there for room if the mailbox is full). One that arrives
        after the actor stopped accepting is dropped, and counted in its
        ``statistics().dropped_in_flight``. An actor stopped already when
        this is called raises :class:`~actors.ActorStoppedError`, as always.

        Only from the Trio thread of the actor's system: any other thread, or
        another ``trio.run``, gets :class:`RuntimeError`, and nothing is
        queued. From another thread, call
        ``trio.from_thread.run(ref.tell, message)``.
        """
        cell = self._cell
        _footprint.touch_actor(cell.address)
        if not in_trio_thread(cell.token):
            raise foreign_thread_error(
                f"tell to actor {cell.address.name!r}", "trio.from_thread.run(ref.tell, message)"
            )
        if cell.transit is not None:
            await cell.transit.tell(cell, message)
            return
        await cell.tell_directly(message)

    async def ask(
        self,
        build: Callable[[*Ts, Reply[R]], M_contra],
        /,
        *args: *Ts,
        timeout: float | None = None,  # noqa: ASYNC109 (its error names the actor)
    ) -> R:
        """Send ``build(*args, reply)`` and wait for the actor to complete
        ``reply``; return what it sends.

        ``build`` is usually the message class, with its reply field last:
        ``await ref.ask(Get, "key", timeout=1)`` sends ``Get("key", reply)``
        and, ``Get``'s ``reply`` being a ``Reply[int]``, returns an ``int``.
        mypy checks ``args`` against ``build``'s parameters and the message
        against what the actor accepts. Any callable taking the reply last
        will do (``functools.partial(Get, key)``, a function).

        ``timeout`` bounds the whole ask, the wait for room in a full mailbox
        and the wait for the reply: after ``timeout`` seconds it raises
        :class:`~actors.AskTimeoutError`, saying whether the mailbox had
        accepted the message (if not, it never will). ``None`` or
        ``math.inf``: wait as long as it takes. ``0``: a deadline already
        passed, so nothing is sent and the ask times out at once (as
        ``trio.fail_after(0)`` would; ``-0.0`` is ``0``). A negative or NaN
        timeout, or one too large for a float (``10**400``), raises
        :class:`ValueError` before anything is sent. The deadline of the wait
        for the reply is kept by the system's timer task, not by a cancel
        scope: an ask with a timeout costs what one without does.

        A checkpoint. Raises :class:`~actors.ActorStoppedError` if the actor
        stops before taking the message, or is cancelled while holding it;
        :class:`~actors.ActorFailedError` if it fails while holding it; or the
        error the handler passed to ``reply.fail``. An actor that takes the
        message and stops without completing the reply (or hands the reply to
        an actor that never does) leaves the asker to its timeout: see
        :class:`~actors.Reply`. If cancelled, the message may already have
        been accepted and handled; its reply is discarded.

        With message latency on (``actors.run(main, latency=...)``), the
        message travels to the mailbox as a :meth:`tell`'s does and the answer
        travels back, each with its delay, both within ``timeout``; an ask
        that times out (or is cancelled) while its message is on its way
        withdraws it: it is never sent.

        Only from the Trio thread of the actor's system (see :meth:`tell`):
        from another thread, call ``trio.from_thread.run(ref.ask, build)``.
        """
        cell = self._cell
        _footprint.touch_actor(cell.address)
        try:  # in_trio_thread, inline (the hot path of every ask)
            here = GLOBAL_RUN_CONTEXT.runner.trio_token is cell.token
        except AttributeError:
            here = False
        if not here:
            raise foreign_thread_error(
                f"ask of actor {cell.address.name!r}", "trio.from_thread.run(ref.ask, build)"
            )
        deadline = math.inf
        if timeout is not None:
            if type(timeout) is not float or not timeout > 0.0:  # else: valid, no call
                timeout = _seconds(timeout)
            now = current_time()
            deadline = now + timeout
            if deadline <= now:
                # A deadline already passed (timeout 0) sends nothing.
                await trio.lowlevel.checkpoint()
                raise _timeout_error(cell, timeout, accepted=False)
        await trio.lowlevel.checkpoint_if_cancelled()
        if cell.transit is not None:
            return await cell.transit.ask(cell, build, args, deadline, timeout)
        seq = cell.next_seq
        # Reply._create without its extra call (the hot path of every ask).
        # The reply is the ask's entry in the cell's pending asks: it holds
        # the envelope (so the inbox knows it taken) and needs no object of
        # its own.
        reply: Reply[R] = type.__call__(Reply, cell.address.name, seq, cell.tracer, cell.token)
        envelope = Envelope(build(*args, reply), seq, current_address.get())
        reply._envelope = envelope
        cell.next_seq = seq + 1
        pending = cell.pending
        if pending is None:
            pending = cell.pending = {}
        pending[seq] = reply
        try:
            # One schedule point per ask when the mailbox has room: the wait
            # for the reply. Only a full mailbox adds a wait for room.
            if deadline == math.inf:
                try:
                    cell.send_channel.send_nowait(envelope)
                except trio.WouldBlock:
                    await cell.put(envelope)
                except (trio.ClosedResourceError, trio.BrokenResourceError):
                    raise cell.stopped_error() from None
                if reply._result is not None:
                    return await reply._done()
                # reply._wait(), inline: the asker parks right here.
                reply._waiter = GLOBAL_RUN_CONTEXT.task
                return await trio.lowlevel.wait_task_rescheduled(reply._abort)  # type: ignore[no-any-return]
            assert timeout is not None
            # With a deadline: no cancel scope unless the mailbox is full; the
            # wait for the reply ends at the deadline by the system's timer
            # task, which wakes the asker with _ExpiredError.
            try:
                cell.send_channel.send_nowait(envelope)
            except trio.WouldBlock:
                await _put_before(cell, envelope, deadline, timeout)
            except (trio.ClosedResourceError, trio.BrokenResourceError):
                raise cell.stopped_error() from None
            timekeeper = cell.timekeeper
            ask = _Deadline(reply)
            if timekeeper.schedule(deadline, ask):
                try:
                    if reply._result is not None:
                        return await reply._done()
                    # reply._wait(), inline, as above.
                    reply._waiter = GLOBAL_RUN_CONTEXT.task
                    return await trio.lowlevel.wait_task_rescheduled(reply._abort)  # type: ignore[no-any-return]
                except _ExpiredError:
                    raise _timeout_error(cell, timeout, accepted=True) from None
                except _OrphanedError:
                    pass  # the system ended: the deadline is kept here
                finally:
                    if ask.scheduled:
                        timekeeper.discard(ask)
            return await _reply_before(cell, reply, deadline, timeout)
        finally:
            pending.pop(seq, None)
            # The envelope, if the actor never took it, leaves the reply: it
            # would close a cycle (reply, envelope, message, reply) that only
            # the cycle collector frees.
            reply._envelope = None
            if reply._completion is None:
                reply._abandoned = True
            table = reply._table
            if table is not None and table.pop(reply._number, None) is not None:
                # A remote ask given up on: its number leaves the node's
                # reply table, so it leaves nothing behind and a late answer
                # is dropped, and the far node is told (actors.net).
                abandon = getattr(table, "abandon", None)
                if abandon is not None:
                    abandon(reply._number)

    async def stop(self) -> None:
        """Stop the actor gracefully: it accepts nothing more, delivers what it
        already accepted, and ends when its behaviour returns (a
        :class:`~actors.Stopped` end). Returns once that behaviour call
        returned; stopping a stopped actor returns at once. The replies of the
        messages its behaviour took stay valid (see :class:`~actors.Reply`).

        Under a restarting supervisor a stop is a normal end, as in OTP: a
        ``permanent`` child is restarted on a new mailbox (senders get
        :class:`~actors.ActorStoppedError` until then), a ``transient`` or
        ``temporary`` one is not. ``supervisor.terminate_child(ref)`` stops a
        child for good.

        A checkpoint. If cancelled, the actor still stops; only the wait ends.
        An actor cannot wait for its own stop: it calls ``inbox.close()``.
        Only from the Trio thread of the actor's system (see :meth:`tell`):
        from another thread, call ``trio.from_thread.run(ref.stop)``.
        """
        cell = self._cell
        _footprint.touch_actor(cell.address)
        if not in_trio_thread(cell.token):
            raise foreign_thread_error(
                f"stop of actor {cell.address.name!r}", "trio.from_thread.run(ref.stop)"
            )
        if current_address.get() == cell.address and cell.state is not ActorState.STOPPED:
            raise ActorError(
                f"actor {cell.address.name!r} cannot wait for its own stop; "
                "close its inbox and let its loop drain"
            )
        cell.request_stop()
        await cell.wait_incarnation_end()

    def stop_nowait(self) -> None:
        """Ask the actor to stop gracefully, as :meth:`stop` does, without
        waiting for it to end: it accepts nothing more at once, delivers what
        it already accepted, and ends as :class:`~actors.Stopped` (a monitor
        learns when). Stopping many actors this way lets them drain and end
        together. Idempotent; an actor may call it on itself (its loop then
        drains and returns). Never blocks, and not a checkpoint. Only from the
        Trio thread of the actor's system.
        """
        cell = self._cell
        _footprint.touch_actor(cell.address)
        if not in_trio_thread(cell.token):
            raise foreign_thread_error(
                f"stop of actor {cell.address.name!r}",
                "trio.from_thread.run_sync(ref.stop_nowait)",
            )
        cell.request_stop()

    async def kill(self) -> None:
        """Cancel the actor's running behaviour now (a :class:`~actors.Killed`
        end). Messages it accepted and did not take stay in its mailbox: if it
        ends for good they are reported as dropped in the trace. The asks it
        took and did not answer fail, even those whose reply it handed on (see
        :class:`~actors.Reply`). Returns once the behaviour call ended.

        Under a restarting supervisor a kill is an abnormal end: a
        ``permanent`` or ``transient`` child is restarted, on the same mailbox,
        within the supervisor's budget. An actor waiting to be restarted runs
        nothing, so killing it does nothing. A remote actor's reference
        (:mod:`actors.net`) sends the kill to its node and returns at once,
        without waiting for the end: the reference ends when the end comes
        back (``Killed``), unless a supervisor there restarts the actor. A
        checkpoint. Only from the Trio
        thread of the actor's system (see :meth:`tell`): from another thread,
        call ``trio.from_thread.run(ref.kill)``."""
        cell = self._cell
        _footprint.touch_actor(cell.address)
        if not in_trio_thread(cell.token):
            raise foreign_thread_error(
                f"kill of actor {cell.address.name!r}", "trio.from_thread.run(ref.kill)"
            )
        if not cell.running:
            # A remote actor's reference: its outbox sends the kill (see
            # actors.net); the actor's end comes back as for a stop.
            kill_remote = getattr(cell.send_channel, "kill_remote", None)
            if kill_remote is not None:
                kill_remote()
            await trio.lowlevel.checkpoint()
            return
        cell.scope.cancel()
        await cell.wait_incarnation_end()

    async def wait_stopped(self) -> ExitReason:
        """Wait until the actor ends for good, without stopping it, and return
        why it ended (at once if it already has). Restarts are not ends: under
        a restarting supervisor this waits through them.

        A checkpoint. If cancelled, nothing changes. An actor cannot wait for
        its own end (:class:`~actors.ActorError`: it would wait for good).
        Only from the Trio thread of the actor's system (from another:
        ``trio.from_thread.run(ref.wait_stopped)``)."""
        cell = self._cell
        _footprint.touch_actor(cell.address)
        if not in_trio_thread(cell.token):
            raise foreign_thread_error(
                f"wait_stopped of actor {cell.address.name!r}",
                "trio.from_thread.run(ref.wait_stopped)",
            )
        if current_address.get() == cell.address and cell.state is not ActorState.STOPPED:
            raise ActorError(f"actor {cell.address.name!r} cannot wait for its own end")
        return await cell.wait_ended()

    def statistics(self) -> ActorStatistics:
        cell = self._cell
        _footprint.touch_actor(cell.address)
        transit = cell.transit
        return ActorStatistics(
            address=cell.address,
            state=cell.state,
            queued=cell.send_channel.statistics().current_buffer_used
            + len(cell.system_queue or ()),
            capacity=cell.capacity,
            delivered=cell.delivered,
            restarts=cell.restarts,
            pending_asks=len(cell.pending or ()),
            in_flight=0 if transit is None else transit.in_flight.get(cell.address, 0),
            dropped_in_flight=0 if transit is None else transit.dropped.get(cell.address, 0),
        )
