"""Every bundled spec passes on the topologies of ``run --topologies all``:
no stanza differs and no invariant of the replica breaks. A spec that holds
or releases a runtime needs the interactive runtime beside maintenance, so it
runs on the two-runtime topologies only; every other spec also runs solo."""

from __future__ import annotations

import pytest

from replica.driver.cli._arguments import DEFAULT_SEED
from replica.driver.lang._spec import Spec, read_spec
from replica.driver.run._bundled import BUNDLED_TWO_RUNTIME
from replica.driver.run._matrix import TOPOLOGIES
from replica.driver.run._runner import run_spec

from ....paths import SPECS

NAMES = sorted(path.name for path in SPECS.glob("*.spec"))
# The directives that act on one runtime of two.
RUNTIME_DIRECTIVES = frozenset({"hold", "release"})


def read(name: str) -> Spec:
    return read_spec(SPECS / name, name)


def needs_two_runtimes(spec: Spec) -> bool:
    return any(stanza.name in RUNTIME_DIRECTIVES for stanza in spec.stanzas)


def cases() -> list[tuple[str, str]]:
    return [
        (name, topology)
        for name in NAMES
        for topology, shape in TOPOLOGIES.items()
        if shape.interactive or not needs_two_runtimes(read(name))
    ]


@pytest.mark.parametrize(("name", "topology"), cases())
def test_bundled_spec_passes(name: str, topology: str) -> None:
    spec = read(name)
    run = run_spec(spec, TOPOLOGIES[topology], seed=DEFAULT_SEED, trace=None)
    differ = [
        f"line {outcome.stanza.line} ({outcome.stanza.name}): "
        f"expected {list(outcome.stanza.expected)}, got {list(outcome.actual)}"
        for outcome in run.outcomes
        if not outcome.matched
    ]
    assert not differ, "\n".join(differ)
    assert not run.violations, "\n".join(run.violations)
    assert len(run.outcomes) == len(spec.stanzas)


def test_the_folder_holds_specs_of_both_kinds() -> None:
    # The split above is real: some specs run solo, some need two runtimes.
    kinds = {needs_two_runtimes(read(name)) for name in NAMES}
    assert kinds == {False, True}


def test_every_bundled_spec_is_in_the_two_runtime_workflow() -> None:
    # `workflow two-runtime-compute` runs the list; every spec passes there.
    assert len(set(BUNDLED_TWO_RUNTIME)) == len(BUNDLED_TWO_RUNTIME)
    assert sorted(BUNDLED_TWO_RUNTIME) == NAMES
