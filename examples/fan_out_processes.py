"""A fan-out service that forwards its callers' replies to workers in
another OS process.

    .venv/bin/python examples/fan_out_processes.py

This process is node ``front``: a ``frontend`` actor takes ``Square``
requests from local callers. It does no work and waits for none: it hands
each request on, by its number, to one of three workers on the node
``workers``, a child OS process started with
:func:`actors.net.open_node_process`, in a ``Work`` message that carries the
caller's own ``Reply``. The reply travels over the connection as a working
reference, so the worker on the other node answers the caller directly, and
the frontend's mailbox never holds an answer.

Eight callers ask at once; each answer says which worker computed it.
The child prints nothing, so the output is the same on every run.
"""

from __future__ import annotations

import secrets
import sys

import attrs
import trio

import actors
from actors import ActorRef, Inbox, Reply, ServiceKey
from actors.net import Codec, Node, open_node, open_node_process

DEADLINE = 60.0
WORKERS = 3


@attrs.frozen
class Squared:
    number: int
    square: int
    worker: str


@attrs.frozen
class Square:
    """What a caller asks of the frontend."""

    number: int
    reply: Reply[Squared]


@attrs.frozen
class Work:
    """What the frontend hands a worker: the caller's request, and its reply."""

    number: int
    reply: Reply[Squared]


WORKER = ServiceKey[Work]("fan-out.worker")


def codec() -> Codec:
    """What travels: the work, and the answers (a class a codec registers
    travels as an answer too)."""
    return Codec([Work, Squared])


# ---- node "workers", in the child process ------------------------------------


async def worker(inbox: Inbox[Work], name: str) -> None:
    async for envelope in inbox:
        work = envelope.message
        work.reply.send(Squared(work.number, work.number * work.number, name))


async def workers_node(
    node: Node, count: int, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
) -> None:
    for index in range(1, count + 1):
        name = f"worker-{index}"
        node.system.register(WORKER, await node.system.spawn(worker, name, name=name))
    task_status.started()
    await trio.sleep_forever()


# ---- node "front", in this process -------------------------------------------


async def frontend(inbox: Inbox[Square], workers: list[ActorRef[Work]]) -> None:
    """Hands each request on with its reply, to a worker chosen by its
    number (so that which one answers does not depend on the callers'
    order); answers none itself."""
    async for envelope in inbox:
        request = envelope.message
        await workers[request.number % len(workers)].tell(Work(request.number, request.reply))


def say(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


async def run() -> None:
    with trio.fail_after(DEADLINE):
        async with (
            actors.open_system() as system,
            open_node(system, name="front", secret=secrets.token_bytes(32), codec=codec()) as node,
            open_node_process(node, workers_node, WORKERS, name="workers") as child,
        ):
            found = await child.peer.find(WORKER)
            workers = sorted(found, key=lambda ref: ref.address.name)
            say(f"[front] on node {child.name!r}: {', '.join(w.address.name for w in workers)}")
            front = await system.spawn(frontend, workers, name="frontend")

            answers: dict[int, Squared] = {}

            async def caller(number: int) -> None:
                answers[number] = await front.ask(Square, number, timeout=10)

            async with trio.open_nursery() as callers:
                for number in range(1, 9):
                    callers.start_soon(caller, number)
            for number in sorted(answers):
                answer = answers[number]
                say(f"[front] {number} squared is {answer.square}, by {answer.worker}")
            statistics = front.statistics()
            say(
                f"[front] the frontend took {statistics.delivered} requests; "
                "the workers answered the callers"
            )
        say("[front] done: the workers' process ended with the block")


def main(argv: list[str]) -> int:
    if argv:
        print("usage: fan_out_processes.py", file=sys.stderr)
        return 2
    trio.run(run)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
