"""``trio-reconcile run --spawn`` and ``serve``: bundled specs against
replica processes started as OS processes, reported byte for byte as on the
mock clock; the options refused with --spawn; a process that cannot start."""

from __future__ import annotations

import io
import math
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from replica import ReplicaConfig
from replica.driver import main
from replica.driver.cli._main import build_parser, parse
from replica.driver.cli._run import Recording, run_command
from replica.driver.cli._spawn import spawn_command
from replica.driver.lang._spec import read_spec
from replica.driver.run._bundled import bundled_spec
from replica.driver.run._runner import Topology
from replica.procs import (
    MAX_PEER_TIMEOUT,
    MIN_PEER_TIMEOUT,
    ClusterError,
    open_cluster,
    serve_command,
)

from .helpers import run_real

SPECS = (
    "reconciliation.spec",
    "reconnect_dataflows.spec",
    "mv_foreign_write.spec",
    "query_dataflow.spec",
)
TWO_RUNTIMES = ("two_runtime_recreate_race.spec", "divergent_drop_interactive_only.spec")


@pytest.mark.parametrize(
    ("topology", "names"),
    [
        (Topology(processes=2, workers=2), SPECS + TWO_RUNTIMES),
        (Topology(processes=2, workers=1, interactive=False), SPECS),
    ],
    ids=["two-w2p2", "solo-w1p2"],
)
def test_bundled_specs_pass_on_processes_and_report_as_on_the_mock_clock(
    topology: Topology, names: tuple[str, ...]
) -> None:
    specs = []
    for name in names:
        with bundled_spec(name) as path:
            specs.append(read_spec(path, name))
    mock, spawned = io.StringIO(), io.StringIO()
    assert run_command(specs, topology, 1, False, Recording.of(None, None, None), mock) == 0
    # These specs expect no wait to time out: a generous cap costs nothing.
    assert spawn_command(specs, topology, 1, spawned, max_wait=60) == 0
    assert spawned.getvalue() == mock.getvalue()
    assert spawned.getvalue().count("ok ") == len(names)


@pytest.mark.parametrize(
    "options",
    [
        ["--faults", "0.1"],
        ["--topologies", "all"],
        ["--check-determinism"],
        ["--rewrite"],
        ["--trace", "t.jsonl"],
    ],
)
def test_what_spawn_cannot_do_is_refused_before_anything_runs(
    options: list[str], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    spec = tmp_path / "a.spec"
    spec.write_text("create-instance\n----\nok\n")
    assert main(["run", str(spec), "--spawn", *options]) == 2
    assert "argument --spawn: not allowed with argument" in capsys.readouterr().err


@pytest.mark.parametrize("option", ["--max-wait", "--peer-timeout"])
def test_the_spawn_timeouts_are_only_for_spawn(
    option: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    spec = tmp_path / "a.spec"
    spec.write_text("create-instance\n----\nok\n")
    assert main(["run", str(spec), option, "2"]) == 2
    assert f"argument {option}: only with --spawn" in capsys.readouterr().err


@pytest.mark.parametrize("value", ["0", "0.01", "x", "nan"])
def test_run_refuses_a_peer_timeout_too_short_or_not_a_number(
    value: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    spec = tmp_path / "a.spec"
    spec.write_text("create-instance\n----\nok\n")
    assert main(["run", str(spec), "--spawn", "--peer-timeout", value]) == 2
    assert "run: error: argument --peer-timeout: " in capsys.readouterr().err


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--process", "2", "--processes", "2"], "argument --process: must be below --processes"),
        (["--process", "0", "--processes", "2"], "argument --peers: 1 addresses for 2 processes"),
        (["--process", "0", "--listen", "nowhere"], "argument --listen: not HOST:PORT"),
        (["--process", "0", "--listen", "h:70000"], "a port is at most 65535"),
        (
            ["--process", "0", "--processes", "2", "--peers", "127.0.0.1:1,127.0.0.1:1"],
            "argument --peers: 127.0.0.1:1 twice (each process listens on its own address)",
        ),
    ],
)
def test_serve_refuses_bad_arguments(
    arguments: list[str], message: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    secret = tmp_path / "secret"
    secret.write_bytes(b"s" * 32)
    base = {"--listen": "127.0.0.1:1", "--peers": "127.0.0.1:1", "--shards": "127.0.0.1:2"}
    for option, value in base.items():
        if option not in arguments:
            arguments += [option, value]
    assert main(["serve", *arguments, "--secret-file", str(secret)]) == 2
    assert message in capsys.readouterr().err


def test_serve_refuses_a_short_or_missing_secret(tmp_path: Path) -> None:
    secret = tmp_path / "secret"
    secret.write_bytes(b"short")
    common = ["serve", "--process", "0", "--listen", "127.0.0.1:1", "--peers", "127.0.0.1:1"]
    common += ["--shards", "127.0.0.1:2", "--secret-file"]
    for path, message in ((secret, b"at least 16 bytes"), (tmp_path / "none", b"No such file")):
        done = subprocess.run(
            [sys.executable, "-m", "replica.driver", *common, str(path)],
            capture_output=True,
            check=False,
            timeout=60,
        )
        assert done.returncode == 2
        assert message in done.stderr


def test_a_process_that_cannot_start_is_a_named_error_not_a_hang() -> None:
    async def main() -> None:
        with pytest.raises(ExceptionGroup) as caught:
            async with open_cluster(ReplicaConfig(), python="false"):
                raise AssertionError("the cluster started")
        assert caught.group_contains(ClusterError, match="replica process 0 exited")

    run_real(main, limit=30)


def test_a_process_that_exits_while_starting_is_one_error_not_two() -> None:
    """The process's exit is reported once (its status), not again as "exited
    while starting" by the wait for it to be ready."""

    async def main() -> None:
        with pytest.raises(ExceptionGroup) as caught:
            async with open_cluster(ReplicaConfig(), python="false"):
                raise AssertionError("the cluster started")
        leaves = caught.value
        errors: list[BaseException] = []
        pending: list[BaseException] = [leaves]
        while pending:
            error = pending.pop()
            if isinstance(error, BaseExceptionGroup):
                pending += error.exceptions
            else:
                errors.append(error)
        assert [str(error) for error in errors] == ["replica process 0 exited with status 1"]

    run_real(main, limit=30)


def test_serve_on_an_address_in_use_exits_1_with_the_reason(tmp_path: Path) -> None:
    secret = tmp_path / "secret"
    secret.write_bytes(b"s" * 32)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        address = f"127.0.0.1:{taken.getsockname()[1]}"
        done = subprocess.run(
            [
                *(sys.executable, "-m", "replica.driver", "serve", "--process", "0"),
                *("--listen", address, "--peers", address, "--shards", "127.0.0.1:1"),
                *("--secret-file", str(secret)),
            ],
            capture_output=True,
            check=False,
            timeout=60,
        )
    assert done.returncode == 1
    # Named: the option and the address, then the OS's reason.
    assert done.stderr.decode().splitlines()[-1] == (
        f"trio-reconcile: error: serve --process 0: cannot listen on --listen {address}: "
        "Address already in use"
    )


def test_serve_on_a_host_that_does_not_resolve_exits_2_named_before_it_starts(
    tmp_path: Path,
) -> None:
    """Bad input (a name no resolver knows: ``.invalid`` is reserved for
    that): exit 2 and the option named, before any node starts (it was exit
    1 with only ``[Errno -2] Name or service not known``)."""
    secret = tmp_path / "secret"
    secret.write_bytes(b"s" * 32)
    address = "no-such-host.invalid:40000"
    done = subprocess.run(
        [
            *(sys.executable, "-m", "replica.driver", "serve", "--process", "0"),
            *("--listen", address, "--peers", address, "--shards", "127.0.0.1:1"),
            *("--secret-file", str(secret)),
        ],
        capture_output=True,
        check=False,
        timeout=60,
    )
    assert done.returncode == 2
    # One line, nothing logged: nothing started.
    (line,) = done.stderr.decode().splitlines()
    assert line.startswith(
        "trio-reconcile: error: --listen: cannot resolve 'no-such-host.invalid': "
    )


def test_serve_without_its_shard_host_gives_up_after_the_patience_given(tmp_path: Path) -> None:
    secret = tmp_path / "secret"
    secret.write_bytes(b"s" * 32)
    with socket.socket() as free, socket.socket() as closed:
        free.bind(("127.0.0.1", 0))
        closed.bind(("127.0.0.1", 0))  # bound, not listening: dialling it is refused
        listen = f"127.0.0.1:{free.getsockname()[1]}"
        host = f"127.0.0.1:{closed.getsockname()[1]}"
        free.close()
        done = subprocess.run(
            [
                *(sys.executable, "-m", "replica.driver", "serve", "--process", "0"),
                *("--listen", listen, "--peers", listen, "--shards", host),
                *("--secret-file", str(secret), "--shards-patience", "0.5"),
            ],
            capture_output=True,
            check=False,
            timeout=60,
        )
    assert done.returncode == 1
    lines = done.stderr.decode().splitlines()
    assert lines[-1].startswith(
        f"trio-reconcile: error: serve --process 0: the shard host is gone (cannot reach "
        f"shards at ('127.0.0.1', {host.rpartition(':')[2]}): "
    )
    # The process's warnings show without -v.
    assert any(line.startswith("WARNING replica.procs: ") for line in lines), lines


@pytest.mark.parametrize("timeout", [math.inf, 2e6])
def test_a_heartbeat_timeout_past_what_serve_takes_reaches_the_processes_as_its_most(
    timeout: float,
) -> None:
    """``open_cluster(heartbeat_timeout=math.inf)`` (no partition is ever
    named) is also each process's ``--peer-timeout``: the command line of a
    process must parse, or no process starts."""
    config = ReplicaConfig(processes=2, workers=1, interactive=False)
    local = ("127.0.0.1", 1)
    command = serve_command(
        config, 0, local, [local, ("127.0.0.1", 3)], ("127.0.0.1", 2), "s", peer_timeout=timeout
    )
    args = parse(build_parser(), command[3:])
    assert args.peer_timeout == MAX_PEER_TIMEOUT


def test_a_peer_timeout_too_short_to_ping_is_refused_and_a_cluster_lifts_its_own() -> None:
    """Pings go out a quarter of ``--peer-timeout`` apart: a tiny one would
    keep a process pinging in a busy loop, so serve refuses it by name
    (exit 2), and ``open_cluster`` passes at least the least serve takes."""
    with pytest.raises(SystemExit) as exit:
        parse(build_parser(), ["serve", "--peer-timeout", "1e-300"])
    assert exit.value.code == 2
    config = ReplicaConfig(processes=2, workers=1, interactive=False)
    local = ("127.0.0.1", 1)
    command = serve_command(
        config, 0, local, [local, ("127.0.0.1", 3)], ("127.0.0.1", 2), "s", peer_timeout=1e-9
    )
    assert parse(build_parser(), command[3:]).peer_timeout == MIN_PEER_TIMEOUT


@pytest.mark.parametrize("heartbeat", [(0.0, 10.0), (0.5, 0.0), (-1.0, 10.0), (math.nan, 1.0)])
async def test_open_cluster_refuses_a_heartbeat_that_would_spin(
    heartbeat: tuple[float, float],
) -> None:
    every, timeout = heartbeat
    config = ReplicaConfig(processes=1, workers=1, interactive=False)
    with pytest.raises(ValueError, match="must be above 0"):
        async with open_cluster(config, heartbeat=every, heartbeat_timeout=timeout):
            pass  # pragma: no cover (never reached)


@pytest.mark.parametrize(
    ("heartbeat", "message"),
    [
        ((1e-9, 10.0), r"heartbeat \(1e-09\) must be at least 0.025s"),
        ((1e-300, 1e-300), r"heartbeat \(1e-300\) must be at least 0.025s"),
        ((0.5, 0.1), r"heartbeat_timeout \(0.1\) must be at least twice heartbeat \(0.5\)"),
        ((0.5, 0.9), r"heartbeat_timeout \(0.9\) must be at least twice heartbeat"),
    ],
)
async def test_open_cluster_refuses_a_heartbeat_that_spins_or_loses_every_process(
    heartbeat: tuple[float, float], message: str
) -> None:
    """A heartbeat of 1e-9 s pinged every process in a busy loop (over 1,000
    pings in 0.2 s), and a timeout below the heartbeat made every process
    lost at every tick: refused, named, before anything starts."""
    every, timeout = heartbeat
    config = ReplicaConfig(processes=1, workers=1, interactive=False)
    with pytest.raises(ValueError, match=message):
        async with open_cluster(config, heartbeat=every, heartbeat_timeout=timeout):
            pass  # pragma: no cover (never reached)


@pytest.mark.parametrize("peer_timeout", [0.0, -1.0, math.nan])
async def test_open_cluster_refuses_a_peer_timeout_that_would_spin(peer_timeout: float) -> None:
    config = ReplicaConfig(processes=1, workers=1, interactive=False)
    with pytest.raises(ValueError, match=r"peer_timeout \(.*\) must be above 0"):
        async with open_cluster(config, peer_timeout=peer_timeout):
            pass  # pragma: no cover (never reached)


def test_serve_takes_the_epoch_of_its_first_replica_and_refuses_a_bad_one() -> None:
    """``--epoch`` (what the driver gives a process it starts again): a whole
    number from 0; anything else is exit 2, named, before anything starts."""
    config = ReplicaConfig(processes=2, workers=1, interactive=False)
    local = ("127.0.0.1", 1)
    command = serve_command(config, 0, local, [local, ("127.0.0.1", 3)], ("127.0.0.1", 2), "s")
    assert parse(build_parser(), command[3:]).epoch == 0
    assert parse(build_parser(), [*command[3:], "--epoch", "12"]).epoch == 12
    for bad in ("-1", "x", "1.5", str(2**70)):
        with pytest.raises(SystemExit) as exit:
            parse(build_parser(), [*command[3:], "--epoch", bad])
        assert exit.value.code == 2
