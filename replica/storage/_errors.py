"""The errors of shards."""

from __future__ import annotations

from ..model._errors import ComputeError


class WriteBelowUpperError(ComputeError):
    """A shard write at a time below the shard's upper; nothing was written."""


class UpperMismatchError(ComputeError):
    """A compare-and-append whose expected upper is not the shard's; nothing
    was written."""


class UpperRegressionError(ComputeError):
    """An ``advance`` that would move a shard's upper back; nothing changed."""
