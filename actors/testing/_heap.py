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
"""

from __future__ import annotations

import gc


class Heap:
    """Collect each run's garbage at its end and freeze what survives;
    :meth:`close` puts the frozen objects back."""

    def __init__(self) -> None:
        # Unfreezing would thaw what someone else froze: then nothing is done.
        self._freezing = gc.isenabled() and gc.get_freeze_count() == 0

    def after_run(self) -> None:
        if self._freezing:
            gc.collect()
            gc.freeze()

    def close(self) -> None:
        if self._freezing:
            gc.unfreeze()
            self._freezing = False
