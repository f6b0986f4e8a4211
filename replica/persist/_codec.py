"""How a batch of updates is stored: one MessagePack array of
``[row, time, diff]`` per batch, checked before it is encoded so that what
is read back is exactly what was written (the same types, not just equal
values)."""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from .._protocol import Datum, Update
from ._errors import StorageCorruptError, UnstorableError

# MessagePack integers, and so times, diffs and int datums.
MIN_INT = -(2**63)
MAX_INT = 2**64 - 1
# Times and uppers are unsigned: a stored upper is at most MAX_TIME.
MAX_TIME = 2**64 - 1
DATUM_TYPES = frozenset({int, str, bool, float, type(None)})

_encoder = msgspec.msgpack.Encoder()
_decoder = msgspec.msgpack.Decoder(list[tuple[tuple[Datum, ...], int, int]])


def encode_batch(shard: str, updates: Sequence[Update]) -> bytes:
    """The stored form of ``updates``. Raises :class:`UnstorableError`, naming
    the first update that cannot be stored, if any cannot."""
    for update in updates:
        if type(update) is not tuple or len(update) != 3 or type(update[0]) is not tuple:
            raise _unstorable(shard, update, "is not a (row, time, diff) tuple of a row tuple")
        row, time, diff = update
        if type(time) is not int or not 0 <= time <= MAX_TIME:
            raise _unstorable(shard, update, f"has a time out of [0, 2**64): {time!r}")
        if type(diff) is not int or not MIN_INT <= diff < 2**63:
            raise _unstorable(shard, update, f"has a diff out of signed 64 bits: {diff!r}")
        for datum in row:
            if type(datum) not in DATUM_TYPES:
                raise _unstorable(shard, update, f"holds a {type(datum).__name__}: {datum!r}")
    try:
        return _encoder.encode(updates)
    except (OverflowError, UnicodeEncodeError):
        pass
    # Slow path, for the message: which datum.
    for update in updates:
        for datum in update[0]:
            if type(datum) is int and not MIN_INT <= datum <= MAX_INT:
                raise _unstorable(shard, update, f"holds an int out of 64 bits: {datum}")
            if type(datum) is str and not _is_utf8(datum):
                raise _unstorable(shard, update, f"holds a string that is not UTF-8: {datum!r}")
    raise AssertionError("an update failed to encode yet every datum is storable")


def decode_batch(shard: str, data: bytes) -> list[Update]:
    """The updates of a stored batch. Raises :class:`StorageCorruptError` if
    ``data`` is not one."""
    try:
        return _decoder.decode(data)
    except msgspec.DecodeError as error:
        raise StorageCorruptError(
            f"shard {shard!r}: a stored batch does not decode: {error}"
        ) from None


def check_time(shard: str, what: str, time: int) -> None:
    """Raise :class:`UnstorableError` if ``time`` (a lower or an upper) is not
    a storable time."""
    if not 0 <= time <= MAX_TIME:
        raise UnstorableError(f"shard {shard!r}: {what} {time} is out of [0, 2**64)")


def check_name(name: str) -> None:
    """Raise :class:`UnstorableError` if no storage can hold ``name``."""
    if type(name) is not str or "\0" in name or not _is_utf8(name):
        raise UnstorableError(f"shard name {name!r} cannot be stored (a NUL, or not UTF-8)")


def _is_utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _unstorable(shard: str, update: object, why: str) -> UnstorableError:
    return UnstorableError(f"shard {shard!r}: update {update!r} cannot be stored: it {why}")
