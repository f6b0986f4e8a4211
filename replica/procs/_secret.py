"""Reading the nodes' shared secret (``serve --secret-file``).

A regular file is read at once. Anything else that can be opened for reading
(a pipe, as shell process substitution ``--secret-file <(...)`` gives, a
FIFO, a device) is read to its end with a deadline, ``SECRET_PATIENCE``:
opened without waiting for a writer, and given up, named, when nothing more
came in time (a FIFO nobody writes to blocked the process for ever, silent).
A secret longer than ``SECRET_LIMIT`` is refused, named: cutting it would
make two nodes given the same long file agree on a secret neither was given.
"""

from __future__ import annotations

import os
import select
import stat
import time

from ._errors import SecretFileError

SECRET_LIMIT = 1 << 16
"""The most bytes a secret may have; a longer one is refused."""
SECRET_PATIENCE = 5.0
"""Seconds a secret that is not a regular file has to arrive, whole."""


def read_secret_file(
    path: str, *, patience: float = SECRET_PATIENCE, limit: int = SECRET_LIMIT
) -> bytes:
    """The bytes of ``path``: a regular file's at once, any other file's (a
    pipe, a FIFO) as they come until its end, within ``patience`` seconds in
    all. Raises :class:`SecretFileError` naming the path and why: the OS's
    words when it does not open or read, that nothing more came in time (the
    writer has not written it all and closed it), or that it holds more than
    ``limit`` bytes. Never blocks past ``patience``."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as error:
        raise SecretFileError(f"{error.strerror}: {path}") from None
    try:
        if stat.S_ISREG(os.fstat(fd).st_mode):
            secret = _read_file(fd, limit + 1)
        else:
            secret = _read_until_end(fd, path, patience, limit + 1)
    except OSError as error:
        raise SecretFileError(f"{error.strerror}: {path}") from None
    finally:
        os.close(fd)
    if len(secret) > limit:
        raise SecretFileError(f"longer than {limit} bytes, the most a secret may have: {path}")
    return secret


def _read_file(fd: int, limit: int) -> bytes:
    """A regular file's first ``limit`` bytes."""
    parts: list[bytes] = []
    size = 0
    while size < limit:
        part = os.read(fd, limit - size)
        if not part:
            break
        parts.append(part)
        size += len(part)
    return b"".join(parts)


def _read_until_end(fd: int, path: str, patience: float, limit: int) -> bytes:
    """What ``fd`` (non-blocking) gives until its end or ``limit`` bytes,
    waiting for each part at most until ``patience`` seconds from now."""
    deadline = time.monotonic() + patience
    ready = select.poll()
    ready.register(fd, select.POLLIN)
    parts: list[bytes] = []
    size = 0
    while size < limit:
        left = deadline - time.monotonic()
        # (A FIFO with no writer yet reports nothing: the wait is the deadline's.)
        if left <= 0 or not ready.poll(left * 1000):
            raise SecretFileError(
                f"not read to its end within {patience:g}s (a pipe or FIFO whose writer has "
                f"not written the secret and closed it): {path}"
            )
        try:
            part = os.read(fd, limit - size)
        except BlockingIOError:
            continue
        if not part:
            break
        parts.append(part)
        size += len(part)
    return b"".join(parts)
