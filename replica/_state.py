"""A worker's compute state, and reconciliation (DESIGN.md §2.6), without Trio.

:class:`ComputeState` applies commands to one worker's dataflow parts and
collects the responses they cause; :func:`plan_reconcile` compares a new
connection's commands with the running dataflows. The worker actor around them
only moves messages.

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
   ``(I, A)`` as well (:meth:`ComputeState.begin_reconcile`);
2. interactive, past the barrier and before its creates, binds afresh to
   ``(I, A)`` every kept peer that is frozen, or parked on another
   incarnation (:meth:`ComputeState.align_peers`).

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

import enum
from collections.abc import Callable

import attrs

from sharing import Incarnation, Registry

from ._dataflow import IndexPart, PeerView
from ._protocol import (
    AllowCompaction,
    Canceled,
    CancelPeek,
    Command,
    CommandRejected,
    CreateDataflow,
    CreateInstance,
    Frontier,
    Frontiers,
    Hello,
    InitializationComplete,
    InstanceConfig,
    Peek,
    PeekError,
    PeekResponse,
    Response,
    Rows,
    Schedule,
    UpdateConfiguration,
)
from ._shard import ShardCatalog

Collection = IndexPart | PeerView


class Role(enum.StrEnum):
    """Which runtime a worker belongs to."""

    SOLO = "solo"
    """The only runtime: maintains indexes and serves reads."""
    MAINTENANCE = "maintenance"
    """Maintains indexes and publishes each worker's part in the registry."""
    INTERACTIVE = "interactive"
    """Maintains no index: serves reads from peers bound to maintenance's parts."""


UNKNOWN_COLLECTION = "collection ID does not exist"
DIFFERENT_INSTANCE = "instance configuration differs from the running instance"


@attrs.frozen
class ReconcilePlan:
    """What reconciling a new connection does, in order: ``compactions`` (kept
    dataflows compacted to their new ``as_of``, then drops), then ``rest``: the
    creates, then every other new command, each in the order it was sent."""

    compactions: tuple[AllowCompaction, ...]
    rest: tuple[Command, ...]
    retained: frozenset[int]
    dropped: frozenset[int]
    rejected: tuple[CommandRejected, ...] = ()

    @property
    def kept(self) -> dict[int, int]:
        """Each retained dataflow's id, and the ``as_of`` it is kept for."""
        return {
            compaction.id: compaction.frontier.time
            for compaction in self.compactions
            if compaction.id in self.retained and compaction.frontier.time is not None
        }


def plan_reconcile(
    instance: InstanceConfig | None, dataflows: dict[int, Collection], new: list[Command]
) -> ReconcilePlan:
    """Compare a new connection's commands with the running dataflows.

    The old history is reduced first: each dataflow's ``as_of`` is advanced to
    its compaction frontier (dropped dataflows are already gone). A new
    ``CreateDataflow`` keeps the running dataflow with the same exports if that
    one is compatible (same imports, exports and plan; reduced ``as_of`` not
    after the new one) and uncompacted (compaction frontier not after the new
    ``as_of``); a kept dataflow is compacted to the new ``as_of``. Every running
    dataflow not kept is dropped. A ``CreateInstance`` must repeat the running
    configuration.
    """
    unclaimed = dict(dataflows)
    kept: dict[int, int] = {}
    creates: list[Command] = []
    rest: list[Command] = []
    rejected: list[CommandRejected] = []
    for command in new:
        match command:
            case CreateDataflow(dataflow):
                part = unclaimed.get(dataflow.index_id)
                if part is not None:
                    reduced = attrs.evolve(
                        part.dataflow, as_of=max(part.dataflow.as_of, part.since)
                    )
                    if reduced.compatible_with(dataflow) and part.since <= dataflow.as_of:
                        del unclaimed[dataflow.index_id]
                        kept[dataflow.index_id] = dataflow.as_of
                        continue
                creates.append(command)
            case CreateInstance(config) if instance is not None:
                if config != instance:
                    rejected.append(CommandRejected(command, DIFFERENT_INSTANCE))
            case _:
                rest.append(command)
    compactions = [AllowCompaction(id, Frontier.at(as_of)) for id, as_of in kept.items()]
    compactions += [AllowCompaction(id, Frontier.empty()) for id in unclaimed]
    return ReconcilePlan(
        compactions=tuple(compactions),
        rest=(*creates, *rest),
        retained=frozenset(kept),
        dropped=frozenset(unclaimed),
        rejected=tuple(rejected),
    )


@attrs.define(eq=False)
class ComputeState:
    """One worker's dataflow parts, pending peeks and reported frontiers.

    ``apply`` and ``step`` never block; the responses they cause collect in
    ``outbox`` for the worker to send.
    """

    worker: int
    workers: int
    shards: ShardCatalog
    wake: Callable[[], None]
    role: Role = Role.SOLO
    # The registry of this worker's (process, local ordinal); not for Solo.
    registry: Registry[IndexPart] | None = None
    instance: InstanceConfig | None = None
    configuration: dict[str, str] = attrs.field(factory=dict)
    dataflows: dict[int, Collection] = attrs.field(factory=dict)
    peeks: dict[int, Peek] = attrs.field(factory=dict)
    # What this worker last told the current connection, per collection.
    reported: dict[int, Frontier] = attrs.field(factory=dict)
    builds: int = 0
    outbox: list[Response] = attrs.field(factory=list)
    # Ids the controller dropped on the current connection: ids are not reused
    # (with two runtimes a reused id would race like a reconnect without the
    # barrier), so a create of one is rejected. Cleared for each connection.
    retired: set[int] = attrs.field(factory=set)
    # Align incarnations across the runtimes at each reconciliation (see
    # ``begin_reconcile`` and ``align_peers``); False only as a diagnostic.
    align: bool = True

    def apply(self, command: Command) -> None:
        match command:
            case Hello() | InitializationComplete():
                pass
            case CreateInstance(config):
                if self.instance is None:
                    self.instance = config
                elif config != self.instance:
                    self._reject(command, DIFFERENT_INSTANCE)
            case UpdateConfiguration(params):
                self.configuration.update(params)
            case CreateDataflow(dataflow):
                self._create(command, dataflow.index_id)
            case Schedule(id):
                part = self.dataflows.get(id)
                if part is None:
                    self._reject(command, f"schedule of collection {id}: {UNKNOWN_COLLECTION}")
                elif not part.scheduled:
                    part.scheduled = True
                    self.wake()
            case AllowCompaction(id, frontier):
                self._compact(command, id, frontier, report_drop=True)
            case Peek(uuid, id, ts):
                self._peek(command, uuid, id, ts)
            case CancelPeek(uuid):
                if self.peeks.pop(uuid, None) is not None:
                    self.outbox.append(PeekResponse(uuid, Canceled()))

    def _reject(self, command: Command, reason: str) -> None:
        self.outbox.append(CommandRejected(command, reason))

    def _create(self, command: CreateDataflow, id: int) -> None:
        if self.instance is None:
            self._reject(command, "create dataflow before create instance")
            return
        if id in self.dataflows:
            self._reject(command, f"collection {id} already exists")
            return
        if id in self.retired:
            self._reject(
                command, f"collection {id} was dropped on this connection; ids are not reused"
            )
            return
        dataflow = command.dataflow
        incarnation = Incarnation(id, dataflow.as_of)
        if self.role is Role.INTERACTIVE:
            assert self.registry is not None, "an interactive worker has a registry"
            self.dataflows[id] = PeerView.bind(dataflow, self.registry.bind(incarnation, self.wake))
            self.builds += 1
            return
        part = IndexPart.build(
            dataflow, self.shards.shard(dataflow.shard), self.worker, self.workers
        )
        part.stop_listening = part.shard.listen(self.wake)
        if self.role is Role.MAINTENANCE:
            assert self.registry is not None, "a maintenance worker has a registry"
            part.publishers[incarnation] = self.registry.publish(incarnation, part)
        self.dataflows[id] = part
        self.builds += 1

    def _compact(self, command: Command, id: int, frontier: Frontier, *, report_drop: bool) -> None:
        part = self.dataflows.get(id)
        if part is None:
            self._reject(command, f"allow compaction of collection {id}: {UNKNOWN_COLLECTION}")
            return
        if frontier.time is None:
            del self.dataflows[id]
            part.close()
            for uuid in [uuid for uuid, peek in self.peeks.items() if peek.id == id]:
                del self.peeks[uuid]
                self.outbox.append(PeekResponse(uuid, PeekError(UNKNOWN_COLLECTION)))
            if report_drop:
                self.outbox.append(Frontiers(id, frontier))
                self.retired.add(id)
            self.reported.pop(id, None)
            return
        if frontier.time < part.since:
            self._reject(
                command,
                f"allow compaction of collection {id} to {frontier.time} is before "
                f"its compaction frontier {part.since}",
            )
            return
        part.since = frontier.time
        for uuid, peek in list(self.peeks.items()):
            error = part.read_error(peek.timestamp) if peek.id == id else None
            if error is not None:
                del self.peeks[uuid]
                self.outbox.append(PeekResponse(uuid, PeekError(error)))

    def _peek(self, command: Peek, uuid: int, id: int, ts: int) -> None:
        part = self.dataflows.get(id)
        if part is None:
            self.outbox.append(PeekResponse(uuid, PeekError(UNKNOWN_COLLECTION)))
            return
        error = part.read_error(ts)
        if error is not None:
            self.outbox.append(PeekResponse(uuid, PeekError(error)))
        elif part.ready(ts):
            self.outbox.append(PeekResponse(uuid, Rows(tuple(part.read(ts)))))
        else:
            self.peeks[uuid] = command

    def step(self, *, report: bool = True) -> None:
        """Advance every scheduled part to what its shard has; then, if
        ``report``, answer the peeks that became ready and report frontiers."""
        for part in self.dataflows.values():
            if part.step() and isinstance(part, IndexPart):
                part.changed()
        if not report:
            return
        for uuid, peek in list(self.peeks.items()):
            part = self.dataflows[peek.id]
            if part.ready(peek.timestamp):
                del self.peeks[uuid]
                self.outbox.append(PeekResponse(uuid, Rows(tuple(part.read(peek.timestamp)))))
        for id, part in self.dataflows.items():
            frontier = part.frontier
            if frontier is not None and self.reported.get(id) != frontier:
                self.reported[id] = frontier
                self.outbox.append(Frontiers(id, frontier))

    def begin_reconcile(self, plan: ReconcilePlan) -> None:
        """The drop phase: forget the old connection's peeks (no response goes
        to a connection that is gone), make retained collections report afresh,
        and run the plan's compactions and drops. Waits on nothing.

        A kept part reads as of its new ``as_of`` from now on, and maintenance
        also publishes it under its new incarnation ``(id, as_of)``: that is
        the incarnation the interactive runtime binds when its own decision
        for the id differs (it applied a command of a lost connection that
        this runtime did not, or the other way round; see
        :meth:`align_peers`)."""
        self.peeks.clear()
        self.outbox.extend(plan.rejected)
        for id in plan.retained:
            self.reported.pop(id, None)
        for compaction in plan.compactions:
            self._compact(compaction, compaction.id, compaction.frontier, report_drop=False)
        for id, as_of in plan.kept.items():
            part = self.dataflows[id]
            if not isinstance(part, IndexPart):
                continue
            part.keep(as_of)
            incarnation = Incarnation(id, as_of)
            if self.align and self.role is Role.MAINTENANCE and incarnation not in part.publishers:
                assert self.registry is not None, "a maintenance worker has a registry"
                part.publishers[incarnation] = self.registry.publish(incarnation, part)

    def align_peers(self, plan: ReconcilePlan) -> list[str]:
        """After the barrier, before the creates (interactive runtime only):
        a kept peer whose publisher maintenance dropped (frozen), or that is
        parked on another incarnation than ``(id, new as_of)``, is bound
        afresh to ``(id, new as_of)``. Returns what it rebound, for the trace.

        The runtimes decide on their own, and may decide differently: one of
        them applied a command of a connection that is gone (a compaction, a
        drop, a create) which the other dropped with the connection's queue.
        Past the barrier, maintenance has run this connection's drops and
        published every part it keeps under ``(id, new as_of)``, and its
        creates publish the rest there; so every peer of this connection ends
        bound to the part maintenance runs for the id."""
        if not self.align or self.role is not Role.INTERACTIVE:
            return []
        assert self.registry is not None, "an interactive worker has a registry"
        rebound: list[str] = []
        for id, as_of in plan.kept.items():
            view = self.dataflows.get(id)
            if not isinstance(view, PeerView):
                continue
            target = Incarnation(id, as_of)
            peer = view.peer
            if peer.frozen or (not peer.bound and peer.incarnation != target):
                why = "frozen" if peer.frozen else "parked"
                view.rebind(self.registry.bind(target, self.wake))
                rebound.append(f"rebind kept peer {peer.incarnation} ({why}) to {target}")
        return rebound

    def drain(self) -> list[Response]:
        out, self.outbox = self.outbox, []
        return out
