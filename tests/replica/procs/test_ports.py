"""The ports of a replica's processes: bound by the driver before any process
starts, and held for the cluster's life, so that another local user who reads
a port off a command line cannot take it (the start, or a restart, would
fail: ``Address already in use``)."""

from __future__ import annotations

import contextlib
import errno
import socket
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
import trio

from replica import ReplicaConfig
from replica.driver.cli._main import build_parser, parse
from replica.procs import open_cluster, serve_command

from .helpers import run_real


def _port_of(command: Sequence[str]) -> int:
    """The port process ``--process`` listens on, as any user reads it off
    its command line (its own among ``--peers``)."""
    process = int(command[list(command).index("--process") + 1])
    peers = command[list(command).index("--peers") + 1].split(",")
    return int(peers[process].rpartition(":")[2])


class Squatter:
    """Another local user: binds the port of each process about to start
    (once the driver said it on the command line) and holds it."""

    def __init__(self) -> None:
        self.held: list[socket.socket] = []
        # The errno of each port it could not take.
        self.refused: list[int | None] = []

    def take(self, port: int) -> None:
        sock = socket.socket()
        try:
            sock.bind(("127.0.0.1", port))
            sock.listen()
        except OSError as error:
            sock.close()
            self.refused.append(error.errno)
        else:
            self.held.append(sock)

    def close(self) -> None:
        for sock in self.held:
            sock.close()


@pytest.fixture
def squatter(monkeypatch: pytest.MonkeyPatch) -> Any:
    """A :class:`Squatter` that tries each process's port just before its
    OS process is spawned."""
    found = Squatter()
    spawn = trio.run_process

    async def squatted(command: Sequence[str], **options: Any) -> Any:
        found.take(_port_of(command))
        return await spawn(command, **options)

    monkeypatch.setattr(trio, "run_process", squatted)
    yield found
    found.close()


def test_a_squatter_on_a_process_port_cannot_make_the_start_fail(squatter: Squatter) -> None:
    """The ports were free, released, then bound by each process a second
    later: one bound meanwhile made the process exit 1 and the start fail."""

    async def main() -> None:
        config = ReplicaConfig(processes=2, workers=1, interactive=False)
        async with open_cluster(config) as cluster:
            assert sorted(cluster.ready) == [0, 1]
        assert squatter.held == []
        assert squatter.refused == [errno.EADDRINUSE] * 2

    run_real(main, limit=60)


def test_a_killed_process_port_stays_the_clusters_until_its_restart() -> None:
    """While a killed process is down its port is still the driver's: a
    squatter cannot take it, and the restarted process gets it back."""

    async def main() -> None:
        config = ReplicaConfig(processes=2, workers=1, interactive=False)
        async with open_cluster(config) as cluster:
            command = cluster.slots[1].command
            cluster.kill(1)
            await cluster.slots[1].exited.wait()
            with socket.socket() as other, pytest.raises(OSError, match="in use") as refused:
                other.bind(("127.0.0.1", _port_of(command)))
            assert refused.value.errno == errno.EADDRINUSE
            await cluster.restart(1)
            assert cluster.slots[1].command == command

    run_real(main, limit=90)


def test_a_connection_dialled_to_a_killed_process_is_closed_when_it_starts_again() -> None:
    """It waited in the backlog of the port the driver holds; the process
    started next would take it, and wait for a handshake that never comes
    (its dialler gave up long ago) before refusing it with a warning."""

    async def main() -> None:
        config = ReplicaConfig(processes=1, workers=1, interactive=False)
        async with open_cluster(config) as cluster:
            port = _port_of(cluster.slots[0].command)
            cluster.kill(0)
            await cluster.slots[0].exited.wait()
            async with await trio.open_tcp_stream("127.0.0.1", port) as waiting:
                await cluster.restart(0)
                # Closed before the process started: not handed to it (it
                # would greet it with its handshake, then wait 10 s for ours).
                with trio.fail_after(5), contextlib.suppress(trio.BrokenResourceError):
                    assert await waiting.receive_some() == b""

    run_real(main, limit=90)


def test_a_process_listens_on_the_socket_it_is_given_not_on_a_port_it_binds() -> None:
    """``open_cluster``'s processes get their listening socket (``--listen-fd``):
    no ``--listen`` on their command lines."""
    config = ReplicaConfig(processes=2, workers=1, interactive=False)
    local = ("127.0.0.1", 1)
    command = serve_command(
        config, 0, local, [local, ("127.0.0.1", 3)], ("127.0.0.1", 2), "s", listen_fd=7
    )
    assert "--listen" not in command
    assert parse(build_parser(), command[3:]).listen_fd == 7


def _serve(secret: Path, *options: str, **popen: Any) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [
            *(sys.executable, "-m", "replica.driver", "serve", "--process", "0"),
            *("--peers", "127.0.0.1:1", "--shards", "127.0.0.1:2", "--secret-file", str(secret)),
            *options,
        ],
        capture_output=True,
        check=False,
        timeout=60,
        **popen,
    )


def test_serve_refuses_a_listen_fd_that_is_not_a_listening_tcp_socket(tmp_path: Path) -> None:
    """Exit 2, named, before anything starts: a descriptor not open, a file,
    a TCP socket not listening, a UDP socket."""
    secret = tmp_path / "secret"
    secret.write_bytes(b"s" * 32)
    with (
        open(secret, "rb") as file,
        socket.socket() as unbound,
        socket.socket(type=socket.SOCK_DGRAM) as datagrams,
    ):
        closed = 1000  # (no process has that many open)
        cases = {
            "not an open file descriptor (Bad file descriptor)": closed,
            "not a socket (Socket operation on non-socket)": file.fileno(),
            "a TCP socket that is not listening": unbound.fileno(),
            "not a TCP socket": datagrams.fileno(),
        }
        for reason, fd in cases.items():
            done = _serve(secret, "--listen-fd", str(fd), pass_fds=() if fd == closed else (fd,))
            assert done.returncode == 2, done.stderr
            assert done.stderr.decode().splitlines() == [
                f"trio-reconcile: error: --listen-fd {fd}: {reason}"
            ]


def test_serve_takes_listen_or_listen_fd_not_both() -> None:
    for options in (["--listen", "127.0.0.1:1", "--listen-fd", "3"], []):
        with pytest.raises(SystemExit) as exit:
            parse(build_parser(), ["serve", "--process", "0", "--peers", "127.0.0.1:1", *options])
        assert exit.value.code == 2
