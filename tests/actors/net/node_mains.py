"""What the node processes of ``test_node_process.py`` run: importable, so
that they can be handed to a child."""

from __future__ import annotations

import os

import trio

from actors import ServiceKey
from actors.net import Node

from .nodes import CounterMessage, counter

COUNTER = ServiceKey[CounterMessage]("counter")


async def counting(
    node: Node, name: str, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
) -> None:
    """A counter actor called ``name``, registered under ``COUNTER``, for as
    long as the parent keeps it."""
    node.system.register(COUNTER, await node.system.spawn(counter, name=name))
    task_status.started()
    await trio.sleep_forever()


async def counting_briefly(
    node: Node, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
) -> None:
    """Starts, then returns at once: the process ends by itself."""
    await node.system.spawn(counter, name="brief")
    task_status.started()
    await trio.sleep(0.2)


async def failing_at_once(
    node: Node, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
) -> None:
    raise RuntimeError("this main fails before it started")


async def never_starting(
    node: Node, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
) -> None:
    await trio.sleep_forever()


async def reporting_pid(
    node: Node, path: str, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
) -> None:
    """Writes the process's pid to ``path``, then runs until ended."""
    await trio.Path(path).write_text(str(os.getpid()), encoding="utf-8")
    task_status.started()
    await trio.sleep_forever()
