"""Where the tests find the project's files, and those of ``../shared``
(which a clone without it lacks: tests that need it skip, saying so)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
"""The project's root: ``pyproject.toml`` is here."""
SHARED = ROOT.parent / "shared"
"""``../shared``, beside the project: the design, the real driver's scripts, the baseline."""
EXAMPLES = ROOT / "examples"
SPECS = ROOT / "replica" / "driver" / "specs"
"""The bundled spec files."""
DRIVER_SCRIPTS = SHARED / "external" / "driver-scripts"
"""The real test driver's scripts."""
NEWEST_DRIVER_SCRIPTS = SHARED / "external" / "driver-scripts-newest"
"""The newest versions of some of them (``join.spec``)."""
BASELINE = SHARED / "bench" / "baseline.py"
"""The shared baseline benchmark."""


def run_python(*args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    """``python args...`` (the tests' interpreter) in the project's root, its
    output captured as text, every wait bounded."""
    return subprocess.run(
        [sys.executable, *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
        timeout=timeout,
    )
