"""The controller's connections to the replica processes, from the driver's
side: each connection's commands forwarded to its process in items a frame
carries, its responses back, and the holds of a runtime."""

from __future__ import annotations

import contextlib

import trio

from ..protocol import ProtocolError
from ..runtime._connection import ServerEnd
from ..runtime._process import INTERACTIVE, MAINTENANCE
from . import _wire
from ._cluster_base import ClusterBase
from ._items import Commands, End, Hold, Open, Refused, Release, Respond
from ._links import CHUNK
from ._options import process_node

COMMANDS_PER_ITEM = 256
COMMAND_BYTES = CHUNK
"""The most bytes of commands one :class:`~._items.Commands` item carries (unless one command
is larger): 256 commands of a MiB each (peeks with many literals) would be
an item no frame carries, and the driver would stop (``ItemTooLargeError``)."""


class Connections(ClusterBase):
    """The controller's connections (see the module's docstring)."""

    __slots__ = ()

    def open(self, process: int, server: ServerEnd) -> None:
        self._servers[process, server.nonce] = server
        self.controller_hub.send(process_node(process), Open(server.nonce))
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
                    self.controller_hub.send(target, Commands(server.nonce, chunk))
                    chunk, size = [], 0
                chunk.append(data)
                size += len(data)
            if chunk:
                self.controller_hub.send(target, Commands(server.nonce, chunk))
        self.controller_hub.send(target, End(server.nonce))
        self._servers.pop((process, server.nonce), None)

    def _response(self, source: str, item: Respond) -> None:
        server = self._servers.get((int(source[1:]), item.nonce))
        if server is None:
            return
        with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
            server.responses.send_nowait(item.response)

    def hold(self, runtime: str) -> None:
        self._check(runtime)
        for process in self.processes:
            self.controller_hub.send(process_node(process.index), Hold(runtime))

    def release(self, runtime: str) -> None:
        self._check(runtime)
        for process in self.processes:
            self.controller_hub.send(process_node(process.index), Release(runtime))

    def _check(self, runtime: str) -> None:
        running = [MAINTENANCE, INTERACTIVE] if self.config.interactive else [MAINTENANCE]
        if runtime not in running:
            raise ProtocolError(f"process 0 runs no {runtime} runtime (only {', '.join(running)})")

    def _refused(self, source: str, item: Refused) -> None:
        """Process ``source`` refused a connection: it has no replica (see
        ``Server._open``). The connection is lost, named."""
        index = int(source[1:])
        if (index, item.nonce) in self._servers:
            self._connections_lost(index, item.reason)
