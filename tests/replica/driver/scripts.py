"""Running a spec text (or a parsed spec) on a named topology in tests, and
what did not match."""

from __future__ import annotations

from replica.driver.lang._spec import Spec, parse_spec
from replica.driver.run._matrix import TOPOLOGIES
from replica.driver.run._runner import run_spec

__all__ = ["TOPOLOGIES", "assert_passes"]


def assert_passes(spec: str | Spec, topology: str, *, name: str = "test.spec") -> None:
    """Run ``spec`` (a text, parsed as file ``name``) on ``topology`` (a name
    of :data:`TOPOLOGIES`): every stanza matches, and no invariant broke."""
    parsed = parse_spec(spec, name) if isinstance(spec, str) else spec
    run = run_spec(parsed, TOPOLOGIES[topology], seed=1, trace=None)
    mismatches = [
        (outcome.stanza.line, outcome.stanza.expected, outcome.actual)
        for outcome in run.outcomes
        if not outcome.matched
    ]
    assert mismatches == []
    assert run.violations == []
