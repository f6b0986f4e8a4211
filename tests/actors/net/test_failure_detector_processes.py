"""The failure detector against a real OS process: a node in a child process
frozen with SIGSTOP is taken for down within ``peer_timeout + heartbeat`` of
real time, its references end with ``NodeDown``, and the asks in flight
fail. Real time and real sockets: every wait is bounded."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from typing import cast

import pytest
import trio

import actors
from actors.net import NodeDownError, open_node

from ..messages import SECRET, Total, codec
from .nodes import CounterMessage

CHILD = textwrap.dedent(
    """
    import sys, trio, actors
    from actors.net import open_node
    from tests.actors.messages import SECRET, codec
    from tests.actors.net.nodes import counter

    async def main() -> None:
        async with actors.open_system() as system:
            await system.spawn(counter, name="counter")
            async with open_node(
                system, name="frozen", secret=SECRET, codec=codec(),
                heartbeat=0.2, peer_timeout=1.0,
            ) as node:
                print(node.address[1], flush=True)
                await trio.sleep_forever()

    trio.run(main)
    """
)


@pytest.mark.skipif(not hasattr(signal, "SIGSTOP"), reason="needs SIGSTOP (POSIX)")
def test_a_node_frozen_with_sigstop_is_taken_for_down_within_its_timeout() -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD],
        stdout=subprocess.PIPE,
        text=True,
        cwd=os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(__file__)))),
    )
    try:
        assert child.stdout is not None
        port = int(child.stdout.readline())
        found: dict[str, object] = {}

        async def main() -> None:
            with trio.fail_after(20):
                async with (
                    actors.open_system() as system,
                    open_node(
                        system,
                        name="watcher",
                        secret=SECRET,
                        codec=codec(),
                        listen=None,
                        heartbeat=0.2,
                        peer_timeout=1.0,
                    ) as node,
                ):
                    peer = await node.connect(("127.0.0.1", port))
                    ref = await peer.lookup("counter")
                    assert ref is not None
                    typed = cast("actors.ActorRef[CounterMessage]", ref)
                    assert await typed.ask(Total, timeout=5) == 0
                    await trio.sleep(0.5)  # idle: heartbeats keep it up
                    assert peer.reason is None
                    os.kill(child.pid, signal.SIGSTOP)
                    frozen_at = time.monotonic()
                    with pytest.raises(NodeDownError):
                        await typed.ask(Total, timeout=15)
                    found["after"] = time.monotonic() - frozen_at
                    found["reason"] = peer.reason
                    found["end"] = await typed.wait_stopped()

        actors.run(main, clock=actors.RealClock())
        # Within peer_timeout + a beat of the last frame it sent (which came
        # up to a beat before the freeze), and slack.
        assert 0.7 <= float(str(found["after"])) <= 2.5, found
        assert str(found["reason"]).startswith("node 'frozen' sent nothing for 1")
        assert found["end"] == actors.NodeDown("frozen")
    finally:
        if child.poll() is None:
            os.kill(child.pid, signal.SIGCONT)
            child.kill()
        child.wait(timeout=10)
        if child.stdout is not None:
            child.stdout.close()
