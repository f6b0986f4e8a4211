"""The two-runtime race, driven from Python instead of a spec file.

A replica runs a maintenance and an interactive runtime. The controller
reconnects and recreates index 1001 at the same as_of under a new key while
the maintenance runtime is held. With the reconcile barrier the interactive
runtime creates its peer only after maintenance dropped the old incarnation,
and a read answers; with the barrier off (a diagnostic, unsafe switch) the
peer binds the incarnation about to be dropped, and the read times out on a
frozen view. Runs on Trio's mock clock: the 10 s timeout costs no real time.

Run it: ``.venv/bin/python examples/two_runtime_race.py [--workers W] [--processes P]``
"""

from __future__ import annotations

import argparse
import sys

import trio
import trio.testing

import actors
from replica import (
    Command,
    CreateDataflow,
    CreateInstance,
    DataflowDescription,
    GlobalId,
    InitializationComplete,
    PeerView,
    ReplicaConfig,
    Schedule,
    ShardCatalog,
    open_controller,
    open_replica,
)

OLD = DataflowDescription.index(1000, "data", 1001, key=(0,), as_of=0)
NEW = DataflowDescription.index(1000, "data", 1001, key=(1,), as_of=0)


async def scenario(config: ReplicaConfig) -> tuple[str, list[str]]:
    shards = ShardCatalog()
    data = shards.shard("data")
    async with (
        open_replica(config, shards=shards) as replica,
        open_controller(replica) as controller,
    ):
        data.write(0, [(1, "alpha"), (2, "beta")])
        first: list[Command] = [CreateInstance(), InitializationComplete(), CreateDataflow(OLD)]
        for command in [*first, Schedule(1001)]:
            await controller.send(command)
        await controller.await_frontier(1001, 1)

        replica.hold("maintenance")
        await controller.connect()
        again: list[Command] = [CreateInstance(), CreateDataflow(NEW), Schedule(1001)]
        for command in [*again, InitializationComplete()]:
            await controller.send(command)
        await trio.testing.wait_all_tasks_blocked()  # interactive does all it can
        replica.release("maintenance")
        await trio.testing.wait_all_tasks_blocked()
        data.write(1, [(3, "gamma")])

        rows: list[object] = []
        with trio.move_on_after(10) as timeout:
            rows.extend(await controller.peek(1001, 1))
        if timeout.cancelled_caught:
            read = f"read timed out after 10s (virtual t={trio.current_time():g}s)"
        else:
            read = f"read answered {len(rows)} rows at virtual t={trio.current_time():g}s"
        bindings = []
        for worker in replica.interactive.workers:
            view = worker.state.collections[GlobalId.user(1001)]
            assert isinstance(view, PeerView)
            state = "frozen" if view.peer.frozen else "live"
            bindings.append(f"interactive worker {worker.index}: {view.peer.publisher} ({state})")
        return read, bindings


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--processes", type=int, default=1)
    args = parser.parse_args(argv)
    outcomes = {}
    for barrier in (False, True):
        config = ReplicaConfig(args.processes, args.workers, interactive=True, barrier=barrier)
        read, bindings = actors.run(scenario, config, seed=1)
        outcomes[barrier] = read
        print(f"barrier {'on ' if barrier else 'off'}: {read}")
        for line in bindings:
            print(f"  {line}")
    shown = outcomes[False].startswith("read timed out") and outcomes[True].startswith("read answ")
    print("the race without the barrier, and its fix with it:", "shown" if shown else "NOT shown")
    return 0 if shown else 1


if __name__ == "__main__":
    sys.exit(main())
