"""The errors of a worker's compute state."""

from __future__ import annotations

from ..model._errors import ComputeError


class WorkerPanicError(ComputeError):
    """A worker found the protocol broken, as the real replica's workers
    assert it (an import compacted past the ``as_of`` of a dataflow built on
    it): not an error any read may see, but a panic that aborts the worker's
    whole process, every runtime of it (shared fate: docs/protocol.md)."""


def compacted_past(index: object) -> WorkerPanicError:
    """The real replica's assertion on an import of its own index compacted
    past a dataflow's ``as_of``."""
    return WorkerPanicError(f"Index {index} has been allowed to compact beyond the dataflow as_of")


def compacted_past_shared(index: object, since: int | None, as_of: int) -> WorkerPanicError:
    """The same assertion on the shared path (a peer), naming both frontiers;
    ``since`` is ``None`` for a dropped index (the empty frontier)."""
    shown = "" if since is None else str(since)
    return WorkerPanicError(
        f"Index {index} has been allowed to compact beyond the dataflow as_of: "
        f"since [{shown}], as_of [{as_of}]"
    )
