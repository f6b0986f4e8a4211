"""The limits ``serve`` enforces on its options (the command's parser
checks them too, before anything starts)."""

from __future__ import annotations

MIN_PEER_TIMEOUT = 0.1
"""serve's least ``--peer-timeout``: pings go out a quarter of it apart, and
below this they would keep a process busy (and close slow connections)."""
MAX_PEER_TIMEOUT = 1_000_000
"""serve's most ``--peer-timeout`` (seconds): never reached in practice, and
what ``open_cluster(heartbeat_timeout=math.inf)`` is clamped to."""
