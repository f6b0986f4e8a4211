"""The errors of durable shard storage. A failed operation writes nothing:
every change is one transaction."""

from __future__ import annotations

from ...model._errors import ComputeError


class PersistError(ComputeError):
    """Base class of the errors of ``replica.storage.persist``."""


class StorageUrlError(PersistError):
    """A storage URL with an unknown scheme or without what its scheme needs."""


class StorageOpenError(PersistError):
    """Storage that cannot be opened: an unreadable path, a server that cannot
    be reached or refuses the connection."""


class StorageCorruptError(PersistError):
    """Storage that is not a shard store, or whose stored data is damaged:
    a batch that does not decode, a value of another type or range than the
    schema's, batches missing or out of order, an upper below the data."""


class SchemaVersionError(PersistError):
    """A shard store written by another version of the schema."""


class UnstorableError(PersistError):
    """An update or a shard name the storage cannot hold (a datum of another
    type than int, str, bool, float or None, a time or diff out of 64-bit
    range, a string that is not UTF-8, a name with a NUL); nothing was
    written."""


class StorageUnavailableError(PersistError):
    """Storage that failed during an operation (an I/O error, a lost
    connection); the operation's transaction was rolled back."""


class NotificationsUnsupportedError(PersistError):
    """Storage that cannot push changes made by other writers (SQLite): a
    catalog learns of them only through :meth:`refresh`."""
