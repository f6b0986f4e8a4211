"""Nodes over loopback TCP on the real clock: a plain (sync) test that runs
its own ``trio.run`` (the suite's async tests all run on the mock clock),
bounded by ``trio.fail_after``."""

from __future__ import annotations

import ssl
from typing import cast

import trio

import actors
from actors import ActorRef, Down, Inbox, NodeDown
from actors.net import open_node

from ..messages import SECRET, Add, Echo, Total, codec
from .nodes import CounterMessage, counter

TIME_LIMIT = 20  # real seconds; a run takes well under one


async def round_trips(
    server_ssl: ssl.SSLContext | None = None, client_ssl: ssl.SSLContext | None = None
) -> list[object]:
    seen: list[object] = []
    async with (
        actors.open_system() as system_a,
        actors.open_system() as system_b,
    ):
        await system_b.spawn(counter, name="counter")
        async with (
            open_node(system_a, name="a", secret=SECRET, codec=codec(), listen=None) as a,
            open_node(
                system_b, name="b", secret=SECRET, codec=codec(), ssl_context=server_ssl
            ) as b,
        ):
            assert b.address is not None
            assert b.address[0] == "127.0.0.1"  # loopback by default
            peer = await a.connect(b.address, ssl_context=client_ssl)
            ref = cast("ActorRef[CounterMessage]", await peer.lookup("counter"))
            for amount in range(100):
                await ref.tell(Add(amount))
            total = await ref.ask(Total, timeout=10)
            echoed = await ref.ask(Echo, "over tcp", timeout=10)
            seen += [total, echoed]

            async def monitor_it(inbox: Inbox[Down]) -> None:
                inbox.monitor(ref)
                async for envelope in inbox:
                    seen.append(envelope.message.reason)
                    inbox.close()

            watcher = await system_a.spawn(monitor_it, name="watcher")
            (server_peer,) = b.peers
            await server_peer.close("bye")
            await watcher.wait_stopped()
    return seen


def test_two_nodes_talk_over_loopback_tcp() -> None:
    async def main() -> list[object]:
        with trio.fail_after(TIME_LIMIT):
            return await round_trips()

    assert trio.run(main) == [4950, "OVER TCP", NodeDown("b")]
