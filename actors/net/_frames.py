"""The frames of the node protocol: what one MessagePack payload holds.

Each frame is a msgspec struct encoded as an array whose first item is its
tag, behind a 4-byte big-endian length. The handshake's frames (``Hello``,
``Proof``) are the only ones accepted before it completes.
"""

from __future__ import annotations

import msgspec

VERSION = 4
"""Version 4: a node may watch a service key on another (``Watch``), which
sends a ``Listed`` of its actors under the key at once and after each change,
until ``Unwatch``: the registry across nodes; and an exported actor's
behaviour call that ends is said (``Restarted``), so a remote ``stop`` of a
supervised actor returns, and its references go on after its restart.
Version 3: once a side has checked the other's proof, it sends the names
of the message types its codec accepts (``Types``) before its first credit,
so the other refuses, at the sender, a message this side could not decode;
``Stop`` may be a kill; a side that has sent nothing for a while sends
a ``Ping``, so a peer silent past its timeout is taken for down; and an
asker that gave up says so (``Cancel``); and a node may ask another to spawn
an actor it allows (``Spawn``, answered with ``Found`` or ``Refusal``).
Version 2: a message's and an answer's values travel as a MessagePack
``bin`` (bytes), so a frame decodes without looking into them: values the
codec cannot decode are refused under the frame's reply number."""


class Hello(msgspec.Struct, tag=1, tag_field="frame", array_like=True, frozen=True):
    version: int
    node: str
    challenge: bytes


class Proof(msgspec.Struct, tag=2, tag_field="frame", array_like=True, frozen=True):
    digest: bytes


class Send(msgspec.Struct, tag=3, tag_field="frame", array_like=True, frozen=True):
    target: int
    type: str
    args: bytes
    reply: int | None = None


class Answer(msgspec.Struct, tag=4, tag_field="frame", array_like=True, frozen=True):
    reply: int
    type: str | None
    value: bytes


class Failure(msgspec.Struct, tag=5, tag_field="frame", array_like=True, frozen=True):
    reply: int
    error: str
    message: str


class Credit(msgspec.Struct, tag=6, tag_field="frame", array_like=True, frozen=True):
    messages: int


class Lookup(msgspec.Struct, tag=7, tag_field="frame", array_like=True, frozen=True):
    request: int
    name: str


class Find(msgspec.Struct, tag=8, tag_field="frame", array_like=True, frozen=True):
    request: int
    key: str


class Found(msgspec.Struct, tag=9, tag_field="frame", array_like=True, frozen=True):
    request: int
    actors: list[tuple[str, int]]


class Stop(msgspec.Struct, tag=10, tag_field="frame", array_like=True, frozen=True):
    target: int
    kill: bool = False
    """A kill (cancel the behaviour now), not a graceful stop."""


class Ended(msgspec.Struct, tag=11, tag_field="frame", array_like=True, frozen=True):
    target: int
    reason: str
    detail: str
    seq: int | None


class Error(msgspec.Struct, tag=12, tag_field="frame", array_like=True, frozen=True):
    reason: str
    reply: int | None


class Close(msgspec.Struct, tag=13, tag_field="frame", array_like=True, frozen=True):
    reason: str


class Types(msgspec.Struct, tag=14, tag_field="frame", array_like=True, frozen=True):
    names: list[str]
    incarnation: int = 0
    """The sender's node's incarnation (see ``Address.incarnation``)."""


class Cancel(msgspec.Struct, tag=16, tag_field="frame", array_like=True, frozen=True):
    """The asker of the ask ``reply`` gave up (timed out or was cancelled)."""

    reply: int


class Spawn(msgspec.Struct, tag=17, tag_field="frame", array_like=True, frozen=True):
    """Spawn the behaviour the receiver allows under ``key`` with ``args``
    (the codec's values); answered with ``Found`` or ``Refusal``."""

    request: int
    key: str
    args: bytes
    name: str | None


class Refusal(msgspec.Struct, tag=18, tag_field="frame", array_like=True, frozen=True):
    """The request ``request`` was refused: ``error`` is the error's class
    name, ``message`` its text."""

    request: int
    error: str
    message: str


class Watch(msgspec.Struct, tag=19, tag_field="frame", array_like=True, frozen=True):
    """Send ``Listed`` frames for the service ``key`` (now, and after each
    change of its actors here) under the number ``request``."""

    request: int
    key: str


class Listed(msgspec.Struct, tag=20, tag_field="frame", array_like=True, frozen=True):
    """The actors registered under the key of the watch ``request`` now."""

    request: int
    actors: list[tuple[str, int]]


class Unwatch(msgspec.Struct, tag=21, tag_field="frame", array_like=True, frozen=True):
    """Stop the watch ``request``."""

    request: int


class Restarted(msgspec.Struct, tag=22, tag_field="frame", array_like=True, frozen=True):
    """A behaviour call of the exported actor ``target`` ended (a stop, a
    failure): if the actor ends for good, ``Ended`` follows; else its
    supervisor restarts it, at the same address."""

    target: int


class Ping(msgspec.Struct, tag=15, tag_field="frame", array_like=True, frozen=True):
    """A heartbeat: sent by a side that has sent nothing for a while, so the
    other can tell a silent peer from an idle one."""


Frame = (
    Hello | Proof | Send | Answer | Failure | Credit | Lookup | Find | Found | Stop | Ended | Error
) | (Close | Types | Ping | Cancel | Spawn | Refusal | Watch | Listed | Unwatch | Restarted)
