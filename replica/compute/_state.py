"""A worker's compute state, without Trio (docs/protocol.md).

:class:`ComputeState` applies commands to one worker's dataflows and collects
the responses they cause; reconciliation is planned in :mod:`._reconcile` and
carried out here. The worker actor around it only moves messages.

Every command reaches both runtimes; each renders the dataflows its placement
covers (:mod:`._placement`: Solo everything, maintenance ``Maintained``,
interactive ``OneShotRead``) and records every export of the others as a peer.
Maintenance publishes each index part it renders in the registry; on the
interactive runtime a peer index is a :class:`~replica.compute._peers.PeerView`
bound through the registry to that part, and any other peer a
:class:`~replica.compute._peers.PeerRecord`. A peer never reports a frontier:
only the renderer does. On a peer, ``AllowCompaction`` moves its compaction
frontier (an empty one forgets it), ``Schedule`` and ``AllowWrites`` do
nothing.
"""

from __future__ import annotations

import enum
from collections.abc import Callable

import attrs

from sharing import Incarnation, Registry

from ..engine._arrangement import Arrangement, Scan
from ..engine._exchange import Fabric
from ..engine._exports import Dataflow, IndexPart, SinkPart
from ..engine._render import Context, render
from ..model._dataflow import DataflowDescription
from ..model._frontier import Frontier
from ..model._ids import GlobalId
from ..model._metrics import Metrics
from ..model._rows import ResultTooLargeError, Update
from ..protocol import (
    AllowCompaction,
    AllowWrites,
    Canceled,
    CancelPeek,
    Command,
    CommandRejected,
    CreateDataflow,
    CreateInstance,
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
    SubscribeBatch,
    UpdateConfiguration,
)
from ..storage._shard import ShardCatalog
from ._errors import WorkerPanicError, compacted_past, compacted_past_shared
from ._holds import HELD_COUNT, HOLD_GAP, HoldMechanism
from ._peers import PeerRecord, PeerView
from ._placement import renders_interactively
from ._reconcile import DIFFERENT_INSTANCE, ReconcilePlan, Running

Readable = IndexPart | PeerView
Collection = IndexPart | SinkPart | PeerView | PeerRecord
Peer = PeerView | PeerRecord


class Role(enum.StrEnum):
    """Which runtime a worker belongs to."""

    SOLO = "solo"
    """The only runtime: runs every dataflow and serves reads."""
    MAINTENANCE = "maintenance"
    """Renders ``Maintained`` dataflows; publishes each index part."""
    INTERACTIVE = "interactive"
    """Renders ``OneShotRead`` dataflows; serves every read, of other
    indexes through peers."""


UNKNOWN_COLLECTION = "collection ID does not exist"
NOT_A_SINK = "not a sink here"


@attrs.define(eq=False)
class StandIn:
    """A runtime's record of a dataflow the other runtime renders: a peer per
    export (every export, indexes, materialized views and subscribes alike)."""

    description: DataflowDescription
    views: dict[GlobalId, Peer]


Installed = Dataflow | StandIn


@attrs.define(eq=False)
class _Reading:
    """A peek in progress: its command, and its scan once the read is ready."""

    peek: Peek
    scan: Scan | None = None


def _result(scan: Scan) -> Rows | PeekError:
    """A finished scan's answer: its rows, or the error of a result past
    :data:`~replica.model._rows.MAX_RESULT_ROWS`."""
    try:
        return Rows(tuple(scan.rows()))
    except ResultTooLargeError as error:
        return PeekError(str(error))


def peek_work(configuration: dict[str, str]) -> int | None:
    """The work budget per step of a peek scan (``peek_yielding`` =
    ``work:N,time:MS``), or ``None`` for no budget."""
    setting = configuration.get("peek_yielding")
    if setting is None:
        return None
    for part in setting.split(","):
        name, _, value = part.partition(":")
        if name.strip() == "work" and value.strip().isdigit() and int(value) > 0:
            return int(value)
    return None


@attrs.define(eq=False)
class ComputeState:
    """One worker's dataflows, pending peeks and reported frontiers.

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
    fabric: Fabric = attrs.field(factory=lambda: Fabric(1))
    metrics: Metrics = attrs.field(factory=Metrics)
    instance: InstanceConfig | None = None
    configuration: dict[str, str] = attrs.field(factory=dict)
    # Every dataflow installed, in the order installed (a dict used as an
    # ordered set: removal is O(1)), and the one each export belongs to.
    installed: dict[Installed, None] = attrs.field(factory=dict)
    _owner: dict[GlobalId, Installed] = attrs.field(factory=dict)
    collections: dict[GlobalId, Collection] = attrs.field(factory=dict)
    peeks: dict[int, _Reading] = attrs.field(factory=dict)
    # What this worker last told the current connection, per collection.
    reported: dict[GlobalId, int] = attrs.field(factory=dict)
    # The last report built for each collection, on any connection: one
    # reported afresh at an unchanged upper (a kept collection, on a
    # reconnect) sends it again rather than a new one.
    _reports: dict[GlobalId, Frontiers] = attrs.field(factory=dict)
    builds: int = 0
    # How many dataflows this worker rendered: the next one's number.
    rendered: int = 0
    outbox: list[Response] = attrs.field(factory=list)
    # Subscribe batches, held while a connection is being reconciled.
    batches: list[SubscribeBatch] = attrs.field(factory=list)
    # Ids the controller dropped on the current connection: ids are not reused
    # (with two runtimes a reused id would race like a reconnect without the
    # barrier), so a create of one is rejected. Cleared for each connection.
    retired: set[GlobalId] = attrs.field(factory=set)
    # Re-exports waiting for the index they re-export, to be published.
    unpublished: list[tuple[IndexPart, Incarnation]] = attrs.field(factory=list)
    # Align incarnations across the runtimes at each reconciliation (see
    # ``begin_reconcile`` and ``align_peers``); False only as a diagnostic.
    align: bool = True
    # How a shared arrangement is held for its reader (:mod:`._holds`).
    holds: HoldMechanism = HoldMechanism.PUBLISHER
    # The arrangements this worker builds whose compaction may be due, and
    # those to compact once the worker is idle (their since moved on).
    compactions: dict[Arrangement, None] = attrs.field(factory=dict)
    settling: dict[Arrangement, None] = attrs.field(factory=dict)
    # Index exports whose arrangement is not there yet to hold (re-exports).
    unheld: list[IndexPart] = attrs.field(factory=list)
    # The hold gauges this worker last added to the metrics (maintenance).
    gauges: tuple[int, int] = (0, 0)
    _gauges_due: bool = False

    def apply(self, command: Command) -> None:
        match command:
            # The commonest first: a replay schedules every dataflow it creates.
            case Schedule(id):
                self._schedule(command, id)
            case CreateDataflow(dataflow):
                self._create(command, dataflow)
            case Hello() | InitializationComplete():
                pass
            case CreateInstance(config):
                if self.instance is None:
                    self.instance = config
                    self.configuration.update(config.settings)
                elif config != self.instance:
                    self._reject(command, DIFFERENT_INSTANCE)
            case UpdateConfiguration(params):
                self.configuration.update(params)
            case AllowWrites(id):
                sink = self.collections.get(id)
                if isinstance(sink, SinkPart):
                    sink.allow_writes()
                    self.wake()
                elif isinstance(sink, PeerRecord | PeerView):
                    pass  # The renderer's sink writes; a peer does nothing.
                else:
                    self._reject(command, f"allow writes of {id}: {NOT_A_SINK}")
            case AllowCompaction(id, frontier):
                self._compact(command, id, frontier, report_drop=True)
            case Peek():
                self._peek(command)
            case CancelPeek(uuid):
                if self.peeks.pop(uuid, None) is not None:
                    self.outbox.append(PeekResponse(uuid, Canceled()))

    def _reject(self, command: Command, reason: str) -> None:
        self.outbox.append(CommandRejected(command, reason))

    def running(self) -> list[Running]:
        """The running dataflows, as reconciliation sees them."""
        collections = self.collections
        running: list[Running] = []
        for installed in self.installed:
            description = installed.description
            exports = description.exports
            # Every export's compaction frontier is at least the as_of.
            since, whole = description.as_of, True
            for id in exports:
                part = collections.get(id)
                if part is None:
                    whole = False
                elif part.since > since:
                    since = part.since
            if not whole:
                exports = tuple(id for id in exports if id in collections)
            running.append(Running(description, exports, since))
        return running

    def _create(self, command: CreateDataflow, description: DataflowDescription) -> None:
        reason = self._refusal(description)
        if reason is not None:
            self._reject(command, reason)
            return
        self.builds += 1
        if not self._renders(description):
            self._record_peers(description)
            return
        self._assert_imports_readable(description)
        context = Context(
            self.worker,
            self.workers,
            self.fabric,
            self.shards,
            self.metrics,
            self.wake,
            self._imported,
            self._subscribed,
            self._compacting,
        )
        dataflow = render(description, self.rendered, context)
        error = self._import_error(description)
        if error is not None:
            dataflow.fail_reads(error)
        self.rendered += 1
        self._install(dataflow)
        self.collections.update(dataflow.exports)
        for export in dataflow.exports.values():
            if isinstance(export, IndexPart):
                if not export.hold():
                    self.unheld.append(export)
                if self.role is Role.MAINTENANCE:
                    self._publish(export, Incarnation(export.id, description.as_of))

    def _compacting(self, arrangement: Arrangement) -> None:
        """An arrangement this worker builds may compact: maintain it at the
        next step."""
        if arrangement not in self.compactions:
            self.compactions[arrangement] = None
            self.wake()

    def _renders(self, description: DataflowDescription) -> bool:
        """Whether this runtime renders the dataflow (placement by class:
        :mod:`replica.compute._placement`)."""
        if self.role is Role.SOLO:
            return True
        interactive = renders_interactively(description, self.configuration)
        return interactive == (self.role is Role.INTERACTIVE)

    def _record_peers(self, description: DataflowDescription) -> None:
        """Record every export of a dataflow the other runtime renders as a
        peer: on interactive, an index is read through the sharing registry
        (bound to the part maintenance publishes); anything else is a record
        that only holds a compaction frontier."""
        views: dict[GlobalId, Peer] = {}
        for export in description.index_exports:
            if self.role is Role.INTERACTIVE:
                assert self.registry is not None, "an interactive worker has a registry"
                incarnation = Incarnation(export.id, description.as_of)
                views[export.id] = PeerView.bind(
                    export.id,
                    description,
                    self.registry.bind(incarnation, self.wake),
                    hold=self.holds is HoldMechanism.PUBLISHER,
                )
            else:
                views[export.id] = PeerRecord(export.id, description, description.as_of)
        for sink in description.sink_exports:
            views[sink.id] = PeerRecord(sink.id, description, description.as_of)
        self._install(StandIn(description, views))
        self.collections.update(views)

    def _refusal(self, description: DataflowDescription) -> str | None:
        if self.instance is None:
            return "create dataflow before create instance"
        for id in description.exports:
            if id in self.collections:
                return f"collection {id} already exists"
            if id in self.retired:
                return f"collection {id} was dropped on this connection; ids are not reused"
        return None

    def _subscribed(
        self, id: GlobalId, lower: int, upper: Frontier, updates: tuple[Update, ...]
    ) -> None:
        """A subscribe sink's batch: sent with the next responses."""
        self.batches.append(SubscribeBatch(id, lower, upper, updates))

    def _imported(self, id: GlobalId, as_of: int) -> Callable[[], Arrangement | None]:
        """This worker's part of index ``id`` for a dataflow as of ``as_of``,
        looked up at each step: an import of an index this runtime does not
        have yet waits for it (a placeholder the index fills once created and
        published). A placeholder filled by an index compacted past ``as_of``
        is the panic a build on it would have been (:class:`WorkerPanicError`)."""
        collections = self.collections
        found: list[Arrangement] = []

        def part() -> Arrangement | None:
            # Once found, for good: the arrangement is shared, and outlives
            # the index's own dataflow for whoever still reads it.
            if found:
                return found[0]
            collection = collections.get(id)
            arrangement = (
                collection.provider() if isinstance(collection, IndexPart | PeerView) else None
            )
            if arrangement is not None:
                assert isinstance(collection, IndexPart | PeerView)
                since = collection.compaction_frontier
                if since > as_of:
                    raise compacted_past_shared(id, since, as_of)
                found.append(arrangement)
            return arrangement

        return part

    def _assert_imports_readable(self, description: DataflowDescription) -> None:
        """A dataflow is built only on imports not compacted past its
        ``as_of``; one that is is a panic (:class:`WorkerPanicError`), as the
        real replica asserts it before building, on its own indexes and on
        those it reads through a peer alike: a broken ordering of the
        protocol, which a read error would hide behind a degraded query."""
        as_of = description.as_of
        for index in description.index_imports:
            collection = self.collections.get(index.id)
            if collection is None and index.id in self.retired:
                # Dropped: its compaction frontier is the empty one, past any as_of.
                raise compacted_past_shared(index.id, None, as_of)
            if isinstance(collection, PeerRecord | SinkPart):
                # Nothing to read here: a one-shot read's index lives on the
                # other runtime, which publishes nothing (nor is a sink an index).
                raise WorkerPanicError(
                    f"Index {index.id} is not an index this runtime can import: "
                    f"the other runtime renders it and publishes nothing"
                    if isinstance(collection, PeerRecord)
                    else f"Index {index.id} is not an index: it is a sink"
                )
            if isinstance(collection, IndexPart) and collection.compaction_frontier > as_of:
                raise compacted_past(index.id)
            if isinstance(collection, PeerView) and collection.compaction_frontier > as_of:
                raise compacted_past_shared(index.id, collection.compaction_frontier, as_of)

    def _import_error(self, description: DataflowDescription) -> str | None:
        """Why the dataflow cannot read an import as of its ``as_of``: the
        index failed (an evaluation error), or its publisher's part did."""
        for index in description.index_imports:
            collection = self.collections.get(index.id)
            if isinstance(collection, IndexPart | PeerView):
                error = collection.read_error(description.as_of)
                if error is not None:
                    return error
        return None

    def _publish(self, export: IndexPart, incarnation: Incarnation) -> None:
        """Publish ``export``'s part as ``incarnation``; a re-export of an index
        not there yet is published once it is (see :meth:`step`)."""
        assert self.registry is not None, "a maintenance worker has a registry"
        if self.holds is HoldMechanism.PUBLISHER:
            # Before any compaction of this index on this runtime's stream.
            hold = self.registry.register_hold(incarnation, incarnation.as_of)
            export.peer_holds.append(hold)
            part = export.arrangement
            if part is not None:
                hold.attach(part.hold)
        self._publish_part(export, incarnation)

    def _publish_part(self, export: IndexPart, incarnation: Incarnation) -> None:
        assert self.registry is not None, "a maintenance worker has a registry"
        if export.arrangement is None:
            self.unpublished.append((export, incarnation))
            return
        export.publishers[incarnation] = self.registry.publish(incarnation, export)

    def _install(self, installed: Installed) -> None:
        self.installed[installed] = None
        for id in installed.description.exports:
            self._owner[id] = installed

    def _installed_of(self, id: GlobalId) -> Installed | None:
        return self._owner.get(id)

    def _schedule(self, command: Schedule, id: GlobalId) -> None:
        installed = self._owner.get(id) if id in self.collections else None
        if installed is None:
            self._reject(command, f"schedule of collection {id}: {UNKNOWN_COLLECTION}")
            return
        # A StandIn has nothing to schedule: a peer reads maintenance's part,
        # which its own Schedule moves.
        if isinstance(installed, Dataflow) and not installed.scheduled:
            installed.scheduled = True
            self.wake()

    def _compact(
        self, command: Command, id: GlobalId, frontier: Frontier, *, report_drop: bool
    ) -> None:
        collection = self.collections.get(id)
        if collection is None:
            self._reject(command, f"allow compaction of collection {id}: {UNKNOWN_COLLECTION}")
            return
        if frontier.time is None:
            self._drop(id, collection)
            if report_drop:
                if not isinstance(collection, PeerView | PeerRecord):
                    # Only the renderer reports, the drop included.
                    self.outbox.append(Frontiers(id, frontier))
                self.retired.add(id)
            return
        if frontier.time < collection.since:
            self._reject(
                command,
                f"allow compaction of collection {id} to {frontier.time} is before "
                f"its compaction frontier {collection.since}",
            )
            return
        self._allow(collection, frontier.time)
        if not self.peeks:
            return
        for uuid, reading in list(self.peeks.items()):
            error = (
                collection.read_error(reading.peek.timestamp)
                if reading.peek.id == id and not isinstance(collection, SinkPart | PeerRecord)
                else None
            )
            if error is not None:
                del self.peeks[uuid]
                self.outbox.append(PeekResponse(uuid, PeekError(error)))

    def _allow(self, collection: Collection, time: int) -> None:
        """Compaction of ``collection`` allowed to ``time`` (at or after its
        ``since``): the holds follow."""
        if isinstance(collection, IndexPart | PeerView):
            if isinstance(collection, PeerView) and self.holds is HoldMechanism.ROUTED:
                return  # Routed: a compaction reaches only the renderer.
            collection.allow(time)
            self._gauges_due = True
        else:
            collection.since = time

    def _drop(self, id: GlobalId, collection: Collection) -> None:
        del self.collections[id]
        if isinstance(collection, IndexPart):
            collection.release()
            self._gauges_due = True
        self.reported.pop(id, None)
        self._reports.pop(id, None)
        for uuid in [uuid for uuid, reading in self.peeks.items() if reading.peek.id == id]:
            del self.peeks[uuid]
            self.outbox.append(PeekResponse(uuid, PeekError(UNKNOWN_COLLECTION)))
        installed = self._installed_of(id)
        if isinstance(collection, PeerView | PeerRecord):
            collection.close()
        if installed is None or any(
            export in self.collections for export in installed.description.exports
        ):
            return
        # The last export of its dataflow went: the dataflow goes.
        del self.installed[installed]
        for export in installed.description.exports:
            self._owner.pop(export, None)
        if isinstance(installed, Dataflow):
            installed.close(self.fabric, self.worker)

    def _peek(self, command: Peek) -> None:
        collection = self.collections.get(command.id)
        if not isinstance(collection, IndexPart | PeerView):
            self.outbox.append(PeekResponse(command.uuid, PeekError(UNKNOWN_COLLECTION)))
            return
        error = collection.read_error(command.timestamp)
        if error is not None:
            self.outbox.append(PeekResponse(command.uuid, PeekError(error)))
            return
        if command.literals is not None:
            # The replica sorts and dedupes the literal keys.
            literals = tuple(sorted(set(command.literals), key=repr))
            command = attrs.evolve(command, literals=literals)
        reading = _Reading(command)
        if peek_work(self.configuration) is None and collection.ready(command.timestamp):
            # Ready and no work budget: answer now.
            scan = collection.scan(command.timestamp, command.literals)
            scan.run()
            self.outbox.append(PeekResponse(command.uuid, _result(scan)))
            return
        self.peeks[command.uuid] = reading
        self.wake()

    def step(self, *, report: bool = True) -> None:
        """Step every scheduled dataflow; then, if ``report``, go on with the
        peeks that are ready (within the work budget), send subscribe batches
        and report frontiers."""
        for installed in self.installed:
            if isinstance(installed, Dataflow):
                installed.step()
            else:
                for view in installed.views.values():
                    if isinstance(view, PeerView):
                        view.follow(self.wake)
        if self.unpublished:
            waiting, self.unpublished = self.unpublished, []
            for export, incarnation in waiting:
                if self.collections.get(export.id) is export:
                    self._publish_part(export, incarnation)
        if self.unheld:
            self.unheld = [
                export
                for export in self.unheld
                if self.collections.get(export.id) is export and not export.hold()
            ]
        if self.compactions:
            self._maintain()
        if self._gauges_due and self.role is Role.MAINTENANCE:
            self._update_gauges()
        if not report:
            return
        self._read()
        if self.batches:
            for batch in self.batches:
                if isinstance(self.collections.get(batch.id), SinkPart):
                    self.outbox.append(batch)
            self.batches.clear()
        reported, reports = self.reported, self._reports
        # Collections at the same upper (most often all) share one frontier.
        frontier: Frontier | None = None
        for id, collection in self.collections.items():
            # A peer's upper is None: only the renderer reports a collection.
            upper = collection.upper if not isinstance(collection, PeerView) else None
            if upper is not None and reported.get(id) != upper:
                reported[id] = upper
                last = reports.get(id)
                if last is None or last.upper.time != upper:
                    if frontier is None or frontier.time != upper:
                        frontier = Frontier.at(upper)
                    last = reports[id] = Frontiers(id, frontier)
                self.outbox.append(last)

    def _maintain(self) -> None:
        """Compact what is due, a slice each; step again if more is."""
        for arrangement in list(self.compactions):
            if not arrangement.maintain():
                del self.compactions[arrangement]
                if not arrangement.settled:
                    self.settling[arrangement] = None
        self._gauges_due = True
        if self.compactions:
            self.wake()

    def idle(self) -> bool:
        """The worker is about to park with nothing else to do: compact the
        arrangements whose ``since`` moved past what they hold compacted (a
        quiet index gives its memory back); return whether that made work."""
        if not self.settling:
            return False
        started = False
        for arrangement in list(self.settling):
            del self.settling[arrangement]
            if arrangement.compact_when_idle():
                self.compactions[arrangement] = None
                started = True
        if started:
            self.wake()
        return started

    def _update_gauges(self) -> None:
        """The hold gap and held count of what this worker publishes: how far
        the arrangement's holds keep it behind what the controller allowed."""
        self._gauges_due = False
        gap = held = 0
        # Per arrangement: the least since the controller allowed its exports
        # (a re-export shares it, and its own hold is no reader's), and
        # whether any of them publishes it.
        allowed: dict[int, tuple[Arrangement, int, bool]] = {}
        for collection in self.collections.values():
            if isinstance(collection, IndexPart) and collection.arrangement is not None:
                part = collection.arrangement
                _, since, published = allowed.get(id(part), (part, collection.since, False))
                allowed[id(part)] = (
                    part,
                    min(since, collection.since),
                    published or bool(collection.publishers),
                )
        for part, since, published in allowed.values():
            if published and part.since < since:
                held += 1
                gap = max(gap, since - part.since)
        if (gap, held) != self.gauges:
            self.gauges = (gap, held)
            source = f"{self.role}/{self.worker}"
            self.metrics.set_gauge(HOLD_GAP, source, gap)
            self.metrics.set_gauge(HELD_COUNT, source, held)

    def _read(self) -> None:
        if not self.peeks:
            return
        work = peek_work(self.configuration)
        for uuid, reading in list(self.peeks.items()):
            peek = reading.peek
            collection = self.collections.get(peek.id)
            assert isinstance(collection, IndexPart | PeerView), "a pending peek's collection"
            if reading.scan is None:
                # What a peer reads may have been bound since the peek came.
                error = collection.read_error(peek.timestamp)
                if error is not None:
                    del self.peeks[uuid]
                    self.outbox.append(PeekResponse(uuid, PeekError(error)))
                    continue
                if not collection.ready(peek.timestamp):
                    continue
                reading.scan = collection.scan(peek.timestamp, peek.literals)
            if reading.scan.run(work):
                del self.peeks[uuid]
                self.outbox.append(PeekResponse(uuid, _result(reading.scan)))
            else:
                # More to read: step again (after a checkpoint: the loop parks
                # on an event that is set, which still yields).
                self.wake()

    def new_connection(self) -> None:
        """A new connection begins: ids may be used again, and every
        materialized view is read-only until the connection allows its
        writes (see :mod:`replica.engine._sinks`)."""
        self.retired.clear()
        for collection in self.collections.values():
            if isinstance(collection, SinkPart):
                collection.allow_writes(False)

    def begin_reconcile(self, plan: ReconcilePlan) -> None:
        """The drop phase: forget the old connection's peeks (no response goes
        to a connection that is gone), make retained collections report afresh,
        and run the plan's compactions and drops. Waits on nothing.

        A kept dataflow reads as of its new ``as_of`` from now on, and
        maintenance also publishes each kept index part under its new
        incarnation ``(id, as_of)``: the incarnation the interactive runtime
        binds when its own decision for the id differs (see
        :mod:`replica.compute._reconcile` and :meth:`align_peers`)."""
        self.peeks.clear()
        self.outbox.extend(plan.rejected)
        kept = plan.kept
        reported = self.reported
        for id in kept:
            reported.pop(id, None)
        collections = self.collections
        for compaction in plan.compactions:
            # ``_compact``'s usual case, inline: a kept collection compacted
            # forward (no peek to fail: they were just forgotten).
            time = compaction.frontier.time
            collection = collections.get(compaction.id)
            if time is not None and collection is not None and time >= collection.since:
                self._allow(collection, time)
            else:
                self._compact(compaction, compaction.id, compaction.frontier, report_drop=False)
        publish = self.align and self.role is Role.MAINTENANCE
        for installed in self.installed:
            if not isinstance(installed, Dataflow):
                continue
            # The as_of it is kept for: that of any of its exports (all alike).
            for id in installed.description.exports:
                as_of = kept.get(id)
                if as_of is not None:
                    break
            else:
                continue
            installed.keep(as_of)
            if not publish:
                continue
            for export in installed.exports.values():
                incarnation = Incarnation(export.id, as_of)
                if isinstance(export, IndexPart) and incarnation not in export.publishers:
                    self._publish(export, incarnation)

    def align_peers(self, plan: ReconcilePlan) -> list[str]:
        """After the barrier, before the creates. On the interactive runtime,
        a kept peer whose publisher maintenance dropped (frozen), or that is
        parked on another incarnation than ``(id, new as_of)``, is bound
        afresh to ``(id, new as_of)``, and a kept peer bound elsewhere also
        takes the hold maintenance registered for ``(id, new as_of)``. On
        maintenance, a peer hold no peer took for an incarnation other than
        the kept one is released: only the new connection's creates take
        holds now, and those are of the kept incarnation. Returns what it
        did, for the trace. Why this makes the runtimes agree:
        :mod:`replica.compute._reconcile`; the holds: docs/protocol.md."""
        if not self.align or self.role is Role.SOLO:
            return []
        if self.role is Role.MAINTENANCE:
            return self._release_stale_holds(plan)
        assert self.registry is not None, "an interactive worker has a registry"
        holding = self.holds is HoldMechanism.PUBLISHER
        rebound: list[str] = []
        for id, as_of in plan.kept.items():
            view = self.collections.get(id)
            if not isinstance(view, PeerView):
                continue
            target = Incarnation(id, as_of)
            peer = view.peer
            if peer.frozen or (not peer.bound and peer.incarnation != target):
                why = "frozen" if peer.frozen else "parked"
                view.rebind(self.registry.bind(target, self.wake), hold=holding)
                rebound.append(f"rebind kept peer {peer.incarnation} ({why}) to {target}")
            elif holding and peer.incarnation != target:
                hold = self.registry.take_hold(target, view.since)
                part = view.arrangement
                if part is not None:
                    hold.attach(part.hold)
                # The target holds of earlier connections are not needed any
                # more (the new one holds from the same since or later; the
                # peer's own, of its incarnation, stays): without this, one
                # more hold a reconnect.
                for older in view.holds:
                    if older.incarnation != peer.incarnation:
                        older.release()
                view.holds = [*(h for h in view.holds if not h.released), hold]
        return rebound

    def _release_stale_holds(self, plan: ReconcilePlan) -> list[str]:
        released: list[str] = []
        for id, as_of in plan.kept.items():
            part = self.collections.get(id)
            if not isinstance(part, IndexPart):
                continue
            for hold in part.peer_holds:
                if not hold.taken and not hold.released and hold.incarnation.as_of != as_of:
                    hold.release()
                    released.append(f"release untaken peer hold of {hold.incarnation}")
            part.peer_holds = [hold for hold in part.peer_holds if not hold.released]
        return released

    def drain(self) -> list[Response]:
        out, self.outbox = self.outbox, []
        return out
