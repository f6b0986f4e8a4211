"""What ``actors.net``'s failure detector costs, and how fast it finds a
frozen node (issue 25). Not rows of the baseline: figures of CPU time over
wall-clock windows and of real seconds, printed by

    .venv/bin/python bench/net_idle_bench.py [--window S] [--rounds R] [--json OUT]

**Idle connections.** The measured node (``hub``, listening on loopback) is
alone in this process; a child OS process runs one node that dials it
``connections`` times (1 and 1,000 by default; each dial is a connection and
a peer of its own on both ends) and then sends nothing. Once every
connection is up and a few beats have passed (``SETTLE`` seconds), this
process's CPU time (:func:`time.process_time`: user + system, this process
only) is read over a window of ``--window`` seconds of real time
(:func:`time.monotonic`), and the child reads its own over the same window.
Each count is measured with the failure detector on (``open_node``'s
defaults on a real clock: ``heartbeat=1.0``, ``peer_timeout`` 10 s: each
peer's heartbeat task wakes every second and sends a ``Ping`` when nothing
else was sent) and off (``peer_timeout=None``: no heartbeat task, nothing
sent), both ends alike, alternated ``--rounds`` times. The heartbeats' cost
is the difference: per connection and second, and as a share of one core.

**Freeze to NodeDown.** A child process runs a node (``frozen``) with an
echo actor, at the default settings (nothing passed: ``heartbeat`` 1 s,
``peer_timeout`` 10 s); this process's node (``watcher``, also at the
defaults) connects, looks the actor up, asks it once, has an actor monitor
it, and stays idle for :data:`IDLE_BEFORE_FREEZE` seconds and a random
part of a beat (heartbeats keep the connection up; the freeze comes at any
phase of the beats, recorded as ``phase_s``); then the child is frozen with ``SIGSTOP`` and one more
ask is sent. Timed with :func:`time.monotonic` from the ``kill`` until the
peer is closed, the monitor's ``Down`` (reason ``NodeDown``) has come and
the ask in flight has failed with ``NodeDownError``. ``--freezes`` times,
a fresh child each (the approach of
``tests/actors/net/test_failure_detector_processes.py``, at the defaults).

The child modes (``--dial``, ``--serve``) are this file run again by
:func:`main`; they are not for use by hand.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, cast

import attrs
import trio

import actors
from actors import ActorRef, Down, Inbox, NodeDown, Reply
from actors.net import Codec, NodeDownError, open_node

SECRET = b"the idle benchmark's secret!!!!!"
HOST = "127.0.0.1"
CONNECTIONS = (1, 1_000)
WINDOW = 20.0
"""Seconds of real time each CPU reading spans (``--window``)."""
SETTLE = 3.0
"""Seconds between the last connection up and the start of a window."""
ROUNDS = 2
FREEZES = 3
IDLE_BEFORE_FREEZE = 3.0
HERE = Path(__file__).resolve()
Detector = dict[str, Any]
"""``open_node``'s failure-detector arguments: ``{}`` for the defaults."""


@attrs.frozen
class Echo:
    text: str
    reply: Reply[str]


def _codec() -> Codec:
    codec = Codec()
    codec.register(Echo, name="Echo")
    return codec


async def echo(inbox: Inbox[Echo]) -> None:
    async for envelope in inbox:
        message = envelope.message
        message.reply.send(message.text)


def _detector(mode: str) -> Detector:
    """``on`` (the defaults: nothing passed), ``off`` (``peer_timeout=None``),
    or ``HEARTBEAT,TIMEOUT`` (both given)."""
    if mode == "on":
        return {}
    if mode == "off":
        return {"peer_timeout": None}
    heartbeat, timeout = (float(part) for part in mode.split(","))
    return {"heartbeat": heartbeat, "peer_timeout": timeout}


def raise_fd_limit() -> int:
    """Raise this process's soft limit on open files to its hard limit
    (at most 1,000,000); the soft limit after."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = 1_000_000 if hard == resource.RLIM_INFINITY else min(hard, 1_000_000)
    if soft == resource.RLIM_INFINITY or soft >= target:
        return soft
    resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    return target


class _Lines:
    """Lines read from a stream (a child's stdout, or stdin)."""

    def __init__(self, stream: trio.abc.ReceiveStream) -> None:
        self._stream = stream
        self._buffer = bytearray()

    async def line(self) -> str:
        while b"\n" not in self._buffer:
            data = await self._stream.receive_some(65536)
            if not data:
                raise EOFError("the stream ended before a line")
            self._buffer += data
        end = self._buffer.index(b"\n")
        line = bytes(self._buffer[:end]).decode()
        del self._buffer[: end + 1]
        return line


def _frames(node: Any) -> tuple[int, int]:
    """Frames sent and received by all of ``node``'s peers so far."""
    sent = received = 0
    for peer in node.peers:
        stats = peer._conn.statistics()
        sent += stats.frames_sent
        received += stats.frames_received
    return sent, received


# ---- idle connections ------------------------------------------------------


async def _dial(port: int, connections: int, mode: str) -> None:
    """The child of :func:`idle_cpu`: ``connections`` connections to the
    hub; then, between ``go`` and ``stop`` on stdin, its own CPU time."""
    raise_fd_limit()
    stdin = _Lines(trio.lowlevel.FdStream(os.dup(sys.stdin.fileno())))
    async with (
        actors.open_system() as system,
        open_node(
            system, name="dialer", secret=SECRET, codec=_codec(), listen=None, **_detector(mode)
        ) as node,
    ):
        peers = [await node.connect((HOST, port)) for _ in range(connections)]
        print("up", flush=True)
        await stdin.line()
        cpu, wall = time.process_time(), time.monotonic()
        await stdin.line()
        cpu, wall = time.process_time() - cpu, time.monotonic() - wall
        down = sum(peer.reason is not None for peer in peers)
        print(json.dumps({"cpu": cpu, "wall": wall, "down": down}), flush=True)


def idle_cpu(connections: int, mode: str, window: float) -> dict[str, Any]:
    """The hub's CPU time (this process) and the dialer's (the child) over
    ``window`` seconds with ``connections`` idle connections, the detector
    ``on`` or ``off`` at both ends."""
    fd_limit = raise_fd_limit()

    async def main() -> dict[str, Any]:
        async with (
            actors.open_system() as system,
            open_node(system, name="hub", secret=SECRET, codec=_codec(), **_detector(mode)) as hub,
        ):
            assert hub.address is not None
            command = [sys.executable, str(HERE), "--dial", str(hub.address[1])]
            process = await trio.lowlevel.open_process(
                [*command, str(connections), mode], stdin=subprocess.PIPE, stdout=subprocess.PIPE
            )
            assert process.stdin is not None
            assert process.stdout is not None
            try:
                lines = _Lines(process.stdout)
                with trio.fail_after(120 + connections / 10):
                    if (said := await lines.line()) != "up":
                        raise RuntimeError(f"the dialer said {said!r}")
                    while len(hub.peers) < connections:  # the last accepts' ends
                        await hub._peers_changed.park()
                await trio.sleep(SETTLE)
                sent, received = _frames(hub)
                await process.stdin.send_all(b"go\n")
                cpu, wall = time.process_time(), time.monotonic()
                await trio.sleep(window)
                cpu, wall = time.process_time() - cpu, time.monotonic() - wall
                after = _frames(hub)
                down = sum(peer.reason is not None for peer in hub.peers)
                peers = len(hub.peers)
                await process.stdin.send_all(b"stop\n")
                with trio.fail_after(30):
                    child = json.loads(await lines.line())
                await process.stdin.aclose()
                with trio.fail_after(60):
                    await process.wait()
            finally:
                if process.returncode is None:
                    process.kill()
                    await process.wait()
        return {
            "connections": connections,
            "detector": mode,
            "hub_cpu_s": cpu,
            "wall_s": wall,
            "hub_share_of_a_core": cpu / wall,
            "dialer_cpu_s": child["cpu"],
            "dialer_wall_s": child["wall"],
            "hub_frames_sent_per_connection_s": (after[0] - sent) / connections / wall,
            "hub_frames_received_per_connection_s": (after[1] - received) / connections / wall,
            "hub_peers": peers,
            "down": down + child["down"],
            "fd_soft_limit": fd_limit,
        }

    return trio.run(main)


# ---- freeze to NodeDown ----------------------------------------------------


async def _serve(mode: str) -> None:
    """The child of :func:`freeze_to_down`: a node with an echo actor, its
    port printed, until it is killed."""
    async with actors.open_system() as system:
        await system.spawn(echo, name="echo")
        async with open_node(
            system, name="frozen", secret=SECRET, codec=_codec(), **_detector(mode)
        ) as node:
            assert node.address is not None
            print(node.address[1], flush=True)
            await trio.sleep_forever()


def freeze_to_down(mode: str) -> dict[str, Any]:
    """Seconds from ``SIGSTOP`` of a child's node until this node's peer of
    it is closed, a monitor's ``Down`` came, and an ask in flight failed."""
    child = subprocess.Popen(
        [sys.executable, str(HERE), "--serve", mode], stdout=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout is not None
        port = int(child.stdout.readline())

        async def main() -> dict[str, Any]:
            found: dict[str, Any] = {}
            with trio.fail_after(120):
                async with (
                    actors.open_system() as system,
                    open_node(
                        system,
                        name="watcher",
                        secret=SECRET,
                        codec=_codec(),
                        listen=None,
                        **_detector(mode),
                    ) as node,
                ):
                    peer = await node.connect((HOST, port))
                    found_ref = await peer.lookup("echo")
                    assert found_ref is not None
                    ref = cast("ActorRef[Echo]", found_ref)
                    assert await ref.ask(Echo, "up", timeout=5) == "up"
                    downs: list[Down] = []
                    frozen_at = 0.0
                    seen_down = trio.Event()

                    async def watcher(inbox: Inbox[Down]) -> None:
                        inbox.monitor(ref)
                        async for envelope in inbox:
                            found["down_s"] = time.monotonic() - frozen_at
                            downs.append(envelope.message)
                            seen_down.set()

                    async def closed() -> None:
                        await peer.closed.wait()
                        found["peer_closed_s"] = time.monotonic() - frozen_at

                    async def ask_in_flight() -> None:
                        try:
                            await ref.ask(Echo, "frozen?", timeout=60)
                        except NodeDownError:
                            found["ask_failed_s"] = time.monotonic() - frozen_at
                        else:
                            found["ask_failed_s"] = None

                    await system.spawn(watcher, name="watcher")
                    # Idle (heartbeats alone), then a random part of a beat, so
                    # the freeze comes at any phase of the beats.
                    phase = random.uniform(0, peer._heartbeat_interval)
                    found["phase_s"] = phase
                    await trio.sleep(IDLE_BEFORE_FREEZE + phase)
                    if peer.reason is not None:
                        raise RuntimeError(f"down before the freeze: {peer.reason}")
                    found["peer_timeout"] = peer._peer_timeout
                    found["heartbeat"] = peer._heartbeat_interval
                    async with trio.open_nursery() as nursery:
                        os.kill(child.pid, signal.SIGSTOP)
                        frozen_at = time.monotonic()
                        nursery.start_soon(closed)
                        nursery.start_soon(ask_in_flight)
                        await seen_down.wait()
                    found["reason"] = peer.reason
                    found["down_reason"] = repr(downs[0].reason)
                    found["node_down"] = downs[0].reason == NodeDown("frozen")
            return found

        return trio.run(main)
    finally:
        if child.poll() is None:
            os.kill(child.pid, signal.SIGCONT)
            child.kill()
        child.wait(timeout=10)
        if child.stdout is not None:
            child.stdout.close()


# ---- the command -----------------------------------------------------------


def _median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def run_idle(
    counts: list[int], window: float, rounds: int, say: Callable[[str], None]
) -> dict[str, Any]:
    """``rounds`` readings of each count, detector off then on, alternated;
    each printed, then the medians."""
    samples: list[dict[str, Any]] = []
    for _ in range(rounds):
        for n in counts:
            for mode in ("off", "on"):
                s = idle_cpu(n, mode, window)
                samples.append(s)
                say(
                    f"idle N={n:,} detector {mode:3}: hub {s['hub_cpu_s'] * 1e3:8.2f} ms CPU "
                    f"in {s['wall_s']:.1f} s ({s['hub_share_of_a_core']:.3%} of a core); "
                    f"dialer {s['dialer_cpu_s'] * 1e3:8.2f} ms; hub frames a connection a "
                    f"second: sent {s['hub_frames_sent_per_connection_s']:.2f}, received "
                    f"{s['hub_frames_received_per_connection_s']:.2f}; down {s['down']}"
                )
    summary: dict[str, Any] = {}
    for n in counts:

        def share(mode: str, key: str = "hub", n: int = n) -> float:
            return _median(
                [
                    s[f"{key}_cpu_s"] / s["wall_s"]
                    for s in samples
                    if s["connections"] == n and s["detector"] == mode
                ]
            )

        on, off = share("on"), share("off")
        dialer_on, dialer_off = share("on", "dialer"), share("off", "dialer")
        summary[str(n)] = {
            "hub_share_on": on,
            "hub_share_off": off,
            "heartbeat_share": on - off,
            "heartbeat_us_per_connection_s": (on - off) / n * 1e6,
            "dialer_share_on": dialer_on,
            "dialer_share_off": dialer_off,
        }
        say(
            f"N={n:,}: the hub's share of a core, median of {rounds}: detector on {on:.3%}, "
            f"off {off:.3%}; the heartbeats' {on - off:.3%}, "
            f"{(on - off) / n * 1e6:.1f} µs CPU a connection a second "
            f"(the dialer's, all on one node: on {dialer_on:.3%}, off {dialer_off:.3%})"
        )
    return {"samples": samples, "summary": summary}


def run_freezes(freezes: int, mode: str, say: Callable[[str], None]) -> list[dict[str, Any]]:
    """``freezes`` runs of :func:`freeze_to_down`, each printed."""
    found = []
    for i in range(freezes):
        f = freeze_to_down(mode)
        found.append(f)
        ask = "-" if f["ask_failed_s"] is None else f"{f['ask_failed_s']:.2f}"
        settings = f"heartbeat {f['heartbeat']:g} s, peer_timeout {f['peer_timeout']:g} s"
        say(
            f"freeze {i + 1} ({settings}, phase {f['phase_s']:.2f} s): "
            f"peer closed after {f['peer_closed_s']:.2f} s, "
            f"Down after {f['down_s']:.2f} s ({f['down_reason']}), "
            f"ask in flight failed after {ask} s; reason: {f['reason']}"
        )
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="the failure detector's costs (issue 25)")
    parser.add_argument("--window", type=float, default=WINDOW, help="seconds of each reading")
    parser.add_argument("--rounds", type=int, default=ROUNDS, help="readings of each setting")
    parser.add_argument(
        "--connections", type=int, nargs="+", default=list(CONNECTIONS), help="idle connections"
    )
    parser.add_argument("--freezes", type=int, default=FREEZES, help="SIGSTOP runs")
    parser.add_argument(
        "--freeze-detector",
        default="on",
        help="the freeze runs' detector: on (the defaults) or HEARTBEAT,TIMEOUT",
    )
    parser.add_argument("--only", choices=("idle", "freeze"), help="one part only")
    parser.add_argument("--json", help="also write every reading as JSON here")
    parser.add_argument("--dial", nargs=3, metavar=("PORT", "N", "MODE"), help=argparse.SUPPRESS)
    parser.add_argument("--serve", metavar="MODE", help=argparse.SUPPRESS)
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    if args.dial is not None:
        port, n, mode = args.dial
        _run(_dial, int(port), int(n), mode)
        return 0
    if args.serve is not None:
        _run(_serve, args.serve)
        return 0

    def say(line: str) -> None:
        print(line, flush=True)

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    say(
        f"python {sys.version.split()[0]}, trio {trio.__version__} | cpus {os.cpu_count()} | "
        f"open files: soft {soft}, hard {hard} (raised to the hard limit, at most 1,000,000)"
    )
    doc: dict[str, Any] = {"window_s": args.window, "rounds": args.rounds}
    if args.only in (None, "idle"):
        doc["idle"] = run_idle(args.connections, args.window, args.rounds, say)
    if args.only in (None, "freeze"):
        doc["freeze"] = run_freezes(args.freezes, args.freeze_detector, say)
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(doc, indent=2) + "\n")
    return 0


def _run(fn: Callable[..., Awaitable[None]], *args: Any) -> None:
    trio.run(fn, *args)


if __name__ == "__main__":
    sys.exit(main())
