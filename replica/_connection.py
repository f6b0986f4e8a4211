"""Controller connections, and the order a process records them in (DESIGN.md §2.2)."""

from __future__ import annotations

import logging
import math
from typing import TypeVar

import attrs
import trio

from ._errors import ProtocolError
from ._protocol import Command, Response

logger = logging.getLogger("replica")

T = TypeVar("T")


def queued(channel: trio.MemoryReceiveChannel[T]) -> list[T]:
    """Everything already queued in ``channel``, taken without waiting (a
    receiver that got one item takes the rest of the batch in the same turn)."""
    items: list[T] = []
    while True:
        try:
            items.append(channel.receive_nowait())
        except (trio.WouldBlock, trio.EndOfChannel):
            return items


@attrs.define(eq=False)
class ConnectionOrder:
    """The positions (0, 1, 2, ...) of the connections whose ``Hello`` reached
    one process, in arrival order. Only process 0's order is ever read: the
    position travels with the commands to every other worker."""

    _positions: dict[int, int] = attrs.field(factory=dict)

    def record(self, nonce: int) -> int:
        """Record a connection's ``Hello``; return its position."""
        if nonce in self._positions:
            raise ProtocolError(f"connection {nonce} said hello twice")
        position = self._positions[nonce] = len(self._positions)
        return position

    def position(self, nonce: int) -> int:
        try:
            return self._positions[nonce]
        except KeyError:
            raise ProtocolError(f"connection {nonce} never said hello here") from None

    def __contains__(self, nonce: object) -> bool:
        return nonce in self._positions

    def __len__(self) -> int:
        return len(self._positions)


@attrs.define(eq=False)
class ServerEnd:
    """A process's side of one controller connection."""

    nonce: int
    commands: trio.MemoryReceiveChannel[Command]
    responses: trio.MemorySendChannel[Response]


@attrs.define(eq=False)
class ClientEnd:
    """The controller's side of one connection to one process."""

    nonce: int
    commands: trio.MemorySendChannel[Command]
    responses: trio.MemoryReceiveChannel[Response]

    def close(self) -> None:
        """Close the connection: the process sees the command stream end, and
        its response sends fail from now on."""
        self.commands.close()
        self.responses.close()


def open_connection(nonce: int) -> tuple[ClientEnd, ServerEnd]:
    command_send, command_receive = trio.open_memory_channel[Command](math.inf)
    response_send, response_receive = trio.open_memory_channel[Response](math.inf)
    return (
        ClientEnd(nonce, command_send, response_receive),
        ServerEnd(nonce, command_receive, response_send),
    )


@attrs.define(eq=False)
class RuntimeConnection:
    """One controller connection as one runtime of one process sees it: the
    commands the multiplexer forwards to the runtime, and the responses the
    runtime's channel adapters send back, tagged with their local worker."""

    nonce: int
    commands_in: trio.MemorySendChannel[Command]
    commands: trio.MemoryReceiveChannel[Command]
    responses: trio.MemorySendChannel[tuple[int, Response]]
    responses_out: trio.MemoryReceiveChannel[tuple[int, Response]]
    # How many of the runtime's adapters in this process still serve it.
    serving: int
    ended: trio.Event = attrs.field(factory=trio.Event)
    dropped_commands: int = 0

    @classmethod
    def open(cls, nonce: int, adapters: int) -> RuntimeConnection:
        commands_in, commands = trio.open_memory_channel[Command](math.inf)
        responses, responses_out = trio.open_memory_channel[tuple[int, Response]](math.inf)
        return cls(nonce, commands_in, commands, responses, responses_out, adapters)

    def end(self) -> None:
        """The controller's command stream ended: nothing more will be forwarded."""
        self.commands_in.close()
        self.ended.set()

    def leave(self, *, drop_queued: bool) -> None:
        """One adapter stops serving this connection. With ``drop_queued`` (its
        response send failed), the commands still queued are dropped."""
        if drop_queued:
            while True:
                try:
                    self.commands.receive_nowait()
                except (trio.WouldBlock, trio.EndOfChannel, trio.ClosedResourceError):
                    break
                self.dropped_commands += 1
            self.commands.close()
            logger.info(
                "a response send to connection %d failed: its adapter left it, "
                "dropping %d queued commands",
                self.nonce,
                self.dropped_commands,
            )
        self.serving -= 1
        if self.serving == 0:
            self.responses.close()
