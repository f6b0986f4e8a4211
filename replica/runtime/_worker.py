"""The worker actor: receives sequenced commands, reconciles connections, and
keeps its dataflows stepping (docs/protocol.md).

A worker runs two activities in its nursery: the command loop, and the
dataflow loop, which steps the worker's dataflow parts whenever a shard they
read changed or a command gave them work, and parks otherwise (never
busy-waits). While the command loop waits, the dataflow loop keeps stepping.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import attrs
import trio

from actors import Envelope, Inbox
from barrier import ReconcileBarrier, Side
from sharing import Registry

from ..compute._errors import WorkerPanicError
from ..compute._holds import HoldMechanism
from ..compute._peers import PeerView
from ..compute._reconcile import plan_reconcile
from ..compute._state import Collection, ComputeState, Role
from ..engine._exchange import Fabric
from ..engine._exports import IndexPart
from ..model._dataflow import DataflowDescription
from ..model._metrics import Metrics
from ..protocol import Command, CreateDataflow, InitializationComplete, Response
from ..storage._shard import ShardCatalog
from ._faults import Faults


def _nothing() -> None:
    pass


def _sharing(collection: Collection) -> str | None:
    if isinstance(collection, PeerView):
        peer = collection.peer
        if peer.publisher is None:
            return f"peer {peer.incarnation} parked: no publisher yet"
        frozen = ", frozen: its publisher was dropped" if peer.frozen else ""
        return f"peer {peer.incarnation} bound to publisher #{peer.publisher.serial}{frozen}"
    if isinstance(collection, IndexPart) and collection.publishers:
        # The newest publication: a kept part is published again under its new
        # incarnation.
        publisher = list(collection.publishers.values())[-1]
        return f"publish {publisher.incarnation} as #{publisher.serial}"
    return None


@attrs.frozen
class SequencedCommand:
    """A command as the command channel delivers it to every worker of a
    runtime: with the nonce of its connection and that connection's position
    in process 0's :class:`ConnectionOrder`."""

    nonce: int
    position: int
    command: Command

    @classmethod
    def all_of(cls, nonce: int, position: int, commands: list[Command]) -> list[SequencedCommand]:
        """``[SequencedCommand(nonce, position, command) for command in
        commands]``, built without a call of ``__init__`` each (the slots
        written directly): the adapter sequences a replay of thousands of
        commands at once, and the frozen class's ``__init__`` costs more
        than the rest of their way to the workers."""
        sequenced: list[SequencedCommand] = []
        append = sequenced.append
        for command in commands:
            item = _new(cls)
            _set_nonce(item, nonce)
            _set_position(item, position)
            _set_command(item, command)
            append(item)
        return sequenced


_new = object.__new__
_set_nonce = SequencedCommand.__dict__["nonce"].__set__
_set_position = SequencedCommand.__dict__["position"].__set__
_set_command = SequencedCommand.__dict__["command"].__set__


@attrs.define(eq=False)
class Worker:
    """One worker of one runtime. ``index`` is its global index,
    ``process * W + local ordinal``."""

    index: int
    process: int
    local: int
    state: ComputeState
    # Where the worker's responses go: its channel adapter's ``accept``, called
    # with the connection's nonce in the worker's own task.
    respond: Callable[[int, Response], None]
    # Where they go a flush at a time, when the adapter takes them so
    # (``accept_many``); otherwise one by one to ``respond``.
    respond_many: Callable[[int, list[Response]], None] | None = attrs.field(
        default=None, kw_only=True
    )
    # With two runtimes: the barrier shared with the worker of the same local
    # ordinal on the other runtime, and this worker's side of it.
    barrier: ReconcileBarrier | None = None
    side: Side | None = None
    faults: Faults | None = None
    # Aborts the worker's process (shared fate), with the panic's message.
    panic: Callable[[str], None] | None = None
    # Tells the worker's process which runtimes run a dataflow's collections.
    claim: Callable[[DataflowDescription, Mapping[str, str]], None] | None = None
    # The connection whose commands the worker is applying or reconciling.
    # Invariant: positions only grow (the command channel delivers in order).
    position: int = -1
    nonce: int | None = None
    # Commands of a connection being reconciled, until InitializationComplete.
    buffer: list[Command] | None = None
    # The position of the last connection whose reconciliation finished (its
    # create phase ran); equal to ``position`` once the worker is past it.
    reconciled: int = -1
    # Every command this worker applied, with its stamp and position, in order.
    applied: list[tuple[int, int, Command]] = attrs.field(factory=list)
    _work: trio.Event = attrs.field(factory=trio.Event)
    # The scope of the worker's loops, for ``halt``; halted before it ran: True.
    _scope: trio.CancelScope | None = None
    _halted: bool = False
    _inbox: Inbox[SequencedCommand] | None = None
    # What the trace last said of each collection's sharing (see _note_sharing).
    _noted: dict[Collection, str] = attrs.field(factory=dict)

    @classmethod
    def build(
        cls,
        index: int,
        process: int,
        local: int,
        workers: int,
        shards: ShardCatalog,
        respond: Callable[[int, Response], None],
        *,
        role: Role = Role.SOLO,
        registry: Registry[IndexPart] | None = None,
        align: bool = True,
        holds: HoldMechanism = HoldMechanism.PUBLISHER,
        fabric: Fabric | None = None,
        metrics: Metrics | None = None,
        respond_many: Callable[[int, list[Response]], None] | None = None,
    ) -> Worker:
        """Worker ``index`` of a runtime of ``workers`` workers; ``fabric`` is
        the runtime's (its workers exchange updates through it)."""
        state = ComputeState(
            index,
            workers,
            shards,
            wake=_nothing,
            role=role,
            registry=registry,
            fabric=Fabric(workers) if fabric is None else fabric,
            metrics=Metrics() if metrics is None else metrics,
            align=align,
            holds=holds,
        )
        worker = cls(index, process, local, state, respond, respond_many=respond_many)
        state.wake = worker.wake
        return worker

    def wake(self) -> None:
        """There is dataflow work: a shard changed or a command made some."""
        self._work.set()

    async def run(self, inbox: Inbox[SequencedCommand]) -> None:
        """The worker's behaviour: its command loop, beside its dataflow loop."""
        self._inbox = inbox
        async with trio.open_nursery() as nursery:
            self._scope = nursery.cancel_scope
            if self._halted:
                nursery.cancel_scope.cancel()
            nursery.start_soon(self._step_dataflows)
            while True:
                try:
                    # Everything sequenced so far, in one turn: a replayed
                    # connection is one burst of commands.
                    batch = await inbox.receive_batch()
                except trio.EndOfChannel:
                    break
                try:
                    await self._handle(inbox, batch)
                except WorkerPanicError as panic:
                    self._panicked(panic)
                    break
                del batch  # handled: not kept alive while the next one is awaited
            nursery.cancel_scope.cancel()

    def _panicked(self, panic: WorkerPanicError) -> None:
        """Shared fate: the process ends, this worker with it (re-raised
        where no process hears of it)."""
        if self._inbox is not None:
            self._inbox.mark(f"panic: {panic}", None)
        if self.panic is None:
            raise panic
        self.panic(str(panic))

    def halt(self) -> None:
        """Stop the worker: its process aborted (shared fate)."""
        self._halted = True
        if self._scope is not None:
            self._scope.cancel()

    async def _handle(
        self, inbox: Inbox[SequencedCommand], batch: list[Envelope[SequencedCommand]]
    ) -> None:
        """Apply or buffer each command of ``batch``, in order; reconcile a
        connection at its ``InitializationComplete``."""
        for envelope in batch:
            sequenced = envelope.message
            buffer = self.buffer
            if (
                buffer is not None
                and sequenced.position == self.position
                and not isinstance(sequenced.command, InitializationComplete)
            ):
                # Reconciling: ``_take``'s usual case, inline.
                buffer.append(sequenced.command)
                continue
            seq = envelope.seq
            commands = self._take(inbox, seq, sequenced)
            if commands is not None:
                # InitializationComplete: reconcile what the connection sent.
                await self._reconcile(inbox, seq, commands)
                self.reconciled = self.position
                self._apply(seq, sequenced.command)
            if self.state.outbox:
                self._flush()

    async def _step_dataflows(self) -> None:
        while True:
            try:
                self.state.step(report=self.buffer is None)
            except WorkerPanicError as panic:
                # A placeholder filled by an index compacted past the reader.
                self._panicked(panic)
                return
            self._flush()
            self._note_sharing()
            if not self._work.is_set():
                # Nothing else to do: a quiet index compacts (sets work if so).
                self.state.idle()
            await self._work.wait()
            self._work = trio.Event()

    def _take(
        self, inbox: Inbox[SequencedCommand], seq: int, sequenced: SequencedCommand
    ) -> list[Command] | None:
        """Apply or buffer one command (synchronous: the loop awaits only to
        reconcile); return the connection's buffered commands when it is
        ``InitializationComplete`` that ends them."""
        if sequenced.position != self.position:
            assert sequenced.position > self.position, (
                f"worker {self.index}: position went back from {self.position} "
                f"to {sequenced.position}"
            )
            # A new connection restarts reconciliation, even an unfinished one.
            self.position, self.nonce, self.buffer = sequenced.position, sequenced.nonce, []
            self.state.new_connection()
            inbox.mark(f"reconcile position={sequenced.position}", seq)
        command = sequenced.command
        if self.buffer is None:
            self._apply(seq, command)
        elif isinstance(command, InitializationComplete):
            commands, self.buffer = self.buffer, None
            return commands
        else:
            self.buffer.append(command)
        return None

    async def _reconcile(
        self, inbox: Inbox[SequencedCommand], seq: int, commands: list[Command]
    ) -> None:
        if self.state.instance is None:
            inbox.mark("first connection: apply", seq)
            for command in commands:
                self._apply(seq, command)
            return
        plan = plan_reconcile(self.state.instance, self.state.running(), commands)
        if inbox.tracing:
            kept, dropped = sorted(plan.retained), sorted(plan.dropped)
            inbox.mark(f"drop phase: keep {kept} drop {dropped}", seq)
        # NOTE: the drop phase waits on no other worker.
        self.state.begin_reconcile(plan)
        position = self.position
        self.applied += [(seq, position, compaction) for compaction in plan.compactions]
        self._flush()
        if self.barrier is not None:
            assert self.side is not None
            # Reads no command while it waits; the dataflow loop keeps stepping.
            late = None if self.faults is None else self.faults.late_arrival()
            if late is not None and self.faults is not None:
                inbox.mark(f"fault: arrive {late:g}s late", seq)
                self.faults.started()
                try:
                    await trio.sleep(late)
                finally:
                    self.faults.finished()
            inbox.mark(f"wait at barrier position={self.position}", seq)
            other = await self.barrier.arrive_and_wait(self.side, self.position)
            inbox.mark(f"passed barrier: {self.side.other} at {other}", seq)
        inbox.mark("create phase", seq)
        for note in self.state.align_peers(plan):
            inbox.mark(note, seq)
        for command in plan.rest:
            self._apply(seq, command)
        self.wake()

    def _apply(self, seq: int, command: Command) -> None:
        self.applied.append((seq, self.position, command))
        if isinstance(command, CreateDataflow):
            if self.claim is not None:
                self.claim(command.dataflow, self.state.configuration)
            self.state.apply(command)
            self._note_sharing()
        else:
            self.state.apply(command)

    def _note_sharing(self) -> None:
        """Mark in the trace what changed in the sharing of this worker's
        collections: a part published, a peer parked, bound, or frozen."""
        inbox = self._inbox
        if inbox is None or not inbox.tracing:
            return
        noted: dict[Collection, str] = {}
        for collection in self.state.collections.values():
            text = _sharing(collection)
            if text is not None:
                if self._noted.get(collection) != text:
                    inbox.mark(text)
                noted[collection] = text
        self._noted = noted

    def _flush(self) -> None:
        nonce = self.nonce
        if nonce is None or not self.state.outbox:
            return
        responses = self.state.drain()
        if self.respond_many is not None:
            self.respond_many(nonce, responses)
            return
        for response in responses:
            self.respond(nonce, response)
