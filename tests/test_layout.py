"""The dependency arrows run one way: ``actors`` <- ``barrier``, ``sharing``
<- ``replica`` <- ``replica.driver`` (DESIGN.md §1)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FIRST_PARTY = ("actors", "barrier", "sharing", "replica")
# What each package may import of the project, besides itself.
ALLOWED = {
    "actors": set(),
    "barrier": {"actors"},
    "sharing": {"actors"},
    "replica": {"actors", "barrier", "sharing"},
}


def imported_packages(path: Path) -> set[str]:
    """The top-level project packages ``path`` imports (absolute imports only:
    relative ones stay inside the package)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        else:
            continue
        found |= {name.split(".")[0] for name in names} & set(FIRST_PARTY)
    return found


@pytest.mark.parametrize("package", sorted(ALLOWED))
def test_a_package_imports_only_the_layers_below_it(package: str) -> None:
    wrong = {
        str(path.relative_to(ROOT)): sorted(imported - ALLOWED[package] - {package})
        for path in sorted((ROOT / package).rglob("*.py"))
        if (imported := imported_packages(path)) - ALLOWED[package] - {package}
    }
    assert wrong == {}


def test_the_driver_is_the_only_part_of_the_replica_that_knows_the_command() -> None:
    core = sorted((ROOT / "replica").glob("*.py"))
    assert core, "the replica's modules"
    for path in core:
        text = path.read_text(encoding="utf-8")
        assert "replica.driver" not in text, path.name
        assert "from .driver" not in text, path.name


def test_importing_actors_loads_no_other_project_package() -> None:
    code = (
        "import sys, actors; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in "
        f"{FIRST_PARTY!r} and m.split('.')[0] != 'actors'))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "[]"
