"""Every async test runs on Trio's mock clock with autojump, whether or not it
asks for the ``autojump_clock`` fixture, under a deadline in *virtual* time: a
timeout costs no real time, and a deadlock (every task blocked for good) lets
the clock jump to the deadline, so it fails fast instead of hanging the run.

Hypothesis runs derandomized (its examples are drawn from a seed fixed by the
test, so every run tries the same ones), with no example database and no
deadline: a test's result depends on nothing but the code. A test that
sends itself SIGINT asks for ``default_sigint``."""

from __future__ import annotations

import functools
import inspect
import signal
from collections.abc import Awaitable, Callable, Iterator, Sequence

import pytest
import trio
import trio.testing
from hypothesis import settings

settings.register_profile("deterministic", derandomize=True, database=None, deadline=None)
settings.load_profile("deterministic")


def run_on_autojump_clock(
    fn: Callable[[], Awaitable[object]],
    *,
    clock: trio.abc.Clock | None = None,
    instruments: Sequence[trio.abc.Instrument] = (),
) -> object:
    if clock is None:
        clock = trio.testing.MockClock(autojump_threshold=0)
    return trio.run(functools.partial(_within_deadline, fn), clock=clock, instruments=instruments)


VIRTUAL_DEADLINE = 24 * 3600.0
"""Virtual seconds an async test may take; far beyond any timeout a test sets."""


async def _within_deadline(fn: Callable[[], Awaitable[object]]) -> object:
    with trio.fail_after(VIRTUAL_DEADLINE):
        return await fn()


@pytest.fixture
def default_sigint() -> Iterator[None]:
    """SIGINT under Python's own handler for the test (a test runner's worker
    may have set another, or ignore it): a Ctrl-C raises KeyboardInterrupt,
    and Trio takes SIGINT over only from that handler."""
    saved = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, saved)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if isinstance(item, pytest.Function) and inspect.iscoroutinefunction(item.obj):
            item.add_marker(pytest.mark.trio(run=run_on_autojump_clock))
