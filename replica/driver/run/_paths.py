"""The files the command writes: checked before anything runs, and spec
rewrites that replace the file whole or not at all.

The check is authoritative: after the checks that give a precise message
(a folder, a missing folder, no write permission), each output file is
opened for writing as the command will open it, without truncating it; one
that did not exist is removed again, so a run that stops early leaves nothing
behind and an existing output keeps its content until the command writes it.
``--rewrite`` makes and removes a temporary file in each spec's folder;
``simulate --out`` makes and removes a file in the folder, or the folder
itself when it is missing. What the kernel refuses (a name too long, a
read-only or pseudo file system) is found there, before anything runs; a
later write can then fail only for lack of space.

Every failure is an :class:`OutputError` whose message names the option (or
the spec) and the path; the command prints it as one line and exits 2.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from collections.abc import Callable, Sequence
from typing import TextIO

from ..lang._errors import DriverError
from ..lang._escape import escaped


class OutputError(DriverError):
    """An output the command cannot write: ``--trace out/t.jsonl: reason``;
    the message, which names the path, :func:`escaped`."""

    def __init__(self, message: str) -> None:
        super().__init__(escaped(message))


def check_outputs(
    files: Sequence[tuple[str, str]],
    *,
    folder: tuple[str, str] | None = None,
    specs: Sequence[str] = (),
) -> None:
    """Check that the output ``files`` (pairs of option and path) and the
    output ``folder`` (option and path) can be written, and that no output file
    is another or one of the ``specs``. Raise :class:`OutputError` for the
    first that fails."""
    seen = {os.path.realpath(spec): f"spec {spec}" for spec in specs}
    for option, path in files:
        _check_file(option, path)
        real = os.path.realpath(path)
        if real in seen:
            raise OutputError(f"{option} {path}: the same file as {seen[real]}")
        seen[real] = f"{option} {path}"
    for option, path in files:
        _open_for_writing(option, path)
    if folder is not None:
        _check_folder(*folder)


def check_rewritable(specs: Sequence[str]) -> None:
    """Each spec's folder must let :func:`replace_text` put a new file there:
    one is made there and removed."""
    for spec in specs:
        folder = os.path.dirname(os.path.realpath(spec))
        if not os.access(folder, os.W_OK | os.X_OK):
            raise OutputError(f"cannot rewrite {spec}: cannot write to folder {folder}")
        try:
            _make_and_remove_a_file(folder)
        except OSError as error:
            raise OutputError(
                f"cannot rewrite {spec}: folder {folder}: {error.strerror or error}"
            ) from None


def _check_file(option: str, path: str) -> None:
    if os.path.isdir(path):
        raise OutputError(f"{option} {path}: is a folder")
    if not os.path.basename(path):
        raise OutputError(f"{option} {path!r}: not a file name")
    if os.path.exists(path):
        if not os.access(path, os.W_OK):
            raise OutputError(f"{option} {path}: the file is not writable")
        return
    _check_parent(option, path)


def _open_for_writing(option: str, path: str) -> None:
    """Open ``path`` for writing without truncating it (nor waiting for a
    FIFO's reader), and remove it again if this created it."""
    existed = os.path.exists(path)
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_NONBLOCK, 0o666))
        if not existed:
            # Through a dangling symbolic link, the file made is its target.
            os.unlink(os.path.realpath(path))
    except OSError as error:
        raise OutputError(f"{option} {path}: {error.strerror or error}") from None


def _make_and_remove_a_file(folder: str) -> None:
    descriptor, name = tempfile.mkstemp(prefix=".trio-reconcile.", suffix=".tmp", dir=folder)
    os.close(descriptor)
    os.unlink(name)


def _check_folder(option: str, path: str) -> None:
    if not path:
        raise OutputError(f"{option} '': not a folder name")
    exists = os.path.isdir(path)
    if exists and not os.access(path, os.W_OK | os.X_OK):
        raise OutputError(f"{option} {path}: cannot write to the folder")
    if not exists and os.path.exists(path):
        raise OutputError(f"{option} {path}: is not a folder")
    if not exists:
        _check_parent(option, path)
    try:
        if exists:
            _make_and_remove_a_file(path)
        else:
            os.mkdir(path)
            os.rmdir(path)
    except OSError as error:
        raise OutputError(f"{option} {path}: {error.strerror or error}") from None


def _check_parent(option: str, path: str) -> None:
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.exists(parent):
        raise OutputError(f"{option} {path}: folder {parent} does not exist")
    if not os.path.isdir(parent):
        raise OutputError(f"{option} {path}: {parent} is not a folder")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise OutputError(f"{option} {path}: cannot write to folder {parent}")


def make_folder(option: str, path: str) -> None:
    """Create the output folder ``path`` unless it exists."""
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as error:
        raise OutputError(f"{option} {path}: {error.strerror or error}") from None


def write_output(option: str, path: str, write: Callable[[TextIO], object]) -> None:
    """Open ``path`` for writing and hand it to ``write``; an :class:`OSError`
    becomes an :class:`OutputError` naming ``option`` and ``path``."""
    try:
        with open(path, "w", encoding="utf-8") as file:
            write(file)
    except OSError as error:
        raise OutputError(f"{option} {path}: {error.strerror or error}") from None


def write_text(option: str, path: str, text: str) -> None:
    """Write ``text`` to ``path`` as :func:`write_output` does."""
    write_output(option, path, lambda file: file.write(text))


def replace_text(path: str, text: str) -> None:
    """Replace the file at ``path`` (through a symbolic link: the file it names)
    with ``text``, atomically: a temporary file in the same folder, with the
    original's permissions, renamed over it. On failure the original is left
    as it was, the temporary file is removed, and an :class:`OutputError`
    (for an :class:`OSError`) says why."""
    target = os.path.realpath(path)
    folder, name = os.path.split(target)
    try:
        mode = stat.S_IMODE(os.stat(target).st_mode)
        descriptor, temporary = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=folder)
    except OSError as error:
        raise OutputError(f"cannot rewrite {path}: {error.strerror or error}") from None
    try:
        with open(descriptor, "w", encoding="utf-8") as file:
            os.fchmod(file.fileno(), mode)
            file.write(text)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, target)
    except BaseException as error:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        if isinstance(error, OSError):
            raise OutputError(f"cannot rewrite {path}: {error.strerror or error}") from None
        raise
