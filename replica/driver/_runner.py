"""Running a spec against a fresh replica, one directive at a time."""

from __future__ import annotations

import attrs
import trio
import trio.testing

import actors
from replica import (
    AllowCompaction,
    Command,
    ComputeError,
    Controller,
    CreateDataflow,
    CreateInstance,
    DataflowDescription,
    FaultPlan,
    Frontier,
    GlobalId,
    InitializationComplete,
    Replica,
    ReplicaConfig,
    Schedule,
    ShardCatalog,
    UpdateConfiguration,
    open_controller,
    open_replica,
    runtime_divergence,
)

from ._format import format_rows
from ._spec import RowError, Spec, Stanza, as_int, as_str, parse_row

DEFAULT_TIMEOUT = "30"


@attrs.frozen
class Topology:
    """The replica a spec runs against."""

    processes: int = 1
    workers: int = 1
    interactive: bool = True
    barrier: bool = True
    faults: float = 0.0
    align: bool = True

    def __str__(self) -> str:
        runtimes = "two runtimes" if self.interactive else "solo"
        barrier = "" if self.barrier or not self.interactive else ", no barrier"
        align = "" if self.align or not self.interactive else ", no align"
        faults = f", faults {self.faults:g}" if self.faults else ""
        return f"P={self.processes} W={self.workers} {runtimes}{barrier}{align}{faults}"

    def config(self) -> ReplicaConfig:
        return ReplicaConfig(
            processes=self.processes,
            workers=self.workers,
            interactive=self.interactive,
            barrier=self.barrier,
            align=self.align,
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


@attrs.define(eq=False)
class _Session:
    replica: Replica
    controller: Controller
    shards: ShardCatalog
    # What was sent since the last reconnect, until InitializationComplete:
    # a controller that goes away mid-reconciliation replays it.
    window: list[Command] | None = attrs.field(factory=list)
    # Where the runtimes disagreed when they had to agree (at a settle).
    divergence: list[str] = attrs.field(factory=list)

    def check_agreement(self) -> None:
        for found in runtime_divergence(self.replica):
            if found not in self.divergence:
                self.divergence.append(found)

    async def send(self, command: Command) -> None:
        if self.window is not None and self.replica.faults.reconnect():
            await self.controller.connect()
            for earlier in self.window:
                await self.controller.send(earlier)
        await self.controller.send(command)
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

    @property
    def passed(self) -> bool:
        return not self.violations and all(outcome.matched for outcome in self.outcomes)


def run_spec(spec: Spec, topology: Topology, *, seed: int, trace: actors.Tracer | None) -> SpecRun:
    """Run every stanza of ``spec`` against a fresh replica on the mock clock."""
    return actors.run(_run, spec, topology, trace, seed=seed)


async def settle(replica: Replica) -> None:
    """Wait until the replica is quiescent: every task blocked, and no injected
    delay still running (a sleeping task counts as blocked)."""
    while True:
        await trio.testing.wait_all_tasks_blocked()
        if replica.faults.pending == 0:
            return
        await replica.faults.wait_quiet()


def violations(replica: Replica, controller: Controller) -> list[str]:
    """The replica's invariants that do not hold: every worker of a runtime
    applied the same command sequence; merged frontiers never went back; the
    runtimes agree once both reconciled the same connection."""
    found = list(controller.regressions) + runtime_divergence(replica)
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
    outcomes: list[Outcome] = []
    async with (
        open_replica(topology.config(), shards=shards, tracer=trace) as replica,
        open_controller(replica) as controller,
    ):
        session = _Session(replica, controller, shards)
        for stanza in spec.stanzas:
            try:
                actual = await _execute(session, stanza)
            except (ComputeError, RowError) as error:
                actual = [f"error: {error}"]
            outcomes.append(Outcome(stanza, tuple(actual), trio.current_time()))
        await settle(replica)
        found = session.divergence + [
            v for v in violations(replica, controller) if v not in session.divergence
        ]
    return SpecRun(outcomes, found, dict(replica.faults.injected))


async def _execute(session: _Session, stanza: Stanza) -> list[str]:
    args, controller, shards = stanza.args, session.controller, session.shards
    match stanza.name:
        case "create-instance":
            await session.send(CreateInstance())
        case "update-configuration":
            params = tuple(sorted((key, as_str(value)) for key, value in args.items()))
            await session.send(UpdateConfiguration(params))
        case "initialization-complete":
            await session.send(InitializationComplete())
        case "reconnect":
            await controller.connect()
            session.window = []
        case "write-rows":
            rows = [parse_row(line) for line in stanza.body]
            written = shards.shard(as_str(args["shard"])).write(as_int(args["ts"]), rows)
            return [f"wrote {written}"]
        case "write-single-ts":
            rows = [(i,) for i in range(as_int(args["count"]))]
            written = shards.shard(as_str(args["shard"])).write(as_int(args["ts"]), rows)
            return [f"wrote {written}"]
        case "advance":
            shards.shard(as_str(args["shard"])).advance(as_int(args["upper"]))
        case "define-index":
            key = args["key"]
            assert isinstance(key, tuple)
            dataflow = DataflowDescription.index(
                as_int(args["source"]),
                as_str(args["shard"]),
                as_int(args["index"]),
                key,
                as_int(args["as-of"]),
            )
            await session.send(CreateDataflow(dataflow))
        case "schedule":
            await session.send(Schedule(GlobalId.user(as_int(args["id"]))))
        case "allow-compaction":
            await session.send(
                AllowCompaction(
                    GlobalId.user(as_int(args["id"])), Frontier.at(as_int(args["since"]))
                )
            )
        case "drop":
            await session.send(AllowCompaction(GlobalId.user(as_int(args["id"])), Frontier.empty()))
        case "await-frontier" | "peek" | "count":
            return await _read(controller, stanza)
        case "hold":
            session.replica.hold(as_str(args["runtime"]))
        case "release":
            session.replica.release(as_str(args["runtime"]))
        case "settle":
            await settle(session.replica)
            session.check_agreement()
        case _:
            raise AssertionError(f"unvalidated directive {stanza.name!r}")
    return ["ok"]


async def _read(controller: Controller, stanza: Stanza) -> list[str]:
    args = stanza.args
    timeout = as_str(args.get("timeout-secs", DEFAULT_TIMEOUT))
    id, ts = GlobalId.user(as_int(args["id"])), as_int(args["ts"])
    with trio.move_on_after(float(timeout)):
        if stanza.name == "await-frontier":
            await controller.await_frontier(id, ts)
            return ["ok"]
        rows = await controller.peek(id, ts)
        if stanza.name == "count":
            return [str(len(rows))]
        return format_rows(rows)
    return [f"error: timed out after {timeout}s"]
