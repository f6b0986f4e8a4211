"""A hostile review of open_node_process and dead letters (session 15): each
test here failed, for a defect since fixed, on the code it was written
against. Real processes and real sockets: every wait is bounded
(trio.fail_after, subprocess timeouts)."""

from __future__ import annotations

import os
import pathlib
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import trio

import actors
from actors.net import DeadLetter, MessageReceived, NodeProcessError, open_node, open_node_process

from ..messages import SECRET, Add, codec
from . import node_process_review_mains as mains
from .nodes import connected
from .test_node_process import ROOT, run


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _wait_for_file(path: Path, seconds: float) -> str:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if path.exists() and path.read_text():
            return path.read_text()
        time.sleep(0.05)
    raise AssertionError(f"{path} never appeared")


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT)
    return env


# ---- 1. two node processes of one name: both take the first child's peer ----


def test_two_node_processes_of_one_name_do_not_share_one_peer() -> None:
    async def main() -> None:
        async with (
            actors.open_system() as system,
            open_node(system, name="parent", secret=SECRET, codec=codec()) as node,
        ):
            got: list[object] = []
            refused: list[BaseException] = []
            done = trio.Event()

            async def start() -> None:
                try:
                    async with open_node_process(node, mains.idle, name="twin") as child:
                        got.append(child)
                        if len(got) == 2:
                            done.set()
                        await done.wait()
                except (ValueError, NodeProcessError) as error:  # a fix may refuse one
                    refused.append(error)
                    done.set()

            async with trio.open_nursery() as nursery:
                nursery.start_soon(start)
                nursery.start_soon(start)
            if not refused:
                a, b = got
                assert a.peer is not b.peer, (  # type: ignore[attr-defined]
                    "both node processes were handed the same connection (the first child's): "
                    "the second child's connection is nobody's"
                )

    run(main)


# ---- 2. start_timeout does not bound the hand-over of the spec ---------------


def test_start_timeout_bounds_the_hand_over_to_a_child_that_does_not_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A child stuck before it reads its stdin (here: a slow sitecustomize, as a
    # hung network file system or a lock would be) and a spec over the pipe's
    # buffer (big args): send_all waits outside the start timeout, for ever.
    (tmp_path / "sitecustomize.py").write_text("import time\ntime.sleep(30)\n")
    monkeypatch.setenv("PYTHONPATH", f"{tmp_path}{os.pathsep}{ROOT}")

    async def main() -> None:
        async with (
            actors.open_system() as system,
            open_node(system, name="parent", secret=SECRET, codec=codec()) as node,
        ):
            started = time.monotonic()
            with trio.move_on_after(10) as guard, pytest.raises(NodeProcessError):
                async with open_node_process(
                    node, mains.idle, b"x" * (1 << 20), name="slow", start_timeout=1
                ):
                    pytest.fail("the child cannot have started")
            assert not guard.cancelled_caught, (
                "open_node_process(start_timeout=1) was still waiting after 10s "
                f"({time.monotonic() - started:.1f}s): the spec's write is not bounded"
            )

    run(main)


# ---- 3. a child whose parent is SIGKILLed while it starts lingers for ever ----

ORPHAN_PARENT = """
import sys, trio, actors
from actors.net import open_node, open_node_process
from tests.actors.messages import SECRET, codec
from tests.actors.net import node_process_review_mains as mains

async def main():
    async with actors.open_system() as system, open_node(
        system, name="parent", secret=SECRET, codec=codec()
    ) as node:
        async with open_node_process(
            node, mains.pid_then_hang, sys.argv[1], name="orphan", start_timeout=600
        ):
            pass

if __name__ == "__main__":
    trio.run(main)
"""


def test_a_starting_child_does_not_outlive_its_sigkilled_parent(tmp_path: Path) -> None:
    script = tmp_path / "orphan_parent.py"
    script.write_text(ORPHAN_PARENT)
    pidfile = tmp_path / "child.pid"
    parent = subprocess.Popen([sys.executable, str(script), str(pidfile)], cwd=ROOT, env=_env())
    child_pid = None
    try:
        child_pid = int(_wait_for_file(pidfile, 30))
        parent.kill()  # SIGKILL: no cleanup runs in the parent
        parent.wait(timeout=10)
        deadline = time.monotonic() + 5
        while _alive(child_pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not _alive(child_pid), (
            "the node process outlived its SIGKILLed parent by 5s (its main had not "
            "called started() yet, so it never dialled, and nothing tells it the parent is gone)"
        )
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait(timeout=10)
        if child_pid is not None and _alive(child_pid):
            os.kill(child_pid, signal.SIGKILL)


# ---- 4. a script without the __main__ guard spawns node processes recursively --

UNGUARDED = """
import os, trio, actors
from actors.net import open_node, open_node_process
from tests.actors.messages import SECRET, codec
from tests.actors.net import node_process_review_mains as mains

depth = int(os.environ.get("S15_DEPTH", "0"))
os.environ["S15_DEPTH"] = str(depth + 1)
with open(os.environ["S15_LOG"], "a") as log:
    log.write(f"{depth}\\n")

async def main():
    async with actors.open_system() as system, open_node(
        system, name=f"n{depth}", secret=SECRET, codec=codec()
    ) as node:
        async with open_node_process(node, mains.idle, name=f"n{depth + 1}", start_timeout=20):
            with open(os.environ["S15_LOG"], "a") as log:
                log.write(f"spawned-by-{depth}\\n")
            await trio.sleep(0.2)

if depth < 3:  # the test's own brake: without it the chain never ends
    trio.run(main)  # no `if __name__ == "__main__":` (a common mistake)
"""


def test_a_script_without_the_main_guard_does_not_spawn_children_recursively(
    tmp_path: Path,
) -> None:
    script = tmp_path / "unguarded.py"
    script.write_text(UNGUARDED)
    log = tmp_path / "depths.log"
    env = _env()
    env["S15_LOG"] = str(log)
    env.pop("S15_DEPTH", None)
    subprocess.run(
        [sys.executable, str(script)], cwd=ROOT, env=env, timeout=90, capture_output=True
    )
    lines = log.read_text().split()
    # The child re-runs the script (as __mp_main__) to find what was pickled
    # from it: without the guard its top level runs again, in the child, before
    # the child serves. multiprocessing refuses to start a process there ("An
    # attempt has been made to start a new process before the current process
    # has finished its bootstrapping phase"); here the child's re-run does the
    # script's whole work, starting a node process of its own (a grandchild).
    assert "spawned-by-1" not in lines, (
        f"the child re-ran the unguarded script and started a node process itself: {lines}"
    )


# ---- 5. python -m package: the package's __main__ functions -------------------

PACKAGE_MAIN = """
import trio, actors
from actors.net import Node, open_node, open_node_process
from tests.actors.messages import SECRET, codec

async def main(node: Node, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
    task_status.started()
    await trio.sleep_forever()

async def run() -> None:
    async with actors.open_system() as system, open_node(
        system, name="parent", secret=SECRET, codec=codec()
    ) as node:
        async with open_node_process(node, main, name="child", start_timeout=20):
            print("started")

if __name__ == "__main__":
    trio.run(run)
"""


def test_python_m_package_with_its_main_in_dunder_main_works(tmp_path: Path) -> None:
    package = tmp_path / "s15pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "__main__.py").write_text(PACKAGE_MAIN)
    env = _env()
    env["PYTHONPATH"] = f"{tmp_path}{os.pathsep}{ROOT}"
    done = subprocess.run(
        [sys.executable, "-m", "s15pkg"],
        cwd=tmp_path,
        env=env,
        timeout=60,
        capture_output=True,
        text=True,
    )
    # The child skips importing s15pkg.__main__, so pickle's `__main__.main`
    # resolves to actors.net._child.main (the child's own entry point), which
    # is then called as the node's main: TypeError ... 'task_status'.
    assert done.returncode == 0, done.stderr[-1500:]
    assert "started" in done.stdout, done.stderr[-1500:]


# ---- 6. the child runs the library from its own sys.path, not the parent's ----

OWN_COPY = """
import os, sys
sys.path.insert(0, os.environ["S15_VENDOR"])  # a vendored copy of the library, as apps do
sys.path.insert(1, os.environ["S15_ROOT"])
import trio, actors
from actors.net import open_node, open_node_process
from tests.actors.messages import SECRET, codec
from tests.actors.net import node_process_review_mains as mains

async def main():
    print(actors.__file__)
    async with actors.open_system() as system, open_node(
        system, name="parent", secret=SECRET, codec=codec()
    ) as node:
        async with open_node_process(
            node, mains.report_actors_file, os.environ["S15_REPORT"], name="child",
            start_timeout=20,
        ):
            pass

if __name__ == "__main__":
    trio.run(main)
"""


def test_the_child_runs_the_same_copy_of_the_library_as_its_parent(tmp_path: Path) -> None:
    vendored = tmp_path / "vendor"
    shutil.copytree(
        ROOT / "actors", vendored / "actors", ignore=shutil.ignore_patterns("__pycache__")
    )
    script = tmp_path / "own_copy.py"
    script.write_text(OWN_COPY)
    report = tmp_path / "child_actors.txt"
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    env.update(S15_VENDOR=str(vendored), S15_ROOT=str(ROOT), S15_REPORT=str(report))
    done = subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        env=env,
        timeout=60,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr[-1500:]
    parents = done.stdout.split()[0]
    assert report.read_text() == parents, (
        f"the parent runs {parents}, its node process {report.read_text()}: the child "
        "imports actors.net._child before it applies the parent's sys.path"
    )


# ---- 7. a sys.path entry that is not a str -----------------------------------


def test_a_sys_path_entry_that_is_not_a_str_does_not_break_open_node_process(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The import system ignores such entries; json.dumps raises TypeError
    # ("Object of type PosixPath is not JSON serializable").
    monkeypatch.setattr(sys, "path", [*sys.path, pathlib.Path("/nonexistent")])

    async def main() -> None:
        async with (
            actors.open_system() as system,
            open_node(system, name="parent", secret=SECRET, codec=codec()) as node,
            open_node_process(node, mains.idle, name="child", start_timeout=20) as child,
        ):
            assert child.peer.node == "child"

    run(main)


# ---- 8. a name the child's node cannot use is refused in the child only -------


@pytest.mark.parametrize("name", ["a\udcffb", "n" * 100_000], ids=["surrogate", "100k-chars"])
def test_a_name_no_node_can_have_is_refused_before_anything_starts(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    started: list[object] = []
    real = trio.lowlevel.open_process

    async def spying(*args: Any, **kwargs: Any) -> trio.Process:
        started.append(args)
        process: trio.Process = await real(*args, **kwargs)
        return process

    monkeypatch.setattr(trio.lowlevel, "open_process", spying)

    async def main() -> None:
        async with (
            actors.open_system() as system,
            open_node(system, name="parent", secret=SECRET, codec=codec()) as node,
        ):
            with pytest.raises((TypeError, ValueError)):
                async with open_node_process(node, mains.idle, name=name, start_timeout=20):
                    pass
            assert started == [], "a child process was started for a name it cannot use"

    run(main)


# ---- 9. start_timeout=None: the error says None is allowed -------------------


def test_a_start_timeout_of_none_waits_as_long_as_it_takes() -> None:
    async def main() -> None:
        async with (
            actors.open_system() as system,
            open_node(system, name="parent", secret=SECRET, codec=codec()) as node,
        ):
            async with open_node_process(node, mains.idle, name="c", start_timeout=None) as child:
                assert child.peer.reason is None
            untyped: Any = "1"
            with pytest.raises(TypeError, match=r"^start_timeout must be None or a number"):
                async with open_node_process(node, mains.idle, name="c", start_timeout=untyped):
                    pass

    run(main)


# ---- 10. dead letters: an ask lost with the connection is counted, not handed --


async def test_dropped_counts_only_what_the_dead_letters_hook_is_handed() -> None:
    seen: list[DeadLetter] = []
    async with connected(dead_letters_b=seen.append) as pair:
        ref = await pair.counter_ref()
        # An ask of a's waiting for room in b's counter's mailbox when the
        # connection goes: its asker gets NodeDown, it is not a dead letter...
        pair.peer_b._inbound.append(MessageReceived(ref.address.uid, Add(3), 77))
        await pair.stream_a.aclose()
        await pair.peer_b.closed.wait()
        # ...but PeerStatistics.dropped ("Each is handed to the node's
        # dead-letters hook") counts it, while an ask for a stopped actor is
        # not counted: the statistic means two things.
        assert pair.peer_b.statistics().dropped == len(seen) == 0


# ---- 11. sys.argv is not the parent's in the child's re-run of the script -----

ARGV_SCRIPT = """
import sys, trio, actors
from actors.net import Node, open_node, open_node_process
from tests.actors.messages import SECRET, codec

PORT = int(sys.argv[1])  # a script's settings from its command line

async def serve(node: Node, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
    task_status.started()
    await trio.sleep_forever()

async def run() -> None:
    async with actors.open_system() as system, open_node(
        system, name="parent", secret=SECRET, codec=codec()
    ) as node:
        async with open_node_process(node, serve, name="child", start_timeout=20):
            print("started")

if __name__ == "__main__":
    trio.run(run)
"""


def test_a_script_that_reads_its_argv_at_the_top_works(tmp_path: Path) -> None:
    script = tmp_path / "argv_script.py"
    script.write_text(ARGV_SCRIPT)
    done = subprocess.run(
        [sys.executable, str(script), "8080"],
        cwd=ROOT,
        env=_env(),
        timeout=60,
        capture_output=True,
        text=True,
    )
    # multiprocessing hands the child the parent's sys.argv before it re-runs
    # the main script; here the child's argv is ['-m'] (python -m
    # actors.net._child): IndexError in the re-run, the child exits 1.
    assert done.returncode == 0, done.stderr[-1500:]
    assert "started" in done.stdout, done.stderr[-1500:]
