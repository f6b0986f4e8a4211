"""examples/chat_server.py: rooms and sessions over TCP on loopback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "chat_server.py"

TRANSCRIPT = """\
alice reads: joined tea: alice
bob   reads: joined tea: alice, bob
alice reads: * bob joined
alice reads: <alice> hello bob
bob   reads: <alice> hello bob
bob drops his connection
alice reads: * bob left
carol reads: joined tea: alice, carol
alice reads: * carol joined
alice reads: bye
carol reads: * alice left
carol reads: <carol> quiet now
the server stopped; every actor ended with it
"""


def test_the_chat_server_serves_rooms_and_monitors_clean_up_members() -> None:
    result = subprocess.run(
        [sys.executable, str(EXAMPLE)], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr
    # Bob's dropped connection ends his session; the room's monitor removes
    # him (alice reads that he left, carol does not see him in the room).
    assert result.stdout == TRANSCRIPT
