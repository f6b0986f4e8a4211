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
    # Reports of parts that are ahead: they reported a collection dropped and
    # then a new one under the same id, before every part reported the drop.
    # All their later reports for the id wait here, in order, until it did.
    _next: dict[int, list[tuple[int, Frontier]]] = attrs.field(factory=dict)
    _ahead: dict[int, set[int]] = attrs.field(factory=dict)
    # A rejection is reported once, not once per part.
    _rejections: set[tuple[object, str]] = attrs.field(factory=set)

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
                if (command, reason) in self._rejections:
                    return None
                self._rejections.add((command, reason))
                return response

    def _absorb_frontier(self, part: int, id: int, upper: Frontier) -> Response | None:
        uppers = self._uppers.setdefault(id, [None] * self.parts)
        previous = uppers[part]
        ahead = self._ahead.setdefault(id, set())
        if part in ahead or (previous is not None and previous.is_empty and not upper.is_empty):
            # A new collection under a dropped id, before every part dropped it.
            ahead.add(part)
            self._next.setdefault(id, []).append((part, upper))
            return None
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
        if not merged.is_empty:
            return Frontiers(id, merged)
        # Dropped everywhere: a later collection that reuses the id starts afresh.
        del self._uppers[id], self._merged[id]
        self._ahead.pop(id, None)
        for early_part, early_upper in self._next.pop(id, []):
            # Cannot complete a merge: the part that dropped last (just now)
            # reports its new collection only after its drop, so it is unknown.
            replayed = self._absorb_frontier(early_part, id, early_upper)
            assert replayed is None, "a replayed report completes no merge"
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
