"""Reconciliation (docs/protocol.md), without Trio: comparing a new
connection's commands with the dataflows a worker runs.

:func:`plan_reconcile` decides what a reconnecting controller's commands keep,
drop and create; :class:`~replica.compute._state.ComputeState` carries it out.

Why the runtimes agree after a reconciliation, even when they applied
different commands. A runtime's channel adapter drops the commands queued for
a connection once a response send to it fails, so when a connection is lost
one runtime may have applied a command of it that the other never did: a
compaction, a drop, a create. The two runtimes then reconcile the next
connection from different states, and for an index ``I`` the new connection
creates at ``A`` they may decide differently: one keeps, the other rebuilds,
or only one of them has ``I`` at all. Left alone, that strands a peer: a peer
created for ``(I, A)`` parks on a slot maintenance never publishes (it kept a
part published as ``(I, A0)``); a kept peer stays bound to the publisher
maintenance dropped in order to rebuild (frozen), or parked on an ``(I, A0)``
maintenance never published. Reads of it then wait forever, barrier or not.

So reconciliation aligns the incarnations, on both sides:

1. maintenance, in its drop phase, publishes every part it keeps under
   ``(I, A)`` as well (``ComputeState.begin_reconcile``);
2. interactive, past the barrier and before its creates, binds afresh to
   ``(I, A)`` every kept peer that is frozen, or parked on another
   incarnation (``ComputeState.align_peers``).

Why that is enough, whatever each runtime applied before. Say interactive
passes the barrier at connection ``p`` and maintenance's latest arrival is
``p``. Maintenance has run ``p``'s drop phase: every part it still publishes
is one it keeps for ``p`` (and by 1 it is published as ``(I, A)``), and its
create phase publishes the others as ``(I, A)``. On the interactive side, an
id of ``p`` is either created, and binds ``(I, A)``; or kept, and its peer is
bound to a live publisher (so to maintenance's kept part for ``I``), or by 2
binds ``(I, A)``. Either way every peer ends bound, at once or when
maintenance's create phase publishes, to the one part maintenance runs for
``I``; ids not in ``p`` are dropped by both. If maintenance's latest arrival
is later than ``p``, it skipped ``p``: its adapter dropped ``p``'s commands,
so ``p``'s controller is gone and nobody reads what ``p`` set up; interactive
goes on to reconcile a connection at least as new, where the argument applies,
because a connection that is still open loses no commands. So once both
runtimes reconciled the same connection they agree
(:func:`replica.runtime_divergence` checks exactly that). The argument needs
the barrier: without it, interactive may look at a publisher before
maintenance's drop phase removed it.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from ..model._dataflow import DataflowDescription, Subscribe
from ..model._frontier import Frontier
from ..model._ids import GlobalId
from ..protocol import (
    AllowCompaction,
    Command,
    CommandRejected,
    CreateDataflow,
    CreateInstance,
    InstanceConfig,
)

DIFFERENT_INSTANCE = "instance configuration differs from the running instance"


@attrs.frozen
class Running:
    """What reconciliation needs to know of a running dataflow: its
    description, its exports still running, and how far it was compacted:
    the greatest compaction frontier over those exports (a sink's is its
    ``as_of``; a dataflow is uncompacted past an ``as_of`` only if every
    export is). Plain numbers and the description's own tuple in the usual
    case: a reconnect replaying n dataflows builds no more than it must."""

    description: DataflowDescription
    exports: tuple[GlobalId, ...]
    since: int

    @property
    def whole(self) -> bool:
        """Whether every export still runs (none was dropped on its own)."""
        return len(self.exports) == len(self.description.exports)


@attrs.frozen
class ReconcilePlan:
    """What reconciling a new connection does, in order: ``compactions`` (the
    exports of kept dataflows compacted to their new ``as_of``, then the
    exports of the others dropped), then ``rest``: the creates, then every
    other new command, each in the order it was sent."""

    compactions: tuple[AllowCompaction, ...]
    rest: tuple[Command, ...]
    # Every export of a kept dataflow, and the as_of it is kept for.
    kept: dict[GlobalId, int]
    dropped: frozenset[GlobalId]
    rejected: tuple[CommandRejected, ...] = ()

    @property
    def retained(self) -> frozenset[GlobalId]:
        return frozenset(self.kept)


def plan_reconcile(
    instance: InstanceConfig | None, running: Sequence[Running], new: list[Command]
) -> ReconcilePlan:
    """Compare a new connection's commands with the running dataflows.

    The old history is reduced first: each dataflow's ``as_of`` is advanced to
    its compaction frontier (dropped exports are already gone). A new
    ``CreateDataflow`` keeps the running dataflow with the same exports if that
    one is compatible (same imports, plans and exports; reduced ``as_of`` not
    after the new one) and uncompacted (compaction frontier not after the new
    ``as_of``); a kept dataflow is compacted to the new ``as_of``. Every running
    dataflow not kept is dropped (query dataflows, never replayed, among them),
    and so is one that imports an index not kept, has a subscribe, or had an
    export dropped or compacted past the new ``as_of`` (any export). A
    ``CreateInstance`` must repeat the running configuration.
    """
    unclaimed = {dataflow.description.exports: dataflow for dataflow in running}
    creates: list[CreateDataflow] = []
    rest: list[Command] = []
    rejected: list[CommandRejected] = []
    matched: dict[tuple[GlobalId, ...], DataflowDescription] = {}
    for command in new:
        if isinstance(command, CreateDataflow):
            creates.append(command)
            dataflow = command.dataflow
            exports = dataflow.exports
            old = unclaimed.get(exports)
            if old is not None and _keeps(old, dataflow):
                matched[exports] = dataflow
        elif isinstance(command, CreateInstance) and instance is not None:
            if command.config != instance:
                rejected.append(CommandRejected(command, DIFFERENT_INSTANCE))
        else:
            rest.append(command)
    _unmatch_orphans(matched)
    kept: dict[GlobalId, int] = {}
    compactions: list[AllowCompaction] = []
    created: list[Command] = []
    # One frontier per new as_of, shared by the compactions to it.
    frontiers: dict[int, Frontier] = {}
    for command in creates:
        dataflow = command.dataflow
        exports = dataflow.exports
        # Kept by its first create; a repeat is created (and refused).
        old = unclaimed.pop(exports, None) if exports in matched else None
        if old is None:
            created.append(command)
            continue
        as_of = dataflow.as_of
        frontier = frontiers.get(as_of)
        if frontier is None:
            frontier = frontiers[as_of] = Frontier.at(as_of)
        for id in old.exports:
            kept[id] = as_of
            compactions.append(_compaction(id, frontier))
    dropped = [id for dataflow in unclaimed.values() for id in dataflow.exports]
    compactions += [AllowCompaction(id, Frontier.empty()) for id in dropped]
    return ReconcilePlan(
        compactions=tuple(compactions),
        rest=(*created, *rest),
        kept=kept,
        dropped=frozenset(dropped),
        rejected=tuple(rejected),
    )


_new = object.__new__
_set_id = AllowCompaction.__dict__["id"].__set__
_set_frontier = AllowCompaction.__dict__["frontier"].__set__


def _compaction(id: GlobalId, frontier: Frontier) -> AllowCompaction:
    """``AllowCompaction(id, frontier)`` for an id that is a ``GlobalId``
    already, its slots written directly (no ``__init__`` and no conversion
    of the id): a replay keeps thousands of dataflows, and the frozen
    class's ``__init__`` costs more than the rest of keeping one."""
    compaction = _new(AllowCompaction)
    _set_id(compaction, id)
    _set_frontier(compaction, frontier)
    return compaction


def _unmatch_orphans(matched: dict[tuple[GlobalId, ...], DataflowDescription]) -> None:
    """A dataflow is kept only if every index it imports is kept too: one
    rebuilt under it would leave it reading the old arrangement. Removes the
    others from ``matched`` (until none is left: removing one may orphan
    another)."""
    importers = [exports for exports, description in matched.items() if description.index_imports]
    while importers:
        exported = {id for exports in matched for id in exports}
        orphans = [
            exports
            for exports in importers
            if any(index.id not in exported for index in matched[exports].index_imports)
        ]
        if not orphans:
            break
        for exports in orphans:
            del matched[exports]
        importers = [exports for exports in importers if exports in matched]


def _keeps(old: Running, new: DataflowDescription) -> bool:
    """Compatible, uncompacted, and no subscribe (a subscribe always starts
    afresh with its new controller)."""
    if new.sink_exports and any(
        isinstance(sink.connection, Subscribe) for sink in new.sink_exports
    ):
        return False
    if not old.whole:
        return False  # an export was dropped on its own: rebuild it all
    description = old.description
    since = old.since
    if since > new.as_of:
        return False
    # The usual replay sends the very description that runs: compatible as
    # it is (its as_of is the new one, its since not after it).
    return new is description or description.compatible_with(
        new, as_of=max(description.as_of, since)
    )
