"""The library logs through ``logging`` under its package names, and stays
silent unless the application configures logging."""

from __future__ import annotations

import logging
import subprocess
import sys

import pytest
import trio
import trio.testing

import actors
from actors import Inbox, OneForOne
from barrier import BarrierBrokenError, ReconcileBarrier, Side
from replica import (
    AllowCompaction,
    CreateInstance,
    Frontier,
    InitializationComplete,
    ReplicaConfig,
    open_controller,
    open_replica,
)

from .actors.messages import Boom, Hold, counter


async def test_failures_restarts_and_drops_are_logged(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="actors")
    never = trio.Event()

    async def takes_one(inbox: Inbox[int]) -> None:
        await inbox.receive()

    async with actors.open_system() as system:
        async with system.open_supervisor(OneForOne(intensity=2)) as supervisor:
            flaky = await supervisor.spawn(counter, name="flaky")
            await flaky.tell(Boom())
            await flaky.tell(Hold(never))
            await trio.testing.wait_all_tasks_blocked()
            # A kill restarts a permanent child: the second restart of the budget.
            await flaky.kill()
        one = await system.spawn(takes_one, name="one")
        one.tell_nowait(1)
        one.tell_nowait(2)
        await trio.testing.wait_all_tasks_blocked()
    messages = [(r.name, r.levelname, r.getMessage()) for r in caplog.records]
    assert ("actors", "WARNING", "actor 'flaky' failed: ValueError('boom')") in messages
    assert ("actors", "INFO", "actor 'flaky' restarted (1)") in messages
    assert ("actors", "INFO", "actor 'flaky' restarted (2)") in messages
    assert (
        "actors",
        "WARNING",
        "actor 'one' ended with 1 undelivered messages (dropped)",
    ) in messages


async def test_rejections_and_a_broken_barrier_are_logged(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    async with open_replica(ReplicaConfig()) as replica, open_controller(replica) as controller:
        await controller.send(CreateInstance())
        await controller.send(InitializationComplete())
        await controller.send(AllowCompaction(9, Frontier.at(1)))
        await trio.testing.wait_all_tasks_blocked()
    async with actors.open_system() as system:
        barrier = await ReconcileBarrier.spawn(system, name="b")

        async def waits() -> None:
            with pytest.raises(BarrierBrokenError):
                await barrier.arrive_and_wait(Side.MAINTENANCE, 1)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(waits)
            await trio.testing.wait_all_tasks_blocked()
            await barrier.ref.kill()
    messages = [(r.name, r.levelname, r.getMessage()) for r in caplog.records]
    assert (
        "replica",
        "WARNING",
        "replica rejected AllowCompaction(id=u9, frontier=Frontier(time=1)): "
        "allow compaction of collection u9: collection ID does not exist",
    ) in messages
    assert (
        "barrier",
        "WARNING",
        "reconcile barrier 'b' ended while maintenance waited",
    ) in messages


def test_nothing_is_printed_when_the_application_configures_no_logging() -> None:
    code = (
        "import actors, trio\n"
        "from tests.actors.messages import Boom, counter\n"
        "async def main():\n"
        "    async with actors.open_system() as s:\n"
        "        ref = await s.spawn(counter)\n"
        "        await ref.tell(Boom())\n"
        "try:\n"
        "    actors.run(main)\n"
        "except BaseExceptionGroup:\n"
        "    pass\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False
    )
    assert (result.returncode, result.stderr) == (0, "")
