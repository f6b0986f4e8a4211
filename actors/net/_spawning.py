"""Remote spawn: :class:`SpawnKey`, the node's record of each behaviour it
allows (:meth:`Node.allow_spawn <actors.net.Node.allow_spawn>`), and one
connection's spawns both ways (:class:`Spawns`: :meth:`Peer.spawn
<actors.net.Peer.spawn>` there, the peer's spawns here)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Final, Generic, Protocol, TypeVar, TypeVarTuple, final

import attrs
import trio

from .._core._cell import _Cell
from .._core._mailbox import ActorRef
from .._restarts import Restart
from .._supervision import Supervisor
from .._system import ActorSystem
from ._codec import Codec
from ._errors import CodecError, RemoteError
from ._events import SpawnRequested
from ._protocol import Connection

M = TypeVar("M")
Ts = TypeVarTuple("Ts")

MAX_SPAWNING: Final = 16
"""The most spawns one peer may have under way on a node at once (more are
refused); :meth:`Peer.spawn <actors.net.Peer.spawn>` keeps its own within it."""


@final
@attrs.frozen
class SpawnKey(Generic[M, *Ts]):
    """The name under which a node lets peers spawn a behaviour, typed by
    what the actor accepts and by the behaviour's arguments after its inbox:
    ``COUNTERS = SpawnKey[Add | Total, int]("counters")`` for ``async def
    counting(inbox: Inbox[Add | Total], start: int)``. mypy then checks
    ``node.allow_spawn(COUNTERS, counting)`` against the behaviour and
    ``peer.spawn(COUNTERS, 10)`` against its arguments, and types the
    reference. Keys compare by name, as :class:`~actors.ServiceKey`\\ s do:
    declare each once, where both nodes import it."""

    name: str = attrs.field()

    @name.validator
    def _check_name(self, attribute: attrs.Attribute[str], value: str) -> None:
        if not isinstance(value, str):
            raise TypeError(f"a spawn key's name must be a str, not {value!r}")

    def __repr__(self) -> str:
        return f"SpawnKey({self.name!r})"


@final
@attrs.frozen
class Spawnable:
    """A behaviour a node allows peers to spawn, and where its actors go: the
    node's system, or a supervisor of it (with ``restart``)."""

    behaviour: Callable[..., Awaitable[None]]
    supervisor: Supervisor | None
    restart: Restart

    async def spawn(self, system: ActorSystem, args: list[Any], name: str | None) -> ActorRef[Any]:
        if self.supervisor is None:
            return await system.spawn(self.behaviour, *args, name=name)
        return await self.supervisor.spawn(self.behaviour, *args, name=name, restart=self.restart)


class Peer(Protocol):
    """What :class:`Spawns` uses of its :class:`~actors.net.Peer` (declared
    here so that this module does not import the peer that owns it)."""

    @property
    def node(self) -> str: ...

    _conn: Connection
    _codec: Codec
    _system: ActorSystem
    _nursery: trio.Nursery | None

    async def _request(self, send: Callable[[int], None]) -> tuple[tuple[str, int], ...]: ...

    def _reference(self, name: str, uid: int) -> ActorRef[Any]: ...

    def _export(self, cell: _Cell[Any]) -> tuple[str, int]: ...

    def _flush(self) -> None: ...


class Spawns:
    """One connection's remote spawns: ours on the peer (at most
    ``MAX_SPAWNING`` under way), and the peer's here."""

    __slots__ = ("peer", "slots", "spawnable", "under_way")

    def __init__(self, peer: Peer, spawnable: dict[str, Spawnable]) -> None:
        self.peer = peer
        # The behaviours the peer may spawn here, by key (Node.allow_spawn).
        self.spawnable = spawnable
        self.under_way = 0  # spawns of the peer's under way here
        self.slots = trio.Semaphore(MAX_SPAWNING)  # ours under way there

    async def spawn(self, key: str, args: tuple[object, ...], name: str | None) -> ActorRef[Any]:
        """:meth:`Peer.spawn <actors.net.Peer.spawn>`, once its arguments were
        checked."""
        peer = self.peer
        try:
            data = peer._codec.values.encode(list(args))
        except (TypeError, ValueError, OverflowError, RecursionError) as error:
            raise CodecError(f"cannot encode the arguments of a spawn: {error}") from None
        async with self.slots:  # never more under way than the peer takes
            actors = await peer._request(
                lambda number: peer._conn.send_spawn(number, key, data, name)
            )
        if len(actors) != 1:
            raise RemoteError(
                "ProtocolError", f"node {peer.node!r} answered a spawn with {actors!r}"
            )
        actor_name, uid = actors[0]
        return peer._reference(actor_name, uid)

    def requested(self, event: SpawnRequested) -> None:
        """The peer asks for a spawn: started, unless too many are under way."""
        peer = self.peer
        if peer._conn.closed:
            return
        if self.under_way >= MAX_SPAWNING:
            peer._conn.send_refusal(
                event.request,
                "RuntimeError",
                f"more than {MAX_SPAWNING} spawns of node {peer.node!r} under way",
            )
            return
        assert peer._nursery is not None
        self.under_way += 1
        peer._nursery.start_soon(self._for_peer, event)

    async def _for_peer(self, event: SpawnRequested) -> None:
        """The peer's spawn: the allowed behaviour, spawned in this node's
        system and exported to the peer; any refusal goes back by name."""
        peer = self.peer
        try:
            spawnable, args = self._of(event)
            ref = await spawnable.spawn(peer._system, args, event.name)
        except Exception as error:  # what the peer asked for must not end this node
            if not peer._conn.closed:
                peer._conn.send_refusal(event.request, type(error).__name__, str(error))
                peer._flush()
            return
        finally:
            self.under_way -= 1
        if peer._conn.closed:
            await ref.kill()  # nobody to hand it to
            return
        peer._conn.send_found(event.request, [peer._export(ref._cell)])
        peer._flush()

    def _of(self, event: SpawnRequested) -> tuple[Spawnable, list[Any]]:
        """The behaviour and the arguments of the peer's spawn, or the error."""
        spawnable = self.spawnable.get(event.key)
        if spawnable is None:
            raise LookupError(f"this node allows no spawn under the key {event.key!r}")
        args = self.peer._codec.values.decode(event.args)
        if not isinstance(args, list):
            raise CodecError(f"a spawn's arguments are a list, not {type(args).__name__}")
        return spawnable, args
