"""What the tests of the replica on OS processes share: a controller's
session that can replay what it wants after a reconnect, and a loopback
proxy that can partition a connection (drop its frames)."""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable

import attrs
import trio

from replica import (
    Command,
    Controller,
    CreateDataflow,
    CreateInstance,
    DataflowDescription,
    InitializationComplete,
    Schedule,
)

TIME_LIMIT = 120.0
"""Real seconds a test of real processes may take (each takes far less)."""


def run_real(main: Callable[[], Awaitable[None]], limit: float = TIME_LIMIT) -> None:
    """``trio.run`` on the real clock, failing after ``limit`` seconds (the
    processes are stopped when the test's blocks end, on failure too)."""

    async def bounded() -> None:
        with trio.fail_after(limit):
            await main()

    trio.run(bounded)


def index(source: int, index: int, shard: str = "data") -> DataflowDescription:
    return DataflowDescription.index(source, shard, index, (0,), as_of=0)


@attrs.define(eq=False)
class Session:
    """What a controller wants (an instance and some dataflows), replayed
    whole on every reconnect, as a real controller does."""

    controller: Controller
    dataflows: list[DataflowDescription] = attrs.field(factory=list)

    async def start(self, *dataflows: DataflowDescription) -> None:
        self.dataflows.extend(dataflows)
        await self._send_all()

    async def reconnect(self) -> None:
        await self.controller.connect()
        await self._send_all()

    async def _send_all(self) -> None:
        commands: list[Command] = [CreateInstance()]
        for dataflow in self.dataflows:
            commands.append(CreateDataflow(dataflow))
            commands += [Schedule(id) for id in dataflow.exports]
        commands.append(InitializationComplete())
        for command in commands:
            await self.controller.send(command)


@attrs.define(eq=False)
class Proxy:
    """A loopback TCP proxy to ``target``. :meth:`partition` makes every
    connection open now drop what it carries, both ways, until either end
    closes (then it closes the other); connections made later pass."""

    target: tuple[str, int] | None = None
    address: tuple[str, int] = ("127.0.0.1", 0)
    _partitioned: list[trio.Event] = attrs.field(factory=list)
    _open: list[trio.Event] = attrs.field(factory=list)
    _scopes: set[trio.CancelScope] = attrs.field(factory=set)
    _opened: trio.Event = attrs.field(factory=trio.Event)
    dropped: int = 0

    async def serve(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
        self.address = listeners[0].socket.getsockname()[:2]
        task_status.started()
        await trio.serve_listeners(self._handle, listeners)

    def partition(self) -> None:
        for event in self._open:
            event.set()

    async def wait_open(self) -> None:
        """Wait until a connection is open through the proxy."""
        while not self._scopes:
            await self._opened.wait()

    def cut(self) -> None:
        """Close every connection open now (both ends see it end); connections
        made later pass."""
        for scope in self._scopes:
            scope.cancel()

    async def _handle(self, client: trio.SocketStream) -> None:
        cut = trio.Event()
        self._open.append(cut)
        assert self.target is not None, "a proxy is told its target before it is dialled"
        scope = trio.CancelScope()
        self._scopes.add(scope)
        self._opened.set()
        self._opened = trio.Event()
        try:
            with scope:
                async with (
                    client,
                    await trio.open_tcp_stream(*self.target) as server,
                    trio.open_nursery() as nursery,
                ):
                    done = functools.partial(nursery.cancel_scope.cancel)
                    nursery.start_soon(self._pump, client, server, cut, done)
                    nursery.start_soon(self._pump, server, client, cut, done)
        except (trio.BrokenResourceError, OSError):
            pass
        finally:
            self._open.remove(cut)
            self._scopes.discard(scope)

    async def _pump(
        self,
        source: trio.SocketStream,
        sink: trio.SocketStream,
        cut: trio.Event,
        done: Callable[[], None],
    ) -> None:
        try:
            while True:
                data = await source.receive_some(65536)
                if not data:
                    break
                if cut.is_set():
                    self.dropped += len(data)
                    continue
                await sink.send_all(data)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass
        finally:
            done()
