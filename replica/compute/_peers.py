"""Peers: the interactive runtime's view of an index maintenance renders,
bound through the sharing registry to the part maintenance publishes.
"""

from __future__ import annotations

from collections.abc import Callable

import attrs

from sharing import Peer, PeerHold

from ..engine._arrangement import Arrangement, Scan
from ..engine._exports import IndexPart, Reported, compaction_error
from ..model._dataflow import DataflowDescription
from ..model._ids import GlobalId
from ..model._rows import Row


@attrs.define(eq=False)
class PeerView(Reported):
    """The interactive runtime's stand-in for a maintenance index: no
    dataflow of its own, a peer bound (through the sharing registry) to the
    part maintenance publishes, read at the peer's own compaction frontier.

    Its frontier is the bound part's upper; a peer bound to a dropped
    publisher keeps that part's last upper forever (a frozen view), and a
    parked peer reports nothing.

    With publisher holds (the design of record), recording the peer takes
    over the peer hold maintenance registered when it published (or
    registers one the publication to come takes), and ``AllowCompaction`` on
    this runtime's stream moves it: maintenance's arrangement compacts no
    faster than this runtime has allowed.
    """

    id: GlobalId
    description: DataflowDescription
    peer: Peer[IndexPart]
    # Invariant: since >= as_of, and since only moves forward.
    since: int
    # The peer holds this view took (none without publisher holds).
    holds: list[PeerHold] = attrs.field(factory=list)
    # The part this view's worker listens to (the bound one, once bound).
    _following: Arrangement | None = None
    _stop: Callable[[], None] | None = None

    @classmethod
    def bind(
        cls,
        id: GlobalId,
        description: DataflowDescription,
        peer: Peer[IndexPart],
        *,
        hold: bool = True,
    ) -> PeerView:
        view = cls(id, description, peer, since=description.as_of)
        if hold:
            view.take_hold(peer)
        return view

    def take_hold(self, peer: Peer[IndexPart]) -> None:
        """Take over ``peer``'s slot's hold, moved to this view's ``since``; a
        hold of a publication already bound is pinned on its part at once."""
        hold = peer.take_hold(self.since)
        self.holds.append(hold)
        part = None if peer.publisher is None else peer.publisher.value.arrangement
        if part is not None:
            hold.attach(part.hold)

    def allow(self, time: int) -> None:
        """``AllowCompaction`` on this runtime's stream: moves the holds."""
        self.since = time
        for hold in self.holds:
            hold.downgrade(time)

    @property
    def compaction_frontier(self) -> int:
        """Reads before it are refused: this runtime's ``since``, or the bound
        part's own since if it went further (no hold kept it back)."""
        part = self.arrangement
        return self.since if part is None or part.since <= self.since else part.since

    @property
    def arrangement(self) -> Arrangement | None:
        publisher = self.peer.publisher
        return None if publisher is None else publisher.value.arrangement

    def provider(self) -> Arrangement | None:
        return self.arrangement

    @property
    def upper(self) -> int | None:
        # What it reads is maintenance's part: it moves once maintenance's
        # dataflow is scheduled, whether or not this view's Schedule came.
        part = self.arrangement
        return None if part is None else part.upper

    def read_error(self, ts: int) -> str | None:
        publisher = self.peer.publisher
        if publisher is not None and publisher.value.error is not None:
            return publisher.value.error
        error = compaction_error(ts, self.compaction_frontier)
        if error is None and publisher is not None:
            return publisher.value.evaluation_error(ts)
        return error

    def ready(self, ts: int) -> bool:
        part = self.arrangement
        return part is not None and part.ready(ts)

    def scan(self, ts: int, literals: tuple[Row, ...] | None) -> Scan:
        part = self.arrangement
        assert part is not None, "a parked peer is never ready"
        return part.scan(ts, literals)

    def follow(self, wake: Callable[[], None]) -> None:
        """Have ``wake`` called whenever the bound part changes."""
        part = self.arrangement
        if part is self._following:
            return
        self._unfollow()
        if part is not None:
            self._following, self._stop = part, part.listen(wake)

    def _unfollow(self) -> None:
        if self._stop is not None:
            self._stop()
        self._following = self._stop = None

    def rebind(self, peer: Peer[IndexPart], *, hold: bool = True) -> Peer[IndexPart]:
        """Read through ``peer`` from now on (taking its slot's hold); release
        the old one, and the holds taken through it, and return it."""
        old, self.peer = self.peer, peer
        for taken in self.holds:
            taken.release()
        self.holds = []
        if hold:
            self.take_hold(peer)
        old.release()
        return old

    def close(self) -> None:
        self._unfollow()
        for hold in self.holds:
            hold.release()
        self.peer.release()


@attrs.define(eq=False)
class PeerRecord(Reported):
    """A runtime's record of an export another runtime renders, when there is
    nothing to read through it: a sink, or (on maintenance) an export of a
    one-shot read. It holds a compaction frontier that ``AllowCompaction``
    moves (the hook for the read holds of docs/protocol.md), and never reports
    a frontier: only the renderer does."""

    id: GlobalId
    description: DataflowDescription
    # Invariant: since >= as_of, and since only moves forward.
    since: int

    @property
    def upper(self) -> int | None:
        return None

    def close(self) -> None:
        pass
