"""OS processes on one store: two racing to append at the same lower, and one
killed with SIGKILL right after its writes returned."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from replica import ShardCatalog

# Real seconds a child process may take; each takes well under one.
CHILD_TIMEOUT = 60

RACER = textwrap.dedent(
    """
    import sys
    from replica import UpperMismatchError
    from replica.storage.persist import open_catalog

    with open_catalog(sys.argv[1]) as catalog:
        data = catalog.shard("data")
        print("ready", flush=True)
        sys.stdin.readline()
        try:
            data.append([((sys.argv[2],), 0, 1)], 0, 1)
        except UpperMismatchError as error:
            print("lost", error, flush=True)
        else:
            print("won", flush=True)
    """
)

KILLED = textwrap.dedent(
    """
    import os, signal, sys
    from replica.storage.persist import open_catalog

    catalog = open_catalog(sys.argv[1])
    data = catalog.shard("data")
    for ts in range(50):
        data.write(ts, [(ts, "x" * 100)] * 100)
    data.advance(60)
    os.kill(os.getpid(), signal.SIGKILL)
    """
)


def race_two_processes(url: str) -> str:
    """Two processes, both ready, released at once, append at lower 0 of
    shard ``data``: exactly one wins. Return the winner's name."""
    racers = [
        subprocess.Popen(
            [sys.executable, "-c", RACER, url, name],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for name in ("a", "b")
    ]
    for racer in racers:
        assert racer.stdout is not None
        assert racer.stdout.readline() == "ready\n"
    for racer in racers:
        assert racer.stdin is not None
        racer.stdin.write("go\n")
        racer.stdin.flush()
    outcomes = [racer.communicate(timeout=CHILD_TIMEOUT)[0].split() for racer in racers]
    assert [racer.returncode for racer in racers] == [0, 0]
    assert sorted(outcome[0] for outcome in outcomes) == ["lost", "won"]
    lost = next(" ".join(outcome[1:]) for outcome in outcomes if outcome[0] == "lost")
    assert lost == "append to shard 'data' expected upper 0, found 1"
    return "ab"[[outcome[0] for outcome in outcomes].index("won")]


def write_and_kill_9(url: str) -> None:
    """A process writes 50 batches of 100 rows to shard ``data``, advances it
    to 60, and is killed with SIGKILL (no clean-up of any kind)."""
    killed = subprocess.run([sys.executable, "-c", KILLED, url], timeout=CHILD_TIMEOUT, check=False)
    assert killed.returncode == -9


def check_what_the_killed_process_stored(catalog: ShardCatalog) -> None:
    data = catalog.shard("data")
    assert data.upper == 60
    assert len(data.updates) == 5_000
    assert data.read_at(49).count((49, "x" * 100)) == 100
