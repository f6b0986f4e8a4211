"""The errors of a worker's compute state."""

from __future__ import annotations

from ..model._errors import ComputeError


class WorkerPanicError(ComputeError):
    """A worker found the protocol broken, as the real replica's workers
    assert it (an import compacted past the ``as_of`` of a dataflow built on
    it): not an error any read may see, but a panic that aborts the worker's
    whole process, every runtime of it (shared fate: docs/protocol.md)."""
