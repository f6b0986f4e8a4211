"""How a batch of updates is stored: one MessagePack array of
``[row, time, diff]`` per batch, checked before it is encoded so that what
is read back is exactly what was written (the same types, not just equal
values)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated

import msgspec

from ...model._rows import Datum, Update
from ._errors import StorageCorruptError, UnstorableError

# MessagePack integers, and so times, diffs and int datums.
MIN_INT = -(2**63)
MAX_INT = 2**64 - 1
# Times and uppers are unsigned: a stored upper is at most MAX_TIME.
MAX_TIME = 2**64 - 1
DATUM_TYPES = frozenset({int, str, bool, float, type(None)})

_encoder = msgspec.msgpack.Encoder()
# What decodes is what encode_batch lets through: a time unsigned, a diff
# signed, both of 64 bits (checked by msgspec as it decodes; a MessagePack
# integer is at most 2**64 - 1); the loose decoder only finds the update out
# of range, for the message.
_Time = Annotated[int, msgspec.Meta(ge=0)]
_Diff = Annotated[int, msgspec.Meta(ge=MIN_INT, le=2**63 - 1)]
_decoder = msgspec.msgpack.Decoder(list[tuple[tuple[Datum, ...], _Time, _Diff]])
_loose_decoder = msgspec.msgpack.Decoder(list[tuple[tuple[Datum, ...], int, int]])


def encode_batch(shard: str, updates: Sequence[Update]) -> bytes:
    """The stored form of ``updates``. Raises :class:`UnstorableError`, naming
    the first update that cannot be stored, if any cannot."""
    for update in updates:
        if type(update) is not tuple or len(update) != 3 or type(update[0]) is not tuple:
            raise _unstorable(shard, update, "is not a (row, time, diff) tuple of a row tuple")
        row, time, diff = update
        if type(time) is not int or not 0 <= time <= MAX_TIME:
            raise _unstorable(shard, update, f"has a time out of [0, 2**64): {brief(time)}")
        if type(diff) is not int or not MIN_INT <= diff < 2**63:
            raise _unstorable(shard, update, f"has a diff out of signed 64 bits: {brief(diff)}")
        for datum in row:
            if type(datum) not in DATUM_TYPES:
                raise _unstorable(shard, update, f"holds a {type(datum).__name__}: {brief(datum)}")
    try:
        return _encoder.encode(updates)
    except (OverflowError, UnicodeEncodeError):
        pass
    # Slow path, for the message: which datum.
    for update in updates:
        for datum in update[0]:
            if type(datum) is int and not MIN_INT <= datum <= MAX_INT:
                raise _unstorable(shard, update, f"holds an int out of 64 bits: {brief(datum)}")
            if type(datum) is str and not _is_utf8(datum):
                raise _unstorable(
                    shard, update, f"holds a string that is not UTF-8: {brief(datum)}"
                )
    raise AssertionError("an update failed to encode yet every datum is storable")


def decode_batch(shard: str, seq: int, data: bytes) -> list[Update]:
    """The updates of ``data``, stored as batch ``seq`` of ``shard``. Raises
    :class:`StorageCorruptError` if it does not decode to updates that
    :func:`encode_batch` could have stored."""
    try:
        return _decoder.decode(data)
    except msgspec.ValidationError as error:
        why = _out_of_range(data) or f"does not decode: {error}"
    except msgspec.DecodeError as error:
        why = f"does not decode: {error}"
    raise damaged(shard, f"batch {seq} {why}")


def _out_of_range(data: bytes) -> str | None:
    """What is wrong with the first update of ``data`` whose time or diff is
    out of range, if it decodes loosely and one is."""
    try:
        updates = _loose_decoder.decode(data)
    except msgspec.DecodeError:
        return None
    for update in updates:
        _, time, diff = update
        if not 0 <= time <= MAX_TIME:
            return f"holds update {brief(update)}, whose time is out of [0, 2**64)"
        if not MIN_INT <= diff < 2**63:
            return f"holds update {brief(update)}, whose diff is out of signed 64 bits"
    return None


def damaged(shard: str, what: str) -> StorageCorruptError:
    """The error for shard ``shard`` found damaged in the store; ``what``
    says what is wrong (``"batch 2 is missing"``)."""
    return StorageCorruptError(f"shard {brief(shard)} is damaged: {what}")


def check_time(shard: str, what: str, time: int) -> None:
    """Raise :class:`UnstorableError` if ``time`` (a lower or an upper) is not
    a storable time."""
    if not 0 <= time <= MAX_TIME:
        raise UnstorableError(f"shard {brief(shard)}: {what} {brief(time)} is out of [0, 2**64)")


def check_name(name: str) -> None:
    """Raise :class:`UnstorableError` if no storage can hold ``name``."""
    if type(name) is not str or "\0" in name or not _is_utf8(name):
        raise UnstorableError(f"shard name {brief(name)} cannot be stored (a NUL, or not UTF-8)")


def _is_utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def brief(value: object, limit: int = 200) -> str:
    """``repr(value)``, cut to about ``limit`` characters: an error names a
    huge datum without holding all of it."""
    try:
        text = repr(value)
    except ValueError:  # an int of more digits than Python converts
        return f"<a {type(value).__name__} too large to show>"
    if len(text) <= limit:
        return text
    return f"{text[: limit // 2]}...({len(text) - limit} characters)...{text[-limit // 2 :]}"


def _unstorable(shard: str, update: object, why: str) -> UnstorableError:
    return UnstorableError(
        f"shard {brief(shard)}: update {brief(update)} cannot be stored: it {why}"
    )
