"""Addresses and the envelopes messages travel in."""

from __future__ import annotations

import contextvars
from collections.abc import Sequence
from typing import Generic, TypeVar

import attrs

M = TypeVar("M")
M_co = TypeVar("M_co", covariant=True)


@attrs.frozen(order=True)
class Address:
    """Who an actor (or a sequencer) is: a name, unique among the live actors of
    its system, and a uid, unique for the system's whole life.

    ``incarnation`` is 0 for an actor of this process. For a remote actor
    (:mod:`actors.net`) it is the incarnation of its node: a random number
    drawn each time a node opens, so an actor of a node that restarted has
    another address than the one of the same name and uid before, and a
    stale ``Down`` or look-up cannot be taken for the new one's."""

    name: str
    uid: int
    incarnation: int = 0

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        # A local actor's address reads as it always did.
        if self.incarnation:
            return f"Address(name={self.name!r}, uid={self.uid}, incarnation={self.incarnation})"
        return f"Address(name={self.name!r}, uid={self.uid})"


@attrs.frozen(slots=True)
class Envelope(Generic[M_co]):
    """A delivered message with its stamp.

    ``seq`` is the message's position in the stream that ordered it: for a direct
    ``tell`` or ``ask``, the receiving mailbox's own count (0, 1, 2, ...); for a
    :class:`~actors.Sequencer` broadcast, the sequencer's stamp, which is the same
    for every member of its group. ``sender`` is the actor (or sequencer) that
    sent it, or ``None`` when it came from outside any actor.
    """

    message: M_co
    seq: int
    sender: Address | None


_new = object.__new__
_set_message = Envelope.__dict__["message"].__set__
_set_seq = Envelope.__dict__["seq"].__set__
_set_sender = Envelope.__dict__["sender"].__set__


def stamp_all(messages: Sequence[M], first: int, sender: Address | None) -> list[Envelope[M]]:
    """``[Envelope(message, first + i, sender) for i, message in ...]``, built
    without a call of ``Envelope.__init__`` each (its slots written
    directly): a sequencer's batch stamps thousands of messages, and the
    frozen class's ``__init__`` costs more than the rest of a delivery."""
    envelopes: list[Envelope[M]] = []
    append = envelopes.append
    for seq, message in enumerate(messages, first):
        envelope = _new(Envelope)
        _set_message(envelope, message)
        _set_seq(envelope, seq)
        _set_sender(envelope, sender)
        append(envelope)
    return envelopes


# The actor whose task is running: the sender stamped on what it sends.
current_address: contextvars.ContextVar[Address | None] = contextvars.ContextVar(
    "actors_current_address", default=None
)
