"""Make the intersphinx inventories of trio and attrs from their docs' sources.

The documentation builds without a network (this project's machines reach
only package registries), so intersphinx cannot fetch ``objects.inv`` from
trio's and attrs' sites. This script reads the reStructuredText and MyST
sources of their documentation (a checkout of each repository) and writes the
inventory Sphinx would have published: every object their pages describe,
with its page and anchor. Run it again when trio or attrs move::

    python docs/_inventories/make.py trio  ~/src/trio/docs/source  > docs/_inventories/trio.inv
    python docs/_inventories/make.py attrs ~/src/attrs/docs        > docs/_inventories/attrs.inv
"""

from __future__ import annotations

import re
import sys
import zlib
from pathlib import Path

# A directive that describes an object: ``.. autoclass:: trio.Nursery``,
# ``.. function:: open_nursery(...)``, or MyST's ``{eval-rst}`` bodies the same.
_DIRECTIVE = re.compile(
    r"^(?P<indent>\s*)\.\. (?:py:)?(?P<auto>auto)?"
    r"(?P<kind>class|function|exception|data|attribute|method|decorator|module|currentmodule|"
    r"classmethod|staticmethod|property|interface)::\s*(?P<name>[\w.]+)"
)
_ROLES = {
    "class": "class",
    "interface": "class",
    "function": "function",
    "decorator": "function",
    "exception": "exception",
    "data": "data",
    "attribute": "attribute",
    "property": "property",
    "method": "method",
    "classmethod": "method",
    "staticmethod": "method",
    "module": "module",
}


def objects(source: Path) -> list[tuple[str, str, str]]:
    """(name, role, uri) of every object the pages under *source* describe."""
    found: dict[str, tuple[str, str, str]] = {}
    for page in sorted([*source.rglob("*.rst"), *source.rglob("*.md")]):
        doc = page.relative_to(source).with_suffix(".html").as_posix()
        module = ""
        classes: list[tuple[int, str]] = []  # (indent, qualified name) of enclosing classes
        for line in page.read_text(encoding="utf-8").splitlines():
            match = _DIRECTIVE.match(line)
            if match is None:
                continue
            indent = len(match["indent"].expandtabs())
            kind, name = match["kind"], match["name"]
            if kind in ("module", "currentmodule"):
                module = "" if name == "None" else name
                if kind == "module":
                    found[name] = (name, "module", f"{doc}#module-{name}")
                continue
            while classes and classes[-1][0] >= indent:
                classes.pop()
            if classes:
                full = f"{classes[-1][1]}.{name}"
            elif module and not name.startswith(module.split(".")[0] + "."):
                # Relative to the current module, unless it names the
                # package itself (``trio.abc.Instrument`` under
                # ``currentmodule:: trio.lowlevel`` is absolute).
                full = f"{module}.{name}"
            else:
                full = name
            found.setdefault(full, (full, _ROLES[kind], f"{doc}#{full}"))
            if kind in ("class", "exception", "interface"):
                classes.append((indent, full))
    return sorted(found.values())


def inventory(project: str, entries: list[tuple[str, str, str]]) -> bytes:
    """The bytes of a Sphinx version 2 inventory of *entries*."""
    header = (
        "# Sphinx inventory version 2\n"
        f"# Project: {project}\n"
        "# Version: \n"
        "# The remainder of this file is compressed using zlib.\n"
    ).encode()
    body = "".join(f"{name} py:{role} 1 {uri} -\n" for name, role, uri in entries)
    return header + zlib.compress(body.encode())


def main() -> None:
    project, source = sys.argv[1], Path(sys.argv[2])
    sys.stdout.buffer.write(inventory(project, objects(source)))


if __name__ == "__main__":
    main()
