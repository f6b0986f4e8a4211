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
    """Absorbs responses from ``parts`` parts; yields the merged ones."""

    parts: int = attrs.field(validator=attrs.validators.ge(1))
    _uppers: dict[int, list[Frontier | None]] = attrs.field(factory=dict)
    _merged: dict[int, Frontier] = attrs.field(factory=dict)
    _peeks: dict[int, list[PeekResult | None]] = attrs.field(factory=dict)
    # A rejection is reported once, not once per part.
    _rejections: set[tuple[object, str]] = attrs.field(factory=set)

    def absorb(self, part: int, response: Response) -> Response | None:
        """Take ``part``'s response; return the merged response it completes, if any."""
        assert 0 <= part < self.parts, f"part {part} of {self.parts}"
        match response:
            case Frontiers(id, upper):
                uppers = self._uppers.setdefault(id, [None] * self.parts)
                previous = uppers[part]
                assert previous is None or previous <= upper, (
                    f"part {part} regressed collection {id} from {previous} to {upper}"
                )
                uppers[part] = upper
                if any(known is None for known in uppers):
                    return None
                merged = min(known for known in uppers if known is not None)
                if id in self._merged and merged <= self._merged[id]:
                    return None
                self._merged[id] = merged
                if merged.is_empty:
                    # Dropped: a later dataflow that reuses the id starts afresh.
                    del self._uppers[id], self._merged[id]
                return Frontiers(id, merged)
            case PeekResponse(uuid, result):
                answers = self._peeks.setdefault(uuid, [None] * self.parts)
                assert answers[part] is None, f"part {part} answered peek {uuid} twice"
                answers[part] = result
                if any(answer is None for answer in answers):
                    return None
                del self._peeks[uuid]
                return PeekResponse(uuid, _combine([a for a in answers if a is not None]))
            case CommandRejected(command, reason):
                if (command, reason) in self._rejections:
                    return None
                self._rejections.add((command, reason))
                return response


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
