"""Merging the responses of several parts into one (sans-I/O).

Used wherever one stream of responses stands for many: a process's workers, a
replica's processes. A collection's frontier is the minimum over the parts,
known once every part has reported it, and sent on only when it advances; a
peek is answered once every part has answered: with the first error if any
part failed, canceled if any part was canceled, otherwise with every part's
rows.
"""

from __future__ import annotations

import attrs

from ._protocol import (
    Canceled,
    CommandRejected,
    Frontier,
    Frontiers,
    PeekError,
    PeekResponse,
    PeekResult,
    Response,
    Row,
    Rows,
)


@attrs.define(eq=False)
class PartitionedState:
    """Absorbs responses from ``parts`` parts; yields the merged ones.

    A part whose frontier for a collection goes back is a bug: the report is
    ignored and described in ``regressions`` (shareable, so a simulation can
    collect them from every merger) instead of crashing the replica.
    """

    parts: int = attrs.field(validator=attrs.validators.ge(1))
    regressions: list[str] = attrs.field(factory=list)
    _uppers: dict[int, list[Frontier | None]] = attrs.field(factory=dict)
    _merged: dict[int, Frontier] = attrs.field(factory=dict)
    _peeks: dict[int, list[PeekResult | None]] = attrs.field(factory=dict)
    # Per rejection, how many times each part reported it: the n-th rejection
    # of the same command is passed on once, when the first part reports it.
    _rejections: dict[tuple[object, str], list[int]] = attrs.field(factory=dict)

    def absorb(self, part: int, response: Response) -> Response | None:
        """Take ``part``'s response; return the merged response it completes, if any."""
        assert 0 <= part < self.parts, f"part {part} of {self.parts}"
        match response:
            case Frontiers(id, upper):
                return self._absorb_frontier(part, id, upper)
            case PeekResponse(uuid, result):
                answers = self._peeks.setdefault(uuid, [None] * self.parts)
                assert answers[part] is None, f"part {part} answered peek {uuid} twice"
                answers[part] = result
                if any(answer is None for answer in answers):
                    return None
                del self._peeks[uuid]
                return PeekResponse(uuid, _combine([a for a in answers if a is not None]))
            case CommandRejected(command, reason):
                counts = self._rejections.setdefault((command, reason), [0] * self.parts)
                counts[part] += 1
                return (
                    response
                    if counts[part] > max(counts[:part] + counts[part + 1 :] + [0])
                    else None
                )

    def _absorb_frontier(self, part: int, id: int, upper: Frontier) -> Response | None:
        uppers = self._uppers.setdefault(id, [None] * self.parts)
        previous = uppers[part]
        if previous is not None and upper < previous:
            self.regressions.append(
                f"part {part} regressed collection {id} from {previous} to {upper}"
            )
            return None
        uppers[part] = upper
        if any(known is None for known in uppers):
            return None
        merged = min(known for known in uppers if known is not None)
        if id in self._merged and merged <= self._merged[id]:
            return None
        self._merged[id] = merged
        if merged.is_empty:
            # Dropped everywhere: forget it (ids are not reused on a connection).
            del self._uppers[id], self._merged[id]
        return Frontiers(id, merged)


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
