"""What a catalog reads from a store is checked before it is taken in. A
damaged store (a value of another type than the schema's, a batch missing
or stored twice, an upper below the data, a batch that does not decode) is a
:class:`StorageCorruptError` naming the shard and what is wrong, and changes
nothing in memory: never a traceback, nor a shard loaded short.

In two steps. A SQL store checks each value it reads for the schema's type
(:func:`stored_shards`, :func:`stored_state`): SQLite is dynamically typed,
and an INTEGER column may hold TEXT or REAL. An integer column holds signed
64 bits, so a time read from it is in ``[0, 2**64)``. The catalog then
checks a shard's batches against each other and against what it holds
(:func:`checked_updates`) as it decodes them: one pass over data read once,
linear in the updates.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from operator import itemgetter

from ...model._rows import Update
from ._codec import MAX_TIME, brief, damaged, decode_batch
from ._errors import StorageCorruptError
from ._sql import from_db
from ._storage import ShardState, StoredBatch

_time = itemgetter(1)
_ORPHANED = "its batches are stored without its upper and batch count"


def stored_shards(rows: Iterable[Sequence[object]]) -> dict[str, ShardState]:
    """The shards of the rows of :data:`SHARDS_QUERY`, checked. Raises
    :class:`StorageCorruptError` for a value of another type than the
    schema's, or batches stored without their shard."""
    shards: dict[str, ShardState] = {}
    for name_value, upper, batches in rows:
        name = _name(name_value)
        if upper is None:
            raise damaged(name, _ORPHANED)
        shards[name] = ShardState(
            stored_time(name, "its upper", upper), stored_count(name, batches)
        )
    return shards


def stored_state(
    name: str, shard: Sequence[object] | None, batches: Iterable[Sequence[object]]
) -> ShardState:
    """Shard ``name`` as stored, checked: ``shard`` is its row of
    ``persist_shards`` (upper_ts, batches), ``None`` if it has none;
    ``batches`` the rows of ``persist_batches`` read (seq, lower_ts,
    upper_ts, data). Raises :class:`StorageCorruptError` as
    :func:`stored_shards` does."""
    data = tuple(_batch(name, row) for row in batches)
    if shard is None:
        if data:
            raise damaged(name, _ORPHANED)
        return ShardState(0, 0)
    upper, count = shard
    return ShardState(stored_time(name, "its upper", upper), stored_count(name, count), data)


def stored_time(name: str, what: str, value: object) -> int:
    """The time ``value`` stands for, as read for ``what`` of shard ``name``."""
    return from_db(stored_integer(name, what, value))


def stored_count(name: str, value: object) -> int:
    """Shard ``name``'s batch count ``value``, as read."""
    count = stored_integer(name, "its batch count", value)
    if count < 0:
        raise damaged(name, f"its batch count {count} is negative")
    return count


def _batch(name: str, row: Sequence[object]) -> StoredBatch:
    seq_value, lower, upper, data = row
    seq = stored_integer(name, "a batch's position", seq_value)
    if type(data) is not bytes:
        raise damaged(name, f"batch {seq} is stored as {_typed(data)}, not bytes")
    return StoredBatch(
        seq,
        stored_time(name, f"batch {seq}'s lower", lower),
        stored_time(name, f"batch {seq}'s upper", upper),
        data,
    )


def stored_integer(name: str, what: str, value: object) -> int:
    """``value``, read for ``what`` of shard ``name``, if it is an integer."""
    if type(value) is not int:
        raise damaged(name, f"{what} is stored as {_typed(value)}, not an integer")
    return value


def _name(value: object) -> str:
    if type(value) is not str:
        raise StorageCorruptError(
            f"the shard store is damaged: a shard's name is stored as {_typed(value)}, not text"
        )
    if "\0" in value:
        raise StorageCorruptError(
            f"the shard store is damaged: a shard's name holds a NUL: {brief(value)}"
        )
    return value


def _typed(value: object) -> str:
    """``value`` named with its type: ``a str ('abc')``."""
    kind = type(value).__name__
    article = "an" if kind[0] in "aeiou" else "a"
    return f"{article} {kind} ({brief(value)})"


def checked_updates(name: str, taken: int, upper: int, state: ShardState) -> list[Update]:
    """The updates of the batches of ``state``, in order: shard ``name`` as
    read from the store by a catalog that holds its first ``taken`` batches
    and the upper ``upper``, with the batches from position ``taken`` on.
    Raises :class:`StorageCorruptError` unless the batches are the positions
    ``taken`` to ``state.batches - 1``, none missing nor stored twice; each
    covers a range ``[lower, upper)`` that is not empty, starts at or after
    the one before (and ``upper``), and ends at or below the shard's upper;
    and each decodes to updates whose times are in its range."""
    count = state.batches
    if not 0 <= state.upper <= MAX_TIME:
        raise damaged(name, f"its upper {state.upper} is out of [0, 2**64)")
    if count < taken:
        raise damaged(
            name, f"the store says it holds {count} batches, fewer than the {taken} read before"
        )
    if state.upper < upper:
        raise damaged(name, f"its upper {state.upper} is below the upper {upper} read before")
    updates: list[Update] = []
    end = upper
    for seq, batch in enumerate(state.data, taken):
        if batch.seq != seq or seq >= count or not end <= batch.lower < batch.upper <= state.upper:
            raise damaged(name, _misplaced(batch, seq, taken, end, state))
        updates += _decoded(name, batch)
        end = batch.upper
    if taken + len(state.data) < count:
        raise damaged(name, _missing(taken + len(state.data), count))
    return updates


def _misplaced(batch: StoredBatch, seq: int, taken: int, end: int, state: ShardState) -> str:
    """What is wrong with ``batch``, read at position ``seq`` (from
    ``taken`` on) after a batch or an upper ending at ``end``."""
    if batch.seq > seq:
        return _missing(seq, state.batches)
    if batch.seq < seq:
        return f"batch {batch.seq} is stored twice"
    if seq >= state.batches:
        return beyond_count(seq)
    if batch.lower < end:
        before = "read before" if seq == taken else f"of batch {seq - 1}"
        return f"batch {seq} starts at {batch.lower}, below the upper {end} {before}"
    if batch.upper <= batch.lower:
        return f"batch {seq} covers [{batch.lower}, {batch.upper}): nothing"
    return f"its upper {state.upper} is below the upper {batch.upper} of batch {seq}"


def beyond_count(seq: int) -> str:
    """What is wrong with a batch at position ``seq`` while the shard's batch
    count is ``seq``."""
    return f"batch {seq} is stored, beyond the {seq} batches the store says it holds"


def _decoded(name: str, batch: StoredBatch) -> list[Update]:
    updates = decode_batch(name, batch.seq, batch.data)
    lower, upper = batch.lower, batch.upper
    times = set(map(_time, updates))  # few: one for a write, a sink's times for an append
    if times and not (lower <= min(times) and max(times) < upper):
        stray = next(update for update in updates if not lower <= update[1] < upper)
        raise damaged(
            name, f"batch {batch.seq} covers [{lower}, {upper}) but holds update {brief(stray)}"
        )
    return updates


def _missing(seq: int, count: int) -> str:
    return f"batch {seq} is missing (the store says it holds {count})"
