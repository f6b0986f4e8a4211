"""The real replica's own test scripts, unchanged, on all five topologies.

The scripts are data from Materialize's ``test/clusterd-test-driver/scripts``
kept in ``../shared/external/driver-scripts``, with the newest versions of
some of them in ``../shared/external/driver-scripts-newest`` (never copied
into the project); without a folder its tests are skipped, saying why.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from replica.driver.lang._spec import read_spec

from ....paths import DRIVER_SCRIPTS as SCRIPTS
from ....paths import NEWEST_DRIVER_SCRIPTS as NEWEST
from ..scripts import TOPOLOGIES, assert_passes


def _names(folder: Path) -> list[str]:
    return sorted(path.name for path in folder.glob("*.spec")) if folder.is_dir() else []


NAMES = _names(SCRIPTS)
NEWEST_NAMES = _names(NEWEST)

needs_scripts = pytest.mark.skipif(
    not NAMES, reason="../shared/external/driver-scripts (the real driver's scripts) is not here"
)
needs_newest = pytest.mark.skipif(
    not NEWEST_NAMES, reason="../shared/external/driver-scripts-newest is not here"
)


@needs_scripts
def test_all_sixteen_scripts_are_here() -> None:
    assert len(NAMES) == 16


@needs_newest
def test_the_newest_join_script_is_here() -> None:
    assert "join.spec" in NEWEST_NAMES


@needs_scripts
@pytest.mark.parametrize("topology", sorted(TOPOLOGIES))
@pytest.mark.parametrize("name", NAMES)
def test_a_real_script_passes_unchanged(name: str, topology: str) -> None:
    spec = read_spec(SCRIPTS / name)
    assert_passes(spec, topology)


@needs_newest
@pytest.mark.parametrize("topology", sorted(TOPOLOGIES))
@pytest.mark.parametrize("name", NEWEST_NAMES)
def test_a_newest_real_script_passes_unchanged(name: str, topology: str) -> None:
    spec = read_spec(NEWEST / name)
    assert_passes(spec, topology)
