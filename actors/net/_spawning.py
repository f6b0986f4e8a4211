"""What peers may spawn on a node: :class:`SpawnKey`, and the node's record
of each behaviour it allows (:meth:`Node.allow_spawn
<actors.net.Node.allow_spawn>`, :meth:`Peer.spawn <actors.net.Peer.spawn>`)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Generic, TypeVar, TypeVarTuple, final

import attrs

from .._core._mailbox import ActorRef
from .._restarts import Restart
from .._supervision import Supervisor
from .._system import ActorSystem

M = TypeVar("M")
Ts = TypeVarTuple("Ts")


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
        try:
            return await self.supervisor.spawn(
                self.behaviour, *args, name=name, restart=self.restart
            )
        except RuntimeError as error:
            if "closed to new arrivals" not in str(error):
                raise
            raise RuntimeError(
                f"supervisor {self.supervisor.address.name!r} has ended: it spawns no more"
            ) from None
