"""Every code block of the project's Markdown pages (the README,
``CONTRIBUTING.md``, ``CHANGELOG.md``, ``bench/README.md`` and every page
under ``docs/``) runs in these tests, or says on the line before it why it
does not.

The pages are read as MyST reads them (markdown-it): a block is a fence of
backticks or tildes, an indented block, or a ``{code-block}`` / ``{code}``
directive (its argument is the language). A ``{eval-rst}`` directive that
holds a literal block or a ``code-block`` is refused; other directives
(``{toctree}``, ``{include}``) are not code.

What a block gets, by its language:

- ``python``: run as a program (``python -c``, in a folder of its own): it
  must exit 0 and write nothing to stderr.
- ``sh``: each command is checked without running it. A ``trio-reconcile``
  command goes through the command's own parser (its options, their values
  and the checks between them); ``./run main ARGS`` through that of
  ``trio-reconcile demo`` (what it runs), ``./run test``/``bench`` must be
  commands of ``run``; ``.venv/bin/python -m MODULE`` must name a module that
  imports, ``.venv/bin/python FILE`` a file that exists; a pytest command's
  ``-m`` must name registered markers. Every argument that is a path under
  one of the project's top-level files or folders (or ``../shared``) must
  exist. A line with a pipe, a list (``&&``, ``;``) or a redirection, or a
  command of any other program, is an error: mark the block.
- anything else (an output, a diagram, a layout), and a block that cannot
  run as written (a fragment, a placeholder name, a command that takes
  minutes): the line before it is ``<!-- not run: REASON -->``. A marked
  ``python`` block must still parse.

A marker followed by no block is an error, so none goes stale. The literal
blocks (``::``) of the public packages' docstrings, which the API reference
shows, are held to the same rule: each says ``.. not run: REASON`` (an RST
comment, not rendered) in the text before its ``::``. And every
project path a page quotes in its text (```tests/actors/test_ask.py```)
must exist, unless git ignores it (an output such as ``bench/results/``).
"""

from __future__ import annotations

import ast
import fnmatch
import importlib
import importlib.util
import inspect
import itertools
import re
import shlex
import subprocess
import sys
import tomllib
import types
from pathlib import Path

import attrs
import pytest
from markdown_it import MarkdownIt

from replica.driver.cli._main import build_parser, parse
from tests.paths import ROOT, SHARED

PAGES = sorted(
    [
        ROOT / "README.md",
        ROOT / "CONTRIBUTING.md",
        ROOT / "CHANGELOG.md",
        ROOT / "bench" / "README.md",
        *(
            page
            for page in (ROOT / "docs").rglob("*.md")
            if not {"_build", "_generated"} & set(page.relative_to(ROOT).parts)
        ),
    ]
)
_MARKER = re.compile(r"^<!-- not run: (?P<reason>\S.*?) -->$")
_CODE_DIRECTIVES = {"code-block", "code", "sourcecode"}
_RST_CODE = re.compile(r"::\s*$|^\s*\.\. (?:code-block|code|sourcecode)::", re.MULTILINE)
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_RUN_COMMANDS = {"main", "test", "bench"}
"""The commands of ``./run`` (its ``case``)."""
_SHELL_OPERATORS = {"|", "||", "&", "&&", ";", ">", ">>", "<", "<<", "(", ")"}
_TOP_LEVEL = {entry.name for entry in ROOT.iterdir() if not entry.name.startswith(".")}
"""The project's top-level files and folders: a path under one is checked."""
_PATH_IN_TEXT = re.compile(r"`(\.{0,2}/?[\w.-]+(?:/[\w.-]*)*)`")
"""A quoted word that may be a path: ``tests/actors/test_ask.py``, ``CHANGELOG.md``."""


@attrs.frozen
class Block:
    page: Path
    line: int
    """The block's first line (a fence's opening line), from 1."""
    language: str
    text: str
    not_run: str | None
    """The reason of the marker on the line before the block, if any."""

    @property
    def name(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


class DocError(Exception):
    """A page's markers are malformed."""


def _language(info: str, content: str) -> str | None:
    """A fence's language, or None if it is not code (a MyST directive)."""
    words = info.split()
    if not words:
        return ""
    first = words[0]
    if first.startswith("{") and first.endswith("}"):
        directive = first[1:-1]
        if directive in _CODE_DIRECTIVES:
            return words[1] if len(words) > 1 else ""
        if directive == "eval-rst" and _RST_CODE.search(content):
            return "rst"
        return None
    return first


def blocks(page: Path) -> list[Block]:
    """The code blocks of ``page`` in order."""
    tokens = MarkdownIt("commonmark").parse(page.read_text(encoding="utf-8"))
    markers: dict[int, tuple[int, str]] = {}  # the line after a marker: (its line, reason)
    found: list[Block] = []
    for token in tokens:
        if token.map is None:
            continue
        start, end = token.map
        if token.type == "html_block":
            marker = _MARKER.match(token.content.strip())
            if marker:
                markers[end] = (start + 1, marker["reason"])
            continue
        if token.type == "fence":
            language = _language(token.info, token.content)
        elif token.type == "code_block":
            language = ""
        else:
            continue
        marked = markers.pop(start, None)
        if language is None:
            continue
        found.append(
            Block(
                page=page,
                line=start + 1,
                language=language,
                text=token.content,
                not_run=None if marked is None else marked[1],
            )
        )
    if markers:
        line = min(line for line, _ in markers.values())
        raise DocError(f"{page.name}:{line}: a not-run marker with no code block right after it")
    return found


BLOCKS = [block for page in PAGES for block in blocks(page)]
PYTHON = [block for block in BLOCKS if block.language == "python" and block.not_run is None]
SHELL = [block for block in BLOCKS if block.language == "sh" and block.not_run is None]
MARKED = [block for block in BLOCKS if block.not_run is not None]
MARKED_PYTHON = [block for block in MARKED if block.language == "python"]


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


@pytest.mark.parametrize("block", MARKED_PYTHON, ids=ids(MARKED_PYTHON))
def test_a_python_block_not_run_still_parses(block: Block) -> None:
    compile(
        block.text, block.name, "exec", flags=ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
    )


def commands(text: str) -> list[list[str]]:
    """The commands of a shell block: its lines, comments and blank ones out."""
    found = []
    for line in text.splitlines():
        lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        lexer.commenters = "#"
        words = list(lexer)
        if words:
            found.append(words)
    return found


def _markers() -> set[str]:
    options = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    listed = options["tool"]["pytest"]["ini_options"]["markers"]
    return {entry.split(":")[0].strip() for entry in listed}


def _check_pytest(arguments: list[str]) -> None:
    for option, value in itertools.pairwise(arguments):
        if option == "-m":
            named = set(re.findall(r"[A-Za-z_]\w*", value)) - {"not", "and", "or"}
            assert named <= _markers(), f"pytest -m names unregistered markers: {value}"


def _check_path(argument: str) -> None:
    path = argument.split("::")[0].removeprefix("./")
    if path.startswith("../shared/"):
        if SHARED.is_dir():
            assert (ROOT / path).exists(), f"no such file or folder: {path}"
    elif path.startswith("/"):
        assert Path(path).exists(), f"no such file or folder: {path}"
    elif path.split("/")[0] in _TOP_LEVEL and not _ignored(path):  # not an output
        assert (ROOT / path).exists(), f"no such file or folder: {path}"


def check_command(words: list[str]) -> None:
    operators = _SHELL_OPERATORS & set(words)
    assert not operators, f"a line with {sorted(operators)} is not checked: mark the block"
    while words and _ASSIGNMENT.match(words[0]):  # VAR=value before the program
        words = words[1:]
    program, *arguments = words
    for argument in arguments:
        if not argument.startswith("-"):
            _check_path(argument)
    if program == ".venv/bin/trio-reconcile":
        _check_trio_reconcile(arguments)
    elif program == "./run":
        command = arguments[0] if arguments else None
        assert command in _RUN_COMMANDS, f"./run has no command {command!r}"
        if command == "main":
            _check_trio_reconcile(["demo", *arguments[1:]])
        elif command == "test":
            _check_pytest(arguments[1:])
    elif program == ".venv/bin/python" and arguments[:1] == ["-m"] and len(arguments) > 1:
        assert importlib.util.find_spec(arguments[1]) is not None, f"no module {arguments[1]}"
        if arguments[1] == "pytest":
            _check_pytest(arguments[2:])
    elif program == ".venv/bin/python" and arguments and arguments[0].endswith(".py"):
        assert (ROOT / arguments[0]).is_file(), f"no such script: {arguments[0]}"
    else:
        raise AssertionError(f"{program}: a program these tests do not check; mark the block")


def _check_trio_reconcile(arguments: list[str]) -> None:
    try:
        parse(build_parser(), arguments)
    except SystemExit as exit_:
        if exit_.code != 0:  # 0: --help, --version
            raise AssertionError(f"trio-reconcile refuses {shlex.join(arguments)}") from exit_


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
    "line",
    [
        ".venv/bin/trio-reconcile run my.spec --workers 0",
        ".venv/bin/trio-reconcile run my.spec --no-such-option",
        ".venv/bin/trio-reconcile explore my.spec --strategy bfs",
        ".venv/bin/trio-reconcile run ./replica/driver/specs/nope.spec",
        ".venv/bin/trio-reconcile run replica/driver/specs/nope.spec --help",
        ".venv/bin/trio-reconcile run my.spec | head",
        "./run tests",
        "./run main --nonsense",
        "./run test && rm -rf build",
        "./run test -m nosuchmarker",
        ".venv/bin/python -m no_such_module_here",
        ".venv/bin/python -m pytest tests/no_such_test.py",
        ".venv/bin/python -m pytest bench/no_such.py",
        ".venv/bin/python bench/no_such_script.py",
        "xdg-open docs/_build/html/index.html",
    ],
)
def test_the_shell_check_can_fail(line: str, capsys: pytest.CaptureFixture[str]) -> None:
    (words,) = commands(line)
    with pytest.raises(AssertionError):
        check_command(words)
    capsys.readouterr()  # argparse's usage lines


PUBLIC_PACKAGES = [
    "actors",
    "actors.mypy",
    "actors.net",
    "actors.testing",
    "barrier",
    "sharing",
    "replica",
]
_LITERAL = re.compile(r"::\n\n(?:    .*\n|\n)+")


def docstring_literals() -> list[tuple[str, str]]:
    """(where, the docstring text before it) of every literal block in the
    docstrings of the public packages, their public names and those names'
    members: what the reference renders."""
    found: list[tuple[str, str]] = []
    seen: set[int] = set()

    def scan(obj: object, where: str) -> None:
        text = inspect.getdoc(obj)
        if not text or id(obj) in seen:
            return
        seen.add(id(obj))
        start = 0
        for match in _LITERAL.finditer(text + "\n"):
            found.append((where, text[start : match.start()]))
            start = match.end()

    for package in PUBLIC_PACKAGES:
        module = importlib.import_module(package)
        scan(module, package)
        for name in dir(module):
            value = getattr(module, name)
            if name.startswith("_") or isinstance(value, types.ModuleType):
                continue
            scan(value, f"{package}.{name}")
            if inspect.isclass(value):
                for member, attribute in vars(value).items():
                    if not member.startswith("_"):
                        scan(getattr(attribute, "fget", attribute), f"{package}.{name}.{member}")
    return found


def test_every_literal_block_of_a_public_docstring_says_why_it_is_not_run() -> None:
    literals = docstring_literals()
    assert literals, "no literal block found: the scan is broken"
    unmarked = [where for where, before in literals if ".. not run: " not in before]
    assert unmarked == []


def _ignored(path: str) -> bool:
    """Whether ``.gitignore`` leaves ``path`` out (its plain patterns)."""
    for pattern in (ROOT / ".gitignore").read_text(encoding="utf-8").split():
        folder = pattern.rstrip("/")
        if path == folder or path.startswith(folder + "/") or fnmatch.fnmatch(path, pattern):
            return True
    return False


NOW = [page for page in PAGES if page.name != "CHANGELOG.md"]
"""The pages that describe the project as it is (the changelog names paths
as they were)."""


@pytest.mark.parametrize("page", NOW, ids=[str(page.relative_to(ROOT)) for page in NOW])
def test_the_paths_a_page_names_exist(page: Path) -> None:
    missing = []
    for quoted in _PATH_IN_TEXT.findall(page.read_text(encoding="utf-8")):
        path = quoted.split("::")[0].rstrip(".,:").removeprefix("./")
        first = path.split("/")[0]
        if path.startswith("../shared/"):
            if SHARED.is_dir() and not (ROOT / path).exists():
                missing.append(path)
        elif first in _TOP_LEVEL or (first.endswith(".md") and first[:1].isupper()):
            known = (ROOT / path).exists() or (SHARED / path).exists()
            if not known and not _ignored(path):
                missing.append(path)
    assert sorted(set(missing)) == []


def test_a_marker_with_no_block_is_refused(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("<!-- not run: nothing follows -->\n\ntext\n", encoding="utf-8")
    with pytest.raises(DocError, match="no code block right after it"):
        blocks(page)


def test_blocks_are_read_as_myst_reads_them(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "- item\n\n  <!-- not run: output -->\n  ```\n  out\n  ```\n\n"
        "```{toctree}\nx\n```\n\n```python\nprint(1)\n```\n\n"
        "~~~sh\n./run test\n~~~\n\n    indented\n\n"
        "```{code-block} python\nprint(2)\n```\n\n"
        "```{eval-rst}\n.. code-block:: python\n\n   print(3)\n```\n\n"
        "```{eval-rst}\nA reference: :class:`Foo`.\n```\n",
        encoding="utf-8",
    )
    found = [(b.line, b.language, b.text, b.not_run) for b in blocks(page)]
    assert found == [
        (4, "", "out\n", "output"),
        (12, "python", "print(1)\n", None),
        (16, "sh", "./run test\n", None),
        (20, "", "indented\n", None),
        (22, "python", "print(2)\n", None),
        (26, "rst", ".. code-block:: python\n\n   print(3)\n", None),
    ]
