"""An exploration collects each run's garbage at the run's end and freezes
what survives (actors/testing/_heap.py), and leaves the collector as it
found it."""

from __future__ import annotations

import gc
import signal
import types
import weakref
from collections.abc import Awaitable, Callable, Generator

import pytest
import trio

from actors.testing import belong, explore, touch
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
    assert gc.get_freeze_count() == 0
    exploration = explore(_program(seen, refs), strategy="dfs", bound=1, reduction=False)
    assert exploration.runs == len(seen) > 2
    # What the process had is frozen before the first run, and what each run
    # left alive after it; each run's cycle is collected, not frozen.
    assert all(frozen > 0 for frozen, _ in seen)
    assert all(clean for _, clean in seen)
    assert gc.get_freeze_count() == 0  # unfrozen at the end


def test_what_the_caller_froze_stays_frozen_and_nothing_more_is() -> None:
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        seen: list[tuple[int, bool]] = []
        explore(_program(seen, []), strategy="dfs", bound=1, reduction=False)
        assert len(seen) > 2
        assert all(clean for _, clean in seen)  # each run's cycle collected all the same
        # A frozen object freed by its count of references leaves the
        # permanent generation: the count may fall, but never to nothing (an
        # unfreeze) nor above the caller's (a freeze of the runs' objects).
        assert all(frozen // 2 < count <= frozen for count, _ in seen)
        assert frozen // 2 < gc.get_freeze_count() <= frozen
    finally:
        gc.unfreeze()


@types.coroutine
def _parked() -> Generator[str, None, None]:
    yield "parked"


def _leave_garbage(shared: object, finalized: list[object]) -> None:
    """A coroutine parked in a ``try`` whose ``finally`` touches ``shared``,
    in a cycle: only the collector closes it."""

    async def unfinished() -> None:
        try:
            await _parked()
        finally:
            finalized.append(shared)
            touch(shared)

    coroutine = unfinished()
    coroutine.send(None)
    holder = _Node()
    holder.coroutine = coroutine  # type: ignore[attr-defined]


class _Log:
    def __init__(self) -> None:
        self.order: list[str] = []


def _two_writers(finalized: list[object], first_runs: list[int]) -> Callable[[], Awaitable[None]]:
    """Two tasks, each appending to a log of its own (their two orders are
    one trace); the first run collects garbage in ``b``'s step, as a
    collection the collector chose would."""

    async def main() -> None:
        first_runs.append(len(finalized))

        async def writer(name: str) -> None:
            belong(name)
            log = _Log()
            await trio.lowlevel.checkpoint()
            if len(first_runs) == 1 and name == "b":
                gc.collect()
            touch(log)
            log.order.append(name)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(writer, "a")
            nursery.start_soon(writer, "b")

    return main


@pytest.mark.parametrize("freezing", [True, False])
def test_garbage_left_before_an_exploration_is_collected_before_its_first_run(
    freezing: bool,
) -> None:
    # Its finalizer, run in the middle of a run, would touch what it
    # touches in that run's footprints: here, one trace more than the
    # program has, by the process's history (seen once in CI).
    explorations = []
    if not freezing:
        gc.freeze()
    try:
        for garbage in (False, True):
            finalized: list[object] = []
            first_runs: list[int] = []
            if garbage:
                _leave_garbage(_Log(), finalized)
            exploration = explore(
                _two_writers(finalized, first_runs),
                strategy="dfs",
                bound=1,
                reduction=False,
                count_traces=True,
            )
            assert first_runs[0] == len(finalized) == garbage  # closed before run 1
            explorations.append(exploration)
    finally:
        if not freezing:
            gc.unfreeze()
    clean, dirty = explorations
    assert (dirty.traces, dirty.runs) == (clean.traces, clean.runs)
    assert clean.traces is not None
    assert clean.traces < clean.runs  # a run whose trace another has: the one split off


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


class _Box:
    pass


class _Junk:
    """Cyclic garbage whose finalizer touches a box a run shares."""

    def __init__(self, box: _Box) -> None:
        self.me = self
        self.box = box

    def __del__(self) -> None:
        touch(self.box)


def _making_garbage(size: int) -> Callable[[], Awaitable[None]]:
    """Two tasks, each touching a box of its own three times, after making
    ``size`` pieces of garbage that touch it when collected: the two boxes
    are independent whenever their garbage is collected."""

    async def main() -> None:
        boxes = [_Box(), _Box()]

        async def worker(index: int) -> None:
            belong(f"w{index}")
            for _ in range(3):
                await trio.lowlevel.checkpoint()
                for _ in range(size):
                    _Junk(boxes[index])
                touch(boxes[index])

        async with trio.open_nursery() as nursery:
            for index in range(2):
                nursery.start_soon(worker, index)

    return main


@pytest.mark.parametrize("size", [5, 60])
def test_the_collector_does_not_run_on_its_own_inside_a_run(size: int) -> None:
    # Where it did, a finalizer of the run's garbage ran in the step of
    # whichever task allocated past the collector's threshold, and the
    # counts hung on the thresholds (3, 4 or 6 traces; the reduced search
    # and the full one apart at a threshold of 50).
    saved = gc.get_threshold()
    found = set()
    try:
        for threshold in (700, 50, 7):
            gc.set_threshold(threshold, 10, 10)
            for reduction in (True, False):
                exploration = explore(
                    _making_garbage(size),
                    strategy="dfs",
                    bound=1,
                    reduction=reduction,
                    count_traces=True,
                )
                assert exploration.complete
                found.add(exploration.traces)
            assert gc.isenabled()
    finally:
        gc.set_threshold(*saved)
    assert found == {3}


def test_an_interrupt_inside_a_nursery_ends_the_exploration_as_itself() -> None:
    # (It came out as a group of one, which `except KeyboardInterrupt` in
    # the caller does not catch.)
    async def main() -> None:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(trio.sleep_forever)
            await trio.lowlevel.checkpoint()
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        explore(main, strategy="dfs", bound=1)
    assert gc.get_freeze_count() == 0
    assert gc.isenabled()


class _Interrupting:
    """Garbage whose finalizer sends the process SIGINT, as a person's
    Ctrl-C while the collector runs would arrive."""

    def __init__(self) -> None:
        self.me = self

    def __del__(self) -> None:
        signal.raise_signal(signal.SIGINT)


@pytest.mark.parametrize("cycles", [0, 1000])
@pytest.mark.parametrize("reduction", [True, False])
@pytest.mark.usefixtures("default_sigint")
def test_an_interrupt_while_a_runs_garbage_is_collected_is_not_lost(
    cycles: int, reduction: bool
) -> None:
    # (Raised inside the finalizer the collector was running, it was printed
    # as ignored and the exploration went on; and where the run left enough
    # to collect, so it was again: the collector, on again, ran on its own
    # at the next allocation, before the collection that holds interrupts.)
    runs = 0

    async def main() -> None:
        nonlocal runs
        runs += 1
        for _ in range(cycles):
            loop: dict[str, object] = {}
            loop["loop"] = loop
        if runs == 2:
            _Interrupting()
        async with trio.open_nursery() as nursery:
            for _ in range(2):
                nursery.start_soon(trio.lowlevel.checkpoint)

    with pytest.raises(KeyboardInterrupt):
        explore(main, strategy="dfs", bound=1, reduction=reduction)
    assert runs == 2
    assert gc.get_freeze_count() == 0
    assert gc.isenabled()
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
@pytest.mark.usefixtures("default_sigint")
def test_a_second_interrupt_stops_a_finalizer_that_hangs() -> None:
    reached: list[str] = []

    class Hanging:
        def __init__(self) -> None:
            self.me = self

        def __del__(self) -> None:
            signal.raise_signal(signal.SIGINT)
            reached.append("held")
            signal.raise_signal(signal.SIGINT)  # a person's second Ctrl-C
            reached.append("went on")

    async def main() -> None:
        Hanging()
        await trio.lowlevel.checkpoint()

    with pytest.raises(KeyboardInterrupt):
        explore(main, strategy="dfs", bound=1)
    assert reached == ["held"]
    assert gc.isenabled()
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
