"""The node protocol as a sans-I/O state machine (h11's shape): bytes in,
events out; calls in, bytes out. No sockets, no Trio: a
:class:`Connection` is driven by whoever owns the stream (:mod:`._node`),
and tested on its own.

One connection, both directions:

* **Framing.** A frame is a 4-byte big-endian length and that many bytes of
  MessagePack. A length over ``max_frame`` (before the handshake completes,
  over :data:`HANDSHAKE_MAX_FRAME`) closes the connection with a reason: its
  bytes are never buffered.
* **Handshake** (Erlang's cookie, with HMAC). Each side sends ``Hello`` (its
  node name and a random challenge); each answers the other's challenge with
  ``Proof``: HMAC-SHA256 under the shared secret of its role, the peer's
  challenge, its own challenge and its name. The role (the side that dialled
  is the client) is in the digest, so a proof reflected back is wrong. A
  wrong proof, or any other frame before both proofs checked, closes the
  connection with a reason; nothing the peer sent is delivered.
* **Types.** Once a side has checked the other's proof, it sends the names
  of the message types its codec accepts and its node's incarnation, then
  its first credit: a message
  whose type the other side's codec lacks is refused at the sender
  (:class:`CodecError` from :meth:`Connection.send_message`), not lost on
  the way. A second ``Types`` frame closes the connection.
* **Messages** go to a target (an actor's uid on the receiving node) as
  their codec name and field values; an ask carries a reply number, and its
  answer (``Answer`` or ``Failure``) comes back under it. A frame that
  cannot be decoded, or names a type the codec does not know, is answered
  with an ``Error`` frame (carrying the reply number when there was one)
  and the connection goes on.
* **Heartbeats.** A side that has sent nothing for a while sends a
  ``Ping``; whoever owns the connection counts the frames received
  (:attr:`ConnectionStatistics.frames_received`) to tell a silent peer from
  an idle one (:mod:`._peer`'s failure detector).
* **Credit.** Each side may send as many messages as the other granted:
  ``window`` at first, then what the other grants back as it delivers them
  (in batches of half a window, or when told to flush). A peer that sends
  past its credit is closed. So what a receiver holds undelivered is at most
  ``window`` messages, whatever the sender does.
"""

from __future__ import annotations

import enum
import hashlib
import hmac
import os
import struct
from collections.abc import Callable
from typing import cast, final

import attrs
import msgspec

from ._codec import Codec, RefIn, RefOut, value_error
from ._errors import CodecError, ConnectionStateError, NoCreditError
from ._events import (
    AnswerReceived,
    AskCancelled,
    Authenticated,
    ConnectionClosed,
    CreditGranted,
    EndedReceived,
    Event,
    FailureReceived,
    FindRequested,
    FoundReceived,
    FrameRefused,
    ListingReceived,
    LookupRequested,
    MessageReceived,
    PeerRefused,
    RequestRefused,
    RestartedReceived,
    SpawnRequested,
    StopRequested,
    UnwatchRequested,
    WatchRequested,
)
from ._frames import (
    VERSION,
    Answer,
    Cancel,
    Close,
    Credit,
    Ended,
    Error,
    Failure,
    Find,
    Found,
    Frame,
    Hello,
    Listed,
    Lookup,
    Ping,
    Proof,
    Refusal,
    Restarted,
    Send,
    Spawn,
    Stop,
    Types,
    Unwatch,
    Watch,
)

HANDSHAKE_MAX_FRAME = 1024

MAX_NODE_NAME = 256
"""The longest node name, in bytes of UTF-8: it travels in the handshake,
whose frames are at most :data:`HANDSHAKE_MAX_FRAME` bytes."""
"""The largest frame accepted before the handshake completed (a peer that
has not proved anything cannot make the node buffer more)."""

DEFAULT_MAX_FRAME = 1 << 20
DEFAULT_WINDOW = 1024

_LENGTH = struct.Struct(">I")
_NO_LENGTH = bytes(4)

MAX_TEXT = 4096
"""The longest error text, end reason or close reason a frame carries (longer
ones are cut): what fails on one node cannot make a frame the other refuses."""

_SEND_TAG = 3

_SMALL_FRAME = 4096
"""Frames up to this size are sliced out of what was read as bytes."""


def _clip(text: str) -> str:
    return text if len(text) <= MAX_TEXT else text[: MAX_TEXT - 3] + "..."


def _is_send(payload: bytes | bytearray | memoryview) -> bool:
    """Whether an undecodable frame says it is a ``Send`` (an array whose
    first item is its tag): it then counts against the sender's credit, and
    gives it back, as a message refused."""
    return len(payload) >= 2 and 0x90 <= payload[0] <= 0x9F and payload[1] == _SEND_TAG


class Role(enum.Enum):
    """Which side of a connection: the one that dialled is the client."""

    CLIENT = "client"
    SERVER = "server"


class State(enum.Enum):
    HANDSHAKE = "handshake"
    OPEN = "open"
    CLOSED = "closed"


_OPEN: State = State.OPEN
_CLOSED: State = State.CLOSED
"""``State.OPEN`` and ``State.CLOSED`` as module constants: read on every
frame, where an enum member's lookup on its class costs several times a
global's (CPython 3.11). Typed as a ``State``, so that a comparison after
mypy narrowed a connection's state (a method call may have closed it since)
is not taken for unreachable."""


def types_frame_size(codec: Codec) -> int:
    """The size of the ``Types`` frame a connection with ``codec`` sends (the
    largest incarnation): it must fit in a frame."""
    return len(msgspec.msgpack.encode(Types(list(codec.names), 2**63 - 1)))


def _digest(secret: bytes, role: Role, theirs: bytes, ours: bytes, node: str) -> bytes:
    """The proof ``role``'s side named ``node`` gives for the challenge ``theirs``."""
    text = b"actors.net/1 " + role.value.encode() + b"\0" + theirs + ours + node.encode()
    return hmac.new(secret, text, hashlib.sha256).digest()


@final
@attrs.frozen
class ConnectionStatistics:
    """A snapshot of one connection: ``credit`` the messages we may still
    send, ``undelivered`` those the peer sent that we have not reported
    delivered, ``frames_sent`` and ``frames_received`` since it opened."""

    state: State
    credit: int
    undelivered: int
    frames_sent: int
    frames_received: int
    buffered_out: int


def check_node_name(name: str) -> None:
    """Raise :class:`TypeError` unless ``name`` is a non-empty str, and
    :class:`ValueError` unless it is UTF-8 of at most :data:`MAX_NODE_NAME`
    bytes (a lone surrogate is not)."""
    if not (isinstance(name, str) and name):
        raise TypeError(f"a node's name must be a non-empty str, not {name!r}")
    try:
        size = len(name.encode("utf-8"))
    except UnicodeEncodeError:
        raise ValueError(f"a node's name must be valid UTF-8: {name!r}") from None
    if size > MAX_NODE_NAME:
        raise ValueError(f"a node's name takes {size} bytes of UTF-8, over {MAX_NODE_NAME}")


@final
class Connection:
    """One end of a node connection, as a state machine.

    Feed it what the stream delivered with :meth:`receive_data` (``b""`` at
    the end of the stream) and act on the events it returns; send what
    :meth:`data_to_send` returns. Every other method queues frames.

    ``secret`` is the shared secret (bytes, at least 16); ``challenge``
    defaults to 32 random bytes (tests fix it). Construction queues the
    ``Hello``.
    """

    def __init__(
        self,
        *,
        role: Role,
        node: str,
        secret: bytes,
        codec: Codec,
        window: int = DEFAULT_WINDOW,
        max_frame: int = DEFAULT_MAX_FRAME,
        challenge: bytes | None = None,
        incarnation: int = 0,
    ) -> None:
        if not isinstance(secret, bytes) or len(secret) < 16:
            raise ValueError("a node's secret must be bytes, at least 16 of them")
        check_node_name(node)
        if not (isinstance(window, int) and window >= 2):
            raise ValueError(f"a connection's window must be a whole number >= 2, not {window!r}")
        if not (isinstance(max_frame, int) and max_frame >= HANDSHAKE_MAX_FRAME):
            raise ValueError(
                f"a connection's max_frame must be a whole number >= {HANDSHAKE_MAX_FRAME}, "
                f"not {max_frame!r}"
            )
        self.role = role
        self.node = node
        self.peer: str | None = None
        self.state = State.HANDSHAKE
        self._secret = secret
        self._codec = codec
        self._window = window
        self._max_frame = max_frame
        self._challenge = os.urandom(32) if challenge is None else challenge
        self._peer_challenge: bytes | None = None
        self.incarnation = incarnation
        """This side's node's incarnation, told to the peer with the types."""
        self.peer_incarnation = 0
        """The peer's node's incarnation, once its ``Types`` frame came."""
        self.peer_types: frozenset[str] | None = None
        """The message types the peer's codec accepts, once its ``Types``
        frame came (before its first credit: so whenever we may send)."""
        self._proved = False  # we sent our proof
        self._in = bytearray()
        # Bytes the frame begun in _in needs, its length prefix included.
        self._need = 4
        self._out = bytearray()
        self._encoder = msgspec.msgpack.Encoder()
        self._decoder = msgspec.msgpack.Decoder(Frame)
        # Invariant: 0 <= credit; the peer's messages not granted back
        # (undelivered + to_grant) <= window.
        self._credit = 0
        self._undelivered = 0
        self._to_grant = 0
        # Delivered messages whose credit goes back in one Credit frame.
        self._grant_batch = window // 2
        self._sent = 0
        self._received = 0
        self.on_answer: Callable[[int, object], None] | None = None
        """If set, called with an answer's reply number and value instead of
        returning an :class:`AnswerReceived`, when no event comes before it
        in the same :meth:`receive_data` (so events keep their order): how
        a node hands an answer to its asker without an event object."""
        self.encode_ref: RefOut | None = None
        """How a reference in a message or an answer goes out (see
        :mod:`._codec`): set by the node's peer; without it, such a message
        is a :class:`CodecError`."""
        self.decode_ref: RefIn | None = None
        """How a reference that came is made a local one (the peer's)."""
        self.on_message: Callable[[int, object, int | None], None] | None = None
        """If set, called with a message's target, the message and its reply
        number (None for a tell) instead of returning a
        :class:`MessageReceived`, on the same terms as :attr:`on_answer`:
        how a node delivers a message without an event object."""
        self._write(Hello(VERSION, node, self._challenge))

    def __repr__(self) -> str:
        return f"<Connection {self.role.value} {self.node!r} to {self.peer!r}: {self.state.value}>"

    @property
    def credit(self) -> int:
        """How many messages may be sent before the peer grants more."""
        return self._credit

    def statistics(self) -> ConnectionStatistics:
        return ConnectionStatistics(
            self.state, self._credit, self._undelivered, self._sent, self._received, len(self._out)
        )

    # ---- bytes out ----------------------------------------------------------

    @property
    def closed(self) -> bool:
        """Whether the connection is over (closed by either side, or the
        stream ended)."""
        return self.state is _CLOSED

    @property
    def buffered(self) -> int:
        """Bytes queued and not yet taken by :meth:`data_to_send`."""
        return len(self._out)

    def data_to_send(self) -> bytes:
        """Every byte queued so far (frames in the order they were queued),
        now taken: a burst of messages goes out as one write."""
        data = bytes(self._out)
        self._out.clear()
        return data

    def write_to(self, write: Callable[[bytearray], int]) -> int:
        """Hand what is queued to ``write`` (as ``os.write`` on a
        non-blocking socket: it returns how many bytes it took, at once) and
        drop what it took: :meth:`data_to_send` without a copy. Returns
        what ``write`` returned."""
        out = self._out
        sent = write(out)
        del out[:sent]
        return sent

    def _write(self, frame: Frame) -> int:
        """Queue ``frame`` (encoded in place, behind its length); its size."""
        out = self._out
        start = len(out)
        out += _NO_LENGTH
        self._encoder.encode_into(frame, out, start + 4)
        size = len(out) - start - 4
        _LENGTH.pack_into(out, start, size)
        self._sent += 1
        return size

    def _write_checked(self, frame: Frame, what: str) -> None:
        """Queue ``frame``, or raise :class:`CodecError` (queueing nothing)
        if it is over ``max_frame``: the peer would close the connection
        for it (nodes of one cluster share their limits)."""
        out = self._out
        start = len(out)
        out += _NO_LENGTH
        self._encoder.encode_into(frame, out, start + 4)
        size = len(out) - start - 4
        if size <= self._max_frame:
            _LENGTH.pack_into(out, start, size)
            self._sent += 1
        else:
            del out[start:]
            raise CodecError(
                f"{what}: a frame of {size} bytes is over the limit of {self._max_frame} bytes"
            )

    def _require_open(self, call: str) -> None:
        if self.state is not _OPEN:
            raise ConnectionStateError(
                f"{call} on the {self.role.value} connection of node {self.node!r}: "
                f"the connection is {self.state.value}"
            )

    # ---- calls in -----------------------------------------------------------

    def send_message(self, target: int, message: object, reply: int | None = None) -> None:
        """Queue ``message`` for the actor ``target``: an ask if ``reply``
        (a number unique among this side's asks in flight) is given, and the
        message then must carry a ``Reply``. Takes one credit.

        Raises :class:`ConnectionStateError` unless open,
        :class:`NoCreditError` with no credit left, :class:`CodecError` if the
        message cannot be encoded; each changes nothing."""
        self._require_open("send_message")
        if self._credit <= 0:
            raise NoCreditError(f"node {self.peer!r} granted no credit left")
        name, data, carried = self._codec.encode_message(message, self.encode_ref)
        if (reply is not None) != (carried is not None):
            raise CodecError(
                f"message {name!r}: an ask carries a Reply and a reply number, a tell neither"
            )
        self._send_encoded(target, name, data, reply)

    def _send_encoded(self, target: int, name: str, data: bytes, reply: int | None) -> None:
        """:meth:`send_message` of a message the codec encoded already
        (``Codec.encode_message``): for the node, which learns the reply
        from the same encoding."""
        if self.state is not _OPEN:
            self._require_open("send_message")
        if self._credit <= 0:
            raise NoCreditError(f"node {self.peer!r} granted no credit left")
        types = self.peer_types
        if types is not None and name not in types:
            raise CodecError(
                f"node {self.peer!r} does not accept message type {name!r}: its codec "
                "does not register it (nothing was sent)"
            )
        # _write_checked, inline (every message; its error text is built
        # only when it is raised).
        out = self._out
        start = len(out)
        out += _NO_LENGTH
        self._encoder.encode_into(Send(target, name, data, reply), out, start + 4)
        size = len(out) - start - 4
        if size > self._max_frame:
            del out[start:]
            raise CodecError(
                f"message {name!r}: a frame of {size} bytes is over the limit of "
                f"{self._max_frame} bytes"
            )
        _LENGTH.pack_into(out, start, size)
        self._sent += 1
        self._credit -= 1

    def send_answer(self, reply: int, value: object) -> bool:
        """Answer the peer's ask ``reply`` with ``value`` (True). Answers take
        no credit (they are bounded by the peer's asks). A value the codec
        cannot encode is answered as a ``CodecError`` failure instead
        (False)."""
        if self.state is not _OPEN:
            self._require_open("send_answer")
        codec = self._codec
        try:
            if type(value) in codec._by_class:
                name, data = codec.encode_value(value, self.encode_ref)
            else:
                # Codec.encode_value of a builtin value, inline (most answers).
                name = None
                data = codec._encoder.encode(value)
        except CodecError as error:
            self._write(Failure(reply, "CodecError", _clip(str(error))))
            return False
        except (TypeError, ValueError, OverflowError, RecursionError) as error:
            text = str(value_error(error))
            self._write(Failure(reply, "CodecError", _clip(text)))
            return False
        # _write_checked, inline (every answer).
        out = self._out
        start = len(out)
        out += _NO_LENGTH
        self._encoder.encode_into(Answer(reply, name, data), out, start + 4)
        size = len(out) - start - 4
        if size > self._max_frame:
            del out[start:]
            text = (
                f"an answer: a frame of {size} bytes is over the limit of {self._max_frame} bytes"
            )
            self._write(Failure(reply, "CodecError", _clip(text)))
            return False
        _LENGTH.pack_into(out, start, size)
        self._sent += 1
        return True

    def send_failure(self, reply: int, error: str, message: str) -> None:
        """Fail the peer's ask ``reply`` with an error of class ``error``."""
        self._require_open("send_failure")
        self._write(Failure(reply, _clip(error), _clip(message)))

    def send_error(self, reason: str) -> None:
        """Tell the peer that one of its messages was dropped here, and why
        (an ``Error`` frame, as for a refused frame): it counts it and hands
        it to its dead-letters hook (:class:`~actors.net.DeadLetter`)."""
        self._require_open("send_error")
        self._write(Error(_clip(reason), None))

    def send_lookup(self, request: int, name: str) -> None:
        self._require_open("send_lookup")
        self._write_checked(Lookup(request, name), "a look-up")

    def send_find(self, request: int, key: str) -> None:
        self._require_open("send_find")
        self._write_checked(Find(request, key), "a find")

    def send_found(self, request: int, actors: list[tuple[str, int]]) -> None:
        self._require_open("send_found")
        try:
            self._write_checked(Found(request, actors), "found actors")
        except CodecError:
            # More actors than a frame holds: found as none.
            self._write(Found(request, []))

    def send_watch(self, request: int, key: str) -> None:
        """Watch the peer's actors registered under ``key``: ``Listed``
        frames come back (:class:`ListingReceived`), now and after each
        change there, until :meth:`send_unwatch`."""
        self._require_open("send_watch")
        self._write_checked(Watch(request, key), "a watch")

    def send_listed(self, request: int, actors: list[tuple[str, int]]) -> None:
        """The actors under the key of the peer's watch ``request``, now.
        Raises :class:`CodecError` (nothing written) if they do not fit in a
        frame."""
        self._require_open("send_listed")
        self._write_checked(Listed(request, actors), "listed actors")

    def send_restarted(self, target: int) -> None:
        """A behaviour call of our exported actor ``target`` ended."""
        self._require_open("send_restarted")
        self._write(Restarted(target))

    def send_unwatch(self, request: int) -> None:
        self._require_open("send_unwatch")
        self._write(Unwatch(request))

    def send_stop(self, target: int, *, kill: bool = False) -> None:
        """Ask the peer to stop its actor ``target`` gracefully, or with
        ``kill`` to cancel its behaviour now."""
        self._require_open("send_stop")
        self._write(Stop(target, kill))

    def send_spawn(self, request: int, key: str, args: bytes, name: str | None) -> None:
        """Ask the peer to spawn the behaviour it allows under ``key``."""
        self._require_open("send_spawn")
        self._write_checked(Spawn(request, key, args, name), "a spawn")

    def send_refusal(self, request: int, error: str, message: str) -> None:
        """Refuse the peer's request ``request``."""
        self._require_open("send_refusal")
        self._write(Refusal(request, _clip(error), _clip(message)))

    def send_cancel(self, reply: int) -> None:
        """Tell the peer that our asker of ``reply`` gave up (no credit)."""
        self._require_open("send_cancel")
        self._write(Cancel(reply))

    def send_ping(self) -> None:
        """Queue a heartbeat (no credit: it is no message)."""
        self._require_open("send_ping")
        self._write(Ping())

    def send_ended(self, target: int, reason: str, detail: str, seq: int | None) -> None:
        self._require_open("send_ended")
        self._write(Ended(target, _clip(reason), _clip(detail), seq))

    def delivered(self, messages: int = 1, *, flush: bool = False) -> None:
        """Report ``messages`` of the peer's as delivered: their credit goes
        back to the peer once half a window has gathered, or now if
        ``flush`` (the node flushes when its delivery queue is empty)."""
        if self.state is not _OPEN:
            return
        assert 0 <= messages <= self._undelivered, "only received messages are delivered"
        self._undelivered -= messages
        self._to_grant += messages
        if self._to_grant and (flush or self._to_grant >= self._grant_batch):
            self._write(Credit(self._to_grant))
            self._to_grant = 0

    def close(self, reason: str) -> ConnectionClosed | None:
        """Queue a ``Close`` frame with ``reason`` and end the connection; the
        event to act on, or None if it was already closed."""
        if self.state is _CLOSED:
            return None
        self._write(Close(_clip(reason)))
        self.state = State.CLOSED
        return ConnectionClosed(reason, by_peer=False)

    # ---- bytes in -----------------------------------------------------------

    def receive_data(self, data: bytes | bytearray) -> list[Event]:
        """Take bytes from the stream (``b""``: it ended) and return the
        events of every whole frame they complete, in order. After the
        connection closed, bytes are ignored."""
        if self.state is _CLOSED:
            return []
        events: list[Event] = []
        if not data:
            self.state = State.CLOSED
            held = len(self._in)
            reason = "the stream ended without a Close frame"
            if held:
                reason += f" ({held} bytes into a frame)"
            events.append(ConnectionClosed(reason, by_peer=False))
            return events
        if self._in:
            # The rest of a frame: gather until it is whole (copied once).
            self._in += data
            if len(self._in) < self._need:
                return events
            data = bytes(self._in)
            self._in.clear()
        # Small frames are sliced out as bytes (cheaper than a view and its
        # slice); large ones through a view of the data, not copied.
        view: memoryview | None = None
        start = 0
        size = len(data)
        # Whether the connection is open: read again after a frame that may
        # have opened it (the handshake's) or closed it.
        is_open = self.state is _OPEN
        while size - start >= 4:
            (length,) = _LENGTH.unpack_from(data, start)
            limit = self._max_frame if is_open else HANDSHAKE_MAX_FRAME
            if length > limit:
                event = self.close(f"frame of {length} bytes is over the limit of {limit} bytes")
                assert event is not None
                events.append(event)
                return events
            end = start + 4 + length
            if end > size:
                self._need = end - start
                break
            self._received += 1
            if length <= _SMALL_FRAME:
                payload: bytes | bytearray | memoryview = data[start + 4 : end]
            else:
                if view is None:
                    view = memoryview(data)
                payload = view[start + 4 : end]
            start = end
            # The frames of every ask and answer, inline (the hot path).
            try:
                frame = self._decoder.decode(payload)
            except (msgspec.DecodeError, msgspec.ValidationError, RecursionError) as error:
                self._undecodable(payload, error, events)
            else:
                kind = type(frame)
                if kind is Send and is_open:
                    self._send_in(cast("Send", frame), events)
                elif kind is Answer and is_open:
                    answer = cast("Answer", frame)
                    try:
                        value = self._codec.decode_value(answer.type, answer.value, self.decode_ref)
                    except CodecError as codec_error:
                        events.append(FailureReceived(answer.reply, "CodecError", str(codec_error)))
                    else:
                        on_answer = self.on_answer
                        if on_answer is None or events:
                            events.append(AnswerReceived(answer.reply, value))
                        else:
                            on_answer(answer.reply, value)
                    continue  # (an answer leaves the state as it was)
                else:
                    self._handle_frame(frame, events)
            if self.state is not _OPEN:
                if self.state is _CLOSED:
                    return events
                is_open = False
            else:
                is_open = True
        else:
            self._need = 4
        if start < size:
            self._in += data[start:] if view is None else view[start:]
        return events

    def _undecodable(
        self, payload: bytes | bytearray | memoryview, error: Exception, events: list[Event]
    ) -> None:
        if self.state is not _OPEN:
            self._refuse(f"handshake: undecodable frame: {error}", events)
            return
        reason = _clip(f"undecodable frame: {error}")
        is_send = _is_send(payload)
        # A message, as far as credit goes: refused, so delivered.
        if is_send and not self._count_message(events):
            return
        self._write(Error(reason, None))
        if is_send:
            self.delivered(1)
        events.append(FrameRefused(reason, None))

    def _handle_frame(self, frame: Frame, events: list[Event]) -> None:
        if self.state is State.HANDSHAKE:
            self._handshake(frame, events)
            return
        if type(frame) is Send:
            self._send_in(frame, events)
            return
        match frame:
            case Answer():
                try:
                    value = self._codec.decode_value(frame.type, frame.value, self.decode_ref)
                except CodecError as error:
                    events.append(FailureReceived(frame.reply, "CodecError", str(error)))
                else:
                    events.append(AnswerReceived(frame.reply, value))
            case Failure():
                events.append(FailureReceived(frame.reply, frame.error, frame.message))
            case Credit():
                if self.peer_types is None:
                    self._refuse("a Credit frame before the Types frame", events)
                    return
                if frame.messages <= 0:
                    self._refuse(f"a credit of {frame.messages} messages", events)
                    return
                self._credit += frame.messages
                events.append(CreditGranted(frame.messages))
            case Lookup():
                events.append(LookupRequested(frame.request, frame.name))
            case Find():
                events.append(FindRequested(frame.request, frame.key))
            case Found():
                events.append(FoundReceived(frame.request, tuple(frame.actors)))
            case Watch():
                events.append(WatchRequested(frame.request, frame.key))
            case Listed():
                events.append(ListingReceived(frame.request, tuple(frame.actors)))
            case Unwatch():
                events.append(UnwatchRequested(frame.request))
            case Restarted():
                events.append(RestartedReceived(frame.target))
            case Stop():
                events.append(StopRequested(frame.target, frame.kill))
            case Ended():
                events.append(EndedReceived(frame.target, frame.reason, frame.detail, frame.seq))
            case Error():
                events.append(PeerRefused(frame.reason, frame.reply))
            case Close():
                self.state = State.CLOSED
                events.append(ConnectionClosed(frame.reason, by_peer=True))
            case Ping():
                pass  # a heartbeat: what counts is that a frame came
            case Cancel():
                events.append(AskCancelled(frame.reply))
            case Spawn():
                events.append(SpawnRequested(frame.request, frame.key, frame.args, frame.name))
            case Refusal():
                events.append(RequestRefused(frame.request, frame.error, frame.message))
            case Types():
                if self.peer_types is not None:
                    self._refuse("a second Types frame", events)
                    return
                self.peer_types = frozenset(frame.names)
                self.peer_incarnation = frame.incarnation
            case Hello() | Proof():
                self._refuse(f"a {type(frame).__name__} frame after the handshake", events)
            case Send():  # pragma: no cover (handled above)
                pass

    def _count_message(self, events: list[Event]) -> bool:
        """Count one message of the peer's against the window; False (and the
        connection closed) if it sent past its credit."""
        self._undelivered += 1
        # What the peer sent and we have not granted back yet: delivered
        # messages whose credit waits for a batch still count.
        if self._undelivered + self._to_grant > self._window:
            self._refuse(f"the peer sent past its credit of {self._window} messages", events)
            return False
        return True

    def _send_in(self, frame: Send, events: list[Event]) -> None:
        self._undelivered += 1
        if self._undelivered + self._to_grant > self._window:
            self._refuse(f"the peer sent past its credit of {self._window} messages", events)
            return
        try:
            message = self._codec.decode(
                frame.type, frame.args, ask=frame.reply is not None, refs=self.decode_ref
            )
        except CodecError as error:
            reason = _clip(str(error))
            self._write(Error(reason, frame.reply))
            # Refused, so delivered as far as credit goes.
            self.delivered(1)
            events.append(FrameRefused(reason, frame.reply))
            return
        on_message = self.on_message
        if on_message is None or events:
            events.append(MessageReceived(frame.target, message, frame.reply))
        else:
            on_message(frame.target, message, frame.reply)

    def _handshake(self, frame: Frame, events: list[Event]) -> None:
        match frame:
            case Hello() if self._peer_challenge is None:
                if frame.version != VERSION:
                    self._refuse(
                        f"handshake: protocol version {frame.version}, not {VERSION}", events
                    )
                    return
                if frame.challenge == self._challenge or len(frame.challenge) < 16:
                    self._refuse("handshake: a reused or short challenge", events)
                    return
                if not frame.node:
                    self._refuse("handshake: a node without a name", events)
                    return
                self.peer = frame.node
                self._peer_challenge = frame.challenge
                self._write(
                    Proof(
                        _digest(
                            self._secret, self.role, frame.challenge, self._challenge, self.node
                        )
                    )
                )
            case Proof() if self._peer_challenge is not None:
                assert self.peer is not None
                peer_role = Role.SERVER if self.role is Role.CLIENT else Role.CLIENT
                expected = _digest(
                    self._secret, peer_role, self._challenge, self._peer_challenge, self.peer
                )
                if not hmac.compare_digest(frame.digest, expected):
                    self._refuse(f"handshake: node {self.peer!r} does not hold the secret", events)
                    return
                self.state = State.OPEN
                self._credit = 0
                self._codec._in_use = True  # the peer learns its types now
                self._write(Types(list(self._codec.names), self.incarnation))
                self._write(Credit(self._window))
                events.append(Authenticated(self.peer))
            case _:
                self._refuse(f"handshake: unexpected {type(frame).__name__} frame", events)

    def _refuse(self, reason: str, events: list[Event]) -> None:
        event = self.close(reason)
        assert event is not None
        events.append(event)
