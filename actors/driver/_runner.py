"""Running a spec against a fresh replica, one directive at a time."""

from __future__ import annotations

import attrs
import trio
import trio.testing

import actors
from actors.compute import (
    AllowCompaction,
    ComputeError,
    Controller,
    CreateDataflow,
    CreateInstance,
    DataflowDescription,
    Frontier,
    InitializationComplete,
    Replica,
    ReplicaConfig,
    Schedule,
    ShardCatalog,
    UpdateConfiguration,
    open_controller,
    open_replica,
)

from ._format import format_rows
from ._spec import Spec, Stanza, Value, parse_row

DEFAULT_TIMEOUT = "30"


@attrs.frozen
class Topology:
    """The replica a spec runs against."""

    processes: int = 1
    workers: int = 1
    interactive: bool = True
    barrier: bool = True

    def __str__(self) -> str:
        runtimes = "two runtimes" if self.interactive else "solo"
        barrier = "" if self.barrier or not self.interactive else ", no barrier"
        return f"P={self.processes} W={self.workers} {runtimes}{barrier}"

    def config(self) -> ReplicaConfig:
        return ReplicaConfig(self.processes, self.workers, self.interactive, self.barrier)


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


@attrs.frozen
class SpecRun:
    """What running a spec printed, and the replica's invariants it broke."""

    outcomes: list[Outcome]
    violations: list[str]

    @property
    def passed(self) -> bool:
        return not self.violations and all(outcome.matched for outcome in self.outcomes)


def run_spec(spec: Spec, topology: Topology, *, seed: int, trace: actors.Trace | None) -> SpecRun:
    """Run every stanza of ``spec`` against a fresh replica on the mock clock."""
    return actors.run(_run, spec, topology, trace, seed=seed)


def violations(replica: Replica, controller: Controller) -> list[str]:
    """The replica's invariants that do not hold: every worker of a runtime
    applied the same command sequence; merged frontiers never went back."""
    found = list(controller.regressions)
    for name, runtime in replica.runtimes.items():
        first = runtime.workers[0].applied
        for worker in runtime.workers[1:]:
            if worker.applied != first:
                found.append(f"{name}: worker {worker.index} applied other commands than worker 0")
    return found


async def _run(spec: Spec, topology: Topology, trace: actors.Trace | None) -> SpecRun:
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
            except ComputeError as error:
                actual = [f"error: {error}"]
            outcomes.append(Outcome(stanza, tuple(actual), trio.current_time()))
        await trio.testing.wait_all_tasks_blocked()
        found = violations(replica, controller)
    return SpecRun(outcomes, found)


def _int(value: Value) -> int:
    assert isinstance(value, int)
    return value


def _str(value: Value) -> str:
    assert isinstance(value, str)
    return value


async def _execute(session: _Session, stanza: Stanza) -> list[str]:
    args, controller, shards = stanza.args, session.controller, session.shards
    match stanza.name:
        case "create-instance":
            await controller.send(CreateInstance())
        case "update-configuration":
            params = tuple(sorted((key, _str(value)) for key, value in args.items()))
            await controller.send(UpdateConfiguration(params))
        case "initialization-complete":
            await controller.send(InitializationComplete())
        case "reconnect":
            await controller.connect()
        case "write-rows":
            rows = [parse_row(line) for line in stanza.body]
            written = shards.shard(_str(args["shard"])).write(_int(args["ts"]), rows)
            return [f"wrote {written}"]
        case "write-single-ts":
            rows = [(i,) for i in range(_int(args["count"]))]
            written = shards.shard(_str(args["shard"])).write(_int(args["ts"]), rows)
            return [f"wrote {written}"]
        case "advance":
            shards.shard(_str(args["shard"])).advance(_int(args["upper"]))
        case "define-index":
            key = args["key"]
            assert isinstance(key, tuple)
            dataflow = DataflowDescription(
                _int(args["source"]),
                _str(args["shard"]),
                _int(args["index"]),
                key,
                _int(args["as-of"]),
            )
            await controller.send(CreateDataflow(dataflow))
        case "schedule":
            await controller.send(Schedule(_int(args["id"])))
        case "allow-compaction":
            await controller.send(
                AllowCompaction(_int(args["id"]), Frontier.at(_int(args["since"])))
            )
        case "drop":
            await controller.send(AllowCompaction(_int(args["id"]), Frontier.empty()))
        case "await-frontier" | "peek" | "count":
            return await _read(controller, stanza)
        case "hold":
            session.replica.hold(_str(args["runtime"]))
        case "release":
            session.replica.release(_str(args["runtime"]))
        case "settle":
            await trio.testing.wait_all_tasks_blocked()
        case _:
            raise AssertionError(f"unvalidated directive {stanza.name!r}")
    return ["ok"]


async def _read(controller: Controller, stanza: Stanza) -> list[str]:
    args = stanza.args
    timeout = _str(args.get("timeout-secs", DEFAULT_TIMEOUT))
    id, ts = _int(args["id"]), _int(args["ts"])
    with trio.move_on_after(float(timeout)):
        if stanza.name == "await-frontier":
            await controller.await_frontier(id, ts)
            return ["ok"]
        rows = await controller.peek(id, ts)
        if stanza.name == "count":
            return [str(len(rows))]
        return format_rows(rows)
    return [f"error: timed out after {timeout}s"]
