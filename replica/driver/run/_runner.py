"""Running a spec against a fresh replica, one directive at a time."""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable
from typing import Protocol

import attrs
import trio
import trio.testing

import actors
from replica import (
    Command,
    ComputeError,
    Controller,
    CreateDataflow,
    DataflowDescription,
    FaultPlan,
    Faults,
    GlobalId,
    InitializationComplete,
    PeekCanceledError,
    PeekFailedError,
    Replica,
    ReplicaAbortedError,
    ReplicaConfig,
    Row,
    Schedule,
    Shard,
    ShardCatalog,
    WriteBelowUpperError,
    open_controller,
    open_replica,
    runtime_divergence,
)
from replica.compute._holds import HoldMechanism
from replica.compute._state import NOT_A_SINK, UNKNOWN_COLLECTION
from replica.runtime._invariants import peer_reports

from ..lang._data import render_datum, render_rows, render_updates
from ..lang._payloads import (
    Advance,
    AwaitFrontier,
    AwaitSubscribe,
    CountRows,
    Fail,
    Hold,
    Payload,
    PeekCount,
    PeekRows,
    Print,
    Reconnect,
    Release,
    Send,
    Settle,
    Timeout,
    Write,
)
from ..lang._payloads import Metrics as MetricsWait
from ..lang._spec import Spec, Stanza

ABORTED = "the replica aborted"
"""How a run's violation says the replica aborted (shared fate)."""


class _PrintedError(Exception):
    """A failure the stanza prints as ``error: <message>``."""


@attrs.frozen
class Topology:
    """The replica a spec runs against."""

    processes: int = 1
    workers: int = 1
    interactive: bool = True
    barrier: bool = True
    faults: float = 0.0
    align: bool = True
    holds: HoldMechanism = HoldMechanism.PUBLISHER

    def __str__(self) -> str:
        runtimes = "two runtimes" if self.interactive else "solo"
        barrier = "" if self.barrier or not self.interactive else ", no barrier"
        align = "" if self.align or not self.interactive else ", no align"
        holds = (
            ""
            if self.holds is HoldMechanism.PUBLISHER or not self.interactive
            else f", {self.holds} holds"
        )
        faults = f", faults {self.faults:g}" if self.faults else ""
        return f"P={self.processes} W={self.workers} {runtimes}{barrier}{align}{holds}{faults}"

    def config(self) -> ReplicaConfig:
        return ReplicaConfig(
            processes=self.processes,
            workers=self.workers,
            interactive=self.interactive,
            barrier=self.barrier,
            align=self.align,
            holds=self.holds,
            faults=FaultPlan(self.faults),
        )


@attrs.frozen
class Outcome:
    """What one stanza printed."""

    stanza: Stanza
    actual: tuple[str, ...]
    # Trio's virtual time when the directive finished.
    time: float = 0.0

    @property
    def matched(self) -> bool:
        return self.actual == self.stanza.expected


DEFAULT_MAX_WAIT = 5.0
"""The longest a stanza waits against replica processes, in real seconds,
unless ``run --spawn --max-wait`` says otherwise."""


class Backend(Protocol):
    """What the runner needs of the replica besides its controller: an
    in-process :class:`Replica` (:class:`LocalBackend`), or one on OS
    processes (:class:`~._spawned.ClusterBackend`)."""

    @property
    def faults(self) -> Faults: ...

    @property
    def max_wait(self) -> float:
        """The longest a stanza waits, whatever its ``timeout-secs``."""
        ...

    async def settle(self) -> None:
        """Wait until the replica is quiescent."""

    def hold(self, runtime: str) -> None: ...

    def release(self, runtime: str) -> None: ...

    async def divergence(self) -> list[str]:
        """Where the runtimes disagree when they must agree."""
        ...


@attrs.define(eq=False)
class LocalBackend:
    """The replica in this Trio run."""

    replica: Replica

    @property
    def faults(self) -> Faults:
        return self.replica.faults

    @property
    def max_wait(self) -> float:
        return math.inf  # the mock clock: a timeout costs no real time

    async def settle(self) -> None:
        await settle(self.replica)

    def hold(self, runtime: str) -> None:
        self.replica.hold(runtime)

    def release(self, runtime: str) -> None:
        self.replica.release(runtime)

    async def divergence(self) -> list[str]:
        return runtime_divergence(self.replica)


@attrs.define(eq=False)
class _Session:
    backend: Backend
    controller: Controller
    shards: ShardCatalog
    # What was sent since the last reconnect, until InitializationComplete:
    # a controller that goes away mid-reconciliation replays it.
    window: list[Command] | None = attrs.field(factory=list)
    # Where the runtimes disagreed when they had to agree (at a settle).
    divergence: list[str] = attrs.field(factory=list)

    def wait(self, timeout: Timeout) -> float:
        """How long a stanza waits: its timeout, at most the backend's cap."""
        return min(timeout.seconds, self.backend.max_wait)

    async def check_agreement(self) -> None:
        for found in await self.backend.divergence():
            if found not in self.divergence:
                self.divergence.append(found)

    async def send(self, command: Command, *, check_shape: bool = True) -> None:
        if self.window is not None and self.backend.faults.reconnect():
            await self.controller.connect()
            for earlier in self.window:
                await self.controller.send(earlier)
        await self.controller.send(command, check_shape=check_shape)
        if isinstance(command, InitializationComplete):
            self.window = None
        elif self.window is not None:
            self.window.append(command)


@attrs.frozen
class SpecRun:
    """What running a spec printed, and the replica's invariants it broke."""

    outcomes: list[Outcome]
    violations: list[str]
    # How many faults each site injected (all zero without --faults).
    injected: dict[str, int] = attrs.field(factory=dict)
    # The commands the replica refused, each as ``Kind: reason`` (a spec may
    # mean them; the simulation's programs never do: see ``unknown_ids``).
    rejected: tuple[str, ...] = ()
    # The OneShotRead dataflows sent that miss a one-shot read's shape.
    misfits: tuple[str, ...] = ()

    @property
    def aborted(self) -> bool:
        """Whether the replica aborted during the run (shared fate)."""
        return any(v.startswith(ABORTED) for v in self.violations)

    def unknown_ids(self) -> list[str]:
        """The refusals of a command naming an id the replica neither renders
        nor holds as a peer: a protocol violation."""
        return [r for r in self.rejected if r.endswith((UNKNOWN_COLLECTION, NOT_A_SINK))]

    @property
    def passed(self) -> bool:
        return not self.violations and all(outcome.matched for outcome in self.outcomes)


def run_spec(spec: Spec, topology: Topology, *, seed: int, trace: actors.Tracer | None) -> SpecRun:
    """Run every stanza of ``spec`` against a fresh replica on the mock clock."""
    # A Ctrl-C lands at a checkpoint, not inside trio's start of a task
    # (actors.run): the command that is interrupted says so in one line.
    return actors.run(
        _run, spec, topology, trace, seed=seed, restrict_keyboard_interrupt_to_checkpoints=True
    )


async def settle(replica: Replica) -> None:
    """Wait until the replica is quiescent: every task blocked, no injected
    delay still running (a sleeping task counts as blocked), and, with
    message latency, no command on its way to a worker (the wait is the
    latency's bound: every command sent by then has arrived after it)."""
    while True:
        await trio.testing.wait_all_tasks_blocked()
        if replica.faults.pending:
            await replica.faults.wait_quiet()
            continue
        latency = replica.system.latency
        if latency is not None and any(
            runtime.command_channel.statistics().in_flight for runtime in replica.runtimes.values()
        ):
            await trio.sleep(latency[1])
            continue
        return


def violations(replica: Replica, controller: Controller) -> list[str]:
    """The replica's invariants that do not hold: every worker of a runtime
    applied the same command sequence; merged frontiers never went back; the
    runtimes agree once both reconciled the same connection."""
    found = list(controller.regressions) + runtime_divergence(replica) + peer_reports(replica)
    for process in replica.processes:
        found += [f"process {process.index}: {r}" for r in process.regressions]
    for name, runtime in replica.runtimes.items():
        first = runtime.workers[0].applied
        for worker in runtime.workers[1:]:
            if worker.applied != first:
                found.append(f"{name}: worker {worker.index} applied other commands than worker 0")
    return found


async def _run(spec: Spec, topology: Topology, trace: actors.Tracer | None) -> SpecRun:
    shards = ShardCatalog()
    async with (
        open_replica(topology.config(), shards=shards, tracer=trace) as replica,
        open_controller(replica) as controller,
    ):

        async def found() -> list[str]:
            return violations(replica, controller)

        return await run_stanzas(spec, LocalBackend(replica), controller, shards, found)


async def run_stanzas(
    spec: Spec,
    backend: Backend,
    controller: Controller,
    shards: ShardCatalog,
    violations: Callable[[], Awaitable[list[str]]],
) -> SpecRun:
    """Run every stanza of ``spec`` with ``controller`` (connected) against
    ``backend``'s replica, whose shards are ``shards``; then settle and
    gather the invariants broken (``violations``)."""
    outcomes: list[Outcome] = []
    session = _Session(backend, controller, shards)
    aborted: list[str] = []
    for stanza in spec.stanzas:
        try:
            actual = await _execute(session, stanza.payload)
        except ReplicaAbortedError as error:
            # Shared fate: the process is gone, and the run ends here, with
            # one line for the stanza that was running.
            outcomes.append(Outcome(stanza, (f"error: {error}",), trio.current_time()))
            left = len(spec.stanzas) - len(outcomes)
            after = (
                f"; {left} stanza{'' if left == 1 else 's'} after it did not run" if left else ""
            )
            aborted.append(f"{ABORTED} at line {stanza.line} ({error}){after}")
            break
        except (ComputeError, _PrintedError) as error:
            actual = [f"error: {error}"]
        outcomes.append(Outcome(stanza, tuple(actual), trio.current_time()))
    await backend.settle()
    if not aborted and controller.failure is not None:
        # A panic no stanza waited for (after the last one, or behind one
        # that does not wait): the run did not pass all the same.
        aborted.append(f"{ABORTED} after the stanzas ran ({controller.failure})")
    rejected = tuple(f"{type(r.command).__name__}: {r.reason}" for r in controller.rejections)
    misfits = tuple(controller.misfits)
    if aborted:
        # What a dead process holds is no state to check: the abort is all.
        return SpecRun(outcomes, aborted, dict(backend.faults.injected), rejected, misfits)
    broken = await violations()
    found = session.divergence + [v for v in broken if v not in session.divergence]
    return SpecRun(outcomes, found, dict(backend.faults.injected), rejected, misfits)


async def _execute(session: _Session, payload: Payload) -> list[str]:
    controller = session.controller
    match payload:
        case Send(command):
            await session.send(command)
        case Print(lines):
            return list(lines)
        case Fail(message):
            return [f"error: {message}"]
        case Reconnect():
            await controller.connect()
            session.window = []
        case Write():
            # A persist write takes far longer than a command: the replica
            # has taken every command sent before it by the time it lands,
            # injected delays included (a runtime whose delivery is delayed
            # must not write a view the next connection redefines).
            await session.backend.settle()
            return [_write(session.shards.shard(payload.shard), payload)]
        case Advance(shard, upper):
            await session.backend.settle()
            session.shards.shard(shard).advance(upper)
        case AwaitFrontier(id, ts, timeout, allow_timeout):
            with trio.move_on_after(session.wait(timeout)):
                await controller.await_frontier(id, ts)
                return ["awaited" if allow_timeout else "ok"]
            return [
                "awaited"
                if allow_timeout
                else f"error: frontier for {id} did not reach {ts} in time"
            ]
        case PeekRows(id, ts, timeout, shard):
            with trio.move_on_after(session.wait(timeout)):
                if shard is not None:
                    shard_rows = _peek_shard(controller, session.shards.shard(shard), ts)
                    return render_rows(await shard_rows)
                return render_rows(await _peek(controller, id, ts))
            return _timed_out(timeout)
        case PeekCount(id, ts, literals, timeout):
            with trio.move_on_after(session.wait(timeout)):
                return [str(len(await _peek(controller, id, ts, literals)))]
            return _timed_out(timeout)
        case CountRows(id, ts, dataflow, output, timeout):
            with trio.move_on_after(session.wait(timeout)):
                return [await _count(session, id, ts, dataflow, output)]
            return _timed_out(timeout)
        case AwaitSubscribe(id, up_to, timeout):
            with trio.move_on_after(session.wait(timeout)):
                return render_updates(await controller.await_subscribe(id, up_to))
            return [f"error: subscribe {id} did not reach {up_to} in time"]
        case MetricsWait(name, most, minus, timeout):
            with trio.move_on_after(session.wait(timeout)):
                await controller.await_metric(name, minus, most)
                return [f"value <= {most}"]
            less = "" if minus is None else f" - {minus}"
            return [f"error: {name}{less} did not fall to {most} in {timeout.text}s"]
        case Hold(runtime):
            session.backend.hold(runtime)
        case Release(runtime):
            session.backend.release(runtime)
        case Settle():
            await session.backend.settle()
            await session.check_agreement()
    return ["ok"]


def _timed_out(timeout: Timeout) -> list[str]:
    return [f"error: timed out after {timeout.text}s"]


def _write(shard: Shard, write: Write) -> str:
    """One append of every row (at ``ts``, or spread over ``ts + j % spread``)."""
    if write.lower < shard.upper:
        raise WriteBelowUpperError(
            f"write at ts {write.lower} is below the shard upper {shard.upper}"
        )
    updates = [(row, time, 1) for row, time in write.updates()]
    shard.append(updates, shard.upper, write.upper)
    return f"wrote {write.count}"


async def _peek(
    controller: Controller, id: GlobalId, ts: int, literals: tuple[Row, ...] | None = None
) -> list[Row]:
    try:
        return await controller.peek(id, ts, literals)
    except PeekFailedError as error:
        raise _PrintedError(f"peek error: {error}") from None
    except PeekCanceledError:
        raise _PrintedError("peek canceled") from None


async def _peek_shard(controller: Controller, shard: Shard, ts: int) -> list[Row]:
    try:
        return await controller.peek_shard(shard, ts)
    except PeekFailedError as error:
        raise _PrintedError(f"peek error: {error}") from None


async def _count(
    session: _Session, id: GlobalId, ts: int, dataflow: DataflowDescription, output: GlobalId
) -> str:
    """``count``: first a peek of no key, so a missing index or a read below
    its compaction frontier fails as a peek does; then the temporary
    ``count(*)`` dataflow, its frontier past ``ts``, and a peek of it."""
    await _peek(session.controller, id, ts, ())
    # The real driver builds it without the compute controller's shape check
    # (its export is no transient id).
    await session.send(CreateDataflow(dataflow), check_shape=False)
    await session.send(Schedule(output))
    await session.controller.await_frontier(output, ts + 1)
    rows = await _peek(session.controller, output, ts)
    if not rows:
        return "0"
    if len(rows) > 1:
        raise _PrintedError(f"count reduce returned {len(rows)} rows, expected 0 or 1")
    return render_datum(rows[0][-1])
