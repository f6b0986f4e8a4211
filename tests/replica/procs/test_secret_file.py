"""``serve --secret-file``: a regular file, or a pipe or FIFO read to its end
within ``SECRET_PATIENCE`` (shell process substitution, ``<(...)``, gives a
pipe); nothing read in time is exit 2, named, not a process blocked for
ever."""

from __future__ import annotations

import os
import shlex
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from replica.driver.cli._main import build_parser
from replica.procs import SecretFileError, read_secret_file
from replica.procs._secret import SECRET_LIMIT, SECRET_PATIENCE

SERVE = [sys.executable, "-m", "replica.driver", "serve", "--process", "0"]


def test_a_fifo_no_one_writes_to_is_exit_2_named_after_the_patience(tmp_path: Path) -> None:
    """It blocked the process for ever, saying nothing (open waits for a
    writer)."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    command = [*SERVE, "--listen", "127.0.0.1:1", "--peers", "127.0.0.1:1"]
    command += ["--shards", "127.0.0.1:2", "--secret-file", str(fifo)]
    started = time.monotonic()
    done = subprocess.run(
        command,
        capture_output=True,
        check=False,
        timeout=30,
    )
    assert done.returncode == 2
    assert done.stderr.decode().splitlines() == [
        f"trio-reconcile: error: --secret-file: not read to its end within "
        f"{SECRET_PATIENCE:g}s (a pipe or FIFO whose writer has not written the secret and "
        f"closed it): {fifo}"
    ]
    assert time.monotonic() - started >= SECRET_PATIENCE


def test_a_secret_given_by_process_substitution_is_read(tmp_path: Path) -> None:
    """``--secret-file <(...)`` (a pipe) works: the process gets past the
    secret and on to its shard host (absent here: exit 1 after its patience)."""
    with socket.socket() as free, socket.socket() as closed:
        free.bind(("127.0.0.1", 0))
        closed.bind(("127.0.0.1", 0))  # bound, not listening: dialling it is refused
        listen = f"127.0.0.1:{free.getsockname()[1]}"
        host = f"127.0.0.1:{closed.getsockname()[1]}"
        free.close()
        command = [*SERVE, "--listen", listen, "--peers", listen, "--shards", host]
        command += ["--shards-patience", "0.5"]
        done = subprocess.run(
            ["bash", "-c", f"exec {shlex.join(command)} --secret-file <(printf %032d 7)"],
            capture_output=True,
            check=False,
            timeout=60,
        )
    assert done.returncode == 1, done.stderr
    assert "the shard host is gone" in done.stderr.decode().splitlines()[-1]


def test_a_pipe_is_read_to_its_end() -> None:
    read, write = os.pipe()
    try:
        os.write(write, b"a secret, ")
        os.write(write, b"written in two parts")
        os.close(write)
        assert read_secret_file(f"/dev/fd/{read}") == b"a secret, written in two parts"
    finally:
        os.close(read)


def test_a_pipe_whose_writer_keeps_it_open_is_given_up_on_after_the_patience() -> None:
    read, write = os.pipe()
    try:
        os.write(write, b"part of a secret")
        with pytest.raises(SecretFileError, match=r"^not read to its end within 0.2s "):
            read_secret_file(f"/dev/fd/{read}", patience=0.2)
    finally:
        os.close(read)
        os.close(write)


def test_a_secret_longer_than_its_limit_is_refused_not_cut(tmp_path: Path) -> None:
    secret = tmp_path / "secret"
    secret.write_bytes(b"s" * 64)
    assert read_secret_file(str(secret), limit=64) == b"s" * 64
    secret.write_bytes(b"s" * 65)
    with pytest.raises(
        SecretFileError, match=r"^longer than 64 bytes, the most a secret may have: "
    ):
        read_secret_file(str(secret), limit=64)
    # A device that never ends is refused too, once past the limit.
    with pytest.raises(SecretFileError, match=r"^longer than 1000 bytes"):
        read_secret_file("/dev/zero", limit=1000)
    read, write = os.pipe()
    try:
        os.write(write, b"p" * 65)
        os.close(write)
        with pytest.raises(SecretFileError, match=r"^longer than 64 bytes"):
            read_secret_file(f"/dev/fd/{read}", limit=64)
    finally:
        os.close(read)


def test_a_secret_file_over_64_kib_is_exit_2_named(tmp_path: Path) -> None:
    secret = tmp_path / "secret"
    secret.write_bytes(b"s" * (SECRET_LIMIT + 1))
    command = [*SERVE, "--listen", "127.0.0.1:1", "--peers", "127.0.0.1:1"]
    command += ["--shards", "127.0.0.1:2", "--secret-file", str(secret)]
    done = subprocess.run(command, capture_output=True, text=True, check=False, timeout=30)
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines() == [
        f"trio-reconcile: error: --secret-file: longer than {SECRET_LIMIT} bytes, the most a "
        f"secret may have: {secret}"
    ]


@pytest.mark.parametrize(
    ("path", "message"),
    [("none", "No such file or directory: "), (".", "Is a directory: ")],
)
def test_a_secret_file_that_does_not_read_names_the_os_reason(
    tmp_path: Path, path: str, message: str
) -> None:
    with pytest.raises(SecretFileError, match=f"^{message}"):
        read_secret_file(str(tmp_path / path))


def test_serve_help_states_the_patience_and_the_limit() -> None:
    text = " ".join(build_parser().subcommands["serve"].format_help().split())
    assert f"to its end within {SECRET_PATIENCE:g} s, else exit 2" in text
    assert f"at most {SECRET_LIMIT >> 10} KiB, a longer one refused, exit 2" in text
