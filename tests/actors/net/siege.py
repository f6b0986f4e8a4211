"""Strangers that hold connections to a listening node: idle ones and
slow-drip ones, re-opened when they are closed (tests of what connections
that never authenticate may cost a node)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import trio


class Siege:
    """Strangers holding connections to a listener. Each opens a connection
    with ``dial`` and holds it (sending a byte every ``pause`` seconds if it
    drips, else nothing), and opens another when it is closed (after
    ``again_after`` seconds), ``times`` times in all (or until cancelled).
    ``opened`` counts the connections opened, ``reached(n)`` waits until it
    is ``n``."""

    def __init__(
        self,
        dial: Callable[[], Awaitable[trio.abc.Stream]],
        pause: float,
        *,
        again_after: float = 0,
    ) -> None:
        self._dial = dial
        self._pause = pause
        self._again_after = again_after
        self.opened = 0
        self.failed: list[OSError] = []
        self._waiting: list[tuple[int, trio.Event]] = []

    async def reached(self, count: int) -> None:
        if self.opened < count:
            event = trio.Event()
            self._waiting.append((count, event))
            await event.wait()

    async def hold(self, drip: bool, times: int | None = None) -> None:
        done = 0
        while times is None or done < times:
            done += 1
            try:
                stream = await self._dial()
            except OSError as error:  # a full backlog: not what is tested
                self.failed.append(error)
                return
            self.opened += 1
            for count, event in self._waiting:
                if self.opened >= count:
                    event.set()
            async with stream:
                await self._hold_one(stream, drip)
            if self._again_after:
                await trio.sleep(self._again_after)

    async def _hold_one(self, stream: trio.abc.Stream, drip: bool) -> None:
        try:
            if drip:
                await stream.send_all(b"\x00\x00\x03")  # a frame length near 1,000 bytes
            while True:
                with trio.move_on_after(self._pause) as idle:
                    if not await stream.receive_some():
                        return
                if idle.cancelled_caught and drip:
                    await stream.send_all(b"\x01")
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            return
