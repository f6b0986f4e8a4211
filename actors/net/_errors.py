"""The errors of :mod:`actors.net`: one base (itself an
:class:`~actors.ActorError`), one noun per failure."""

from __future__ import annotations

import trio

from .._core._errors import ActorError


class NetError(ActorError):
    """Base class of every error raised by :mod:`actors.net`."""


class HandshakeError(NetError):
    """The peer did not prove it holds the node's secret (or spoke another
    version of the protocol): the connection was refused and nothing it sent
    was delivered."""


class CodecError(NetError):
    """A message cannot be encoded or decoded: its class is not registered in
    the codec, a field holds a value the wire cannot carry, or a frame does
    not match its class's fields. Raised on the sending side before anything
    is sent; on the receiving side the frame is answered with an error frame."""


class ConnectionStateError(NetError):
    """A call on a :class:`~actors.net.Connection` its state does not allow
    (a message before the handshake completed, anything after close); the
    error names the state, and nothing changed."""


class NoCreditError(NetError, trio.WouldBlock):
    """A message was offered to a connection whose peer granted no credit
    left: wait for a :class:`~actors.net.CreditGranted` event. Also a
    :class:`trio.WouldBlock`. Nothing was sent."""


class NodeDownError(NetError, trio.BrokenResourceError):
    """The connection to the node an ask went to was lost before the reply
    came: whether the remote actor handled the message is unknown. Also a
    :class:`trio.BrokenResourceError`."""


class RemoteError(NetError):
    """The remote handler failed the ask with an error that has no local
    equivalent, or the peer refused the message (an unknown type, a frame it
    could not decode): ``kind`` names the remote error's class."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(f"{kind}: {message}")
        self.kind = kind
