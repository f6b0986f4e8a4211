"""Hypothesis strategies for whole replica programs (see
:mod:`replica.driver.oracle._programs`): the same generator, its choices drawn by
Hypothesis so that a failing program shrinks."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

from hypothesis import strategies as st

from replica.driver.oracle._programs import Program as Program
from replica.driver.oracle._programs import generate
from replica.driver.run._runner import Topology

T = TypeVar("T")


class _Draws:
    def __init__(self, draw: st.DrawFn) -> None:
        self._draw = draw

    def integer(self, low: int, high: int) -> int:
        return self._draw(st.integers(low, high))

    def boolean(self) -> bool:
        return self._draw(st.booleans())

    def choice(self, options: Sequence[T]) -> T:
        return self._draw(st.sampled_from(options))


@st.composite
def programs(draw: st.DrawFn, max_steps: int = 10) -> Program:
    return generate(_Draws(draw), max_steps)


faulty_topologies = st.builds(
    Topology,
    processes=st.integers(1, 2),
    workers=st.integers(1, 3),
    interactive=st.just(True),
    barrier=st.just(True),
    faults=st.sampled_from([0.1, 0.3]),
)

topologies = st.builds(
    Topology,
    processes=st.integers(1, 2),
    workers=st.integers(1, 4),
    interactive=st.just(True),
    barrier=st.just(True),
)
