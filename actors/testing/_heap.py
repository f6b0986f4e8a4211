"""What an exploration keeps between runs, kept out of the cyclic garbage
collector's way.

An exploration keeps a memo that grows with every run (the states seen,
the plays tried from each), and each run leaves cyclic garbage (Trio's
tasks, frames, tracebacks). Left to itself, the collector's full
collections scan the whole memo again and again: on the recreate scenario
at P=2 W=2, 63 of them took 11 s of a 56 s exploration of 2,000 schedules
(``bench/README.md``). Instead, after each run, :class:`Heap` collects what
the run left (one collection of what is not frozen: that run's objects and
the memo's new entries) and freezes what survives (:func:`gc.freeze`), so
that later collections skip it; when the exploration ends, it unfreezes
everything. A process that has frozen objects itself, or turned the
collector off, is left as it is.

Before the first run, :class:`Heap` collects too. Garbage left by the
process before the exploration (a test run earlier in the same worker, say)
may hold an unfinished coroutine whose ``finally`` runs when it is
collected; left to the collector, that happens in the middle of whichever
run allocates enough, and what it touches lands in that run's footprints:
one run's trace then differs from another's by the process's history, not
the schedule. In a process that has frozen objects itself, each run's own
garbage is collected at its end for the same reason (only not frozen).

Inside a run, the collector does not run on its own (``_schedule._run_once``):
a program whose garbage has a finalizer that touches what the program
shares (a ``__del__``, an unfinished coroutine's ``finally``) would
otherwise have it run wherever the collector's counts of allocations
happened to reach its thresholds, which hang on what the process
allocated before (the first exploration of a ``shared=`` class, say) as
much as on the schedule: the same program had 3, 4 or 6 traces by the
thresholds. A run's cyclic garbage waits for the collection at its end
(a run that leaves millions of cycles holds them until then: memory).

The dictionaries of the memo are instances of :class:`Memo`, not ``dict``. A full
collection untracks a plain dict whose keys and values are all untracked
(tuples of numbers and bytes, as the memo's are, once collected), so it is
not frozen with the rest; putting a new tuple in tracks it again, in the
youngest generation, and the next collection traverses every entry. One
such dict of a hundred thousand states made the collections of a long
exploration grow with it: 44% of the time after 28,000 schedules
(``bench/README.md``). The collector never untracks an instance of a
subclass of ``dict``.
"""

from __future__ import annotations

import gc
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TypeVar

K = TypeVar("K")
V = TypeVar("V")


class Memo(dict[K, V]):
    """A ``dict`` that the collector never untracks (see above): frozen
    once, it is never traversed again however it grows."""

    __slots__ = ()


@contextmanager
def interrupts_held() -> Iterator[None]:
    """An interrupt (SIGINT, under Python's own handler, in the main thread)
    that arrives inside is raised when the block ends: raised in a
    finalizer the collector runs, it would be printed as ignored and lost,
    and in the middle of putting classes back, leave some wrapped. A second
    one is raised at once (in whatever runs, a finalizer that hangs, say)."""
    if (
        threading.current_thread() is not threading.main_thread()
        or signal.getsignal(signal.SIGINT) is not signal.default_int_handler
    ):
        yield
        return
    interrupted = False

    def note(signum: int, frame: object) -> None:
        nonlocal interrupted
        if interrupted:
            signal.signal(signal.SIGINT, signal.default_int_handler)
            raise KeyboardInterrupt
        interrupted = True

    signal.signal(signal.SIGINT, note)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    if interrupted:
        raise KeyboardInterrupt


def collect(generation: int = 2) -> None:
    """:func:`gc.collect` of ``generation`` and those younger, interrupts
    held (see interrupts_held)."""
    with interrupts_held():
        gc.collect(generation)


class Heap:
    """Collect what the process left before the first run, and each run's
    garbage at its end, and freeze what survives each time; :meth:`close`
    puts the frozen objects back."""

    def __init__(self) -> None:
        self._collecting = self._freezing = False

    def start(self) -> None:
        """Before the first run (call it where :meth:`close` is sure to
        follow: it may freeze)."""
        self._collecting = gc.isenabled()
        # Unfreezing would thaw what someone else froze: then nothing is frozen.
        self._freezing = self._collecting and gc.get_freeze_count() == 0
        if self._collecting:
            collect()  # what was left before the exploration (see above)
        if self._freezing:
            gc.freeze()  # so that the first run's collection is as short as the others

    def after_run(self) -> None:
        if self._collecting:
            collect()
        if self._freezing:
            gc.freeze()

    def close(self) -> None:
        if self._freezing:
            gc.unfreeze()
            self._freezing = False
