"""The real replica's own test scripts, unchanged, on all five topologies.

The scripts are data from Materialize's ``test/clusterd-test-driver/scripts``
kept in ``../shared/external/driver-scripts`` (never copied into the
project); without that folder these tests are skipped, saying why.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from replica.driver._runner import Topology, run_spec
from replica.driver._spec import read_spec

SCRIPTS = Path(__file__).resolve().parents[4] / "shared" / "external" / "driver-scripts"
NAMES = sorted(path.name for path in SCRIPTS.glob("*.spec")) if SCRIPTS.is_dir() else []
TOPOLOGIES = {
    "solo-w1": Topology(1, 1, interactive=False),
    "solo-w2p2": Topology(2, 2, interactive=False),
    "two-w1": Topology(1, 1),
    "two-w2": Topology(1, 2),
    "two-w2p2": Topology(2, 2),
}

pytestmark = pytest.mark.skipif(
    not NAMES, reason="../shared/external/driver-scripts (the real driver's scripts) is not here"
)


def test_all_sixteen_scripts_are_here() -> None:
    assert len(NAMES) == 16


@pytest.mark.parametrize("topology", sorted(TOPOLOGIES))
@pytest.mark.parametrize("name", NAMES)
def test_a_real_script_passes_unchanged(name: str, topology: str) -> None:
    spec = read_spec(SCRIPTS / name)
    run = run_spec(spec, TOPOLOGIES[topology], seed=1, trace=None)
    mismatches = [
        (outcome.stanza.line, outcome.stanza.expected, outcome.actual)
        for outcome in run.outcomes
        if not outcome.matched
    ]
    assert mismatches == []
    assert run.violations == []
