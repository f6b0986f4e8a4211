"""The install as a user's code sees it from outside the repository: mypy
finds the packages' types (``py.typed``; beside setuptools' editable
install, an import hook that mypy cannot follow, ``./run`` adds a path entry
of the repository's root), and the library's mypy plugin loads there too."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

USER_CODE = """
    import attrs

    from actors import ActorRef, Reply
    from actors.net import open_node


    @attrs.frozen
    class Get:
        key: str
        reply: Reply[int]


    async def use(ref: ActorRef[Get]) -> None:
        found: int = await ref.ask(Get, "k")
        wrong: str = await ref.ask(Get, "k")  # line 15
        reveal_type(open_node)  # line 16
"""


def test_mypy_outside_the_repository_finds_the_packages_and_the_plugin(tmp_path: Path) -> None:
    (tmp_path / "app.py").write_text(textwrap.dedent(USER_CODE).lstrip("\n"), encoding="utf-8")
    (tmp_path / "mypy.ini").write_text("[mypy]\nstrict = True\nplugins = actors.mypy\n", "utf-8")
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--no-error-summary", "--cache-dir", "cache", "app.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    report = result.stdout
    assert "import-not-found" not in report, report
    assert "app.py:15: error: Incompatible types in assignment" in report, report
    assert 'app.py:16: note: Revealed type is "def (system: actors._system' in report, report
    assert [line for line in report.splitlines() if ": error:" in line] == [
        'app.py:15: error: Incompatible types in assignment (expression has type "int", '
        'variable has type "str")  [assignment]'
    ], report
