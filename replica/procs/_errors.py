"""The errors of the replica on OS processes: one base, :class:`ProcsError`,
each named for its failure (docs/processes.md). Those callers catch as a
standard kind keep it: a listen that failed is an :class:`OSError`, bad TLS
options a :class:`ValueError`, bytes off the wire the codec's
:class:`~actors.net.CodecError` (and a :class:`ValueError`)."""

from __future__ import annotations

from actors.net import CodecError


class ProcsError(Exception):
    """Base class of every error raised by :mod:`replica.procs`."""


class ClusterError(ProcsError):
    """A replica process did not start, or went away when it must not have."""


class ListenFailedError(ProcsError, OSError):
    """``--listen`` could not be listened on (in use, not this host's)."""


class ProcessAbortedError(ProcsError):
    """A worker of this process panicked: every runtime of the process ends
    with it, and the OS process exits non-zero (shared fate)."""


class ShardHostLostError(ProcsError):
    """The shard host (the driver) cannot be reached: the process ends
    rather than outlive the driver that started it."""


class LinkLostError(ProcsError):
    """The node an outlink sends to could not be reached."""


class ItemTooLargeError(ProcsError):
    """An item no frame can carry (one row, a peek's result or an exchange's
    batch over the nodes' ``max_frame``): the node stops, named, rather than
    drop it and go on without it."""


class HandlerFailedError(ProcsError):
    """An item's handler raised: the node stops (a bug, or a peer that broke
    the protocol), rather than go on without the link that failed."""


class WireError(ProcsError, CodecError, ValueError):
    """Bytes that are not a value of the replica's protocol."""


class TlsError(ProcsError, ValueError):
    """TLS options that cannot work: given in part, or files that do not load."""


class SecretFileError(ProcsError):
    """The secret file cannot be read (it does not open, or nothing arrived
    in time)."""
