"""The base of the driver's errors."""

from __future__ import annotations


class DriverError(Exception):
    """Base class of the errors of :mod:`replica.driver` (a spec that does not
    parse, data that does not fit, a run that could not finish); not a
    :class:`~replica.ComputeError`: the replica's own errors are what a
    stanza prints, the driver's are about the spec or the run."""
