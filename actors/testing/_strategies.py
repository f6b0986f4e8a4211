"""The strategies of :func:`actors.testing.explore` (random, pct, dfs) and
the minimising of a failing schedule (ddmin)."""

from __future__ import annotations

import math
import random
from collections.abc import Callable

from ._schedule import Decide, Schedule, _Run

# Strategies ---------------------------------------------------------------------


class _Strategy:
    def next_run(self, index: int) -> Decide | None:
        raise NotImplementedError

    def after(self, run: _Run) -> None:
        return None


class _Random(_Strategy):
    def __init__(self, seed: int) -> None:
        self._seed = seed

    def next_run(self, index: int) -> Decide:
        rng = random.Random(f"random/{self._seed}/{index}")
        return lambda point, ids, step: rng.randrange(len(ids))


class _Pct(_Strategy):
    def __init__(self, seed: int, depth: int) -> None:
        self._seed = seed
        self._depth = depth
        self._steps = 1

    def next_run(self, index: int) -> Decide:
        rng = random.Random(f"pct/{self._seed}/{index}")
        depth = self._depth
        changes = self.change_points(rng)
        priority: dict[int, float] = {}

        def decide(point: int, ids: list[int], step: int) -> int:
            for task in ids:
                if task not in priority:
                    priority[task] = depth + rng.random()
            best = max(range(len(ids)), key=lambda i: priority[ids[i]])
            # A change point on a step without a choice (a batch of one)
            # applies at the next choice point.
            while changes and changes[-1][0] <= step:
                _, lowered = changes.pop()
                priority[ids[best]] = lowered + rng.random() / 2
                best = max(range(len(ids)), key=lambda i: priority[ids[i]])
            return best

        return decide

    def change_points(self, rng: random.Random) -> list[tuple[int, int]]:
        """(step, lowered priority) of one run, latest step first: distinct
        steps (a repeated draw would lose a change point), at most one per
        step of the longest run so far; the i-th drawn lowers to
        ``depth - 1 - i``."""
        drawn = rng.sample(range(1, self._steps + 1), min(self._depth - 1, self._steps))
        return sorted(((step, self._depth - 1 - i) for i, step in enumerate(drawn)), reverse=True)

    def after(self, run: _Run) -> None:
        self._steps = max(self._steps, run.steps)


class _Dfs(_Strategy):
    """Every schedule with at most ``bound`` non-default choices, by
    iterative deepening: all with none, then all with exactly one, and so on
    (as CHESS's iterative context bounding), each level depth-first in
    lexicographic order. A deeper level walks the tree through the runs of
    the levels before, kept (the same schedule is the same run), and runs
    only the schedules it adds. A level that adds none ends it whatever the
    bound: a schedule of one more non-default choice extends one of this
    level's."""

    def __init__(self, bound: int) -> None:
        self._bound = bound
        self._level = 0
        self._prefix: list[int] | None = []
        self._known: dict[tuple[tuple[int, int], ...], _Run] = {}
        # Whether this level ran a schedule (level 0 runs the default one).
        self._added = True

    @property
    def exhausted(self) -> bool:
        return self._prefix is None and self._level >= self._bound

    def next_run(self, index: int) -> Decide | None:
        while True:
            prefix = self._prefix
            if prefix is None:
                if not self._added:
                    self._bound = self._level
                if self._level >= self._bound:
                    return None
                self._level += 1
                self._prefix = []
                self._added = False
                continue
            known = self._known.get(Schedule.from_picks(prefix).choices)
            if known is None:
                self._added = True
                return lambda point, ids, step: prefix[point] if point < len(prefix) else 0
            self._advance(known)

    def after(self, run: _Run) -> None:
        if sum(pick != 0 for pick in run.picks) < self._bound:
            self._known[Schedule.from_picks(run.picks).choices] = run
        self._advance(run)

    def _advance(self, run: _Run) -> None:
        picks = run.picks
        used = [0]
        for pick in picks:
            used.append(used[-1] + (pick != 0))
        for point in reversed(range(len(picks))):
            if picks[point] + 1 < run.options[point] and used[point] + 1 <= self._level:
                self._prefix = [*picks[:point], picks[point] + 1]
                return
        self._prefix = None


# Minimising ---------------------------------------------------------------------


def _ddmin(
    choices: list[tuple[int, int]], fails: Callable[[list[tuple[int, int]]], bool]
) -> list[tuple[int, int]]:
    """Zeller and Hildebrandt's ddmin: a 1-minimal subset of ``choices`` for
    which ``fails`` holds (it holds for ``choices``)."""
    n = 2
    while len(choices) >= 2:
        size = math.ceil(len(choices) / n)
        chunks = [choices[i : i + size] for i in range(0, len(choices), size)]
        for chunk in chunks:
            if fails(chunk):
                choices, n = chunk, 2
                break
        else:
            for i in range(len(chunks)):
                rest = [c for j, part in enumerate(chunks) if j != i for c in part]
                if fails(rest):
                    choices, n = rest, max(n - 1, 2)
                    break
            else:
                if n >= len(choices):
                    break
                n = min(len(choices), 2 * n)
    if len(choices) == 1 and fails([]):
        return []
    return choices
