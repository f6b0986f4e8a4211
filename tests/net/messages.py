"""Messages the network tests send between nodes."""

from __future__ import annotations

from typing import Any

import attrs

from actors import Reply
from actors.net import Codec

SECRET = b"the shared secret of the tests!!"


@attrs.frozen
class Add:
    amount: int


@attrs.frozen
class Total:
    reply: Reply[int]


@attrs.frozen
class Echo:
    text: str
    reply: Reply[str]


@attrs.frozen
class Hold:
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
    codec = Codec()
    for cls in (Add, Total, Echo, Hold, Keep, Release, Tagged, Positive):
        codec.register(cls, name=cls.__name__)
    return codec
