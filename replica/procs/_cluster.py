"""The driver's side of a replica on OS processes: the controller's node, the
shard host's node, and the ``serve`` processes it spawned.

:func:`open_cluster` spawns ``P`` ``trio-reconcile serve`` processes (the
same Python, ``-m replica.driver``), hosts the shards, and gives a
:class:`Cluster` that a :class:`~replica.Controller` drives as it drives an
in-process :class:`~replica.Replica`: ``cluster.processes[i].accept``
opens a controller connection to process ``i`` over the network.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
import socket
import sys
import tempfile
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import attrs
import trio
import trio.testing

import actors
from actors import ActorSystem
from actors.net import open_node

from ..model._metrics import Metrics
from ..protocol import ProtocolError
from ..runtime._connection import ServerEnd
from ..runtime._faults import FaultPlan, Faults
from ..runtime._process import INTERACTIVE, MAINTENANCE
from ..runtime._replica import ReplicaConfig
from ..storage._shard import ShardCatalog
from . import _wire
from ._errors import ClusterError
from ._limits import MAX_PEER_TIMEOUT, MIN_PEER_TIMEOUT
from ._links import CHUNK, MAX_FRAME, Hub, codec
from ._serve import CONTROLLER, SHARDS, process_node
from ._shards import ShardHost
from ._tls import TlsFiles

logger = logging.getLogger("replica.procs")


COMMANDS_PER_ITEM = 256
COMMAND_BYTES = CHUNK
"""The most bytes of commands one ``cmds`` item carries (unless one command
is larger): 256 commands of a MiB each (peeks with many literals) would be
an item no frame carries, and the driver would stop (``ItemTooLargeError``)."""
MIN_HEARTBEAT = MIN_PEER_TIMEOUT / 4
"""The shortest ``open_cluster(heartbeat=...)``: the quickest a ``serve``
process pings (a quarter of the least ``--peer-timeout``). Shorter, the
driver's heartbeat loop spins, flooding every process with pings."""


STOP_GRACE = 2.0
"""Seconds a replica process has to stop in order (its connections closed)
after the driver's SIGTERM, before SIGKILL: one that can takes a few
hundredths. (Trio's own stop waits 5 s, then warns.)"""


@attrs.define(eq=False)
class RemoteProcess:
    """A replica process as the controller sees it: where a connection opens."""

    index: int
    cluster: Cluster

    def accept(self, connection: ServerEnd) -> None:
        """The controller opened ``connection`` to this process."""
        self.cluster.open(self.index, connection)


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


@attrs.define(eq=False)
class Slot:
    """One spawned replica process: its command line and the OS process."""

    index: int
    command: list[str]
    # The socket it listens on (see listening_socket), passed to every OS
    # process started for it; None: the process binds its own --listen.
    listener: socket.socket | None = None
    process: trio.Process | None = None
    # Set when the OS process ended (by whatever cause).
    exited: trio.Event = attrs.field(factory=trio.Event)
    expected_exit: bool = False
    # Found silent by the driver's heartbeat, and not heard from since.
    silent: bool = False


@attrs.define(eq=False)
class _Round:
    """One round of resets (see :meth:`Cluster.recover`): the processes that
    said they did it, and those that lost a peer after they said so."""

    done: set[int] = attrs.field(factory=set)
    relost: set[int] = attrs.field(factory=set)
    # The generation each process said it started for the round.
    generations: dict[int, int] = attrs.field(factory=dict)


@attrs.define(eq=False)
class Cluster:
    """A replica on OS processes, from the driver's side. ``processes``,
    ``faults``, ``system`` and ``metrics`` are what a controller uses."""

    config: ReplicaConfig
    system: ActorSystem
    controller_hub: Hub
    shards_hub: Hub
    host: ShardHost
    nursery: trio.Nursery
    processes: list[RemoteProcess] = attrs.field(factory=list)
    slots: list[Slot] = attrs.field(factory=list)
    faults: Faults = attrs.field(factory=lambda: Faults.seeded(FaultPlan(), 0))
    metrics: Metrics = attrs.field(factory=Metrics)
    heartbeat: float = 0.5
    heartbeat_timeout: float = 10.0
    # How long a process may take to answer a probe (it answers once idle).
    probe_patience: float = 120.0
    # Each process's latest generation token, once it said it is ready.
    ready: dict[int, int] = attrs.field(factory=dict)
    _servers: dict[tuple[int, int], ServerEnd] = attrs.field(factory=dict)
    # The scopes of the tasks forwarding each connection's commands.
    _pumps: set[trio.CancelScope] = attrs.field(factory=set)
    _changed: trio.Event = attrs.field(factory=trio.Event)
    _probes: dict[int, dict[int, tuple[int, int, dict[str, Any]]]] = attrs.field(factory=dict)
    _tokens: itertools.count[int] = attrs.field(factory=lambda: itertools.count(1))
    # The reset rounds under way, by token (see recover).
    _resets: dict[int, _Round] = attrs.field(factory=dict)
    _pongs: dict[int, float] = attrs.field(factory=dict)
    # How many times the controller's connections to each process were lost
    # (its link went down, or the process lost another and restarted).
    losses: dict[int, int] = attrs.field(factory=dict)
    # Why the controller last lost each process's connections.
    reasons: dict[int, str] = attrs.field(factory=dict)
    # Called with a process index when the controller's link to it is lost.
    on_lost: list[Callable[[int], None]] = attrs.field(factory=list)

    @property
    def shards(self) -> ShardCatalog:
        """The catalog the host owns (the driver writes and reads it)."""
        return self.host.catalog

    def install(self) -> None:
        handlers = self.controller_hub.handlers
        handlers["resp"] = self._response
        handlers["metric"] = lambda source, name, amount: self.metrics.add(name, amount)
        handlers["probed"] = self._probed
        handlers["reset-done"] = self._reset_done
        handlers["pong"] = self._pong
        handlers["lost-peer"] = self._lost_peer
        handlers["refused"] = self._refused
        self.controller_hub.on_lost.append(self._lost)
        handlers = self.shards_hub.handlers
        handlers["hello"] = lambda source: self.shards_hub.inbound(source).refresh()
        # A process pings the host (and closes the connection if it stays silent).
        handlers["ping"] = lambda source, sent_at: self.shards_hub.send(source, ("pong", sent_at))
        handlers["ready"] = self._ready
        handlers["sub"] = lambda source, token, name: self.host.subscribe(source, token, name)
        handlers["append"] = lambda source, *args: self.host.append(*args)

    # Connections.

    def open(self, process: int, server: ServerEnd) -> None:
        self._servers[process, server.nonce] = server
        self.controller_hub.send(process_node(process), ("open", server.nonce))
        self.nursery.start_soon(self._pump, process, server)

    async def _pump(self, process: int, server: ServerEnd) -> None:
        with trio.CancelScope() as scope:
            self._pumps.add(scope)
            try:
                await self._forward(process, server)
            finally:
                self._pumps.discard(scope)

    async def _forward(self, process: int, server: ServerEnd) -> None:
        target = process_node(process)
        async for commands in server.commands:
            # Each command encoded on its own: process 0 forwards these bytes.
            # In items of at most COMMANDS_PER_ITEM, so that process 0 starts on
            # a long burst (and passes it on) before the whole of it arrived.
            # And of at most COMMAND_BYTES, so that an item fits in a frame.
            chunk: list[bytes] = []
            size = 0
            for command in commands:
                data = _wire.encode(command)
                if chunk and (len(chunk) == COMMANDS_PER_ITEM or size + len(data) > COMMAND_BYTES):
                    self.controller_hub.send(target, ("cmds", server.nonce, chunk))
                    chunk, size = [], 0
                chunk.append(data)
                size += len(data)
            if chunk:
                self.controller_hub.send(target, ("cmds", server.nonce, chunk))
        self.controller_hub.send(target, ("end", server.nonce))
        self._servers.pop((process, server.nonce), None)

    def _response(self, source: str, nonce: int, response: Any) -> None:
        server = self._servers.get((int(source[1:]), nonce))
        if server is None:
            return
        with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
            server.responses.send_nowait(response)

    # Holding a runtime at every process's multiplexer (in order with commands).

    def hold(self, runtime: str) -> None:
        self._check(runtime)
        for process in self.processes:
            self.controller_hub.send(process_node(process.index), ("hold", runtime))

    def release(self, runtime: str) -> None:
        self._check(runtime)
        for process in self.processes:
            self.controller_hub.send(process_node(process.index), ("release", runtime))

    def _check(self, runtime: str) -> None:
        running = [MAINTENANCE, INTERACTIVE] if self.config.interactive else [MAINTENANCE]
        if runtime not in running:
            raise ProtocolError(f"process 0 runs no {runtime} runtime (only {', '.join(running)})")

    # Quiescence.

    async def probe(self, *, final: bool = False) -> dict[int, tuple[int, int, dict[str, Any]]]:
        """Ask every process for its counts (and, ``final``, its report)
        once it is idle."""
        token = next(self._tokens)
        answers = self._probes[token] = {}
        try:
            for process in self.processes:
                self.controller_hub.send(process_node(process.index), ("probe", token, final))
            with trio.move_on_after(self.probe_patience):
                while len(answers) < len(self.processes):
                    self._check_running("answer a probe")
                    await self._wait_change()
                return answers
            silent = [p.index for p in self.processes if p.index not in answers]
            raise ClusterError(
                f"replica processes {silent} did not answer within {self.probe_patience:g}s"
            )
        finally:
            self._probes.pop(token, None)

    async def settle(self) -> None:
        """Wait until the replica is quiescent: every process idle, and
        nothing in flight between any two nodes (the items put and the items
        handled agree, twice in a row).

        Raises :class:`ClusterError`, named, if they stay apart, unchanged,
        for ``probe_patience`` (items lost with a connection that dropped,
        say, before a :meth:`recover` started the counts again): it probed
        for ever before."""
        previous: tuple[int, int] | None = None
        stuck_since: float | None = None
        while True:
            await trio.testing.wait_all_tasks_blocked(0.001)
            answers = await self.probe()
            sent = self.controller_hub.sent + self.shards_hub.sent
            handled = self.controller_hub.received + self.controller_hub.dropped
            handled += self.shards_hub.received + self.shards_hub.dropped
            for process_sent, process_handled, _ in answers.values():
                sent += process_sent
                handled += process_handled
            now = (sent, handled)
            if sent == handled and now == previous:
                return
            if now != previous:
                stuck_since = None
            elif stuck_since is None:
                stuck_since = trio.current_time()
            elif trio.current_time() - stuck_since > self.probe_patience:
                raise ClusterError(
                    f"the replica did not settle: the items put ({sent}) and handled "
                    f"({handled}) stayed apart for {self.probe_patience:g}s (lost with a "
                    "connection that dropped? Cluster.recover starts the counts again)"
                )
            previous = now

    async def reports(self) -> list[dict[str, Any]]:
        """Every process's report on the invariants (see ``Generation.report``)."""
        answers = await self.probe(final=True)
        return [answers[index][2] for index in sorted(answers)]

    async def violations(self) -> list[str]:
        """The invariants the replica broke, as the processes report them: a
        merger's regressions; the runtimes' divergence; workers of a runtime
        that applied other commands than its worker 0."""
        found: list[str] = []
        reports = await self.reports()
        firsts: dict[str, str] = {}
        for index, report in enumerate(reports):
            found += report.get("regressions", [])
            found += [d for d in report.get("divergence", []) if d not in found]
            for name, digests in report.get("digests", {}).items():
                for local, digest in enumerate(digests):
                    first = firsts.setdefault(name, digest)
                    if digest != first:
                        worker = index * self.config.workers + local
                        found.append(
                            f"{name}: worker {worker} applied other commands than worker 0"
                        )
        return found

    async def divergence(self) -> list[str]:
        found: list[str] = []
        for report in await self.reports():
            found += [d for d in report.get("divergence", []) if d not in found]
        return found

    async def reset(self, catalog: ShardCatalog | None = None) -> None:
        """A fresh replica on the same processes: settle, then every process
        starts a new generation; the host serves ``catalog`` (a fresh one by
        default) and the counters start at zero."""
        await self.settle()
        await self.recover()
        self.host.replace(ShardCatalog() if catalog is None else catalog)

    async def recover(self) -> None:
        """Every process starts a fresh replica in place, and the shards stay:
        what follows the loss of a process (a replica whose process died
        restarts whole, as a timely cluster does; a controller then
        reconnects and replays what it wants). Returns once every process
        said it did; the replica's counters start at zero.

        A process that loses a peer again after it said so (its fresh
        replica ended at once) waits for another reset: a new round goes to
        every process, so that when this returns each has a replica, all
        at one epoch. Raises :class:`ClusterError` at once, sending
        nothing, if a process is not running (killed, or exited: restart
        it first), and as soon as one exits while it waits; or if the
        processes did not all reset within ``probe_patience``."""
        self._check_running("recover")
        expected = {process.index for process in self.processes}
        done: set[int] = set()
        with trio.move_on_after(self.probe_patience):
            while True:
                token = next(self._tokens)
                round = self._resets[token] = _Round()
                done = round.done
                try:
                    for process in self.processes:
                        self.controller_hub.send(process_node(process.index), ("reset", token))
                    while not round.relost and (done != expected or not self._host_ready(round)):
                        self._check_running("reset")
                        await self._wait_change()
                finally:
                    del self._resets[token]
                if not round.relost:
                    break
                logger.warning(
                    "replica processes %s lost a peer again while resetting: another round",
                    sorted(round.relost),
                )
        if done != expected:
            silent = sorted(expected - done)
            raise ClusterError(
                f"replica processes {silent} did not reset within {self.probe_patience:g}s"
            )
        self._servers.clear()
        for scope in self._pumps:
            scope.cancel()
        for hub in (self.controller_hub, self.shards_hub):
            hub.sent = hub.received = hub.dropped = 0
        self.metrics = Metrics()

    def _host_ready(self, round: _Round) -> bool:
        """Whether the host took every process's ``ready`` for the generation
        it started for ``round`` (on another connection than its
        ``reset-done``): only then has it forgotten the ended generations'
        subscriptions, so that nothing it pushes them comes after the
        counts start again."""
        return all(self.ready.get(p, 0) >= g for p, g in round.generations.items())

    def _check_running(self, doing: str) -> None:
        """A :class:`ClusterError` if a process is not running (killed, or
        exited): it cannot ``doing``, and waiting for it would only time out."""
        down = [slot.index for slot in self.slots if slot.expected_exit or slot.exited.is_set()]
        if down:
            raise ClusterError(
                f"replica processes {down} are not running, so they cannot {doing} "
                "(Cluster.restart starts a killed one again)"
            )

    # Starting and restarting processes.

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

    def _slot(self, index: int) -> Slot:
        """Process ``index``'s slot; a :class:`ValueError` for no such process
        (a negative index is not one counted from the end)."""
        if type(index) is not int or not 0 <= index < len(self.slots):
            raise ValueError(
                f"no replica process {index!r}: the processes are 0 to {len(self.slots) - 1}"
            )
        return self.slots[index]

    def kill(self, index: int) -> None:
        """SIGKILL replica process ``index`` (a fault: it gets no say)."""
        slot = self._slot(index)
        slot.expected_exit = True
        if slot.process is not None:
            slot.process.kill()

    async def restart(self, index: int, *, patience: float = 60.0) -> None:
        """Start replica process ``index`` again (after :meth:`kill`), wait
        until it is ready, then :meth:`recover`: every process starts a fresh
        replica at one new epoch (the others ended theirs when they lost it),
        and the controller reconnects next (docs/processes.md).

        Raises :class:`ClusterError` at once, changing nothing, if the
        process is running (it was not killed: it would never exit), and
        :class:`ValueError` for no such process. Cancelled once the process
        started, it runs on at its own epoch: :meth:`recover` (not another
        ``restart``, which finds it running) puts every process at one."""
        slot = self._slot(index)
        if not (slot.expected_exit or slot.exited.is_set()):
            raise ClusterError(
                f"replica process {index} is running: restart starts one that was killed "
                "(Cluster.kill) or exited"
            )
        await slot.exited.wait()
        self.ready.pop(index, None)
        await self.start(index)
        await self.wait_ready([index], patience=patience)
        await self.recover()

    # Handlers.

    def _ready(self, source: str, process: int, token: int) -> None:
        self.ready[process] = token
        # Heard from now (through the host): the heartbeat's clock for it
        # starts again, so one relaunched is not lost for a silence that
        # was its restart, while its link is still being dialled.
        self._pongs[process] = trio.current_time()
        self.host.forget(source)
        self.shards_hub.inbound(source).discard()
        self._notify()

    def _probed(
        self, source: str, token: int, process: int, sent: int, handled: int, report: dict[str, Any]
    ) -> None:
        answers = self._probes.get(token)
        if answers is not None:
            answers[process] = (sent, handled, report)
            self._notify()

    def _reset_done(self, source: str, token: int, process: int, generation: int = 0) -> None:
        round = self._resets.get(token)
        if round is not None:
            round.done.add(process)
            round.generations[process] = generation
            self._notify()

    def _pong(self, source: str, sent_at: float) -> None:
        index = int(source[1:])
        self._pongs[index] = trio.current_time()
        self.slots[index].silent = False

    def _lost(self, target: str) -> None:
        if target.startswith("p"):
            index = int(target[1:])
            self._connections_lost(index, f"lost the connection to replica process {index}")

    def _lost_peer(self, source: str, peer: str) -> None:
        index = int(source[1:])
        # After its reset-done, a lost peer ended the fresh replica too: it
        # waits for another reset (see recover).
        for round in self._resets.values():
            if index in round.done:
                round.done.discard(index)
                round.relost.add(index)
        self._connections_lost(
            index,
            f"replica process {index} lost its connection to replica process {peer[1:]} "
            "and restarted (the processes of a replica share fate)",
        )

    def _refused(self, source: str, nonce: int, reason: str) -> None:
        """Process ``source`` refused connection ``nonce``: it has no replica
        (see ``_Server._open``). The connection is lost, named."""
        index = int(source[1:])
        if (index, nonce) in self._servers:
            self._connections_lost(index, reason)

    def _connections_lost(self, index: int, reason: str) -> None:
        """The controller's connections to process ``index`` are gone: their
        responses fail, as a lost connection's do in one process."""
        self.reasons[index] = reason
        self.losses[index] = self.losses.get(index, 0) + 1
        for server in [s for (p, _), s in self._servers.items() if p == index]:
            server.responses.close()
        for callback in list(self.on_lost):
            callback(index)
        self._notify()

    async def heartbeats(self) -> None:
        """Ping every process; close the link to one that stayed silent for
        ``heartbeat_timeout`` (a partition then behaves as a lost connection).
        A process silent that long with no link open (one stopped while the
        link was being dialled, so it never answered the handshake) is lost
        as well: its connections fail, named."""
        while True:
            now = trio.current_time()
            for process in self.processes:
                link = self.controller_hub.outlinks[process_node(process.index)]
                last = self._pongs.setdefault(process.index, now)
                if now - last > self.heartbeat_timeout:
                    self._pongs[process.index] = now
                    self.slots[process.index].silent = True
                    peer = link.peer
                    if peer is not None:
                        logger.warning("no answer from process %d: closing its link", process.index)
                        self.nursery.start_soon(peer.close, "heartbeat missed")
                    elif (
                        process.index in self.ready
                        and not self.slots[process.index].exited.is_set()
                    ):
                        # (Not one being started again: see restart.)
                        logger.warning("no answer from process %d, and no link", process.index)
                        self._connections_lost(
                            process.index,
                            f"no answer from replica process {process.index} for "
                            f"{self.heartbeat_timeout:g}s (its link could not be opened)",
                        )
                link.put(("ping", now))
            await trio.sleep(self.heartbeat)

    async def wait_lost(self, index: int, *, times: int = 1) -> None:
        """Wait until the controller's link to process ``index`` went down
        ``times`` times in all."""
        while self.losses.get(index, 0) < times:
            await self._wait_change()

    async def _wait_change(self) -> None:
        await self._changed.wait()

    def _notify(self) -> None:
        self._changed.set()
        self._changed = trio.Event()


@asynccontextmanager
async def open_cluster(
    config: ReplicaConfig,
    *,
    seed: int | None = None,
    python: str = sys.executable,
    catalog: ShardCatalog | None = None,
    dial: Callable[[int, tuple[str, int]], tuple[str, int]] | None = None,
    dial_peer: Callable[[int, int, tuple[str, int]], tuple[str, int]] | None = None,
    dial_shards: Callable[[int, tuple[str, int]], tuple[str, int]] | None = None,
    heartbeat: float = 0.5,
    heartbeat_timeout: float = 10.0,
    peer_timeout: float | None = None,
    start_timeout: float = 60.0,
    tls: TlsFiles | None = None,
) -> AsyncIterator[Cluster]:
    """Spawn ``config.processes`` replica processes on loopback and host their
    shards (``catalog``, a fresh in-memory one by default: any
    :class:`ShardCatalog` works); stop them when the block ends. Each
    process's port is bound and listening, here, before any process starts,
    and held until the block ends: each OS process started for it inherits
    the socket (:func:`listening_socket`).

    ``dial(index, address)`` says where the controller dials process
    ``index`` (a proxy, for partition tests), ``dial_peer(index, other,
    address)`` where process ``index`` dials process ``other``, and
    ``dial_shards(index, address)`` where it dials the shard host; the
    address itself by default. With ``tls``, every node's connections are mutual
    TLS (:class:`~._tls.TlsFiles`: the certificate must name ``127.0.0.1``).
    The driver pings each process every ``heartbeat`` seconds and closes
    the link to one silent for ``heartbeat_timeout``; each process does the
    same to the other processes and the shard host, silent for
    ``peer_timeout`` (``heartbeat_timeout`` by default).
    Raises :class:`ClusterError` if a process does not start in time, and
    :class:`ValueError` (before anything starts) unless ``heartbeat``,
    ``heartbeat_timeout`` and ``peer_timeout`` are above 0 (a tiny
    ``peer_timeout`` is raised to the least ``serve`` takes,
    ``MIN_PEER_TIMEOUT``), ``heartbeat`` is at least ``MIN_HEARTBEAT`` (a
    shorter one spins) and ``heartbeat_timeout`` at least twice
    ``heartbeat`` (a process answers a ping a heartbeat later at the
    earliest: a shorter timeout, or one late pong, would make every process
    lost)."""
    if not (heartbeat > 0 and heartbeat_timeout > 0):
        raise ValueError(
            f"heartbeat ({heartbeat!r}) and heartbeat_timeout ({heartbeat_timeout!r}) "
            "must be above 0"
        )
    if heartbeat < MIN_HEARTBEAT:
        raise ValueError(
            f"heartbeat ({heartbeat!r}) must be at least {MIN_HEARTBEAT:g}s (shorter, the "
            "driver's pings would spin)"
        )
    if not heartbeat_timeout >= 2 * heartbeat:
        raise ValueError(
            f"heartbeat_timeout ({heartbeat_timeout!r}) must be at least twice heartbeat "
            f"({heartbeat!r}): a process answers a ping a heartbeat later at the earliest, "
            "so a shorter one makes every process lost"
        )
    if peer_timeout is not None and not peer_timeout > 0:
        raise ValueError(f"peer_timeout ({peer_timeout!r}) must be above 0")
    host_address = "127.0.0.1"
    with (
        tempfile.TemporaryDirectory(prefix="trio-reconcile-") as folder,
        contextlib.ExitStack() as listeners,
    ):
        secret = os.urandom(32)
        secret_file = Path(folder) / "secret"
        secret_file.touch(mode=0o600)
        secret_file.write_bytes(secret)
        async with (
            actors.open_system(seed=seed) as controller_system,
            actors.open_system() as shards_system,
            open_node(
                shards_system,
                name=SHARDS,
                secret=secret,
                codec=codec(),
                listen=(host_address, 0),
                max_frame=MAX_FRAME,
                ssl_context=None if tls is None else tls.server_context(),
            ) as shards_node,
            open_node(
                controller_system,
                name=CONTROLLER,
                secret=secret,
                codec=codec(),
                listen=None,
                max_frame=MAX_FRAME,
            ) as controller_node,
            trio.open_nursery() as nursery,
        ):
            assert shards_node.address is not None
            client = None if tls is None else tls.client_context()
            shards_hub = Hub(SHARDS, shards_node, nursery, ssl_context=client)
            await shards_hub.start()
            controller_hub = Hub(CONTROLLER, controller_node, nursery, ssl_context=client)
            await controller_hub.start()
            host = ShardHost(
                ShardCatalog() if catalog is None else catalog,
                lambda process, item: shards_hub.send(process, item),
            )
            cluster = Cluster(
                config,
                controller_system,
                controller_hub,
                shards_hub,
                host,
                nursery,
                heartbeat=heartbeat,
                heartbeat_timeout=heartbeat_timeout,
            )
            cluster.install()
            # Every process's port bound (and listening) before any starts.
            sockets = [
                listeners.enter_context(listening_socket(host_address))
                for _ in range(config.processes)
            ]
            addresses = [(host_address, sock.getsockname()[1]) for sock in sockets]
            for index in range(config.processes):
                cluster.processes.append(RemoteProcess(index, cluster))
                peers = [
                    address
                    if dial_peer is None or other == index
                    else dial_peer(index, other, address)
                    for other, address in enumerate(addresses)
                ]
                command = serve_command(
                    config,
                    index,
                    addresses[index],
                    peers,
                    shards_node.address
                    if dial_shards is None
                    else dial_shards(index, shards_node.address),
                    str(secret_file),
                    python=python,
                    tls=tls,
                    peer_timeout=heartbeat_timeout if peer_timeout is None else peer_timeout,
                    listen_fd=sockets[index].fileno(),
                )
                cluster.slots.append(Slot(index, command, sockets[index]))
            try:
                for index in range(config.processes):
                    await cluster.start(index)
                await cluster.wait_ready(patience=start_timeout)
                for index, address in enumerate(addresses):
                    target = address if dial is None else dial(index, address)
                    controller_hub.dial(process_node(index), target)
                nursery.start_soon(cluster.heartbeats)
                yield cluster
            finally:
                for slot in cluster.slots:
                    slot.expected_exit = True
                nursery.cancel_scope.cancel()
