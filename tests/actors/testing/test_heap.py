"""An exploration collects each run's garbage at the run's end and freezes
what survives (actors/testing/_heap.py), and leaves the collector as it
found it."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Awaitable, Callable

import pytest
import trio

from actors.testing import explore
from actors.testing._explore import _SeenRuns
from actors.testing._heap import Memo
from actors.testing._strategies import _Dfs


class _Node:
    def __init__(self) -> None:
        self.me = self  # a cycle: only the collector frees it


def _program(
    seen: list[tuple[int, bool]], refs: list[weakref.ref[_Node]]
) -> Callable[[], Awaitable[None]]:
    async def main() -> None:
        # What every run before this one left in a cycle is gone already.
        seen.append((gc.get_freeze_count(), all(ref() is None for ref in refs)))
        refs.append(weakref.ref(_Node()))
        async with trio.open_nursery() as nursery:
            for _ in range(2):
                nursery.start_soon(trio.lowlevel.checkpoint)

    return main


def test_each_runs_cycles_are_collected_and_the_rest_frozen_until_the_end() -> None:
    seen: list[tuple[int, bool]] = []
    refs: list[weakref.ref[_Node]] = []
    exploration = explore(_program(seen, refs), strategy="dfs", bound=1, reduction=False)
    assert exploration.runs == len(seen) > 2
    (first_frozen, _), *later = seen
    assert first_frozen == 0  # nothing frozen before the first run ends
    assert all(frozen > 0 for frozen, _ in later)  # after it: what survived it
    assert all(clean for _, clean in later)  # each run's cycle collected, not frozen
    assert gc.get_freeze_count() == 0  # unfrozen at the end


def test_what_the_caller_froze_stays_frozen_and_nothing_more_is() -> None:
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        seen: list[tuple[int, bool]] = []
        explore(_program(seen, []), strategy="dfs", bound=1, reduction=False)
        assert len(seen) > 2
        # A frozen object freed by its count of references leaves the
        # permanent generation: the count may fall, but never to nothing (an
        # unfreeze) nor above the caller's (a freeze of the runs' objects).
        assert all(frozen // 2 < count <= frozen for count, _ in seen)
        assert frozen // 2 < gc.get_freeze_count() <= frozen
    finally:
        gc.unfreeze()


def test_an_interrupted_exploration_unfreezes_too() -> None:
    runs = 0

    async def main() -> None:
        nonlocal runs
        runs += 1
        async with trio.open_nursery() as nursery:
            for _ in range(2):
                nursery.start_soon(trio.lowlevel.checkpoint)
        if runs == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        explore(main, strategy="dfs", bound=1, reduction=False)
    assert gc.get_freeze_count() == 0


def test_the_memos_are_memo_dicts() -> None:
    # Each dict an exploration keeps growing for its whole length (the
    # states and plays of dfs, the options and steps seen after each prefix)
    # is a Memo: a plain one is untracked when what it holds is, and comes
    # back into a generation, to be traversed by every collection, each
    # time it gets a new entry.
    for memo_holder in (_Dfs(1, 1, cache="traces"), _SeenRuns()):
        kept = {name: value for name, value in vars(memo_holder).items() if type(value) is dict}
        assert kept == {}, f"{type(memo_holder).__name__} keeps plain dicts: {sorted(kept)}"
        assert any(isinstance(value, Memo) for value in vars(memo_holder).values())


def test_a_memo_stays_tracked_where_a_dict_is_untracked() -> None:
    memo: Memo[int, tuple[int, int]] = Memo({1: (1, 2)})
    plain = {1: (1, 2)}
    gc.collect()
    assert not gc.is_tracked(plain)  # all it holds is untracked: so is it
    assert gc.is_tracked(memo)
    memo[2] = (3, 4)
    gc.freeze()
    try:
        fresh = (len(memo), len(plain))  # made now: tracked, as a new entry's value is
        memo[3] = fresh
        plain[3] = fresh
        young = [id(obj) for obj in gc.get_objects()]  # the frozen are left out
        assert id(plain) in young
        assert id(memo) not in young
    finally:
        gc.unfreeze()
