"""What each stanza does, resolved before anything runs: one payload a stanza.

The parser builds them from the file's static knowledge (the schemas, indexes,
sinks and deferred dataflows declared above each stanza), so the runner
executes a payload without reading the script again. A lookup that the real
driver makes while it runs and that fails there (an unknown schema, an index
never defined, a row that does not fit its schema) is a :class:`Fail`: the
stanza prints ``error: <message>`` when its turn comes and changes nothing.
"""

from __future__ import annotations

from collections.abc import Iterator

import attrs

from replica.model import DataflowDescription, GlobalId, Row
from replica.protocol import Command

from ._data import Synthetic

DEFAULT_TIMEOUT = "600"


@attrs.frozen
class Timeout:
    """A read's ``timeout-secs`` as written (messages quote it so), default 600."""

    text: str = DEFAULT_TIMEOUT

    @property
    def seconds(self) -> float:
        return float(self.text)


@attrs.frozen
class Send:
    """Send ``command`` and print ``ok`` (``create-instance``,
    ``update-configuration``, ``initialization-complete``, ``define-index``,
    ``create-dataflow``, ``submit-dataflow``, ``schedule``, ``allow-writes``,
    ``allow-compaction``, ``drop``)."""

    command: Command


@attrs.frozen
class Print:
    """Print ``lines`` and do nothing else (``define-schema`` prints ``ok``,
    a ``create-dataflow ... defer`` prints ``deferred``)."""

    lines: tuple[str, ...]


@attrs.frozen
class Fail:
    """Print ``error: <message>`` and do nothing else."""

    message: str


@attrs.frozen
class Reconnect:
    """Open a new connection, send only ``Hello``; print ``ok``."""


@attrs.frozen
class Write:
    """Append ``rows`` to ``shard`` in one compare-and-append from upper
    ``ts`` to ``ts + spread``, row ``j`` (0-based, in order) at time
    ``ts + j % spread``; print ``wrote <count>``."""

    shard: str
    ts: int
    rows: tuple[Row, ...] | Synthetic
    spread: int = 1

    @property
    def lower(self) -> int:
        return self.ts

    @property
    def upper(self) -> int:
        return self.ts + self.spread

    @property
    def count(self) -> int:
        return len(self.rows)

    def updates(self) -> Iterator[tuple[Row, int]]:
        """Each row and its time."""
        for j, row in enumerate(self.rows):
            yield row, self.ts + j % self.spread


@attrs.frozen
class Advance:
    """Move ``shard``'s upper to ``upper``; print ``ok``."""

    shard: str
    upper: int


@attrs.frozen
class AwaitFrontier:
    """Wait until ``id``'s frontier reached ``ts``: ``ok``, or with
    ``allow_timeout`` ``awaited`` whatever happened."""

    id: GlobalId
    ts: int
    timeout: Timeout = Timeout()
    allow_timeout: bool = False


@attrs.frozen
class PeekRows:
    """Print the rows of index ``id`` at ``ts``; when ``id`` is a
    materialized-view sink, the rows of its shard ``shard`` at ``ts``."""

    id: GlobalId
    ts: int
    timeout: Timeout = Timeout()
    shard: str | None = None


@attrs.frozen
class PeekCount:
    """Print how many rows index ``id`` holds at ``ts``: all of them, or with
    ``literals`` those whose key is one of them (``()`` selects none)."""

    id: GlobalId
    ts: int
    literals: tuple[Row, ...] | None = None
    timeout: Timeout = Timeout()


@attrs.frozen
class CountRows:
    """Print the number of rows of index ``id`` at ``ts``, counted by
    ``dataflow`` (a ``count(*)`` over the index, as of ``ts``, with ids from
    ``u64::MAX / 2`` up): send it, schedule ``output``, wait until its
    frontier reached ``ts + 1``, peek it (no row prints 0)."""

    id: GlobalId
    ts: int
    dataflow: DataflowDescription
    output: GlobalId
    timeout: Timeout = Timeout()


@attrs.frozen
class AwaitSubscribe:
    """Wait until subscribe ``id``'s upper reached ``up_to``, then print the
    updates that arrived since the last ``await-subscribe`` of it."""

    id: GlobalId
    up_to: int
    timeout: Timeout = Timeout()


@attrs.frozen
class Metrics:
    """Wait until metric ``name`` (minus ``minus``, summed across the
    replica) is at most ``most``; print ``value <= <most>``."""

    name: str
    most: int
    minus: str | None = None
    timeout: Timeout = Timeout()


@attrs.frozen
class Hold:
    """Queue what the multiplexer would forward to ``runtime``; print ``ok``."""

    runtime: str


@attrs.frozen
class Release:
    """Forward what was queued for ``runtime``, in order; print ``ok``."""

    runtime: str


@attrs.frozen
class Settle:
    """Wait until the replica is quiescent; print ``ok``."""


Payload = (
    Send
    | Print
    | Fail
    | Reconnect
    | Write
    | Advance
    | AwaitFrontier
    | PeekRows
    | PeekCount
    | CountRows
    | AwaitSubscribe
    | Metrics
    | Hold
    | Release
    | Settle
)
