"""The sequencer: one leader stamps messages and broadcasts them to a group.

Every member receives the same messages in the same order, with the same
stamps. Delivery batches: each message goes to each member with
``send_nowait`` while its mailbox has room, and a broadcast checkpoints once,
not once per message per member; it waits only for a member whose mailbox is
full.

The group changes while the order holds: a message goes to the members of
the moment it is stamped. An actor that joins receives every message stamped
after its join (``join`` says the first stamp); one that leaves, or ends,
receives nothing stamped after that. So each member receives, for each time
it was in the group, a run of consecutive stamps, and any two members agree
on every stamp both received. A member whose mailbox is found closed leaves
too (and stays out if a supervisor restarts it): what it received is a prefix
of what the others did. A broadcast cancelled while it waited for a full
member has delivered that message to some members and not others; the
sequencer is then *broken* and refuses further broadcasts with
:class:`trio.BrokenResourceError`, rather than let the members' sequences
diverge.

With message latency on (``actors.run(main, latency=...)``), each message
goes to each member through the system's transit, with a delay of its own
on the route from the sequencer to that member: every member still
receives every stamp in order, at its own time; the broadcast never waits
(a full mailbox holds up that member's route, not the others), and one
stamped for a member that stops before it arrives is dropped, as a tell
is.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, Generic, TypeVar, final

import attrs
import trio

from ._core import _footprint
from ._core._cell import ActorState, Carrier, _Cell
from ._core._envelope import Address, Envelope, stamp_all
from ._core._monitors import ExitReason
from ._core._trace import EventKind, TraceEvent, Tracer
from ._core._util import (
    NoPublicConstructor,
    foreign_thread_error,
    has_room,
    in_trio_thread,
    send_all_nowait,
)

if TYPE_CHECKING:
    from ._core._mailbox import ActorRef

M = TypeVar("M")


@attrs.frozen
class SequencerStatistics:
    """A snapshot of a sequencer, from :meth:`Sequencer.statistics`."""

    address: Address
    members: tuple[Address, ...]
    stamped: int
    left: tuple[Address, ...]
    closed: bool
    broken: bool
    in_flight: int = 0
    """Messages on their way to the members (with latency on: the
    sequencer's broadcasts, and any other sender's messages): a member has
    not yet received everything broadcast while this is over 0."""


@final
class Sequencer(Generic[M], metaclass=NoPublicConstructor):
    """Stamps messages and delivers each to every member, in one order; the
    members may join and leave meanwhile.

    Built by :meth:`ActorSystem.sequencer <actors.ActorSystem.sequencer>`. One
    task broadcasts at a time (the leader); a second concurrent broadcast raises
    :class:`trio.BusyResourceError`.
    """

    def __init__(
        self,
        address: Address,
        members: list[_Cell[M]],
        tracer: Tracer | None,
        token: trio.lowlevel.TrioToken,
        transit: Carrier | None = None,
    ) -> None:
        self.address = address
        # The system's transit when latency is on: broadcasts travel with it.
        self._transit = transit
        # The token of the system's Trio run: every entry point refuses other threads.
        self._token = token
        self._tracer = tracer
        # The members in joining order, each with the callback that makes it
        # leave when it ends (in its cell's on_end).
        self._members: dict[_Cell[M], Callable[[ExitReason], None]] = {}
        # The members as a tuple: the recipients of the next message stamped.
        self._recipients: tuple[_Cell[M], ...] = ()
        self._left: list[Address] = []
        # Invariant: unless the sequencer is broken, every member received
        # (or, for the message in flight, will receive) exactly the stamps from
        # its join to _next_seq - 1.
        self._next_seq = 0
        # The member a broadcast waits for room in, while it does.
        self._waiting_for: _Cell[M] | None = None
        self._busy = False
        self._closed = False
        self._broken: str | None = None
        for cell in members:
            self._add(cell)

    def __repr__(self) -> str:
        return f"<Sequencer {self.address.name!r} members={len(self._members)}>"

    @property
    def members(self) -> tuple[Address, ...]:
        """The members in the group now, in joining order (the order each
        message is delivered in)."""
        _footprint.touch(self)
        return tuple(cell.address for cell in self._members)

    def join(self, ref: ActorRef[M]) -> int:
        """Add ``ref`` to the group and return the first stamp it receives: it
        receives every message stamped from now on, until it leaves or ends
        (a broadcast under way goes on with the message it is delivering
        without it). Never blocks.

        Raises :class:`ValueError` if ``ref`` is already a member, and
        :class:`~actors.ActorStoppedError` if its mailbox is closed. Only
        from the Trio thread of the sequencer's system (from another:
        ``trio.from_thread.run_sync(sequencer.join, ref)``).
        """
        _footprint.touch(self)
        if not in_trio_thread(self._token):
            raise foreign_thread_error(
                f"join of sequencer {self.address.name!r}",
                "trio.from_thread.run_sync(sequencer.join, ref)",
            )
        cell = ref._cell
        if cell in self._members:
            raise ValueError(
                f"sequencer {self.address.name!r}: actor {cell.address.name!r} is already a member"
            )
        if cell.state is not ActorState.RUNNING:
            raise cell.stopped_error()
        self._add(cell)
        self._record(cell, EventKind.JOINED, self._next_seq)
        return self._next_seq

    def leave(self, ref: ActorRef[M]) -> bool:
        """Remove ``ref`` from the group: it receives nothing stamped from now
        on (the message a broadcast is delivering, stamped before, still comes
        to it). False if it was not a member. Never blocks. Only from the Trio
        thread of the sequencer's system (from another:
        ``trio.from_thread.run_sync(sequencer.leave, ref)``)."""
        _footprint.touch(self)
        if not in_trio_thread(self._token):
            raise foreign_thread_error(
                f"leave of sequencer {self.address.name!r}",
                "trio.from_thread.run_sync(sequencer.leave, ref)",
            )
        cell = ref._cell
        if cell not in self._members:
            return False
        self._leave(cell, self._next_seq)
        return True

    async def broadcast(self, message: M) -> int:
        """Stamp ``message`` and deliver it to every member; return its stamp.
        See :meth:`broadcast_many`."""
        _footprint.touch(self)
        if not in_trio_thread(self._token):
            raise foreign_thread_error(
                f"broadcast on sequencer {self.address.name!r}",
                "trio.from_thread.run(sequencer.broadcast, message)",
            )
        return (await self._broadcast_many((message,))).start

    async def broadcast_many(self, messages: Iterable[M]) -> range:
        """Stamp each message and deliver it to every member, in order; return
        the stamps used.

        Each message goes to the members of the moment it is stamped: one that
        joins while the broadcast waits for a full member receives the next
        message on. A checkpoint, once per call (plus a wait for each full
        mailbox met). If cancelled before it delivered anything, nothing was
        stamped; if cancelled while waiting for a full member, the sequencer
        is broken (see the module docs). Raises
        :class:`trio.ClosedResourceError` after :meth:`close`,
        :class:`trio.BrokenResourceError` once broken.

        Only from the Trio thread of the sequencer's system: any other thread,
        or another ``trio.run``, gets :class:`RuntimeError`, and nothing is
        stamped. From another thread, call
        ``trio.from_thread.run(sequencer.broadcast_many, messages)``.
        """
        _footprint.touch(self)
        if not in_trio_thread(self._token):
            raise foreign_thread_error(
                f"broadcast_many on sequencer {self.address.name!r}",
                "trio.from_thread.run(sequencer.broadcast_many, messages)",
            )
        return await self._broadcast_many(messages)

    async def _broadcast_many(self, messages: Iterable[M]) -> range:
        if self._busy:
            raise trio.BusyResourceError(
                f"another task is already broadcasting on sequencer {self.address.name!r}"
            )
        if self._closed:
            raise trio.ClosedResourceError(f"sequencer {self.address.name!r} is closed")
        if self._broken is not None:
            raise trio.BrokenResourceError(self._broken)
        await trio.lowlevel.checkpoint_if_cancelled()
        first = self._next_seq
        waited = False
        self._busy = True
        try:
            if self._transit is not None:
                self._deliver_with_latency(messages, self._transit)
            elif not (isinstance(messages, list | tuple) and self._deliver_at_once(messages)):
                waited = await self._deliver_one_by_one(messages)
        finally:
            self._busy = False
        if not waited:
            await trio.lowlevel.cancel_shielded_checkpoint()
        return range(first, self._next_seq)

    async def _deliver_one_by_one(self, messages: Iterable[M]) -> bool:
        """Stamp each message and deliver it to the members of the moment,
        waiting for room in a full mailbox; whether it waited."""
        waited = False
        for message in messages:
            seq = self._next_seq
            # Stamped before it is delivered: a member that joins while
            # this one waits for room starts with the next.
            self._next_seq = seq + 1
            envelope = Envelope(message, seq, self.address)
            recipients = self._recipients
            for cell in recipients:
                _footprint.touch_actor(cell.address)
                try:
                    cell.send_channel.send_nowait(envelope)
                except trio.WouldBlock:
                    waited = True
                    await self._deliver_waiting(cell, envelope, recipients)
                except (trio.ClosedResourceError, trio.BrokenResourceError):
                    self._leave(cell, seq)
        return waited

    def _deliver_with_latency(self, messages: Iterable[M], transit: Carrier) -> None:
        """Stamp each message and hand it to the system's transit for each
        member of the moment: it reaches each after a delay of its own, in
        stamp order per member (latency on: the broadcast never waits; a
        full mailbox holds up that member's route only)."""
        for message in messages:
            seq = self._next_seq
            self._next_seq = seq + 1
            envelope = Envelope(message, seq, self.address)
            for cell in self._recipients:
                _footprint.touch_actor(cell.address)
                transit.broadcast(self.address, cell, envelope)

    def _deliver_at_once(self, messages: Sequence[M]) -> bool:
        """Stamp ``messages`` and deliver them to every member, if every
        mailbox has room for all of them: the usual case, with one bulk send
        per member instead of one send per message per member. False
        (nothing stamped) otherwise."""
        recipients = self._recipients
        count = len(messages)
        if _footprint.sink is not None:
            for cell in recipients:
                _footprint.touch_actor(cell.address)
        if not all(has_room(cell.send_channel, count) for cell in recipients):
            return False
        first = self._next_seq
        self._next_seq = first + count
        envelopes = stamp_all(messages, first, self.address)
        for cell in recipients:
            try:
                send_all_nowait(cell.send_channel, envelopes)
            except (trio.ClosedResourceError, trio.BrokenResourceError):
                self._leave(cell, first)
        return True

    async def _deliver_waiting(
        self, cell: _Cell[M], envelope: Envelope[M], recipients: tuple[_Cell[M], ...]
    ) -> None:
        self._waiting_for = cell
        try:
            await cell.send_channel.send(envelope)
        except (trio.ClosedResourceError, trio.BrokenResourceError):
            self._leave(cell, envelope.seq)
        except BaseException:
            delivered = recipients.index(cell)
            self._broken = (
                f"sequencer {self.address.name!r} is broken: a broadcast was cancelled after "
                f"delivering message {envelope.seq} to {delivered} of {len(recipients)} members"
            )
            raise
        finally:
            self._waiting_for = None

    def _add(self, cell: _Cell[M]) -> None:
        _footprint.touch(self)
        leave_at_end = functools.partial(self._ended, cell)
        cell.linked().on_end.append(leave_at_end)
        self._members[cell] = leave_at_end
        self._recipients = tuple(self._members)

    def _ended(self, cell: _Cell[M], reason: ExitReason) -> None:
        """``cell``'s actor ended: it leaves, missing the message a broadcast
        waits to give it, if any (its on_end list is being run: leave it be)."""
        _footprint.touch(self)
        if cell in self._members:
            first_missed = self._next_seq - (1 if self._waiting_for is cell else 0)
            self._leave(cell, first_missed, ended=True)

    def _leave(self, cell: _Cell[Any], first_missed: int, *, ended: bool = False) -> None:
        """``cell`` leaves the group; ``first_missed`` is the first stamp it
        does not receive (the ``left`` event's seq)."""
        _footprint.touch(self)
        leave_at_end = self._members.pop(cell, None)
        if leave_at_end is None:
            return
        self._recipients = tuple(self._members)
        if not ended:
            assert cell.links is not None, "a member has links"
            cell.links.on_end.remove(leave_at_end)
        self._left.append(cell.address)
        self._record(cell, EventKind.LEFT, first_missed)

    def _record(self, cell: _Cell[Any], kind: EventKind, seq: int) -> None:
        if self._tracer is not None:
            self._tracer.record(
                TraceEvent(trio.current_time(), cell.address.name, kind, seq, self.address.name)
            )

    def close(self) -> None:
        """Refuse further broadcasts. The members are not stopped. Idempotent.
        Only from the Trio thread of the sequencer's system (from another:
        ``trio.from_thread.run_sync(sequencer.close)``)."""
        _footprint.touch(self)
        if not in_trio_thread(self._token):
            raise foreign_thread_error(
                f"close of sequencer {self.address.name!r}",
                "trio.from_thread.run_sync(sequencer.close)",
            )
        self._closed = True

    def statistics(self) -> SequencerStatistics:
        _footprint.touch(self)
        transit = self._transit
        in_flight = (
            0
            if transit is None
            else sum(transit.in_flight.get(cell.address, 0) for cell in self._members)
        )
        return SequencerStatistics(
            address=self.address,
            members=self.members,
            stamped=self._next_seq,
            left=tuple(self._left),
            closed=self._closed,
            broken=self._broken is not None,
            in_flight=in_flight,
        )
