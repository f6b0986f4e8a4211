"""Nodes in child OS processes: :func:`open_node_process`.

A program that wants more than one core starts nodes as child processes of
its own: each runs ``python -m actors.net._child``, which reads what it is to
be from its standard input (never its command line or environment, which
other users of the machine may read), opens an actor system and a node with
the parent's secret and codec, dials the parent's node and runs the given
function. The parent sees the child as a :class:`~actors.net.Peer` of its
node, and its actors as remote references.

What is handed over is pickled: the function, its arguments, and the codec's
classes (by reference: their module and qualified name). A class or function
defined in the script the program runs (``__main__``) is found in the child
by running that script again under another name, as :mod:`multiprocessing`
does when it spawns: the script must start its work under ``if __name__ ==
"__main__":``.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import pickle
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Awaitable
from contextlib import asynccontextmanager
from typing import Any, Final, Protocol, TypeVarTuple, final

import attrs
import trio

from .._core._mailbox import _seconds
from ._errors import NetError
from ._node import Node
from ._peer import Peer
from ._protocol import check_node_name

Ts = TypeVarTuple("Ts")

CHILD_MODULE: Final = "actors.net._child"
"""The module a node process runs (``python -m``)."""


class NodeMain(Protocol[*Ts]):
    """What a node process runs: ``async def main(node, *args, task_status)``,
    started as :meth:`trio.Nursery.start` starts a task. It sets the node up
    (spawns and registers its actors), calls ``task_status.started()``, and
    runs as long as the process should (``await trio.sleep_forever()``)."""

    def __call__(
        self, node: Node, /, *args: *Ts, task_status: trio.TaskStatus[None]
    ) -> Awaitable[object]: ...


class NodeProcessError(NetError):
    """A node process could not be started: it ended, or did not connect to
    its parent within the start timeout (it is killed then), or what it was
    to run cannot be handed to another process."""


@attrs.frozen
class ChildSpec:
    """What a node process is to be: read by ``actors.net._child`` from its
    standard input, after a JSON line of where to import from."""

    name: str
    incarnation: int
    parent: tuple[str, int]
    secret: bytes
    messages: tuple[tuple[str, type], ...]
    values: tuple[tuple[str, type], ...]
    max_depth: int
    settings: dict[str, Any]
    main: NodeMain[*tuple[Any, ...]]
    args: tuple[object, ...]


@final
class NodeProcess:
    """A node in a child OS process, started by :func:`open_node_process`.

    ``peer`` is the connection to it (its actors are the peer's: look them up
    or find them there); ``process`` the child process (``process.pid``)."""

    __slots__ = ("name", "peer", "process")

    def __init__(self, name: str, peer: Peer, process: trio.Process) -> None:
        self.name = name
        self.peer = peer
        self.process = process

    def __repr__(self) -> str:
        return f"<NodeProcess {self.name!r} pid {self.process.pid} {self._state()}>"

    def _state(self) -> str:
        status = self.process.returncode
        return "running" if status is None else f"exited with status {status}"

    @property
    def returncode(self) -> int | None:
        """Its exit status once it ended (negative: the signal that ended
        it), else ``None``."""
        return self.process.returncode

    def kill(self) -> None:
        """End the process now (``SIGKILL``), as a crash would: the
        connection to it goes, and everything it carried ends with
        :class:`~actors.NodeDown`. Does nothing once it ended."""
        if self.process.returncode is None:
            self.process.kill()

    def freeze(self) -> None:
        """Stop the process (``SIGSTOP``) without ending it, as a hung
        machine would: its connection stays open and says nothing, until the
        failure detector takes it for down (``peer_timeout``); :meth:`thaw`
        lets it run again. Not on Windows."""
        if self.process.returncode is None:
            os.kill(self.process.pid, signal.SIGSTOP)

    def thaw(self) -> None:
        """Let a frozen process run again (``SIGCONT``)."""
        if self.process.returncode is None:
            os.kill(self.process.pid, signal.SIGCONT)

    async def wait(self) -> int:
        """Wait until the process ended, and return its exit status."""
        return await self.process.wait()


@asynccontextmanager
async def open_node_process(
    node: Node,
    main: NodeMain[*Ts],
    *args: *Ts,
    name: str,
    start_timeout: float | None = 30.0,
    stop_timeout: float | None = 5.0,
) -> AsyncIterator[NodeProcess]:
    """Start the node ``name`` in a child OS process, running ``main(child_node,
    *args, task_status=...)`` there (a :class:`NodeMain`), and yield it once
    ``main`` has started and the child is connected to ``node``.

    The child opens an actor system and a node of its own (the real clock),
    with ``node``'s secret, codec (its message and value classes, under the
    same names) and settings (window, frame size, heartbeat, peer timeout),
    and starts ``main`` with its node, as :meth:`trio.Nursery.start` does:
    ``main`` spawns the child's actors (``child_node.system.spawn``, and
    ``register`` for the cluster's :meth:`Node.find`), calls
    ``task_status.started()``, and runs as long as the child should. Only
    then does the child dial ``node``, so what ``main`` set up is there when
    the block begins. When ``main`` returns, the child's actors are stopped and
    the process exits with status 0; if it raises, its traceback goes to
    the child's standard error and the status is 1. If the connection to
    the parent is lost (the parent ended, or the block was left), ``main`` is
    cancelled and the process exits with status 0. The child's standard
    output and error are the parent's.

    ``main`` and ``args`` are pickled, so must be importable: a function at
    the top level of a module, or of the script the program runs (see the
    module's documentation); the codec's classes likewise. The child runs
    the parent's copy of this library (the parent's ``sys.path``), and loads
    the parent's script, or its module or package (``python -m``), with the
    parent's ``sys.argv``. The child is known by an incarnation the parent
    draws, so two node processes of one name, or another node that dials in
    under it, are never taken for each other. Its standard input stays a
    pipe from the parent: when the parent ends (even killed, even before the
    child connected), the child sees the pipe close and ends too.

    Leaving the block ends the child: its connection and the pipe are
    closed, it is given ``stop_timeout`` seconds to exit (``None``: as long
    as it takes), then killed; on an error or a cancellation it is killed at
    once. Raises :class:`NodeProcessError` if the child exits before it
    connected or does not connect within ``start_timeout`` seconds (``None``:
    no limit; the hand-over of what it runs counts; it is killed then), or if
    ``main``, ``args`` or a codec class cannot be pickled;
    :class:`ValueError` if ``node`` does not listen on TCP, uses TLS, or
    ``name`` is ``node``'s own or no node's (see :func:`open_node`);
    :class:`TypeError` for a ``name`` that is not a non-empty str;
    :class:`RuntimeError` when called in a node process while it loads its
    parent's script (a script that starts its work outside ``if __name__ ==
    "__main__":``). Each error before the start starts nothing."""
    if _bootstrapping():
        raise RuntimeError(
            "open_node_process was called while a node process was loading its parent's "
            'script: start the script\'s work under if __name__ == "__main__":'
        )
    check_node_name(name)
    if not isinstance(node, Node):
        raise TypeError(f"open_node_process takes an actors.net.Node, not {node!r}")
    if name == node.name:
        raise ValueError(f"a node process needs a name of its own, not its parent's {name!r}")
    if node.address is None:
        raise ValueError(f"node {node.name!r} does not listen on TCP: a child cannot dial it")
    if node._ssl_context is not None:
        raise ValueError(f"node {node.name!r} uses TLS: node processes dial plain loopback TCP")
    start_timeout = math.inf if start_timeout is None else _seconds(start_timeout, "start_timeout")
    stop_timeout = math.inf if stop_timeout is None else _seconds(stop_timeout, "stop_timeout")
    # The child's incarnation, drawn here: its connection is known by it,
    # whatever other node of the same name dials in meanwhile.
    incarnation = int.from_bytes(os.urandom(8), "big") >> 1 or 1
    payload = _payload(node, name, incarnation, main, args)
    process = await trio.lowlevel.open_process(
        [sys.executable, "-c", BOOTSTRAP], stdin=subprocess.PIPE
    )
    try:
        peer = await _started(node, name, incarnation, process, payload, start_timeout)
        child = NodeProcess(name, peer, process)
        yield child
    except BaseException:
        with trio.CancelScope(shield=True):
            await _kill(process)
        raise
    with trio.CancelScope(shield=True):
        if process.returncode is None:
            await peer.close("the parent ended the node process")
            await _close_stdin(process)
            with trio.move_on_after(stop_timeout):
                await process.wait()
        await _kill(process)


BOOTSTRAP: Final = (
    "import json, sys; header = json.loads(sys.stdin.buffer.readline()); "
    "sys.path[:] = header['path']; from actors.net._child import main; sys.exit(main(header))"
)
"""What a node process runs (``python -c``): it reads where to import from
first, so that it loads the parent's copy of this library."""


def _bootstrapping() -> bool:
    """Whether this is a node process loading its parent's script (whose
    top level, unguarded, would start node processes of its own)."""
    child = sys.modules.get(CHILD_MODULE)
    return bool(getattr(child, "importing_main", False))


def _payload(
    node: Node,
    name: str,
    incarnation: int,
    main: NodeMain[*tuple[Any, ...]],
    args: tuple[object, ...],
) -> bytes:
    """The child's standard input: where to import from (a JSON line), then
    the pickled :class:`ChildSpec`, behind its length (8 bytes, big-endian)."""
    codec = node.codec
    assert node.address is not None
    spec = ChildSpec(
        name=name,
        incarnation=incarnation,
        parent=(
            "127.0.0.1" if node.address[0] in ("0.0.0.0", "") else node.address[0],
            node.address[1],
        ),
        secret=node._secret,
        messages=tuple((entry.name, entry.cls) for entry in codec._by_name.values()),
        values=tuple(codec.values._by_name.items()),
        max_depth=codec.values.max_depth,
        settings={
            "window": node._window,
            "max_frame": node._max_frame,
            "handshake_timeout": node._handshake_timeout,
            "close_timeout": node._close_timeout,
            "max_buffer": node._max_buffer,
            "stall_timeout": node._stall_timeout,
            "heartbeat": node._heartbeat,
            "peer_timeout": node._peer_timeout,
        },
        main=main,
        args=args,
    )
    try:
        pickled = pickle.dumps(spec)
    except Exception as error:  # pickling raises many kinds
        raise NodeProcessError(
            f"cannot hand node process {name!r} what it is to run: {error} (the function, "
            "its arguments and the codec's classes must be importable: defined at the top "
            "level of a module or of the script)"
        ) from None
    header = json.dumps(_origin()).encode() + b"\n"
    return header + len(pickled).to_bytes(8, "big") + pickled


def _origin() -> dict[str, Any]:
    """Where the child imports from: the parent's ``sys.path``, and its main
    module (by name if run with ``-m``, else by its file)."""
    main = sys.modules.get("__main__")
    spec = getattr(main, "__spec__", None)
    path = [os.fspath(entry) for entry in sys.path if isinstance(entry, str | os.PathLike)]
    argv = [arg for arg in sys.argv if isinstance(arg, str)]
    where: dict[str, Any] = {"path": path, "argv": argv}
    name = getattr(spec, "name", None)
    if name == "__main__" and argv:
        # python DIRECTORY or python ARCHIVE.pyz: its __main__.py, found by
        # running the directory or archive again (runpy does as python does).
        where["main_file"] = os.path.abspath(argv[0])
    elif name:
        where["main_module"] = name
    else:
        file = getattr(main, "__file__", None)
        if isinstance(file, str):
            where["main_file"] = os.path.abspath(file)
    return where


async def _started(
    node: Node,
    name: str,
    incarnation: int,
    process: trio.Process,
    payload: bytes,
    start_timeout: float,
) -> Peer:
    """Hand the child its payload and wait for its connection (the peer of
    its incarnation), all within ``start_timeout``. Its standard input stays
    open: the child takes its end for its parent's end."""
    found: Peer | None = None
    with trio.move_on_after(start_timeout):
        async with trio.open_nursery() as nursery:

            async def hand_over() -> None:
                assert process.stdin is not None
                with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
                    await process.stdin.send_all(payload)  # (if it ended: said below)

            async def connected() -> None:
                nonlocal found
                found = await _new_peer(node, name, incarnation)
                nursery.cancel_scope.cancel()

            async def ended() -> None:
                await process.wait()
                nursery.cancel_scope.cancel()

            nursery.start_soon(hand_over)
            nursery.start_soon(connected)
            nursery.start_soon(ended)
    if found is not None:
        return found
    if process.returncode is not None:
        raise NodeProcessError(
            f"node process {name!r} exited with status {process.returncode} before it "
            "connected (its standard error says why)"
        )
    raise NodeProcessError(
        f"node process {name!r} did not connect within {start_timeout:g}s: it was killed"
    )


async def _new_peer(node: Node, name: str, incarnation: int) -> Peer:
    while True:
        for peer in node.peers:
            if peer.node == name and peer.incarnation == incarnation and peer.reason is None:
                return peer
        await node._peers_changed.park()


async def _close_stdin(process: trio.Process) -> None:
    if process.stdin is not None:
        await process.stdin.aclose()


async def _kill(process: trio.Process) -> None:
    if process.returncode is None:
        process.kill()
    await process.wait()
    await _close_stdin(process)
