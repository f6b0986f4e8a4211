"""The ``trio-reconcile`` console script's entry point.

It imports nothing of the project at module level, so that a Ctrl-C while the
command's modules load (half a second) ends like one while it runs: exit
status 130 and one line, no traceback. The command itself is
:func:`replica.driver.main`.
"""

from __future__ import annotations

import sys

INTERRUPTED = 130


def main() -> int:
    try:
        from replica.driver import main as command
    except KeyboardInterrupt:
        print("trio-reconcile: interrupted", file=sys.stderr)
        return INTERRUPTED
    return command()
