"""TLS between the nodes of a replica on OS processes (``--tls-cert``,
``--tls-key``, ``--tls-ca``), with a throwaway CA (trustme) over loopback."""

from __future__ import annotations

import itertools
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import trustme
from cryptography.hazmat.primitives import serialization

from actors.net import HandshakeError
from replica import ReplicaConfig, open_controller, row_order
from replica.driver import main
from replica.procs import TlsError, TlsFiles, open_cluster

from .helpers import Session, index, run_real


def _files(folder: Path, ca: trustme.CA | None = None) -> TlsFiles:
    """A certificate for 127.0.0.1 from ``ca`` (a fresh one by default), as files."""
    ca = trustme.CA() if ca is None else ca
    certificate = ca.issue_cert("127.0.0.1")
    files = TlsFiles(str(folder / "node.pem"), str(folder / "node.key"), str(folder / "ca.pem"))
    certificate.private_key_and_cert_chain_pem.write_to_path(files.cert)
    certificate.private_key_pem.write_to_path(files.key)
    ca.cert_pem.write_to_path(files.ca)
    return files


def test_a_replica_on_two_processes_runs_over_mutual_tls(tmp_path: Path) -> None:
    tls = _files(tmp_path)

    async def main() -> None:
        config = ReplicaConfig(processes=2, workers=1, interactive=True)
        async with (
            open_cluster(config, seed=1, tls=tls) as cluster,
            open_controller(cluster) as controller,
        ):
            cluster.shards.shard("data").append([((1, "a"), 0, 1), ((2, "b"), 0, 1)], 0, 1)
            await Session(controller).start(index(1000, 1001))
            await controller.await_frontier(1001, 1)
            rows = await controller.peek(1001, 0)
            assert sorted(rows, key=row_order) == [(1, "a"), (2, "b")]
            assert await cluster.violations() == []

    run_real(main, limit=60)


def test_a_node_whose_certificate_another_ca_signed_is_not_let_in(tmp_path: Path) -> None:
    ours = _files(tmp_path)
    (tmp_path / "theirs").mkdir()
    theirs = _files(tmp_path / "theirs")
    # Their certificate and key, and our CA: we trust them, they do not trust us.
    stranger = TlsFiles(theirs.cert, theirs.key, ours.ca)

    async def main() -> None:
        config = ReplicaConfig(processes=1, workers=1, interactive=False)
        async with open_cluster(config, seed=1, tls=ours) as cluster:
            address = cluster.shards_hub.node.address
            assert address is not None
            # The host refuses the certificate: the connection ends in the handshake.
            with pytest.raises(HandshakeError, match=r"^the connection broke during the handshake"):
                await cluster.controller_hub.node.connect(
                    address, ssl_context=stranger.client_context()
                )

    run_real(main, limit=60)


@pytest.mark.parametrize(
    ("given", "message"),
    [
        (["--tls-cert", "c.pem"], "--tls-cert given without --tls-key and --tls-ca"),
        (
            ["--tls-key", "k.pem", "--tls-ca", "ca.pem"],
            "--tls-key, --tls-ca given without --tls-cert",
        ),
    ],
)
def test_tls_options_given_in_part_are_refused(
    given: list[str], message: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    secret = tmp_path / "secret"
    secret.write_bytes(b"s" * 32)
    serve = ["serve", "--process", "0", "--listen", "127.0.0.1:1", "--peers", "127.0.0.1:1"]
    serve += ["--shards", "127.0.0.1:2", "--secret-file", str(secret)]
    assert main([*serve, *given]) == 2
    assert f"argument --tls-cert: {message} (TLS takes all three)" in capsys.readouterr().err
    assert main(["run", "replica/driver/specs/", "--spawn", *given]) == 2
    assert f"argument --tls-cert: {message} (TLS takes all three)" in capsys.readouterr().err


def test_tls_files_that_do_not_load_are_refused_before_anything_runs(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    files = ["--tls-cert", str(tmp_path / "none.pem"), "--tls-key", "k", "--tls-ca", "ca"]
    assert main(["run", "replica/driver/specs/", "--spawn", *files]) == 2
    assert "argument --tls-cert: the TLS files do not load: " in capsys.readouterr().err
    tls = _files(tmp_path)
    assert (
        main(
            [
                "run",
                "replica/driver/specs/",
                "--tls-cert",
                tls.cert,
                "--tls-key",
                tls.key,
                "--tls-ca",
                tls.ca,
            ]
        )
        == 2
    )
    assert "argument --tls-cert: only with --spawn" in capsys.readouterr().err


def test_tls_files_given_in_part_name_what_is_missing() -> None:
    assert TlsFiles.from_options(None, None, None) is None
    with pytest.raises(TlsError, match=r"^--tls-ca given without --tls-cert and --tls-key "):
        TlsFiles.from_options(None, None, "ca.pem")


def test_an_encrypted_key_is_refused_not_asked_a_passphrase_for(tmp_path: Path) -> None:
    """OpenSSL would prompt on the terminal for the passphrase (every spawned
    process too, at once): the key is refused, named, instead."""
    files = _files(tmp_path)
    key = serialization.load_pem_private_key(Path(files.key).read_bytes(), None)
    Path(files.key).write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.BestAvailableEncryption(b"passphrase"),
        )
    )
    what = re.escape(files.key)
    message = rf"^the TLS files do not load: {what} is encrypted \(give it without a passphrase\)$"
    with pytest.raises(TlsError, match=message):
        files.check()


@pytest.mark.parametrize(
    ("command", "option"),
    [("serve", "--tls-key"), ("serve", "--tls-ca"), ("run", "--tls-cert"), ("run", "--tls-key")],
)
def test_a_tls_file_that_is_a_fifo_is_refused_at_once_not_waited_on(
    tmp_path: Path, command: str, option: str
) -> None:
    """ssl opens the files by path, in every process: opening a FIFO no one
    writes to blocked the command for ever, silent. Exit 2, named, before
    anything opens it."""
    tls = _files(tmp_path)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    files = {"--tls-cert": tls.cert, "--tls-key": tls.key, "--tls-ca": tls.ca, option: str(fifo)}
    secret = tmp_path / "secret"
    secret.write_bytes(b"s" * 32)
    serve = ["serve", "--process", "0", "--listen", "127.0.0.1:1", "--peers", "127.0.0.1:1"]
    serve += ["--shards", "127.0.0.1:2", "--secret-file", str(secret)]
    arguments = serve if command == "serve" else ["run", "replica/driver/specs/", "--spawn"]
    done = subprocess.run(
        [sys.executable, "-m", "replica.driver", *arguments, *itertools.chain(*files.items())],
        capture_output=True,
        check=False,
        timeout=30,
    )
    assert done.returncode == 2
    assert done.stderr.decode().splitlines()[-1] == (
        f"trio-reconcile {command}: error: argument --tls-cert: the TLS files do not load: "
        f"{fifo} ({option}) is not a regular file (ssl loads them by path, in every process: "
        "a FIFO or a pipe cannot serve)"
    )
