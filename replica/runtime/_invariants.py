"""What the two runtimes of a replica must agree on, checked from outside.

Each runtime reconciles a connection on its own, and a runtime may apply a
command of a lost connection that the other dropped with the connection's
queue (docs/architecture.md). Reconciling the next connection must bring them back
into agreement: once every worker of both runtimes has reconciled the same
connection and nothing is held back, the interactive runtime reads exactly the
indexes maintenance runs, and every one of its peers is bound to the part
maintenance runs for that id (not parked on an incarnation nobody publishes,
not frozen on a dropped publisher, unless that part itself waits for the index
it re-exports). Both runtimes know the same collections, and each collection
is rendered by exactly one of them, the one its dataflow's class placed it on
(docs/protocol.md, "Placement by class"); the other holds it as a peer.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterable

from ..compute._peers import PeerRecord, PeerView
from ..engine._arrangement import Arrangement
from ..engine._exports import IndexPart
from ..model._ids import GlobalId
from ._process import INTERACTIVE, MAINTENANCE
from ._replica import Replica
from ._worker import Worker


def runtimes_agreed(replica: Replica) -> bool:
    """Whether the runtimes are in a state where they must agree: nothing
    held, no command on its way to a worker (with message latency), and
    every worker of both runtimes past the reconciliation of the same
    connection (not buffering, not waiting at the barrier)."""
    if any(process.held for process in replica.processes):
        return False
    if any(runtime.command_channel.statistics().in_flight for runtime in replica.runtimes.values()):
        return False  # (message latency on: a command still on its way to a worker)
    workers = [worker for runtime in replica.runtimes.values() for worker in runtime.workers]
    positions = {worker.position for worker in workers}
    return len(positions) == 1 and all(
        worker.buffer is None and worker.reconciled == worker.position for worker in workers
    )


def peer_reports(replica: Replica) -> list[str]:
    """Frontiers a runtime reported for a collection it does not render (a
    peer): only the renderer reports. Holds at every moment, not only when
    the runtimes must agree."""
    found: list[str] = []
    for name, runtime in replica.runtimes.items():
        for worker in runtime.workers:
            collections = worker.state.collections
            for id in worker.state.reported:
                if not _rendered(collections.get(id)):
                    found.append(
                        f"{name} p{worker.process}/w{worker.local} reported a frontier of "
                        f"{id}, which it does not render"
                    )
    return found


# The since each arrangement and collection was last seen at: it never goes back.
_SEEN: weakref.WeakKeyDictionary[Arrangement | IndexPart | PeerView, int] = (
    weakref.WeakKeyDictionary()
)


def hold_violations(replica: Replica) -> list[str]:
    """The read-hold invariants that hold at every moment (docs/protocol.md,
    "Read holds and physical compaction"): no ``since`` moves back (of an
    arrangement, of an index part, of a peer), and I1c: an arrangement
    maintenance publishes compacts no faster than the interactive runtime's
    stream has allowed (its peer's ``since``, for every peer bound to it).
    I1 itself is the import's panic (shared fate)."""
    found: list[str] = []
    for name, runtime in replica.runtimes.items():
        for worker in runtime.workers:
            where = f"{name} p{worker.process}/w{worker.local}"
            for id, collection in worker.state.collections.items():
                if not isinstance(collection, IndexPart | PeerView):
                    continue
                found += _regressed(collection, collection.since, f"{where}: {id}")
                part = collection.arrangement
                if part is None:
                    continue
                found += _regressed(part, part.since, f"{where}: the arrangement of {id}")
                if (
                    isinstance(collection, PeerView)
                    and not collection.peer.frozen
                    and part.since > collection.since
                ):
                    found.append(
                        f"{where}: I1c: the arrangement {id} reads compacted to {part.since}, "
                        f"past the {collection.since} this runtime's stream allowed"
                    )
    return found


def _regressed(thing: Arrangement | IndexPart | PeerView, since: int, what: str) -> list[str]:
    seen = _SEEN.get(thing)
    _SEEN[thing] = since if seen is None else max(seen, since)
    if seen is not None and since < seen:
        return [f"{what}: since went back from {seen} to {since}"]
    return []


def stalled_compaction(replica: Replica) -> list[str]:
    """Compaction stalled, once the runtimes agree: a peer hold a publication
    registered that no peer took pins its arrangement for good (the only
    hold that no command can move): with no reader holding it, ``since``
    must catch up with what the controller allowed."""
    found: list[str] = []
    for worker in replica.maintenance.workers:
        where = f"p{worker.process}/w{worker.local}"
        for id, part in worker.state.collections.items():
            if not isinstance(part, IndexPart):
                continue
            for hold in part.peer_holds:
                if not hold.taken and not hold.released and hold.attached:
                    arrangement = part.arrangement
                    since = "?" if arrangement is None else str(arrangement.since)
                    found.append(
                        f"{where}: compaction of {id} pinned at {hold.time} for good (since "
                        f"{since}, allowed {part.since}): the peer hold of {hold.incarnation} "
                        f"that no peer took"
                    )
    return found


def runtime_divergence(replica: Replica) -> list[str]:
    """How the interactive runtime disagrees with maintenance, when they must
    agree (see :func:`runtimes_agreed`); empty otherwise, and for Solo. The
    read-hold invariants (:func:`hold_violations`) at every call; compaction
    not stalled (:func:`stalled_compaction`) once they must agree."""
    found = hold_violations(replica)
    if INTERACTIVE not in replica.runtimes or not runtimes_agreed(replica):
        return found
    found += stalled_compaction(replica)
    for worker in replica.maintenance.workers:
        found += _placement_divergence(replica, worker)
    for reader in replica.interactive.workers:
        owner = replica.maintenance.worker(reader.process, reader.local)
        where = f"p{reader.process}/w{reader.local}"
        parts = {
            id: export
            for id, export in owner.state.collections.items()
            if isinstance(export, IndexPart)
        }
        views = {
            id: view for id, view in reader.state.collections.items() if isinstance(view, PeerView)
        }
        if sorted(parts) != sorted(views):
            found.append(
                f"{where}: maintenance runs indexes {_ids(parts)} "
                f"but interactive reads {_ids(views)}"
            )
        for id, view in views.items():
            peer, part = view.peer, parts.get(id)
            published = [str(i) for i in part.publishers] if part is not None else []
            waiting = part is not None and part.arrangement is None
            if peer.publisher is None and not waiting:
                found.append(
                    f"{where}: peer {peer.incarnation} parked on an incarnation nobody "
                    f"publishes (maintenance publishes {id} as {published or 'nothing'})"
                )
            elif peer.publisher is None:
                pass  # maintenance's part waits for the index it re-exports: so does the peer
            elif peer.frozen:
                found.append(
                    f"{where}: peer {peer.incarnation} bound to dropped publisher "
                    f"#{peer.publisher.serial}: a frozen view"
                )
            elif part is None or peer.publisher.value is not part:
                found.append(
                    f"{where}: peer {peer.incarnation} bound to a part maintenance does not run"
                )
    return found


def _placement_divergence(replica: Replica, worker: Worker) -> list[str]:
    """Where maintenance's ``worker`` and its interactive counterpart disagree
    on what exists and who renders it."""
    reader = replica.interactive.worker(worker.process, worker.local)
    where = f"p{worker.process}/w{worker.local}"
    ours, theirs = worker.state.collections, reader.state.collections
    if sorted(ours) != sorted(theirs):
        return [
            f"{where}: maintenance knows collections {_ids(ours)} "
            f"but interactive knows {_ids(theirs)}"
        ]
    # A spawned process checks its own part: its replica holds only itself.
    (process,) = (p for p in replica.processes if p.index == worker.process)
    owners = process.owners
    found: list[str] = []
    for id, collection in ours.items():
        here, there = _rendered(collection), _rendered(theirs[id])
        if here == there:
            found.append(
                f"{where}: {id} is rendered by {'both runtimes' if here else 'neither runtime'}"
            )
            continue
        placed = INTERACTIVE if owners.get(id) == (INTERACTIVE,) else MAINTENANCE
        renderer = MAINTENANCE if here else INTERACTIVE
        if renderer != placed:
            found.append(f"{where}: {id} is rendered by {renderer} but placed on {placed}")
    return found


def _rendered(collection: object) -> bool:
    return collection is not None and not isinstance(collection, PeerView | PeerRecord)


def _ids(ids: Iterable[GlobalId]) -> str:
    return "[" + ", ".join(str(id) for id in sorted(ids)) + "]"
