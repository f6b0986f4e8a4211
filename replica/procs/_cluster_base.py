"""The driver's view of a replica on OS processes, its state: each spawned
process's slot, the reset rounds under way, the counts and connections the
parts of :class:`~._cluster.Cluster` share (:mod:`._connections`,
:mod:`._quiescence`, :mod:`._resets`, :mod:`._spawning`, :mod:`._heartbeat`),
and the helpers they all use."""

from __future__ import annotations

import itertools
import socket
from collections.abc import Callable
from typing import Any, Protocol

import attrs
import trio

from actors import ActorSystem

from ..model._metrics import Metrics
from ..runtime._connection import ServerEnd
from ..runtime._faults import FaultPlan, Faults
from ..runtime._replica import ReplicaConfig
from ..storage._shard import ShardCatalog
from ._errors import ClusterError
from ._links import Hub
from ._shards import ShardHost


class _Opener(Protocol):
    def open(self, process: int, server: ServerEnd) -> None: ...


@attrs.define(eq=False)
class RemoteProcess:
    """A replica process as the controller sees it: where a connection opens."""

    index: int
    cluster: _Opener

    def accept(self, connection: ServerEnd) -> None:
        """The controller opened ``connection`` to this process."""
        self.cluster.open(self.index, connection)


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
class ClusterBase:
    """What the parts of a :class:`~._cluster.Cluster` share (see the
    module's docstring)."""

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

    def _check_running(self, doing: str) -> None:
        """A :class:`ClusterError` if a process is not running (killed, or
        exited): it cannot ``doing``, and waiting for it would only time out."""
        down = [slot.index for slot in self.slots if slot.expected_exit or slot.exited.is_set()]
        if down:
            raise ClusterError(
                f"replica processes {down} are not running, so they cannot {doing} "
                "(Cluster.restart starts a killed one again)"
            )

    def _slot(self, index: int) -> Slot:
        """Process ``index``'s slot; a :class:`ValueError` for no such process
        (a negative index is not one counted from the end)."""
        if type(index) is not int or not 0 <= index < len(self.slots):
            raise ValueError(
                f"no replica process {index!r}: the processes are 0 to {len(self.slots) - 1}"
            )
        return self.slots[index]

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

    async def _wait_change(self) -> None:
        await self._changed.wait()

    def _notify(self) -> None:
        self._changed.set()
        self._changed = trio.Event()
