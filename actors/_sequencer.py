"""The sequencer: one leader stamps messages and broadcasts them to a group.

Every member receives the same messages in the same order, with the same
stamps. Delivery batches: each message goes to each member with
``send_nowait`` while its mailbox has room, and a broadcast checkpoints once,
not once per message per member; it waits only for a member whose mailbox is
full.

Members may stop: a stopped member leaves the group (a ``left`` trace event)
and receives nothing further, so what it received is a prefix of what the
others did. A broadcast cancelled while it waited for a full member has
delivered that message to some members and not others; the sequencer is then
*broken* and refuses further broadcasts with :class:`trio.BrokenResourceError`,
rather than let the members' sequences diverge.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Generic, TypeVar, final

import attrs
import trio

from ._cell import _Cell
from ._envelope import Address, Envelope
from ._trace import EventKind, TraceEvent, Tracer
from ._util import NoPublicConstructor, foreign_thread_error, in_trio_thread

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


@final
class Sequencer(Generic[M], metaclass=NoPublicConstructor):
    """Stamps messages and delivers each to every member, in one order.

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
    ) -> None:
        self.address = address
        # The token of the system's Trio run: every entry point refuses other threads.
        self._token = token
        self._members = members
        self._tracer = tracer
        self._left: list[Address] = []
        # Invariant: every member received exactly the stamps 0 .. _next_seq - 1
        # since it joined, unless the sequencer is broken.
        self._next_seq = 0
        self._busy = False
        self._closed = False
        self._broken: str | None = None

    def __repr__(self) -> str:
        return f"<Sequencer {self.address.name!r} members={len(self._members)}>"

    @property
    def members(self) -> tuple[Address, ...]:
        """The members still in the group, in delivery order."""
        return tuple(cell.address for cell in self._members)

    async def broadcast(self, message: M) -> int:
        """Stamp ``message`` and deliver it to every member; return its stamp.
        See :meth:`broadcast_many`."""
        if not in_trio_thread(self._token):
            raise foreign_thread_error(
                f"broadcast on sequencer {self.address.name!r}",
                "trio.from_thread.run(sequencer.broadcast, message)",
            )
        return (await self._broadcast_many((message,))).start

    async def broadcast_many(self, messages: Iterable[M]) -> range:
        """Stamp each message and deliver it to every member, in order; return
        the stamps used.

        A checkpoint, once per call (plus a wait for each full mailbox met).
        If cancelled before it delivered anything, nothing was stamped; if
        cancelled while waiting for a full member, the sequencer is broken (see
        the module docs). Raises :class:`trio.ClosedResourceError` after
        :meth:`close`, :class:`trio.BrokenResourceError` once broken.

        Only from the Trio thread of the sequencer's system: any other thread,
        or another ``trio.run``, gets :class:`RuntimeError`, and nothing is
        stamped. From another thread, call
        ``trio.from_thread.run(sequencer.broadcast_many, messages)``.
        """
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
            for message in messages:
                seq = self._next_seq
                envelope = Envelope(message, seq, self.address)
                for cell in tuple(self._members):
                    try:
                        cell.send_channel.send_nowait(envelope)
                    except trio.WouldBlock:
                        waited = True
                        await self._deliver_waiting(cell, envelope)
                    except (trio.ClosedResourceError, trio.BrokenResourceError):
                        self._leave(cell)
                self._next_seq = seq + 1
        finally:
            self._busy = False
        if not waited:
            await trio.lowlevel.cancel_shielded_checkpoint()
        return range(first, self._next_seq)

    async def _deliver_waiting(self, cell: _Cell[M], envelope: Envelope[M]) -> None:
        try:
            await cell.send_channel.send(envelope)
        except (trio.ClosedResourceError, trio.BrokenResourceError):
            self._leave(cell)
        except BaseException:
            delivered = self._members.index(cell)
            self._broken = (
                f"sequencer {self.address.name!r} is broken: a broadcast was cancelled after "
                f"delivering message {envelope.seq} to {delivered} of {len(self._members)} members"
            )
            raise

    def _leave(self, cell: _Cell[Any]) -> None:
        self._members.remove(cell)
        self._left.append(cell.address)
        if self._tracer is not None:
            self._tracer.record(
                TraceEvent(
                    trio.current_time(),
                    cell.address.name,
                    EventKind.LEFT,
                    self._next_seq,
                    self.address.name,
                )
            )

    def close(self) -> None:
        """Refuse further broadcasts. The members are not stopped. Idempotent.
        Only from the Trio thread of the sequencer's system (from another:
        ``trio.from_thread.run_sync(sequencer.close)``)."""
        if not in_trio_thread(self._token):
            raise foreign_thread_error(
                f"close of sequencer {self.address.name!r}",
                "trio.from_thread.run_sync(sequencer.close)",
            )
        self._closed = True

    def statistics(self) -> SequencerStatistics:
        return SequencerStatistics(
            address=self.address,
            members=self.members,
            stamped=self._next_seq,
            left=tuple(self._left),
            closed=self._closed,
            broken=self._broken is not None,
        )
