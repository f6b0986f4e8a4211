"""A key-value cache sharded across two node processes, one of them killed
and started again.

    .venv/bin/python examples/kv_cache_processes.py

This process is node ``cache``. It starts two child OS processes with
:func:`actors.net.open_node_process`, the nodes ``shards-0`` and ``shards-1``,
each running one ``shard`` actor (a dict) registered under the service key
``kv.shard``; they get the parent's secret and codec through a pipe. A local
``client`` actor finds the shards with ``node.find`` (the registry across
nodes), routes each key to a shard by a stable hash, and monitors both.

Then ``shards-1`` is killed (``SIGKILL``, as a crash): the client's monitor
gets ``Down`` with ``NodeDown``, and an ask of the dead shard fails at once.
The parent starts ``shards-1`` again: a new process, a new incarnation of
the node (its shard's address says so), and, being a cache, an empty shard.
The client finds it again and carries on. The children print nothing, so the
output is the parent's alone, and the same on every run.
"""

from __future__ import annotations

import contextlib
import secrets
import sys
import zlib

import attrs
import trio

import actors
from actors import ActorRef, Down, Inbox, Reply, ServiceKey
from actors.net import Codec, Node, open_node, open_node_process

DEADLINE = 60.0


@attrs.frozen
class Put:
    key: str
    value: str
    reply: Reply[bool]


@attrs.frozen
class Get:
    key: str
    reply: Reply[str | None]


ShardMessage = Put | Get
SHARD = ServiceKey[ShardMessage]("kv.shard")


def codec() -> Codec:
    return Codec([Put, Get])


def shard_of(key: str) -> int:
    """The shard that holds ``key``: a hash that is the same in every process
    (Python's own ``hash`` of a str is not)."""
    return zlib.crc32(key.encode()) % 2


# ---- the shard nodes: one shard each, in a child process --------------------


async def shard(inbox: Inbox[ShardMessage]) -> None:
    data: dict[str, str] = {}
    async for envelope in inbox:
        match envelope.message:
            case Put(key, value, reply):
                data[key] = value
                reply.send(True)
            case Get(key, reply):
                reply.send(data.get(key))


async def shard_node(
    node: Node, index: int, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
) -> None:
    """What a child process runs: its shard, registered for the cluster
    before the child connects, for as long as the parent keeps the process."""
    ref = await node.system.spawn(shard, name=f"shard-{index}")
    node.system.register(SHARD, ref)
    task_status.started()
    await trio.sleep_forever()


# ---- node "cache": the client, in the parent process -------------------------


async def shards_by_node(node: Node) -> dict[int, ActorRef[ShardMessage]]:
    """The shards the cluster has now, by index (the name says which)."""
    found = await node.find(SHARD)
    return {int(ref.address.name.split("@")[0].removeprefix("shard-")): ref for ref in found}


async def watcher(
    inbox: Inbox[Down], shards: list[ActorRef[ShardMessage]], downs: trio.MemorySendChannel[Down]
) -> None:
    """Monitors the shards, and hands on each ``Down``."""
    for ref in shards:
        inbox.monitor(ref)
    async for envelope in inbox:
        await downs.send(envelope.message)


def describe(shards: dict[int, ActorRef[ShardMessage]]) -> str:
    return ", ".join(shards[index].address.name for index in sorted(shards))


def say(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


async def run() -> None:
    with trio.fail_after(DEADLINE):
        async with (
            actors.open_system() as system,
            open_node(system, name="cache", secret=secrets.token_bytes(32), codec=codec()) as node,
            contextlib.AsyncExitStack() as stack,
        ):
            children = [
                await stack.enter_async_context(
                    open_node_process(node, shard_node, index, name=f"shards-{index}")
                )
                for index in (0, 1)
            ]
            say(f"[cache] started {', '.join(child.name for child in children)}")
            shards = await shards_by_node(node)
            say(f"[cache] found {len(shards)} shards: {describe(shards)}")
            downs, down_events = trio.open_memory_channel[Down](4)
            await system.spawn(watcher, list(shards.values()), downs, name="watcher")

            keys = ["apple", "banana", "cherry", "damson", "elder", "fig"]
            for key in keys:
                await shards[shard_of(key)].ask(Put, key, key.upper(), timeout=5)
            for key in keys:
                value = await shards[shard_of(key)].ask(Get, key, timeout=5)
                say(f"[cache] {key} -> {value} (shard {shard_of(key)})")

            old = shards[1].address
            children[1].kill()
            say("[cache] killed shards-1 (SIGKILL)")
            down = await down_events.receive()
            say(f"[cache] Down from {down.address.name}: {down.reason}")
            try:
                await shards[1].ask(Get, "banana", timeout=5)
            except actors.ActorError as error:
                say(f"[cache] an ask of the dead shard: {type(error).__name__}")
            status = await children[1].wait()
            say(f"[cache] shards-1 exited with status {status}")

            children[1] = await stack.enter_async_context(
                open_node_process(node, shard_node, 1, name="shards-1")
            )
            shards = await shards_by_node(node)
            new = shards[1].address
            say(f"[cache] started shards-1 again: {describe(shards)}")
            say(
                f"[cache] same name, new incarnation: {new.name == old.name} and "
                f"{new.incarnation != old.incarnation}"
            )
            for key in keys:
                value = await shards[shard_of(key)].ask(Get, key, timeout=5)
                say(f"[cache] {key} -> {value} (shard {shard_of(key)})")
            for key in keys:
                if shard_of(key) == 1:
                    await shards[1].ask(Put, key, key.upper(), timeout=5)
            found = [await shards[shard_of(key)].ask(Get, key, timeout=5) for key in keys]
            say(f"[cache] after putting shard 1's keys again: {' '.join(map(str, found))}")
        say("[cache] done: both node processes ended with the block")


def main(argv: list[str]) -> int:
    if argv:
        print("usage: kv_cache_processes.py", file=sys.stderr)
        return 2
    trio.run(run)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
