"""Messages and behaviours shared by the actor tests, and the codec and
secret of the network tests (``tests/actors/net``)."""

from __future__ import annotations

from typing import Any

import attrs
import trio

from actors import Inbox, Reply
from actors.net import Codec

SECRET = b"the shared secret of the tests!!"


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


@attrs.frozen
class Echo:
    text: str
    reply: Reply[str]


@attrs.frozen
class Withheld:
    """Asked, and answered only when the actor is told to let go."""

    reply: Reply[int]


@attrs.frozen
class Keep:
    """An ask whose value may nest as deep as the sender likes."""

    value: list[Any]
    reply: Reply[int]


@attrs.frozen
class Release:
    pass


@attrs.frozen
class Tagged:
    tags: tuple[str, ...]
    weight: float = 1.0


@attrs.frozen
class Positive:
    value: int = attrs.field()

    @value.validator
    def _check(self, attribute: attrs.Attribute[int], value: int) -> None:
        if value <= 0:
            raise ValueError(f"value must be > 0, not {value}")


@attrs.frozen
class Unregistered:
    pass


def codec() -> Codec:
    """The codec of the network tests' nodes: every message above but
    ``Unregistered`` (and ``Boom``, ``Hold``: those hold no reply to send)."""
    codec = Codec()
    for cls in (Add, Total, Echo, Withheld, Keep, Release, Tagged, Positive):
        codec.register(cls, name=cls.__name__)
    return codec
