"""The errors a controller's calls raise."""

from __future__ import annotations

from ..model._errors import ComputeError


class PeekFailedError(ComputeError):
    """A peek answered with an error (an unknown collection, a read below the
    compaction frontier); the message is the replica's."""


class PeekCanceledError(ComputeError):
    """A peek answered as canceled."""


class ReplicaAbortedError(ComputeError):
    """A replica process aborted (a worker panicked: every runtime of the
    process ends with it) and failed its connection: every call of the
    controller raises it from then on, with the process's reason."""
