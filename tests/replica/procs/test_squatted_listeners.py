"""A replica on OS processes whose listeners strangers squat: idle and
slow-drip connections, re-opened as they are closed, on every ``serve``
process's listener and on the shard host's. A process killed and started
again must still dial the shard host and its peer, and be dialled by them
and by the controller (each node's listener lets every newcomer in, evicting
a stranger: docs/actors.md, "Nodes").

A plain test on the real clock, bounded by ``run_real``; the strangers'
loops are bounded in count and pause between connections."""

from __future__ import annotations

import functools

import trio

from replica import ReplicaConfig, open_controller, row_order
from replica.procs import open_cluster

from ...actors.net.siege import Siege
from .helpers import Session, index, run_real

STRANGERS = 200
DRIPPING = 10


def _rows(start: int, count: int, time: int) -> list[tuple[tuple[int, str], int, int]]:
    return [((n, f"row {n}"), time, 1) for n in range(start, start + count)]


def test_a_process_restarts_and_serves_while_strangers_squat_every_listener() -> None:
    async def main() -> None:
        config = ReplicaConfig(processes=2, workers=1, interactive=True)
        async with open_cluster(config, seed=3) as cluster, open_controller(cluster) as controller:
            session = Session(controller)
            shard = cluster.shards.shard("data")
            shard.append(_rows(0, 100, 0), 0, 1)
            await session.start(index(1000, 1001))
            await controller.await_frontier(1001, 1)
            listeners = [slot.listener for slot in cluster.slots]
            addresses = [sock.getsockname()[:2] for sock in listeners if sock is not None]
            shards = cluster.slots[0].command[cluster.slots[0].command.index("--shards") + 1]
            host, port = shards.rsplit(":", 1)
            addresses.append((host, int(port)))
            sieges = [
                Siege(functools.partial(trio.open_tcp_stream, *address), 0.5, again_after=0.2)
                for address in addresses
            ]
            async with trio.open_nursery() as nursery:
                for siege in sieges:
                    for number in range(STRANGERS + DRIPPING):
                        nursery.start_soon(siege.hold, number >= STRANGERS, 100)
                for siege in sieges:
                    await siege.reached(STRANGERS + DRIPPING)
                cluster.kill(1)
                await cluster.slots[1].exited.wait()
                await cluster.wait_lost(1)
                await cluster.restart(1)
                await session.reconnect()
                shard.append(_rows(100, 10, 1), 1, 2)
                await controller.await_frontier(1001, 2)
                rows = await controller.peek(1001, 1)
                for siege in sieges:
                    assert not siege.failed, siege.failed
                    assert siege.opened < (STRANGERS + DRIPPING) * 100  # still on
                nursery.cancel_scope.cancel()
            assert sorted(rows, key=row_order) == [(n, f"row {n}") for n in range(110)]
            assert controller.rejections == []

    run_real(main)
