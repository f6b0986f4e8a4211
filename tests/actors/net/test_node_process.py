"""actors.net.open_node_process: nodes in child OS processes, sharing the
parent's secret, codec and settings. Real processes, real sockets and the
real clock: every wait is bounded."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
import trio

import actors
from actors import Down, Inbox, NodeDown
from actors.net import Node, NodeProcessError, open_node, open_node_process

from ..messages import SECRET, Add, Echo, Total, codec
from . import node_mains

ROOT = Path(__file__).resolve().parents[3]
COUNTER = node_mains.COUNTER
MAIN = node_mains.counting
LIMIT = 60.0
"""Real seconds any one test may take."""


def run(main: Callable[[], Awaitable[None]]) -> None:
    async def bounded() -> None:
        with trio.fail_after(LIMIT):
            await main()

    trio.run(bounded)


def test_a_node_process_serves_its_actors_with_the_parents_codec() -> None:
    async def main() -> None:
        async with (
            actors.open_system() as system,
            open_node(system, name="parent", secret=SECRET, codec=codec()) as node,
            open_node_process(node, node_mains.counting, "counter", name="child") as child,
        ):
            assert child.peer.node == "child"
            assert child.process.pid != os.getpid()
            assert repr(child) == f"<NodeProcess 'child' pid {child.process.pid} running>"
            ref = await child.peer.lookup("counter", COUNTER)
            assert ref is not None
            await ref.tell(Add(5))
            assert await ref.ask(Total, timeout=10) == 5
            assert await ref.ask(Echo, "hi", timeout=10) == "HI"
        # Leaving the block closed the connection, and the child exited by itself.
        assert child.returncode == 0

    run(main)


def test_killing_a_node_process_ends_its_references_with_node_down() -> None:
    async def main() -> None:
        downs: list[object] = []

        async with (
            actors.open_system() as system,
            open_node(system, name="parent", secret=SECRET, codec=codec()) as node,
            open_node_process(node, node_mains.counting, "counter", name="child") as child,
        ):
            ref = await child.peer.lookup("counter", COUNTER)
            assert ref is not None
            seen = trio.Event()

            async def watcher(inbox: Inbox[Down]) -> None:
                inbox.monitor(ref)
                async for envelope in inbox:
                    downs.append(envelope.message.reason)
                    seen.set()

            await system.spawn(watcher, name="watcher")
            child.kill()
            await seen.wait()
            assert await child.wait() == -signal.SIGKILL
            with pytest.raises(actors.ActorStoppedError):
                await ref.ask(Total, timeout=10)
        assert len(downs) == 1
        assert isinstance(downs[0], NodeDown)

    run(main)


def test_a_restarted_node_process_is_a_new_incarnation() -> None:
    async def main() -> None:
        async with (
            actors.open_system() as system,
            open_node(system, name="parent", secret=SECRET, codec=codec()) as node,
        ):
            async with open_node_process(node, node_mains.counting, "c", name="child") as first:
                old = first.peer.incarnation
                first.kill()
                await first.wait()
            async with open_node_process(node, node_mains.counting, "c", name="child") as second:
                assert second.peer is not first.peer
                assert second.peer.incarnation != old
                ref = await second.peer.lookup("c", COUNTER)
                assert ref is not None
                assert ref.address.incarnation == second.peer.incarnation

    run(main)


def test_a_main_that_returns_ends_its_process_with_status_zero() -> None:
    async def main() -> None:
        async with (
            actors.open_system() as system,
            open_node(system, name="parent", secret=SECRET, codec=codec()) as node,
            open_node_process(node, node_mains.counting_briefly, name="brief") as child,
        ):
            assert await child.wait() == 0
            await child.peer.closed.wait()

    run(main)


def test_a_child_that_fails_before_it_started_is_an_error_naming_its_status(
    capfd: pytest.CaptureFixture[str],
) -> None:
    async def main() -> None:
        async with (
            actors.open_system() as system,
            open_node(system, name="parent", secret=SECRET, codec=codec()) as node,
        ):
            with pytest.raises(NodeProcessError, match="exited with status 1 before it connected"):
                async with open_node_process(node, node_mains.failing_at_once, name="child"):
                    pytest.fail("the block must not run")
            assert node.peers == []

    run(main)
    assert "this main fails before it started" in capfd.readouterr().err


def test_a_child_that_does_not_start_in_time_is_killed() -> None:
    async def main() -> None:
        async with (
            actors.open_system() as system,
            open_node(system, name="parent", secret=SECRET, codec=codec()) as node,
        ):
            started = time.monotonic()
            with pytest.raises(NodeProcessError, match="did not connect within 1s: it was killed"):
                async with open_node_process(
                    node, node_mains.never_starting, name="child", start_timeout=1
                ):
                    pytest.fail("the block must not run")
            assert time.monotonic() - started < 30

    run(main)


def test_an_error_in_the_block_kills_the_child_at_once(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"

    async def main() -> None:
        async with (
            actors.open_system() as system,
            open_node(system, name="parent", secret=SECRET, codec=codec()) as node,
        ):
            with pytest.raises(ValueError, match="in the block"):
                async with open_node_process(
                    node, node_mains.reporting_pid, str(pid_file), name="child"
                ) as child:
                    raise ValueError("in the block")
            assert child.returncode == -signal.SIGKILL

    run(main)
    pid = int(pid_file.read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


@pytest.mark.skipif(not hasattr(signal, "SIGSTOP"), reason="needs SIGSTOP (POSIX)")
def test_a_frozen_node_process_is_taken_for_down_by_the_failure_detector() -> None:
    async def main() -> None:
        async with (
            actors.open_system() as system,
            open_node(
                system,
                name="parent",
                secret=SECRET,
                codec=codec(),
                heartbeat=0.2,
                peer_timeout=1.0,
            ) as node,
            open_node_process(node, node_mains.counting, "counter", name="child") as child,
        ):
            child.freeze()
            frozen = time.monotonic()
            await child.peer.closed.wait()
            assert time.monotonic() - frozen < 10
            assert "sent nothing for" in str(child.peer.reason)
            child.thaw()

    run(main)


def test_bad_arguments_are_refused_before_anything_starts() -> None:
    async def main() -> None:
        async with (
            actors.open_system() as system,
            open_node(system, name="parent", secret=SECRET, codec=codec()) as node,
            open_node(system, name="dialler", secret=SECRET, codec=codec(), listen=None) as quiet,
        ):
            untyped: Any = system
            cases: list[tuple[type[Exception], str, Callable[[], Any]]] = [
                (TypeError, "non-empty str", lambda: open_node_process(node, MAIN, "c", name="")),
                (
                    ValueError,
                    "name of its own",
                    lambda: open_node_process(node, MAIN, "c", name="parent"),
                ),
                (
                    ValueError,
                    "does not listen",
                    lambda: open_node_process(quiet, MAIN, "c", name="x"),
                ),
                (
                    TypeError,
                    "an actors.net.Node",
                    lambda: open_node_process(untyped, MAIN, "c", name="x"),
                ),
                (
                    ValueError,
                    "start_timeout",
                    lambda: open_node_process(node, MAIN, "c", name="x", start_timeout=-1),
                ),
            ]
            for error, match, make in cases:
                with pytest.raises(error, match=match):
                    async with make():
                        pytest.fail("the block must not run")

            async def local(node: Node, *, task_status: trio.TaskStatus[None]) -> None: ...

            with pytest.raises(NodeProcessError, match="must be importable"):
                async with open_node_process(node, local, name="x"):
                    pytest.fail("the block must not run")
            assert node.peers == []

    run(main)


def test_a_script_s_own_functions_and_classes_reach_the_child(tmp_path: Path) -> None:
    script = tmp_path / "app.py"
    script.write_text(SCRIPT, encoding="utf-8")
    result = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        check=False,
        timeout=LIMIT,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert result.returncode == 0, result.stderr
    # The script's top level ran once in the child (as __mp_main__), its
    # __main__ part only in the parent.
    assert result.stdout.splitlines() == [
        "top level of __main__",
        "top level of __mp_main__",
        "the child answered Pong(seen='ping!')",
    ]


SCRIPT = textwrap.dedent(
    """
    import sys

    import attrs
    import trio

    import actors
    from actors import Inbox, Reply
    from actors.net import Codec, Node, open_node, open_node_process

    print(f"top level of {__name__}", flush=True)


    @attrs.frozen
    class Pong:
        seen: str


    @attrs.frozen
    class Ping:
        text: str
        reply: Reply[Pong]


    async def ponger(inbox: Inbox[Ping]) -> None:
        async for envelope in inbox:
            envelope.message.reply.send(Pong(envelope.message.text + "!"))


    async def child(node: Node, *, task_status: trio.TaskStatus[None]) -> None:
        await node.system.spawn(ponger, name="ponger")
        task_status.started()
        await trio.sleep_forever()


    async def parent() -> None:
        with trio.fail_after(50):
            async with (
                actors.open_system() as system,
                open_node(system, name="p", secret=b"s" * 16, codec=Codec([Ping, Pong])) as node,
                open_node_process(node, child, name="c") as process,
            ):
                ref = await process.peer.lookup("ponger")
                assert ref is not None
                answer = await ref.ask(Ping, "ping", timeout=10)
                print(f"the child answered {answer!r}", flush=True)


    if __name__ == "__main__":
        trio.run(parent)
    """
)
