"""What connections that have not authenticated may cost a listening node.

Anyone who can reach a node's port can open connections; until a peer has
proved it holds the secret it is a stranger, and strangers must not be able
to keep an honest peer out. A listener therefore holds at most ``limit``
connections in their handshake, and when one more arrives it is *always*
admitted: to make room, one stranger already waiting is evicted. The one
evicted is chosen, in this order, as

1. one from the source (host) that holds the most slots,
2. among those, the one that has shown the least (:class:`Progress`: it
   said nothing, it sent bytes but no complete ``Hello``, or it sent a
   ``Hello``),
3. among those, the oldest.

So a flood from one host is evicted before a lone connection from another,
however far each has come; and among one host's connections (all of them,
when every peer is on one machine), idle and slow-drip ones are evicted
before any that has sent its ``Hello`` (an honest peer sends it the moment
it connects, and is then one round trip from done; the node reads an
accepted connection before it sends anything, so a ``Hello`` already there
counts at once). What is left, documented in ``docs/actors.md`` ("Nodes"):
strangers that each complete the unauthenticated half of the handshake (a
``Hello``, which needs no secret) faster than ``limit`` per round trip of an
honest peer, from its own host or each from a host of its own, can still
delay it; nothing a stranger holds outlives ``handshake_timeout``.

This module is sans-I/O: :class:`Admission` decides, the node cancels.
:class:`LogBudget` bounds the warnings strangers can make a node write.
"""

from __future__ import annotations

import enum
from collections import Counter
from collections.abc import Hashable

import attrs


class Progress(enum.IntEnum):
    """How far an admitted connection has come in its handshake."""

    SILENT = 0
    """Nothing read from it yet."""
    SPOKE = 1
    """Bytes read (a partial frame, or a TLS handshake under way), no ``Hello``."""
    GREETED = 2
    """Its ``Hello`` read: it speaks the protocol, and has yet to prove the secret."""


@attrs.define(eq=False)
class Admitted:
    """A connection in its handshake, as :class:`Admission` keeps it."""

    source: Hashable
    """Where it came from (the peer's host), or ``None`` when unknown."""
    order: int
    """When it was admitted: a larger number is younger."""
    progress: Progress = Progress.SILENT


@attrs.frozen
class AdmissionStatistics:
    """A listener's handshakes: those waiting now, the most it keeps, how many
    were evicted to make room, and how many failed (refused, lost or timed out)."""

    handshaking: int
    limit: int
    evicted: int
    failed: int


class Admission:
    """At most ``limit`` connections in their handshake; a new one always
    gets in, evicting the stranger the module docstring says.

    Invariant: ``len(self._waiting) <= self.limit``, and ``self._sources``
    counts ``self._waiting`` by source.
    """

    def __init__(self, limit: int) -> None:
        if not (isinstance(limit, int) and not isinstance(limit, bool) and limit >= 1):
            raise ValueError(f"max_handshakes must be a whole number >= 1, not {limit!r}")
        self.limit = limit
        self._waiting: dict[Admitted, None] = {}
        self._sources: Counter[Hashable] = Counter()
        self._admitted = 0
        self._evicted = 0
        self._failed = 0

    def admit(self, source: Hashable) -> tuple[Admitted, Admitted | None]:
        """Admit a connection from ``source``; returns it, and the one
        evicted to make room (no longer waiting: the caller ends its
        handshake), or ``None``."""
        evicted = None
        if len(self._waiting) >= self.limit:
            evicted = min(self._waiting, key=self._eviction_order)
            self._remove(evicted)
            self._evicted += 1
        admitted = Admitted(source, self._admitted)
        self._admitted += 1
        self._waiting[admitted] = None
        self._sources[source] += 1
        return admitted, evicted

    def _eviction_order(self, admitted: Admitted) -> tuple[int, int, int]:
        return (-self._sources[admitted.source], admitted.progress, admitted.order)

    def advance(self, admitted: Admitted, progress: Progress) -> None:
        """``admitted`` has come as far as ``progress`` (it never goes back)."""
        if progress > admitted.progress:
            admitted.progress = progress

    def release(self, admitted: Admitted, *, failed: bool) -> None:
        """``admitted``'s handshake ended (``failed``: it did not authenticate).
        Releasing one that was evicted, or twice, does nothing."""
        if admitted in self._waiting:
            self._remove(admitted)
            if failed:
                self._failed += 1

    def _remove(self, admitted: Admitted) -> None:
        del self._waiting[admitted]
        self._sources[admitted.source] -= 1
        if not self._sources[admitted.source]:
            del self._sources[admitted.source]

    def statistics(self) -> AdmissionStatistics:
        return AdmissionStatistics(
            handshaking=len(self._waiting),
            limit=self.limit,
            evicted=self._evicted,
            failed=self._failed,
        )


class LogBudget:
    """At most ``burst`` log lines per ``interval`` seconds; the lines past it
    are counted, and the count is said with the next line that is written.

    ``take(now)`` is ``None`` when a line must not be written, else how many
    were held back since the last one written (usually 0)."""

    def __init__(self, burst: int = 10, interval: float = 10.0) -> None:
        self.burst = burst
        self.interval = interval
        self.held_back = 0
        """Lines not written since the last one that was."""
        self.total_held_back = 0
        self._window_start = -float("inf")
        self._written = 0

    def take(self, now: float) -> int | None:
        if now - self._window_start >= self.interval:
            self._window_start = now
            self._written = 0
        if self._written >= self.burst:
            self.held_back += 1
            self.total_held_back += 1
            return None
        self._written += 1
        held_back, self.held_back = self.held_back, 0
        return held_back
