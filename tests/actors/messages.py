"""Messages and behaviours shared by the actor tests."""

from __future__ import annotations

import attrs
import trio

from actors import Inbox, Reply


@attrs.frozen
class Add:
    amount: int


@attrs.frozen
class Total:
    reply: Reply[int]


@attrs.frozen
class Boom:
    """Makes the counter raise."""


@attrs.frozen
class Hold:
    """Makes the counter wait on an event before it goes on."""

    event: trio.Event


CounterMessage = Add | Total | Boom | Hold


async def counter(inbox: Inbox[CounterMessage]) -> None:
    total = 0
    async for envelope in inbox:
        match envelope.message:
            case Add(amount):
                total += amount
            case Total(reply):
                reply.send(total)
            case Boom():
                raise ValueError("boom")
            case Hold(event):
                await event.wait()


async def recorder(inbox: Inbox[object], seen: list[object]) -> None:
    async for envelope in inbox:
        seen.append(envelope.message)
