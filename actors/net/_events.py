"""The events a :class:`~actors.net.Connection` returns from the bytes it
is fed: what the peer did, for the node around it to act on."""

from __future__ import annotations

from typing import final

import attrs


@final
@attrs.frozen
class Authenticated:
    """The peer proved it holds the secret: messages may flow."""

    node: str


@final
@attrs.frozen
class MessageReceived:
    """A message for the actor ``target``; an ask when ``reply`` is a reply
    number (its reply field is ``None`` until the node attaches a reply)."""

    target: int
    message: object
    reply: int | None


@final
@attrs.frozen
class AnswerReceived:
    reply: int
    value: object


@final
@attrs.frozen
class FailureReceived:
    """The ask ``reply`` failed remotely with an error of class ``error``."""

    reply: int
    error: str
    message: str


@final
@attrs.frozen
class CreditGranted:
    messages: int


@final
@attrs.frozen
class LookupRequested:
    request: int
    name: str


@final
@attrs.frozen
class FindRequested:
    request: int
    key: str


@final
@attrs.frozen
class FoundReceived:
    request: int
    actors: tuple[tuple[str, int], ...]


@final
@attrs.frozen
class WatchRequested:
    """The peer watches the service ``key`` here, under the number ``request``."""

    request: int
    key: str


@final
@attrs.frozen
class ListingReceived:
    """The actors registered under the key of our watch ``request``, now."""

    request: int
    actors: tuple[tuple[str, int], ...]


@final
@attrs.frozen
class UnwatchRequested:
    """The peer ends its watch ``request``."""

    request: int


@final
@attrs.frozen
class RestartedReceived:
    """A behaviour call of the peer's actor ``target`` ended; unless an
    ``EndedReceived`` follows, it is restarted at the same address."""

    target: int


@final
@attrs.frozen
class SpawnRequested:
    """The peer asks for an actor running the behaviour allowed under ``key``."""

    request: int
    key: str
    args: bytes
    name: str | None


@final
@attrs.frozen
class RequestRefused:
    """The peer refused our request ``request`` (a spawn)."""

    request: int
    error: str
    message: str


@final
@attrs.frozen
class AskCancelled:
    """The peer's asker of its ask ``reply`` gave up."""

    reply: int


@final
@attrs.frozen
class StopRequested:
    target: int
    kill: bool = False


@final
@attrs.frozen
class EndedReceived:
    """The remote actor ``target`` ended: ``reason`` is its exit reason's
    class name, ``detail`` its text, ``seq`` a failure's message stamp."""

    target: int
    reason: str
    detail: str
    seq: int | None


@final
@attrs.frozen
class FrameRefused:
    """We refused a frame of the peer (and answered it with an ``Error``
    frame): ``reply`` is the ask's number when the frame was an ask."""

    reason: str
    reply: int | None


@final
@attrs.frozen
class PeerRefused:
    """The peer refused one of our frames (an ``Error`` frame came back)."""

    reason: str
    reply: int | None


@final
@attrs.frozen
class ConnectionClosed:
    """The connection is over: ``by_peer`` if the peer closed it with a
    ``Close`` frame giving ``reason``; else we closed it, or the stream
    ended without one."""

    reason: str
    by_peer: bool


Event = (
    Authenticated
    | MessageReceived
    | AnswerReceived
    | FailureReceived
    | CreditGranted
    | LookupRequested
    | FindRequested
    | FoundReceived
    | WatchRequested
    | ListingReceived
    | UnwatchRequested
    | RestartedReceived
    | StopRequested
    | AskCancelled
    | SpawnRequested
    | RequestRefused
    | EndedReceived
    | FrameRefused
    | PeerRefused
    | ConnectionClosed
)
