"""The replica processes as OS processes, from the driver's side: their
command lines, the listening sockets the driver binds for them before any
starts, and starting, stopping, killing them and waiting until they are
ready."""

from __future__ import annotations

import socket
import sys

import trio

from ..runtime._replica import ReplicaConfig
from ._cluster_base import ClusterBase, Slot
from ._errors import ClusterError
from ._items import Ready
from ._limits import MAX_PEER_TIMEOUT, MIN_PEER_TIMEOUT
from ._tls import TlsFiles

STOP_GRACE = 2.0
"""Seconds a replica process has to stop in order (its connections closed)
after the driver's SIGTERM, before SIGKILL: one that can takes a few
hundredths. (Trio's own stop waits 5 s, then warns.)"""


def serve_command(
    config: ReplicaConfig,
    process: int,
    listen: tuple[str, int],
    peers: list[tuple[str, int]],
    shards: tuple[str, int],
    secret_file: str,
    *,
    python: str = sys.executable,
    tls: TlsFiles | None = None,
    peer_timeout: float = 10.0,
    listen_fd: int | None = None,
) -> list[str]:
    """The command line of one replica process: it listens on ``listen``,
    or, with ``listen_fd``, on the listening socket it inherits as that file
    descriptor (bound to ``listen`` by the driver: see :func:`open_cluster`)."""
    command = [python, "-m", "replica.driver", "serve"]
    command += ["--process", str(process), "--processes", str(config.processes)]
    command += ["--workers", str(config.workers)]
    command += [] if config.interactive else ["--solo"]
    command += [] if config.barrier else ["--no-barrier"]
    command += [] if config.align else ["--no-align"]
    command += [] if config.holds == "publisher" else ["--holds", str(config.holds)]
    command += (
        ["--listen", _address(listen)] if listen_fd is None else ["--listen-fd", str(listen_fd)]
    )
    command += ["--peers", ",".join(map(_address, peers))]
    command += ["--shards", _address(shards), "--secret-file", secret_file]
    # Within what serve takes (a million seconds, never in practice, at the
    # most), so that open_cluster(heartbeat_timeout=math.inf) starts its
    # processes, and so does a heartbeat timeout below serve's least.
    peer_timeout = max(MIN_PEER_TIMEOUT, min(peer_timeout, MAX_PEER_TIMEOUT))
    command += ["--peer-timeout", str(peer_timeout)]
    if tls is not None:
        command += ["--tls-cert", tls.cert, "--tls-key", tls.key, "--tls-ca", tls.ca]
    return command


def _address(address: tuple[str, int]) -> str:
    return f"{address[0]}:{address[1]}"


def listening_socket(host: str = "127.0.0.1") -> socket.socket:
    """A TCP socket bound to a free port of ``host`` and listening: a replica
    process's, which the driver holds for the cluster's life and passes to
    each OS process it starts for it (``serve --listen-fd``). Bound before
    any process starts, its port is never free for another to take, and a
    process started again gets it back (what is dialled to it meanwhile
    waits in its backlog). Raises :class:`OSError` if it cannot be bound."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.bind((host, 0))
        sock.listen()
    except BaseException:
        sock.close()
        raise
    return sock


def _refuse_waiting(listener: socket.socket) -> None:
    """Close every connection waiting in ``listener``'s backlog (dialled
    while its process was down): a dialler that gave up on one meanwhile
    would have it accepted by the process started next, which would log a
    broken handshake for each. Those still dialling see theirs close and dial
    again, at once, the process about to start."""
    listener.setblocking(False)
    while True:
        try:
            connection, _ = listener.accept()
        except (BlockingIOError, InterruptedError):
            return
        connection.close()


class Processes(ClusterBase):
    """Starting and stopping the OS processes (see the module's docstring)."""

    __slots__ = ()

    async def wait_ready(
        self,
        indexes: list[int] | None = None,
        *,
        after: dict[int, int] | None = None,
        patience: float = 60.0,
    ) -> None:
        """Wait until each process (every one by default) said it is ready
        (with a generation newer than ``after``'s)."""
        wanted = list(range(len(self.slots))) if indexes is None else indexes
        after = after or {}
        with trio.move_on_after(patience) as scope:
            while any(self.ready.get(i, 0) <= after.get(i, 0) for i in wanted):
                for i in wanted:
                    if self.slots[i].exited.is_set() and not self.slots[i].expected_exit:
                        # Its task reports the exit (with the status) and
                        # cancels this wait: say it once.
                        await trio.lowlevel.checkpoint()
                        raise ClusterError(f"replica process {i} exited while starting")
                await self._wait_change()
        if scope.cancelled_caught:
            late = [i for i in wanted if self.ready.get(i, 0) <= after.get(i, 0)]
            raise ClusterError(f"replica processes {late} did not start within {patience:g}s")

    async def start(self, index: int) -> None:
        """Start (or start again) the OS process of replica process ``index``.
        Started again, its first replica is at an epoch of its own (a fresh
        token, ``serve --epoch``): it takes nothing the others' replicas sent
        the one it replaces, and they take nothing from it, until a reset
        puts them all at the next (:meth:`restart` does).

        Raises :class:`ClusterError` at once if its OS process has not
        exited (a second one would not get its address, and the first one's
        exit would pass for the second's), :class:`ValueError` for no such
        process."""
        slot = self._slot(index)
        if slot.process is not None and not slot.exited.is_set():
            raise ClusterError(
                f"replica process {index} has not exited: it cannot be started again yet "
                "(Cluster.restart waits for a killed one to exit)"
            )
        relaunch = slot.process is not None
        if relaunch and slot.listener is not None:
            _refuse_waiting(slot.listener)
        slot.exited = trio.Event()
        slot.expected_exit = False
        slot.silent = False
        slot.process = await self.nursery.start(
            self._run_process, slot, ["--epoch", str(next(self._tokens))] if relaunch else []
        )

    async def _run_process(
        self, slot: Slot, extra: list[str], *, task_status: trio.TaskStatus[trio.Process]
    ) -> None:
        # This OS process's: the slot's is a fresh one once it starts again.
        exited = slot.exited
        try:
            done = await trio.run_process(
                slot.command + extra,
                check=False,
                stdin=b"",
                pass_fds=() if slot.listener is None else (slot.listener.fileno(),),
                deliver_cancel=lambda process: self._stop(slot, process),
                task_status=task_status,
            )
        finally:
            exited.set()
            self._notify()
        if not slot.expected_exit:
            raise ClusterError(f"replica process {slot.index} exited with status {done.returncode}")

    async def _stop(self, slot: Slot, process: trio.Process) -> None:
        """Stop ``process`` (the cluster's block ended): SIGTERM, then SIGKILL
        if it has not exited ``STOP_GRACE`` seconds later; SIGKILL at once if
        it is silent (found so by the heartbeat, or no answer to the driver's
        pings for ``STOP_GRACE`` already): frozen, it would sit on SIGTERM.
        (Not SIGCONT: one thawed warns of the silence it slept through before
        it acts on SIGTERM.) Trio's run_process calls this, shielded, and
        cancels it once the process exited."""
        last = self._pongs.get(slot.index, trio.current_time())
        if slot.silent or trio.current_time() - last > STOP_GRACE:
            process.kill()
            return
        process.terminate()
        await trio.sleep(STOP_GRACE)
        process.kill()

    def kill(self, index: int) -> None:
        """SIGKILL replica process ``index`` (a fault: it gets no say)."""
        slot = self._slot(index)
        slot.expected_exit = True
        if slot.process is not None:
            slot.process.kill()

    def _ready(self, source: str, item: Ready) -> None:
        process = item.process
        self.ready[process] = item.token
        # Heard from now (through the host): the heartbeat's clock for it
        # starts again, so one relaunched is not lost for a silence that
        # was its restart, while its link is still being dialled.
        self._pongs[process] = trio.current_time()
        self.host.forget(source)
        self.shards_hub.inbound(source).discard()
        self._notify()
