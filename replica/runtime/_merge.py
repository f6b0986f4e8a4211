"""Merging the responses of several parts into one (sans-I/O).

Used wherever one stream of responses stands for many: a process's workers, a
replica's processes, a process's runtimes. A collection's frontier is the
minimum over the parts that report it, known once every one of them has
reported, and sent on only when it advances; a peek is answered once every
part has answered: with the first error if any part failed, canceled if any
part was canceled, otherwise with every part's rows. A subscribe's batches
are merged the same way: the merged batch reaches up to the least upper over
the parts and holds every part's updates before it.

Not every part reports every collection: across runtimes, a collection's
frontiers come from the runtime that renders it alone (a peer never reports);
``owners`` says which parts report an id (all by default), so across runtimes
no minimum is taken.
"""

from __future__ import annotations

from collections.abc import Callable

import attrs

from ..model._frontier import Frontier
from ..model._ids import GlobalId
from ..model._rows import Row, Update
from ..protocol import (
    Canceled,
    CommandRejected,
    Frontiers,
    PeekError,
    PeekResponse,
    PeekResult,
    Response,
    Rows,
    SubscribeBatch,
)


@attrs.define(eq=False)
class _Subscribe:
    uppers: dict[int, Frontier] = attrs.field(factory=dict)
    lower: int | None = None
    updates: list[Update] = attrs.field(factory=list)


@attrs.define(eq=False)
class PartitionedState:
    """Absorbs responses from ``parts`` parts; yields the merged ones.

    A part whose frontier for a collection goes back is a bug: the report is
    ignored and described in ``regressions`` (shareable, so a simulation can
    collect them from every merger) instead of crashing the replica.
    """

    parts: int = attrs.field(validator=attrs.validators.ge(1))
    regressions: list[str] = attrs.field(factory=list)
    # Which parts report an id; every part when None.
    owners: Callable[[GlobalId], frozenset[int]] | None = None
    # Per part, the last frontier it reported for each id (one dict per part,
    # not a list per id: no allocation per collection).
    _uppers: list[dict[GlobalId, Frontier]] = attrs.field(init=False)
    _merged: dict[GlobalId, Frontier] = attrs.field(factory=dict)
    _subscribes: dict[GlobalId, _Subscribe] = attrs.field(factory=dict)
    _peeks: dict[int, list[PeekResult | None]] = attrs.field(factory=dict)
    # Per rejection, how many times each part reported it: the n-th rejection
    # of the same command is passed on once, when the first part reports it.
    _rejections: dict[tuple[object, str], list[int]] = attrs.field(factory=dict)

    @_uppers.default
    def _no_uppers(self) -> list[dict[GlobalId, Frontier]]:
        return [{} for _ in range(self.parts)]

    def absorb(self, part: int, response: Response) -> Response | None:
        """Take ``part``'s response; return the merged response it completes, if any."""
        assert 0 <= part < self.parts, f"part {part} of {self.parts}"
        if isinstance(response, Frontiers):
            # The common case first: most responses are frontiers.
            return self._absorb_frontier(part, response)
        match response:
            case PeekResponse(uuid, result):
                answers = self._peeks.setdefault(uuid, [None] * self.parts)
                assert answers[part] is None, f"part {part} answered peek {uuid} twice"
                answers[part] = result
                if any(answer is None for answer in answers):
                    return None
                del self._peeks[uuid]
                return PeekResponse(uuid, _combine([a for a in answers if a is not None]))
            case SubscribeBatch():
                return self._absorb_batch(part, response)
            case CommandRejected(command, reason):
                counts = self._rejections.setdefault((command, reason), [0] * self.parts)
                counts[part] += 1
                return (
                    response
                    if counts[part] > max(counts[:part] + counts[part + 1 :] + [0])
                    else None
                )
        raise AssertionError(f"unmergeable response {response!r}")

    def _reporting(self, id: GlobalId) -> frozenset[int] | range:
        if self.owners is None:
            return range(self.parts)
        return self.owners(id)

    def _absorb_batch(self, part: int, batch: SubscribeBatch) -> Response | None:
        merge = self._subscribes.setdefault(batch.id, _Subscribe())
        if merge.lower is None:
            merge.lower = batch.lower
        merge.uppers[part] = batch.upper
        merge.updates.extend(batch.updates)
        reporting = self._reporting(batch.id)
        if any(p not in merge.uppers for p in reporting):
            return None
        upper = min(merge.uppers[p] for p in reporting)
        if upper.time is not None and upper.time <= merge.lower:
            return None
        if upper.time is None:
            done, merge.updates = merge.updates, []
            del self._subscribes[batch.id]
        else:
            limit = upper.time
            done = [u for u in merge.updates if u[1] < limit]
            merge.updates = [u for u in merge.updates if u[1] >= limit]
        lower, merge.lower = merge.lower, upper.time
        return SubscribeBatch(batch.id, lower, upper, tuple(done))

    def _absorb_frontier(self, part: int, response: Frontiers) -> Response | None:
        id, upper = response.id, response.upper
        uppers = self._uppers
        previous = uppers[part].get(id)
        if previous is not None and upper < previous:
            self.regressions.append(
                f"part {part} regressed collection {id} from {previous} to {upper}"
            )
            return None
        uppers[part][id] = upper
        merged = upper if self.parts == 1 else self._least(id)
        if merged is None:
            return None
        before = self._merged.get(id)
        if before is not None and not before < merged:
            return None
        self._merged[id] = merged
        if merged.time is None:
            # Dropped everywhere: forget it (ids are not reused on a connection).
            for reported in uppers:
                reported.pop(id, None)
            del self._merged[id]
        # This part's own report when it is the minimum: nothing new to build.
        return response if merged is upper else Frontiers(id, merged)

    def _least(self, id: GlobalId) -> Frontier | None:
        """The least frontier the parts that report ``id`` reported, once
        every one of them did."""
        least: Frontier | None = None
        for p in range(self.parts) if self.owners is None else self.owners(id):
            known = self._uppers[p].get(id)
            if known is None:
                return None
            # known < least, spelled out: this runs for every report.
            if least is None or (
                known.time is not None and (least.time is None or known.time < least.time)
            ):
                least = known
        assert least is not None, "every id has a part that reports it"
        return least


def _combine(answers: list[PeekResult]) -> PeekResult:
    for answer in answers:
        if isinstance(answer, PeekError):
            return answer
    if any(isinstance(answer, Canceled) for answer in answers):
        return Canceled()
    rows: list[Row] = []
    for answer in answers:
        assert isinstance(answer, Rows)
        rows.extend(answer.rows)
    return Rows(tuple(rows))
