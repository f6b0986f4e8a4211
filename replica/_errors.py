"""The errors of the compute replica model."""

from __future__ import annotations


class ComputeError(Exception):
    """Base class of the errors of ``replica``."""


class WriteBelowUpperError(ComputeError):
    """A shard write at a time below the shard's upper; nothing was written."""


class UpperMismatchError(ComputeError):
    """A compare-and-append whose expected upper is not the shard's; nothing
    was written."""


class UpperRegressionError(ComputeError):
    """An ``advance`` that would move a shard's upper back; nothing changed."""


class PeekFailedError(ComputeError):
    """A peek answered with an error (an unknown collection, a read below the
    compaction frontier); the message is the replica's."""


class PeekCanceledError(ComputeError):
    """A peek answered as canceled."""


class ProtocolError(ComputeError):
    """A command the API refuses before sending, or one the replica rejected."""
