"""The base of the replica's errors."""

from __future__ import annotations


class ComputeError(Exception):
    """Base class of the errors of ``replica``."""
