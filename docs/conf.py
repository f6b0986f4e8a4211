"""Sphinx configuration: the API reference (autodoc from the docstrings) and
the Markdown pages (MyST), built with warnings as errors::

    .venv/bin/python -m sphinx -W --keep-going -b html docs docs/_build/html

The build needs no network: trio's and attrs' inventories for the
cross-references are in ``docs/_inventories`` (see ``make.py`` there)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from pygments.lexers.special import TextLexer
from sphinx.application import Sphinx

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

project = "trio-reconcile"
author = "the trio-reconcile developers"
copyright = "2026, the trio-reconcile developers"
release = version = "0.1.0"

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.intersphinx",
    "sphinx.ext.napoleon",
    "myst_parser",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "_inventories", "_generated/*.txt"]

# The reference documents each public name where users import it (actors.X,
# not actors._core._mailbox.X), in the order of the source.
autodoc_member_order = "bysource"
autodoc_typehints = "signature"
autodoc_default_options = {"show-inheritance": True, "undoc-members": True}
autodoc_preserve_defaults = True
add_module_names = False
python_use_unqualified_type_names = True

intersphinx_mapping = {
    "python": ("https://docs.python.org/3", None),
    "trio": ("https://trio.readthedocs.io/en/stable/", str(HERE / "_inventories" / "trio.inv")),
    "attrs": ("https://www.attrs.org/en/stable/", str(HERE / "_inventories" / "attrs.inv")),
}
# Python's own inventory would need the network; without it, links to the
# standard library stay plain text rather than failing the build.
intersphinx_mapping.pop("python")

myst_heading_anchors = 3
myst_enable_extensions = ["colon_fence"]

html_theme = "alabaster"
html_title = "trio-reconcile"
html_static_path: list[str] = []


def _draw_timeline(app: Sphinx) -> None:
    """The demo's two runs (race and fix) side by side, as the command draws
    them: the picture the reference's replica page shows."""
    out = HERE / "_generated"
    out.mkdir(exist_ok=True)
    subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, _trio_reconcile_cli as c; sys.exit(c.main())",
            "demo",
            "--timeline",
            str(out / "demo-timeline.svg"),
        ],
        cwd=ROOT,
        check=True,
        stdout=subprocess.DEVNULL,
    )


_OURS = frozenset({"actors", "barrier", "sharing", "replica"})


def _skip_foreign(
    app: Sphinx, what: str, name: str, obj: object, skip: bool, options: object
) -> bool | None:
    """Show what a class inherits from this project's classes (``spawn``
    on :class:`actors.ActorSystem` comes from a private base), not what it
    inherits from Python's (``BaseException.with_traceback``, ``int.bit_length``)."""
    target = getattr(obj, "fget", obj)
    target = getattr(target, "__func__", target)
    module = getattr(target, "__module__", None) or getattr(
        getattr(target, "__objclass__", None), "__module__", None
    )
    if isinstance(module, str) and module.split(".")[0] not in _OURS:
        return True
    return None


def _no_constructor(
    app: Sphinx,
    what: str,
    name: str,
    obj: object,
    options: object,
    signature: str | None,
    return_annotation: str | None,
) -> tuple[str, str | None] | None:
    """A class users receive but do not build (its metaclass refuses a call,
    as trio's do) is shown without the metaclass's ``(*args, **kwargs)``."""
    if what == "class" and type(obj).__name__ == "NoPublicConstructor":
        return "", None
    return None


def setup(app: Sphinx) -> None:
    app.connect("autodoc-skip-member", _skip_foreign)
    app.connect("autodoc-process-signature", _no_constructor)
    # architecture.md carries a Mermaid diagram beside its ASCII one; with no
    # Mermaid renderer offline it is shown as text.
    app.add_lexer("mermaid", TextLexer)
    app.connect("builder-inited", _draw_timeline)
