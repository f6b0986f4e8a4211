"""The real replica's own test scripts, unchanged, on all five topologies.

The scripts are data from Materialize's ``test/clusterd-test-driver/scripts``
kept in ``../shared/external/driver-scripts`` (never copied into the
project); without that folder these tests are skipped, saying why.
"""

from __future__ import annotations

import pytest

from replica.driver.lang._spec import read_spec

from ....paths import DRIVER_SCRIPTS as SCRIPTS
from ..scripts import TOPOLOGIES, assert_passes

NAMES = sorted(path.name for path in SCRIPTS.glob("*.spec")) if SCRIPTS.is_dir() else []

pytestmark = pytest.mark.skipif(
    not NAMES, reason="../shared/external/driver-scripts (the real driver's scripts) is not here"
)


def test_all_sixteen_scripts_are_here() -> None:
    assert len(NAMES) == 16


@pytest.mark.parametrize("topology", sorted(TOPOLOGIES))
@pytest.mark.parametrize("name", NAMES)
def test_a_real_script_passes_unchanged(name: str, topology: str) -> None:
    spec = read_spec(SCRIPTS / name)
    assert_passes(spec, topology)
