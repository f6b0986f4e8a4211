"""Every fenced code block of the README, ``CONTRIBUTING.md`` and ``docs/``
runs in these tests, or says on the line before it why it does not.

What a block gets, by its language:

- ``python``: run as a program (``python -c``, in a folder of its own): it
  must exit 0 and write nothing to stderr.
- ``sh``: each command is checked without running it. A ``trio-reconcile``
  command goes through the command's own parser (its options, their values
  and the checks between them); ``./run NAME`` must name a command of
  ``run``; ``.venv/bin/python -m MODULE`` must name a module that imports;
  and every path it names under the project's folders or ``../shared``
  exists. A command of any other program is an error: mark the block.
- anything else (an output, a diagram, a layout), and a block that cannot
  run as written (a fragment, a placeholder name, a command that takes
  minutes): the line before its fence is ``<!-- not run: REASON -->``.
  A marked ``python`` block must still parse.

MyST directives (a fence such as ```` ```{toctree} ````) are not code and are
skipped. A marker not followed by a fence is an error, so none goes stale.
"""

from __future__ import annotations

import ast
import importlib.util
import re
import shlex
import subprocess
import sys
from pathlib import Path

import attrs
import pytest

from replica.driver.cli._main import build_parser, parse
from tests.paths import ROOT, SHARED

PAGES = [
    ROOT / "README.md",
    ROOT / "CONTRIBUTING.md",
    *sorted((ROOT / "docs").glob("*.md")),
    *sorted((ROOT / "docs").glob("*/*.md")),
]
_FENCE = re.compile(r"^(?P<indent> *)(?P<fence>`{3,})(?P<info>[^`]*)$")
_MARKER = re.compile(r"^ *<!-- not run: (?P<reason>\S.*?) -->$")
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_PATH_IN_TEXT = re.compile(
    r"`((?:actors|barrier|sharing|replica|tests|docs|examples|bench)/[^`\s*{<]*)`"
)
"""A project path quoted in a page's text: ``tests/actors/test_ask.py``."""
_RUN_COMMANDS = {"main", "test", "bench"}
"""The commands of ``./run`` (its ``case``)."""
_CHECKED_FOLDERS = ("actors/", "barrier/", "sharing/", "replica/", "tests/", "docs/", "examples/")
"""A path argument under one of these (or ``../shared/``) must exist."""


@attrs.frozen
class Block:
    page: Path
    line: int
    """The fence's line, from 1."""
    language: str
    text: str
    not_run: str | None
    """The reason of the marker on the line before the fence, if any."""

    @property
    def name(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


class DocError(Exception):
    """A page's fences or markers are malformed."""


def blocks(page: Path) -> list[Block]:
    """The fenced blocks of ``page`` in order, MyST directives left out."""
    lines = page.read_text(encoding="utf-8").splitlines()
    found: list[Block] = []
    index = 0
    while index < len(lines):
        line = lines[index]
        marker = _MARKER.match(line)
        opening = _FENCE.match(line)
        if marker and not (index + 1 < len(lines) and _FENCE.match(lines[index + 1])):
            raise DocError(f"{page.name}:{index + 1}: a not-run marker with no fence after it")
        if not opening:
            index += 1
            continue
        indent, fence = opening["indent"], opening["fence"]
        end = index + 1
        while end < len(lines) and lines[end].strip() != fence:
            end += 1
        if end == len(lines):
            raise DocError(f"{page.name}:{index + 1}: a fence that is never closed")
        info = opening["info"].strip()
        if not info.startswith("{"):
            previous = _MARKER.match(lines[index - 1]) if index else None
            body = [text.removeprefix(indent) for text in lines[index + 1 : end]]
            found.append(
                Block(
                    page=page,
                    line=index + 1,
                    language=info.split()[0] if info else "",
                    text="\n".join(body) + "\n",
                    not_run=previous["reason"] if previous else None,
                )
            )
        index = end + 1
    return found


BLOCKS = [block for page in PAGES for block in blocks(page)]
PYTHON = [block for block in BLOCKS if block.language == "python" and block.not_run is None]
SHELL = [block for block in BLOCKS if block.language == "sh" and block.not_run is None]
MARKED = [block for block in BLOCKS if block.not_run is not None]


def ids(selected: list[Block]) -> list[str]:
    return [block.name for block in selected]


def test_every_block_runs_or_says_why_not() -> None:
    unmarked = [
        block.name
        for block in BLOCKS
        if block.not_run is None and block.language not in {"python", "sh"}
    ]
    assert unmarked == [], "blocks that neither run nor say why not"
    assert PYTHON, "no python block runs"
    assert SHELL, "no shell block is checked"
    assert MARKED, "no block is marked"


@pytest.mark.parametrize("block", PYTHON, ids=ids(PYTHON))
def test_the_python_block_runs(block: Block, tmp_path: Path) -> None:
    # Some examples use real sockets (the Nodes example): every wait is bounded.
    result = subprocess.run(
        [sys.executable, "-c", block.text],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert (result.returncode, result.stderr) == (0, "")


@pytest.mark.parametrize(
    "block",
    [b for b in MARKED if b.language == "python"],
    ids=ids([b for b in MARKED if b.language == "python"]),
)
def test_a_python_block_not_run_still_parses(block: Block) -> None:
    compile(
        block.text, block.name, "exec", flags=ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
    )


def commands(text: str) -> list[list[str]]:
    """The commands of a shell block: its lines, comments and blank ones out."""
    found = []
    for line in text.splitlines():
        words = shlex.split(line, comments=True)
        if words:
            found.append(words)
    return found


def check_command(words: list[str]) -> None:
    while words and _ASSIGNMENT.match(words[0]):  # VAR=value before the program
        words = words[1:]
    program, *arguments = words
    if program == ".venv/bin/trio-reconcile":
        try:
            parse(build_parser(), arguments)
        except SystemExit as exit_:
            if exit_.code == 0:  # --help, --version
                return
            raise AssertionError(f"trio-reconcile refuses {shlex.join(arguments)}") from exit_
    elif program == "./run":
        assert (arguments[0] if arguments else None) in _RUN_COMMANDS, f"./run has no {arguments}"
    elif program == ".venv/bin/python" and arguments[:1] == ["-m"] and len(arguments) > 1:
        assert importlib.util.find_spec(arguments[1]) is not None, f"no module {arguments[1]}"
    else:
        raise AssertionError(f"{program}: a program these tests do not check; mark the block")
    for argument in arguments:
        path = argument.split("::")[0]
        if path.startswith("../shared/"):
            if SHARED.is_dir():
                assert (ROOT / path).exists(), f"no such file or folder: {path}"
        elif path.startswith(_CHECKED_FOLDERS):
            assert (ROOT / path).exists(), f"no such file or folder: {path}"


@pytest.mark.parametrize("block", SHELL, ids=ids(SHELL))
def test_the_shell_block_names_what_exists(
    block: Block, capsys: pytest.CaptureFixture[str]
) -> None:
    listed = commands(block.text)
    assert listed
    for words in listed:
        check_command(words)
    capsys.readouterr()  # what --help printed


@pytest.mark.parametrize(
    "words",
    [
        [".venv/bin/trio-reconcile", "run", "my.spec", "--workers", "0"],
        [".venv/bin/trio-reconcile", "run", "my.spec", "--no-such-option"],
        [".venv/bin/trio-reconcile", "explore", "my.spec", "--strategy", "bfs"],
        ["./run", "tests"],
        [".venv/bin/python", "-m", "no_such_module_here"],
        [".venv/bin/python", "-m", "pytest", "tests/no_such_test.py"],
        ["xdg-open", "docs/_build/html/index.html"],
    ],
    ids=["bad-value", "bad-option", "bad-choice", "bad-run", "bad-module", "bad-path", "unchecked"],
)
def test_the_shell_check_can_fail(words: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(AssertionError):
        check_command(words)
    capsys.readouterr()  # argparse's usage lines


@pytest.mark.parametrize("page", PAGES, ids=[str(page.relative_to(ROOT)) for page in PAGES])
def test_the_paths_a_page_names_exist(page: Path) -> None:
    text = page.read_text(encoding="utf-8")
    named = {match.split("::")[0].rstrip(".,:") for match in _PATH_IN_TEXT.findall(text)}
    assert sorted(path for path in named if not (ROOT / path).exists()) == []


def test_a_marker_with_no_fence_is_refused(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("<!-- not run: nothing follows -->\n\ntext\n", encoding="utf-8")
    with pytest.raises(DocError, match="no fence after it"):
        blocks(page)


def test_blocks_are_read_with_their_markers(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "- item\n\n  <!-- not run: output -->\n  ```\n  out\n  ```\n\n"
        "```{toctree}\nx\n```\n\n```python\nprint(1)\n```\n",
        encoding="utf-8",
    )
    found = [(b.line, b.language, b.text, b.not_run) for b in blocks(page)]
    assert found == [(4, "", "out\n", "output"), (12, "python", "print(1)\n", None)]
