"""Every async test runs on Trio's mock clock with autojump, whether or not it
asks for the ``autojump_clock`` fixture: a timeout costs no real time, and a
hang becomes a fast, deterministic failure instead of a stuck run."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Sequence

import pytest
import trio
import trio.testing


def run_on_autojump_clock(
    fn: Callable[[], Awaitable[object]],
    *,
    clock: trio.abc.Clock | None = None,
    instruments: Sequence[trio.abc.Instrument] = (),
) -> object:
    if clock is None:
        clock = trio.testing.MockClock(autojump_threshold=0)
    return trio.run(fn, clock=clock, instruments=instruments)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if isinstance(item, pytest.Function) and inspect.iscoroutinefunction(item.obj):
            item.add_marker(pytest.mark.trio(run=run_on_autojump_clock))
