"""Mains for test_review_s15.py (importable by the child)."""

from __future__ import annotations

import os
import sys

import trio

from actors.net import Node


def _open_fds() -> dict[int, str]:
    names = sorted(int(n) for n in os.listdir("/proc/self/fd"))
    return {
        n: os.readlink(f"/proc/self/fd/{n}") for n in names if os.path.exists(f"/proc/self/fd/{n}")
    }


async def fds(
    node: Node, path: str, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
) -> None:
    detail = _open_fds()
    await trio.Path(path).write_text(repr(detail))
    task_status.started()
    await trio.sleep_forever()


async def pid_then_hang(
    node: Node, path: str, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
) -> None:
    """Writes its pid, then never calls started."""
    await trio.Path(path).write_text(str(os.getpid()))
    await trio.sleep_forever()


async def pid_then_serve(
    node: Node, path: str, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
) -> None:
    await trio.Path(path).write_text(str(os.getpid()))
    task_status.started()
    await trio.sleep_forever()


async def report_actors_file(
    node: Node, path: str, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
) -> None:
    import actors

    await trio.Path(path).write_text(actors.__file__ or "")
    task_status.started()
    await trio.sleep_forever()


async def idle(
    node: Node, *args: object, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
) -> None:
    task_status.started()
    await trio.sleep_forever()


async def raise_after_started(
    node: Node, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
) -> None:
    task_status.started()
    await trio.sleep(0.3)
    raise RuntimeError("boom after started")


async def chatty(
    node: Node, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
) -> None:
    for _ in range(2000):
        sys.stdout.write("x" * 1000 + "\n")
    sys.stdout.flush()
    task_status.started()
    await trio.sleep_forever()
