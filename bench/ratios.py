"""Print the goal ratios from a ``bench/run.py --json OUT`` file.

    .venv/bin/python bench/ratios.py bench/results/full.json

Each ratio is the median over repeats of (actors row ops/s / baseline row ops/s)
within the same repeat, the way the baseline computes its ``vs ref`` column.
"""

from __future__ import annotations

import json
import statistics
import sys
from typing import Any

PAIRS = [
    *((f"actors sequencer K={k}", f"trio fan-out K={k}") for k in (1, 2, 4, 8, 16)),
    ("actors sequencer K=8 batch=1", "trio fan-out K=8"),
    ("actors ask", "trio ping-pong"),
    ("actors ask", "pykka ThreadingActor ask"),
    ("actors ask timeout=5", "trio ping-pong"),
    ("actors ask timeout=5", "pykka ThreadingActor ask"),
    ("actors tell", "trio stream buf=0"),
    ("actors tell", "trio stream buf=128"),
    *((f"compute command channel W={w}", f"trio fan-out K={w}") for w in (1, 2, 4, 8, 16)),
    # Linearity of reconciliation: dataflows/s at N=100 over dataflows/s at N,
    # i.e. the time per dataflow at N relative to N=100 (goal: within 2x).
    *(
        (f"compute reconcile {kind} N=100", f"compute reconcile {kind} N={n}")
        for kind in ("kept", "dropped")
        for n in (1_000, 10_000)
    ),
    ("barrier rounds", "trio rendezvous (Event)"),
    ("compute frontier advances one waiting", "compute frontier advances none waiting"),
    # Issue 11: hydration against the dict-of-lists limit (goal >= 0.25x); a
    # write's frontier at the controller in raw round trips (goal <= 4, so a
    # ratio >= 0.25).
    *((f"index hydration W={w} N=100000", "dict of lists N=100000") for w in (1, 2)),
    ("compute write to controller frontier W=2 two runtimes", "trio ping-pong"),
    # Issue 12: an ask with a timeout against one without (goal >= 0.9) and
    # against ping-pong (goal >= 1.0); a timer firing against a sleep loop's
    # wake-up (cost at most 2x: ratio >= 0.5); a Down against a tell (at most
    # 2x: ratio >= 0.5), against an actor's end, and an actor's end against
    # trio's cancellation of a parked task.
    ("actors ask timeout=5", "actors ask"),
    ("actors timers N=10000", "trio sleep loops N=10000"),
    ("actors Down N=10000", "actors tell"),
    ("actors Down stopped N=10000", "actors tell"),
    ("actors Down delivery N=10000", "actors tell"),
    ("actors Down N=10000", "actors end N=10000"),
    ("actors end N=10000", "trio tasks cancelled N=10000"),
    # Issue 13: an explored run against a plain seeded run (overhead at most
    # 3x: ratio >= 0.33).
    ("explore dfs recreate W=1", "spec seeded runs recreate W=1"),
    # Issue 23: compaction's cost to a write's frontier (goal >= 1/1.2, so a
    # ratio >= 0.83), and an explored run of the holds counterexample against
    # the explored recreate row.
    (
        "compute write to controller frontier W=2 compaction on",
        "compute write to controller frontier W=2 compaction off",
    ),
    ("explore dfs holds counterexample W=1", "explore dfs recreate W=1"),
    # Issue 14: a remote ask against a raw TCP ping-pong of its frames (goal
    # >= 0.7) and against the bare 4-hop relay; remote tells against raw
    # frames (goal >= 0.5).
    ("net ask (loopback tcp)", "tcp ping-pong raw"),
    ("net ask (loopback tcp)", "tcp ping-pong 4 hops"),
    ("tcp ping-pong 4 hops", "tcp ping-pong raw"),
    ("net tell (loopback tcp)", "tcp frames raw"),
]


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: bench/ratios.py RESULTS.json", file=sys.stderr)
        return 2
    with open(argv[0]) as f:
        doc: dict[str, Any] = json.load(f)
    rates: dict[str, list[float]] = {r["name"]: r["ops_per_s"] for r in doc["results"]}
    width = max(len(a) + len(b) for a, b in PAIRS) + 3
    for a, b in PAIRS:
        if a not in rates or b not in rates:
            continue
        ratios = [x / y for x, y in zip(rates[a], rates[b], strict=True)]
        above = sum(r > 1 for r in ratios)
        print(
            f"{a + ' / ' + b:<{width}} {statistics.median(ratios):6.2f}x"
            f"  (per repeat {min(ratios):.2f}..{max(ratios):.2f}; >1 in {above}/{len(ratios)})"
        )
    memory = doc.get("idle_memory")
    if memory:
        print(
            f"bytes per idle actor ({memory['actors']:,} actors): "
            f"{memory['bytes_per_idle_actor']:,.0f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
