"""examples/two_nodes.py: two nodes over loopback TCP, an ask, a monitor, NodeDown."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "two_nodes.py"

TRANSCRIPT = """\
bank: listening on 127.0.0.1 (loopback)
shop: connected to node 'bank', handshake done
shop: found 'accounts': accounts@bank
cashier: monitoring accounts@bank
cashier: ann's balance at the bank is 42
bank: closing the connection
cashier: Down from accounts@bank: NodeDown(node='bank') (node 'bank' down)
cashier: a late ask fails: ActorStoppedError: actor 'accounts@bank' is stopped
shop: why the connection went down: closed by node 'bank': closing time
both nodes stopped
"""


def test_two_nodes_ask_over_tcp_and_the_monitor_sees_the_node_go_down() -> None:
    result = subprocess.run(
        [sys.executable, str(EXAMPLE)], capture_output=True, text=True, check=False, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == TRANSCRIPT
