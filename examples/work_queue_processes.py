"""A work queue whose actors span two OS processes, connected as nodes.

    .venv/bin/python examples/work_queue_processes.py

This process is node ``queue``: a ``coordinator`` actor holds jobs (count the
primes below a limit). It listens on loopback and starts a second OS process
(this file again, in the ``workers`` role, with ``trio.run_process``), to
which it passes its port on the command line and a fresh random secret in
the environment. That process is node ``workers``: it dials back (the
shared-secret handshake), looks the coordinator up, and runs three
``worker`` actors that ask it for jobs and tell it their results, over the
connection, with the typed API of local references, on the second core.

The coordinator looks each worker up on the connection it accepted and
monitors it, and monitors the workers' ``keeper`` too: when the queue is
empty each worker returns (``Down`` with ``Normal``), and when the workers'
process ends, its connection goes, and the keeper's ``Down`` says
``NodeDown``. Everything is bounded by a deadline; if anything fails, the
child process is killed with the parent's nursery.
"""

from __future__ import annotations

import functools
import os
import secrets
import sys
from typing import cast

import attrs
import trio

import actors
from actors import ActorRef, Down, Inbox, Reply
from actors.net import Codec, Node, Peer, open_node

SECRET_VARIABLE = "WORK_QUEUE_SECRET"
LIMITS = (20_000, 35_000, 50_000, 10_000, 45_000, 30_000, 25_000, 40_000, 15_000)
WORKERS = 3
DEADLINE = 60.0
HERE = os.path.abspath(__file__)


@attrs.frozen
class Job:
    number: int
    limit: int


@attrs.frozen
class Want:
    """A worker asks for its next job: a ``Job``, or None when there is none."""

    worker: str
    reply: Reply[Job | None]


@attrs.frozen
class Result:
    job: int
    worker: str
    primes: int


def codec() -> Codec:
    """What travels between the two processes, by stable name."""
    codec = Codec()
    codec.register(Job, name="queue.Job")
    codec.register(Want, name="queue.Want")
    codec.register(Result, name="queue.Result")
    return codec


def say(line: str) -> None:
    """Print ``line`` in one write: the two processes share one stdout, and a
    line written in two parts (text, then newline, as ``print`` does when
    Python runs unbuffered) can have the other process's line between them."""
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def count_primes(limit: int) -> int:
    sieve = bytearray([1]) * limit
    sieve[0:2] = b"\0\0"
    for n in range(2, int(limit**0.5) + 1):
        if sieve[n]:
            sieve[n * n :: n] = bytes(len(range(n * n, limit, n)))
    return sum(sieve)


# ---- node "queue": the coordinator, in the first process ---------------------


async def coordinator(inbox: Inbox[Want | Result | Down], node: Node, done: trio.Event) -> None:
    jobs = [Job(number, limit) for number, limit in enumerate(LIMITS, 1)]
    results: dict[int, Result] = {}
    watched: set[str] = set()
    ended = 0
    async for envelope in inbox:
        match envelope.message:
            case Want(worker, reply):
                if worker not in watched:
                    watched.add(worker)
                    (peer,) = node.peers
                    await watch(inbox, peer, worker)
                    if len(watched) == 1:
                        await watch(inbox, peer, "keeper")
                reply.send(jobs.pop(0) if jobs else None)
            case Result(job, worker, primes):
                results[job] = Result(job, worker, primes)
                if len(results) == len(LIMITS):
                    say(f"[queue] all {len(results)} jobs done:")
                    for number in sorted(results):
                        result = results[number]
                        limit = LIMITS[number - 1]
                        say(f"[queue]   primes below {limit}: {result.primes}")
                    workers = sorted({result.worker for result in results.values()})
                    say(f"[queue] workers that took part: {', '.join(workers)}")
            case Down(address, reason):
                say(f"[queue] Down from {address.name}: {reason}")
                ended += 1
                if ended == WORKERS + 1:  # the workers, then their keeper
                    done.set()


async def watch(inbox: Inbox[Want | Result | Down], peer: Peer, name: str) -> None:
    ref = await peer.lookup(name)
    assert ref is not None, f"no actor {name!r} on node {peer.node!r}"
    inbox.monitor(ref)


async def run_queue() -> None:
    secret = secrets.token_bytes(32)
    with trio.fail_after(DEADLINE):
        async with (
            actors.open_system() as system,
            open_node(system, name="queue", secret=secret, codec=codec()) as node,
            trio.open_nursery() as nursery,
        ):
            done = trio.Event()
            await system.spawn(coordinator, node, done, name="coordinator")
            assert node.address is not None
            host, port = node.address
            say(f"[queue] node 'queue' listening on {host} (loopback)")
            command = [sys.executable, HERE, "workers", str(port)]
            environment = {**os.environ, SECRET_VARIABLE: secret.hex()}
            # If anything here fails, leaving the nursery kills the child.
            child: trio.Process = await nursery.start(
                functools.partial(trio.run_process, command, env=environment, check=False)
            )
            say("[queue] started the workers' process")

            async def watch_child() -> None:
                status = await child.wait()
                if not done.is_set():
                    raise RuntimeError(f"the workers' process ended early (status {status})")

            nursery.start_soon(watch_child)
            await done.wait()
            status = await child.wait()
            say(f"[queue] the workers' process exited with status {status}")
            if status != 0:
                raise SystemExit(f"the workers' process failed (status {status})")


# ---- node "workers": three workers, in the second process --------------------


async def worker(inbox: Inbox[None], name: str, queue: ActorRef[Want | Result]) -> None:
    while (job := await queue.ask(Want, name, timeout=30)) is not None:
        await queue.tell(Result(job.number, name, count_primes(job.limit)))


async def keeper(inbox: Inbox[None]) -> None:
    """Lives as long as the workers' node: the coordinator monitors it."""
    async for _ in inbox:
        pass


async def run_workers(port: int) -> None:
    secret = bytes.fromhex(os.environ[SECRET_VARIABLE])
    with trio.fail_after(DEADLINE):
        async with (
            actors.open_system() as system,
            open_node(system, name="workers", secret=secret, codec=codec(), listen=None) as node,
        ):
            await system.spawn(keeper, name="keeper")
            peer = await node.connect(("127.0.0.1", port))
            say(f"[workers] connected to node {peer.node!r}, handshake done")
            found = await peer.lookup("coordinator")
            assert found is not None
            queue = cast("ActorRef[Want | Result]", found)
            refs = [
                await system.spawn(worker, f"worker-{index}", queue, name=f"worker-{index}")
                for index in range(1, WORKERS + 1)
            ]
            reasons = [await ref.wait_stopped() for ref in refs]
            if any(not isinstance(reason, actors.Normal) for reason in reasons):
                raise RuntimeError(f"the workers did not all finish: {reasons}")
            say("[workers] the queue is empty: the workers' process ends")


def main(argv: list[str]) -> int:
    if argv[:1] == ["workers"] and len(argv) == 2:
        trio.run(run_workers, int(argv[1]))
        return 0
    if argv:
        print("usage: work_queue_processes.py", file=sys.stderr)
        return 2
    trio.run(run_queue)
    say("[queue] done")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
