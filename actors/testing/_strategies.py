"""The strategies of :func:`actors.testing.explore` (random, pct, dfs) and
the minimising of a failing schedule (ddmin)."""

from __future__ import annotations

import bisect
import math
import random
from collections.abc import Callable, Hashable, Iterable, Iterator
from typing import Any, TypeVar

import attrs

from ._heap import Memo
from ._schedule import (
    BATCHES,
    STEPS,
    Batch,
    Decide,
    Keying,
    Schedule,
    StopAt,
    _Run,
    hold,
    unpick,
    wait,
)

_H = TypeVar("_H", bound=Hashable)

# The chance that random holds a task back at a choice point, while its run
# has delays left.
HOLD_CHANCE = 0.25
# pct's fairness: a runnable task passed over at this many choice points in a
# row runs next (priorities alone would starve it behind a task that spins on
# checkpoints, a livelock no Trio schedule has).
STARVATION = 256

# Picks as hashed into a node's key: non-negative, distinct (hash(-1) is
# hash(-2)).
_PICKS = 1 << 60

# Strategies ---------------------------------------------------------------------


class _Strategy:
    # The kind of schedule its runs make, and whether it wants their states.
    kind = BATCHES
    cache: Keying = None

    def next_run(self, index: int) -> Decide | None:
        raise NotImplementedError

    def after(self, run: _Run) -> None:
        return None

    def stop_at(self) -> StopAt:
        """For the run of the schedule ``next_run`` gave last: whether the
        rest of it from a batch's start was run before (see _Chooser)."""
        return None


class _Random(_Strategy):
    """Every choice uniform; while the run has delays left, a choice point
    holds a task (uniform) back with probability :data:`HOLD_CHANCE`, for
    one batch or until no other can run (even odds)."""

    def __init__(self, seed: int, delays: int = 0) -> None:
        self._seed = seed
        self._delays = delays

    def next_run(self, index: int) -> Decide:
        rng = random.Random(f"random/{self._seed}/{index}")
        if not self._delays:
            return lambda point, ids, step: rng.randrange(len(ids))
        left = self._delays

        def decide(point: int, ids: list[int], step: int) -> int:
            nonlocal left
            if left and rng.random() < HOLD_CHANCE:
                left -= 1
                return (hold if rng.random() < 0.5 else wait)(rng.randrange(len(ids)))
            return rng.randrange(len(ids))

        return decide


class _Pct(_Strategy):
    """PCT over every runnable task: with ``steps`` (the default), a choice
    point is each step with two or more runnable tasks, and the one of
    highest priority runs while the others wait (a :data:`STEPS` schedule);
    without, each of Trio's batches is put in priority order (the schedules
    of versions before holds, which cannot run a task woken in a batch
    before that batch's others). Fair after :data:`STARVATION` choice
    points: a task passed over that many times in a row runs next."""

    def __init__(self, seed: int, depth: int, *, steps: bool = True) -> None:
        self.kind = STEPS if steps else BATCHES
        self._seed = seed
        self._depth = depth
        self._steps = 1

    def next_run(self, index: int) -> Decide:
        rng = random.Random(f"pct/{self._seed}/{index}")
        depth = self._depth
        changes = self.change_points(rng)
        priority: dict[int, float] = {}
        # The choice points in a row at which each task was an option and
        # did not run.
        passed: dict[int, int] = {}

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
            for task in ids:
                passed[task] = passed.get(task, 0) + 1
            starved = max(range(len(ids)), key=lambda i: passed[ids[i]])
            if passed[ids[starved]] > STARVATION:
                best = starved
            passed[ids[best]] = 0
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
    """Every schedule with at most ``bound`` reorderings (a task run before
    the default one) and at most ``delays`` holds (a task held back to the
    next batch), by iterative deepening over their sum: all with none, then
    all with exactly one, and so on (as CHESS's iterative context bounding),
    each level depth-first in lexicographic order (at a choice point of n
    options: run 0, 1, ... n - 1, then hold 0, ... n - 1). A deeper level
    walks the tree through the runs of the levels before, kept (the same
    schedule is the same run), and runs only the schedules it adds. A level
    that adds none ends it whatever the bounds: a schedule of one more
    non-default choice extends one of this level's."""

    def __init__(self, bound: int, delays: int = 0, *, cache: Keying = None) -> None:
        self._bound = bound
        self._delays = delays
        # State caching: a state (the steps so far, at a batch's start)
        # -> the node (a hash of the picks before it) that explored on from
        # it first and the budgets left there: (level, reorders, holds).
        self.cache = cache
        self._explored: Memo[bytes, tuple[int, tuple[int, int, int]]] = Memo()
        # The runs (each counted once) whose schedules below a state were
        # left out because another node had explored on from that state
        # with as much left.
        self.merged = 0
        # The schedules not run because their batch was known to reach an
        # explored state (see _redundant).
        self.skipped = 0
        # What each batch with a choice did (with traces): the state at its
        # start -> the options held back, by kind -> the order the others
        # ran in (positions among its options in creation order) -> the
        # pairs of those positions whose steps were dependent, in the order
        # they ran, the state at the next batch's start and the positions
        # whose steps made no task runnable. (A lookup wants one held set:
        # scanning all of a state's outcomes for it took 74% of a long
        # exploration's time at P=2 W=2.)
        self._outcomes: Memo[bytes, Memo[_Held, Memo[_Ran, _Play]]] = Memo()
        # The states at whose batch's start one task could run and none was
        # held until no other can (see _alike).
        self._lone: set[bytes] = set()
        self._cap = bound + delays
        self._level = 0
        self._prefix: list[int] | None = []
        # The prefix of the schedule next_run gave last.
        self._running: list[int] = []
        self._known: Memo[tuple[tuple[int, int], ...], _Run] = Memo()
        # One copy of each equal part of the runs kept (see _keep).
        self._batches: Memo[Batch, Batch] = Memo()
        self._states: Memo[tuple[int, bytes], tuple[int, bytes]] = Memo()
        self._numbers: Memo[tuple[int, ...], tuple[int, ...]] = Memo()
        self._pairs: Memo[tuple[int, int], tuple[int, int]] = Memo()
        # The sets and tuples kept once (see _shared).
        self._parts: Memo[Hashable, Any] = Memo()
        # Those of them walked, not run (see _advance).
        self._walked: set[tuple[tuple[int, int], ...]] = set()
        # Whether this level ran or walked a schedule (level 0 runs the
        # default one).
        self._added = True
        # Shared work (explore's ``jobs``): called as level 1 begins, it
        # gives this process's share of the search, (index, workers); then
        # each deviation from the default run, with its subtree at every
        # level, is one worker's (see _ours): the rank of each, in the
        # order level 1 meets them, modulo the workers.
        self.split: Callable[[], tuple[int, int]] | None = None
        self._share: tuple[int, int] | None = None
        self._ranks: Memo[tuple[int, int], int] = Memo()

    @property
    def exhausted(self) -> bool:
        return self._prefix is None and self._level >= self._cap

    def next_run(self, index: int) -> Decide | None:
        while True:
            prefix = self._prefix
            if prefix is None:
                if not self._added:
                    self._cap = self._level
                if self._level >= self._cap:
                    return None
                self._level += 1
                self._prefix = []
                self._added = False
                if self._level == 1 and self.split is not None:
                    self._divide(self.split())
                continue
            choices = Schedule.from_picks(prefix).choices
            known = self._known.get(choices)
            if known is not None and choices in self._walked:
                # A schedule walked rather than run, proposed again and no
                # longer shown redundant (its batch's end state not explored
                # with the budgets it has now): its run is needed after all.
                self._walked.discard(choices)
                known = None
            if known is None:
                self._added = True
                self._running = prefix
                return lambda point, ids, step: prefix[point] if point < len(prefix) else 0
            self._advance(known)

    def stop_at(self) -> StopAt:
        """A schedule with no choice left to add (as many deviations as the
        search's last level allows: it is never extended, and nothing below
        it branches) that reaches, past its last deviation, a state explored
        before goes on from there by the default choices, which a run
        through that state ran (or a schedule shown equivalent to one did):
        the same steps up to the order of independent ones, and the same
        trace. Recording the rest would only cost time, so it stops there
        (the run goes on, so a failure after that point still fails it; its
        trace is not counted, being one counted already)."""
        prefix = self._running
        if self.cache != "traces" or sum(pick != 0 for pick in prefix) < self._cap:
            return None
        start, explored = len(prefix), self._explored
        return lambda point, state: point >= start and state in explored

    def after(self, run: _Run) -> None:
        if sum(pick != 0 for pick in run.picks) < self._cap:
            self._keep(Schedule.from_picks(run.picks).choices, run)
        if self.cache == "traces":
            self._record_outcomes(run)
        self._advance(run, new=True)

    def _keep(self, choices: tuple[tuple[int, int], ...], run: _Run) -> None:
        """Keep ``run`` for the deeper levels to walk, its parts shared with
        the equal parts of the runs kept before: runs that branch from one
        another share their batches up to where they part, and their
        options and states (at P=2 W=2, 300 runs had 509 distinct batches
        of 21,792: 71 KB a run kept whole, most of it footprints)."""
        state, numbers = self._states.setdefault, self._numbers.setdefault
        self._known[choices] = attrs.evolve(
            run,
            options=numbers(run.options, run.options),
            states=tuple(state(each, each) for each in run.states),
            footprints=tuple(map(self._batch, run.footprints)),
            firsts=numbers(run.firsts, run.firsts),
            lone=numbers(run.lone, run.lone),
            tail=self._shared(run.tail),
        )

    def _batch(self, batch: Batch) -> Batch:
        """The one copy kept of ``batch``, its parts shared with the equal
        parts of the other batches kept (most batches differ from another
        only in their first choice point or in a pair or two)."""
        kept = self._batches.get(batch)
        if kept is None:
            numbers = self._numbers.setdefault
            kept = attrs.evolve(
                batch,
                options=numbers(batch.options, batch.options),
                ran=numbers(batch.ran, batch.ran),
                dependent=self._pairs_of(batch.dependent),
                quiet=self._shared(batch.quiet),
            )
            self._batches[kept] = kept  # (the key too: not ``batch``, whose parts are its own)
        return kept

    def _pairs_of(self, pairs: Iterable[tuple[int, int]]) -> frozenset[tuple[int, int]]:
        """``pairs`` as a set kept once, of pairs kept once (a set of 20
        pairs of a batch's steps takes 2 KB; at P=2 W=2 one in seven of the
        plays recorded had a set of its own)."""
        pair = self._pairs.setdefault
        return self._shared(frozenset(pair(each, each) for each in pairs))

    def _shared(self, value: _H) -> _H:
        """The one copy kept of ``value`` (a tuple or a set), or ``value``."""
        kept: _H = self._parts.setdefault(value, value)
        return kept

    def _record_outcomes(self, run: _Run) -> None:
        self._lone.update(run.states[index][1] for index in run.lone)
        for index, batch in enumerate(run.footprints):
            if len(batch.options) < 2 or index + 1 >= len(run.states):
                continue
            end = batch.point + len(batch.options) - 1
            ran, held = _played(len(batch.options), run.picks[batch.point : end])
            position = {task: i for i, task in enumerate(batch.options)}
            dependent = self._pairs_of((position[a], position[b]) for a, b in batch.dependent)
            quiet = self._shared(frozenset(position[task] for task in batch.quiet))
            before, after = run.states[index][1], run.states[index + 1][1]
            self._outcomes.setdefault(before, Memo()).setdefault(held, Memo())[ran] = (
                dependent,
                after,
                quiet,
            )

    def _advance(self, run: _Run, *, new: bool = False) -> None:
        while True:
            following = self._next_of(run, new=new)
            if isinstance(following, list) or following is None:
                self._prefix = following
                return
            # A schedule known to reach an explored state at its batch's
            # end: not run, but walked as if it had been (its batch's later
            # choice points still branch; nothing after the batch does).
            self.skipped += 1
            deviations = sum(pick != 0 for pick in following.picks)
            if deviations == self._level:
                # A schedule of this level, walked if not run: the next
                # level may extend it.
                self._added = True
            if deviations < self._cap:
                walked = Schedule.from_picks(following.picks).choices
                self._keep(walked, following)
                self._walked.add(walked)
            run, new = following, False

    def _next_of(self, run: _Run, *, new: bool) -> list[int] | _Run | None:
        """The prefix of the schedule to run after ``run`` (None: none is
        left), or a schedule that need not run, as the run it would be up to
        its batch's end (see _redundant)."""
        picks = run.picks
        # The reorderings and holds before each choice point.
        used = [(0, 0)]
        for pick in picks:
            reorders, holds = used[-1]
            used.append((reorders + (pick > 0), holds + (pick < 0)))
        end = self._merge_point(run, used, new=new) if self.cache is not None else len(picks)
        for point in reversed(range(end)):
            least = self._least_hold(run, point) if self.cache is not None else 0
            following = self._following(picks[point], run.options[point], *used[point], least)
            while following is not None and not self._ours(point, following, used[point]):
                following = self._following(following, run.options[point], *used[point], least)
            if following is None:
                continue
            if self.cache == "traces":
                virtual = self._redundant(run, point, following, used[point])
                if virtual is not None:
                    return virtual
            return [*picks[:point], following]
        return None

    def _redundant(self, run: _Run, point: int, pick: int, used: tuple[int, int]) -> _Run | None:
        """Whether the schedule of ``run``'s picks before ``point``, then
        ``pick`` (a reordering or a hold), then the default, need not run:
        a run from the state at its batch's start (this one, or another
        reaching a state of the same trace) ran the same steps of that batch
        and held the same tasks back, in an order that every pair of its
        dependent steps keeps (so the same state after the batch, the order
        of independent steps aside), and that state was explored on from
        with at least the budgets this schedule would have left there. If
        so, the schedule as the run it would be up to its batch's end: the
        search walks it (the batch's later choice points still branch).
        Two more plays tell the same for a task held back (see _alike)."""
        batches = run.footprints
        index = bisect.bisect_right(batches, point, key=lambda batch: batch.point) - 1
        if index < 0 or index + 1 >= len(run.states):
            return None
        batch = batches[index]
        end = batch.point + len(batch.options) - 1
        if not batch.point <= point < end:
            return None
        chosen = [*run.picks[batch.point : point], pick] + [0] * (end - point - 1)
        ran, held = _played(len(batch.options), chosen)
        observed = self._outcomes.get(run.states[index][1])
        if not observed:
            return None
        reorders, holds = used
        left = self._left(reorders + (pick > 0), holds + (pick < 0))
        alike = self._alike(run.picks[:point], point - batch.point, chosen, ran, held, observed)
        for same, order, fits in alike:
            position = {task: i for i, task in enumerate(order)}
            match = self._matching(same, position, left, fits)
            if match is None:
                continue
            dependent, after = match
            tasks = batch.options
            played = Batch(
                batch.point,
                tasks,
                tuple(tasks[i] for i in ran),
                frozenset((tasks[a], tasks[b]) for a, b in dependent if a in ran and b in ran),
            )
            return attrs.evolve(
                run,
                picks=(*run.picks[:point], *chosen[point - batch.point :]),
                options=run.options[:end],
                states=(*run.states[: index + 1], (end, after)),
                footprints=(*batches[:index], played),
                firsts=tuple(first for first in run.firsts if first < end),
                lone=tuple(each for each in run.lone if each <= index),
                error=None,
            )
        return None

    def _alike(
        self,
        before: tuple[int, ...],
        at: int,
        chosen: list[int],
        ran: _Ran,
        held: _Held,
        observed: Memo[_Held, Memo[_Ran, _Play]],
    ) -> Iterator[tuple[Memo[_Ran, _Play] | None, _Ran, Callable[[bytes, frozenset[int]], bool]]]:
        """The plays of a batch from its state that reach the state a
        schedule reaches (``before``: its picks before the one it deviates
        by, ``chosen[at]``; ``chosen``: its picks in the batch, which run
        ``ran`` and hold ``held`` back), each as the plays observed, the order of
        positions their dependent steps must keep, and what else their
        outcome must be (given the state it ended in and its quiet steps):

        - the same tasks held, the others run in an order that keeps their
          dependent steps';
        - for a task held until no other can run, where holding it for this
          batch alone left it the only task of the next one (so no other
          task was held until no other can run: those are in every batch
          until let go): let go there, it runs as when held for the batch,
          from the same state on (a wait that every task of a batch is in
          is not in the state's key). That schedule ran first (at a choice
          point: run, then h, then w);
        - for the one task held back in a batch, no task held until no
          other can run before it (then none is let go in the next batch
          but this one), where the others' steps make no task runnable
          (and the run loop none after them): it runs alone in the next
          batch, the same step as when run last in this one, and the state
          after that batch is the state after this batch of a play that
          ran it last."""
        yield observed.get(held), ran, lambda after, quiet: True
        kind, held_back = unpick(chosen[at])
        options = len(chosen) + 1  # a batch of n options has n - 1 picks
        if kind == "w":
            as_hold = [*chosen]
            as_hold[at] = hold(held_back)
            yield (
                observed.get(_played(options, as_hold)[1]),
                ran,
                lambda after, quiet: after in self._lone,
            )
        if len(held) == 1 and not any(unpick(each)[0] == "w" for each in before):
            ((_, alone),) = held
            others = frozenset(ran)
            yield (
                observed.get(frozenset()),
                (*ran, alone),
                lambda after, quiet: others <= quiet,
            )

    def _matching(
        self,
        same: Memo[_Ran, _Play] | None,
        position: dict[int, int],
        left: tuple[int, int, int],
        fits: Callable[[bytes, frozenset[int]], bool],
    ) -> tuple[frozenset[tuple[int, int]], bytes] | None:
        """Of the plays of one batch from one state with the same tasks
        held (``same``), one whose dependent steps ran in the order
        ``position`` runs them too, that ended in a state explored on from
        with at least the budgets ``left``, and that ``fits``."""
        for dependent, after, quiet in (same or {}).values():
            if any(position[a] > position[b] for a, b in dependent):
                continue
            if not fits(after, quiet):
                continue
            known = self._explored.get(after)
            if known is not None and all(a >= b for a, b in zip(known[1], left, strict=True)):
                return dependent, after
        return None

    def _left(self, reorders: int, holds: int) -> tuple[int, int, int]:
        """The budgets left after ``reorders`` and ``holds``: (level,
        reorders, holds)."""
        return (
            self._level - reorders - holds,
            self._bound - reorders,
            self._delays - holds,
        )

    def _merge_point(self, run: _Run, used: list[tuple[int, int]], *, new: bool) -> int:
        """The first choice point of the first batch of ``run`` whose state
        another node explored on from with at least the budgets left here
        (everything below it was run, or left out for the same reason, from
        that node: the schedules below it here are not needed); the run's
        end if none. Records the states it passes."""
        picks = run.picks
        node = 0
        at = 0
        for point, state in run.states:
            while at < point:
                node = hash((node, picks[at] % _PICKS))
                at += 1
            left = self._left(*used[point])
            known = self._explored.get(state)
            if known is None:
                self._explored[state] = (node, left)
                continue
            first, had = known
            if first == node:
                if all(a >= b for a, b in zip(left, had, strict=True)):
                    self._explored[state] = (node, left)
                continue
            if all(a >= b for a, b in zip(had, left, strict=True)):
                # Counted once, when the run ran (a deeper level walks it again).
                self.merged += new
                return point
            if all(a >= b for a, b in zip(left, had, strict=True)):
                self._explored[state] = (node, left)
        return len(picks)

    def _divide(self, share: tuple[int, int]) -> None:
        """Take ``share`` of the search: rank its first deviations
        (from the default run, the order _next_of meets them in: the last
        choice point first, each point's options in order)."""
        self._share = share
        if share[1] < 2:
            return
        default = self._known[()]
        for point in reversed(range(len(default.picks))):
            least = self._least_hold(default, point) if self.cache is not None else 0
            pick = self._following(0, default.options[point], 0, 0, least)
            while pick is not None:
                self._ranks[point, pick] = len(self._ranks)
                pick = self._following(pick, default.options[point], 0, 0, least)

    def _ours(self, point: int, pick: int, used: tuple[int, int]) -> bool:
        """Whether this process explores the schedules whose picks up to
        ``point`` are those run so far, then ``pick`` (with ``used`` before
        it): all of them, but in a search shared between workers: a first
        deviation is the worker's of its rank, and all below it with it, at
        every level (the picks before a first deviation are the default
        run's, so every worker ranks it the same, and a deeper level's
        schedule extends one of the level before after its last deviation,
        keeping its first). The subtrees are disjoint and together the
        whole search, so a worker's deeper levels need only its own runs;
        and at each level a worker merges a schedule only into a state it
        or the default run explored on from: a state on the default path
        was explored on from, at this level, by every worker, each below
        the first deviations after it, which come before any deviation that
        reaches that state again; so what a merge leaves to another worker
        lies below a later first deviation, and no chain of such merges
        returns to where it began (a state of a worker's own subtree from
        a level before is one process's claim, as in one search). A
        deviation the ranks do not know (none, if the default run is the one
        kept) is everyone's."""
        share = self._share
        if share is None or share[1] < 2 or used != (0, 0):
            return True
        rank = self._ranks.get((point, pick))
        return rank is None or rank % share[1] == share[0]

    def _least_hold(self, run: _Run, point: int) -> int | None:
        """With a reduction, the least option a hold at ``point`` may take,
        or None if none may: a batch's holds are made at its start, before
        any of its tasks runs, each of a task created after the one held
        before it. Any other schedule runs the very same steps as one of
        those, with the same holds and no more reorderings (the same tasks
        held, the others in the same order: holding a task earlier in its
        batch only takes it out of the options before the picks that follow,
        whose indices can only fall, a reordering becoming the default at
        most), so it reaches the same states; the full enumeration
        (``reduction=False``) runs them all."""
        firsts = run.firsts
        start = firsts[bisect.bisect_right(firsts, point) - 1]
        least = 0
        for pick in run.picks[start:point]:
            kind, least = unpick(pick)
            if not kind:
                return None
        return least

    def _following(
        self, pick: int, options: int, reorders: int, holds: int, least: int | None = 0
    ) -> int | None:
        """The option after ``pick`` that the bounds allow at a choice point
        with ``reorders`` and ``holds`` before it, if any: run 0, 1, ...
        n - 1, then hold ``least``, ... n - 1 for a batch, then ``least``,
        ... n - 1 until no other task can run (no hold if ``least`` is
        None: see _least_hold)."""
        if reorders + holds + 1 > self._level:
            return None
        if 0 <= pick < options - 1 and reorders < self._bound:
            return pick + 1
        if holds >= self._delays or least is None or least >= options:
            return None
        kind, index = unpick(pick)
        if not kind:
            return hold(least)
        if index + 1 < options:
            return hold(index + 1) if kind == "h" else wait(index + 1)
        return wait(least) if kind == "h" else None


# A batch's play: the positions (among its options in creation order) in the
# order they ran, and the positions held back with the kind of hold.
_Ran = tuple[int, ...]
_Held = frozenset[tuple[str, int]]
_Outcome = tuple[_Ran, _Held]
# What a play of a batch did: the pairs of positions whose steps were
# dependent, the state after it, the positions whose steps were quiet.
_Play = tuple[frozenset[tuple[int, int]], bytes, frozenset[int]]


def _played(options: int, picks: list[int] | tuple[int, ...]) -> _Outcome:
    """What a batch of ``options`` tasks does under ``picks`` (one per
    choice point of it): the positions run, in order, and those held."""
    remaining = list(range(options))
    ran: list[int] = []
    held: set[tuple[str, int]] = set()
    for pick in picks:
        kind, index = unpick(pick)
        if kind:
            held.add((kind, remaining.pop(index)))
        else:
            ran.append(remaining.pop(index))
    return (*ran, *remaining), frozenset(held)


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
