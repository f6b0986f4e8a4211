"""Controller connections, and the order a process records them in (docs/architecture.md)."""

from __future__ import annotations

import logging
import math
from collections.abc import Callable

import attrs
import trio

from ..protocol import Command, ProtocolError, Response

logger = logging.getLogger("replica")


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
class ResponseLine:
    """The responses of one connection, from the process to the controller.

    A send hands the response to the controller's ``reader`` at once, in the
    sender's task (as a worker hands its responses to its adapter): no task
    sits in between, and responses arrive in the order they were sent. Once
    the controller closed the connection, a send raises
    ``trio.BrokenResourceError`` (as a memory channel whose receiver is
    closed does) and the response is lost."""

    reader: Callable[[Response], None]
    closed: bool = False
    # The controller's reader of several responses at once, if it has one.
    reader_many: Callable[[list[Response]], None] | None = None
    # Told why, when the process fails the connection (see ``fail``).
    lost: Callable[[str], None] | None = None

    def send_nowait(self, response: Response) -> None:
        """Hand ``response`` to the controller. Never blocks, never checkpoints."""
        if self.closed:
            raise trio.BrokenResourceError("the controller closed the connection")
        self.reader(response)

    def send_many_nowait(self, responses: list[Response]) -> None:
        """Hand ``responses`` to the controller, in order: at once to its
        ``reader_many``, or else one by one as :meth:`send_nowait` does.
        Never blocks, never checkpoints."""
        if self.reader_many is None:
            for response in responses:
                self.send_nowait(response)
            return
        if self.closed:
            raise trio.BrokenResourceError("the controller closed the connection")
        self.reader_many(responses)

    def close(self) -> None:
        self.closed = True

    def fail(self, reason: str) -> None:
        """The process's side ends the connection (its process aborted): the
        controller is told ``reason`` (once), and sends fail from now on. A
        connection the controller closed already is left as it is."""
        if self.closed:
            return
        self.closed = True
        if self.lost is not None:
            self.lost(reason)


@attrs.define(eq=False)
class CommandLine:
    """The commands of one connection, from the controller to a process, in
    order. The sender never blocks; the one reader takes everything queued
    at once (a burst of commands is one wake-up and one item, where a
    memory channel hands them over one by one). Once the sender closed it,
    the reader gets what is left, then the end; a send raises
    ``trio.ClosedResourceError``."""

    _queue: list[Command] = attrs.field(factory=list)
    _closed: bool = False
    # Set when something arrives, for the reader parked in ``receive``.
    _arrived: trio.Event | None = None

    def send_nowait(self, command: Command) -> None:
        """Queue ``command``. Never blocks, never checkpoints."""
        if self._closed:
            raise trio.ClosedResourceError("the connection is closed")
        self._queue.append(command)
        arrived = self._arrived
        if arrived is not None:
            self._arrived = None
            arrived.set()

    def send_many_nowait(self, commands: list[Command]) -> None:
        """Queue ``commands``, in order, as :meth:`send_nowait` would one by
        one (the reader may take them in one batch). Never blocks, never
        checkpoints; nothing is queued if the line is closed."""
        if self._closed:
            raise trio.ClosedResourceError("the connection is closed")
        if not commands:
            return
        self._queue += commands
        arrived = self._arrived
        if arrived is not None:
            self._arrived = None
            arrived.set()

    def close(self) -> None:
        """No more commands: the reader gets what is queued, then the end."""
        self._closed = True
        arrived = self._arrived
        if arrived is not None:
            self._arrived = None
            arrived.set()

    async def receive(self) -> list[Command]:
        """Everything queued, in order, waiting for at least one command (a
        checkpoint). Raises ``trio.EndOfChannel`` once the line is closed and
        nothing is left. One reader at a time: a cancelled wait loses nothing."""
        if self._queue:
            await trio.lowlevel.checkpoint()
        while not self._queue:
            if self._closed:
                raise trio.EndOfChannel
            if self._arrived is not None:
                raise trio.BusyResourceError("another task is reading this connection")
            self._arrived = arrived = trio.Event()
            try:
                await arrived.wait()
            finally:
                if self._arrived is arrived:
                    self._arrived = None
        batch, self._queue = self._queue, []
        return batch

    def __aiter__(self) -> CommandLine:
        return self

    async def __anext__(self) -> list[Command]:
        try:
            return await self.receive()
        except trio.EndOfChannel:
            raise StopAsyncIteration from None


@attrs.define(eq=False)
class ServerEnd:
    """A process's side of one controller connection."""

    nonce: int
    commands: CommandLine
    responses: ResponseLine


@attrs.define(eq=False)
class ClientEnd:
    """The controller's side of one connection to one process."""

    nonce: int
    commands: CommandLine
    responses: ResponseLine

    def close(self) -> None:
        """Close the connection: the process sees the command stream end, and
        its response sends fail from now on."""
        self.commands.close()
        self.responses.close()


def open_connection(
    nonce: int,
    reader: Callable[[Response], None],
    reader_many: Callable[[list[Response]], None] | None = None,
    lost: Callable[[str], None] | None = None,
) -> tuple[ClientEnd, ServerEnd]:
    """A connection whose responses go to ``reader``, the controller's (or
    several at once to ``reader_many``); ``lost`` is told why if the process
    fails it."""
    commands = CommandLine()
    responses = ResponseLine(reader, reader_many=reader_many, lost=lost)
    return ClientEnd(nonce, commands, responses), ServerEnd(nonce, commands, responses)


@attrs.define(eq=False)
class RuntimeConnection:
    """One controller connection as one runtime of one process sees it: the
    commands the multiplexer forwards to the runtime (in batches: what one
    turn of the multiplexer routes travels as one item), and where the
    runtime's channel adapters hand their workers' responses (``deliver``:
    the process's merge, which sends what it completes to the controller)."""

    nonce: int
    batches_in: trio.MemorySendChannel[list[Command]]
    batches: trio.MemoryReceiveChannel[list[Command]]
    # How many of the runtime's adapters in this process still serve it.
    serving: int
    # The process's merge of this runtime's responses (local worker, response),
    # and of several at once (how many it delivered before the connection broke).
    deliver: Callable[[int, Response], None] | None = None
    deliver_many: Callable[[int, list[Response]], int] | None = None
    # The controller went away (a merged response could not be sent to it):
    # every later response send fails.
    broken: bool = False
    ended: trio.Event = attrs.field(factory=trio.Event)
    dropped_commands: int = 0

    @classmethod
    def open(cls, nonce: int, adapters: int) -> RuntimeConnection:
        batches_in, batches = trio.open_memory_channel[list[Command]](math.inf)
        return cls(nonce, batches_in, batches, adapters)

    def forward(self, commands: list[Command]) -> None:
        """Queue ``commands`` for the runtime, in order, as one batch (the
        list is the connection's from now on). Never blocks. Once the adapter
        that reads them left after a failed response send, they are dropped
        and counted, as the commands it had queued were."""
        try:
            self.batches_in.send_nowait(commands)
        except trio.BrokenResourceError:
            self.dropped_commands += len(commands)

    def with_queued(self, batch: list[Command]) -> list[Command]:
        """``batch`` (just received from :attr:`batches`) extended with every
        batch already queued behind it: the reader takes them in one turn."""
        while True:
            try:
                batch += self.batches.receive_nowait()
            except (trio.WouldBlock, trio.EndOfChannel):
                return batch

    def send(self, local: int, response: Response) -> bool:
        """Hand one response of local worker ``local`` on; ``False`` (nothing
        sent) once the connection is broken. Never blocks."""
        if self.broken:
            return False
        assert self.deliver is not None, "a process merges what it serves"
        self.deliver(local, response)
        return True

    def send_many(self, local: int, responses: list[Response]) -> int:
        """:meth:`send` each of ``responses``, in order, until the connection
        is found broken; how many were handed on (those after it are not).
        Never blocks."""
        if self.broken:
            return 0
        if self.deliver_many is not None:
            return self.deliver_many(local, responses)
        for sent, response in enumerate(responses):
            if not self.send(local, response):
                return sent
        return len(responses)

    def end(self) -> None:
        """The controller's command stream ended: nothing more will be forwarded."""
        self.batches_in.close()
        self.ended.set()

    def leave(self, *, drop_queued: bool) -> None:
        """One adapter stops serving this connection. With ``drop_queued`` (its
        response send failed), the commands still queued are dropped."""
        if drop_queued:
            while True:
                try:
                    batch = self.batches.receive_nowait()
                except (trio.WouldBlock, trio.EndOfChannel, trio.ClosedResourceError):
                    break
                self.dropped_commands += len(batch)
            self.batches.close()
            logger.info(
                "a response send to connection %d failed: its adapter left it, "
                "dropping %d queued commands",
                self.nonce,
                self.dropped_commands,
            )
        self.serving -= 1
