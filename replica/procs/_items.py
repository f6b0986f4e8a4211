"""The items the nodes of a replica on OS processes send each other: small
frozen attrs classes, registered on the nodes' codec (:mod:`._wire`) under
their ``channel`` (the name on the wire) and dispatched by type
(:meth:`._links.Hub.on`).

Items between replica processes carry the sender's ``epoch`` (its last
controller reset): one of another epoch is for a replica that ended.
The items whose ``counted`` is false (greetings, heartbeats, the probes and
resets of the quiescence test itself) are not counted for quiescence.
"""

from __future__ import annotations

from typing import Any, ClassVar, Final

import attrs

from ..model._rows import Update
from ..protocol import Response


class Item:
    """What one node sends another on a link (see the module's docstring)."""

    __slots__ = ()
    channel: ClassVar[str]
    counted: ClassVar[bool] = True


# Links.


@attrs.frozen
class Hello(Item):
    """The first item on every connection a node dials: who it is."""

    channel: ClassVar[str] = "hello"
    counted: ClassVar[bool] = False


@attrs.frozen
class Ping(Item):
    """A heartbeat (``sent_at``: the sender's trio time)."""

    channel: ClassVar[str] = "ping"
    counted: ClassVar[bool] = False
    sent_at: float


@attrs.frozen
class Pong(Item):
    """The answer to a :class:`Ping`."""

    channel: ClassVar[str] = "pong"
    counted: ClassVar[bool] = False
    sent_at: float


# The controller's connections.


@attrs.frozen
class Open(Item):
    """The controller opened connection ``nonce`` to a process."""

    channel: ClassVar[str] = "open"
    nonce: int


@attrs.frozen
class Commands(Item):
    """Commands of connection ``nonce``, each encoded on its own."""

    channel: ClassVar[str] = "cmds"
    nonce: int
    commands: list[bytes]


@attrs.frozen
class End(Item):
    """The controller closed connection ``nonce``."""

    channel: ClassVar[str] = "end"
    nonce: int


@attrs.frozen
class Respond(Item):
    """A response on connection ``nonce``."""

    channel: ClassVar[str] = "resp"
    nonce: int
    response: Response


@attrs.frozen
class Refused(Item):
    """A process with no replica refused connection ``nonce``, for ``reason``."""

    channel: ClassVar[str] = "refused"
    nonce: int
    reason: str


@attrs.frozen
class Hold(Item):
    """Hold ``runtime`` at the process's multiplexer."""

    channel: ClassVar[str] = "hold"
    runtime: str


@attrs.frozen
class Release(Item):
    """Release ``runtime`` at the process's multiplexer."""

    channel: ClassVar[str] = "release"
    runtime: str


@attrs.frozen
class Metric(Item):
    """A materialized-view counter moved by ``amount``."""

    channel: ClassVar[str] = "metric"
    name: str
    amount: int


@attrs.frozen
class Gauge(Item):
    """A worker's gauge (``source``) set to ``value``."""

    channel: ClassVar[str] = "gauge"
    name: str
    source: str
    value: int


# Quiescence and resets.


@attrs.frozen
class Probe(Item):
    """Ask a process for its counts (and, ``final``, its report) once idle."""

    channel: ClassVar[str] = "probe"
    counted: ClassVar[bool] = False
    token: int
    final: bool


@attrs.frozen
class Probed(Item):
    """A process's answer to :class:`Probe` ``token``."""

    channel: ClassVar[str] = "probed"
    counted: ClassVar[bool] = False
    token: int
    process: int
    sent: int
    handled: int
    report: dict[str, Any]


@attrs.frozen
class Reset(Item):
    """Start a fresh replica (reset round ``token``)."""

    channel: ClassVar[str] = "reset"
    counted: ClassVar[bool] = False
    token: int


@attrs.frozen
class ResetDone(Item):
    """Process ``process`` did reset ``token``, starting ``generation``."""

    channel: ClassVar[str] = "reset-done"
    counted: ClassVar[bool] = False
    token: int
    process: int
    generation: int = 0


@attrs.frozen
class Ready(Item):
    """Process ``process`` started generation ``token`` (to the shard host)."""

    channel: ClassVar[str] = "ready"
    counted: ClassVar[bool] = False
    process: int
    token: int


@attrs.frozen
class LostPeer(Item):
    """The sender lost its connection to replica process ``peer``."""

    channel: ClassVar[str] = "lost-peer"
    counted: ClassVar[bool] = False
    peer: str


# Shards (see ._shards).


@attrs.frozen
class SubscribeShard(Item):
    """A mirror asks for shard ``name`` (subscription ``token``)."""

    channel: ClassVar[str] = "sub"
    token: int
    name: str


@attrs.frozen
class AppendShard(Item):
    """A sink's compare-and-append, for the host."""

    channel: ClassVar[str] = "append"
    name: str
    updates: list[Update]
    lower: int
    upper: int


@attrs.frozen
class ShardPush(Item):
    """The host's push to subscription ``token``: updates from ``start`` on,
    and the shard's upper (0 on all but a push's last item)."""

    channel: ClassVar[str] = "shard"
    token: int
    name: str
    start: int
    updates: list[Update]
    upper: int


# Between replica processes.


@attrs.frozen
class Sequenced(Item):
    """A run of commands process 0 sequenced for ``runtime`` (their bytes
    joined into one array)."""

    channel: ClassVar[str] = "seq"
    epoch: int
    runtime: str
    nonce: int
    position: int
    commands: bytes


@attrs.frozen
class ExchangeUpdates(Item):
    """Updates a worker sent to worker ``destination`` of another process."""

    channel: ClassVar[str] = "xs"
    epoch: int
    runtime: str
    dataflow: int
    place: int
    destination: int
    updates: list[Update]


@attrs.frozen
class ExchangeFrontier(Item):
    """Worker ``worker`` has sent everything before ``frontier``."""

    channel: ClassVar[str] = "xf"
    epoch: int
    runtime: str
    dataflow: int
    place: int
    worker: int
    frontier: int


ITEMS: Final[tuple[type[Item], ...]] = (
    Hello,
    Ping,
    Pong,
    Open,
    Commands,
    End,
    Respond,
    Refused,
    Hold,
    Release,
    Metric,
    Gauge,
    Probe,
    Probed,
    Reset,
    ResetDone,
    Ready,
    LostPeer,
    SubscribeShard,
    AppendShard,
    ShardPush,
    Sequenced,
    ExchangeUpdates,
    ExchangeFrontier,
)
