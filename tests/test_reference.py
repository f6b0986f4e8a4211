"""The API reference (``docs/reference``, built by Sphinx in ``.ci/run``)
documents every public name of the public packages, and nothing that is gone.

A package's public names are what ``dir()`` shows without a leading
underscore, modules aside. Each is documented on its package's page by an
autodoc directive (``autoclass``, ``autofunction``, ``autoexception``) or, for
constants and type aliases, a ``py:data`` directive. ``replica`` re-exports
part of ``replica.model``: those names are listed, with links, in the page's
"Names from replica.model" section instead of being documented twice."""

from __future__ import annotations

import importlib
import importlib.util
import re
import types

import pytest

from tests.paths import ROOT

REFERENCE = ROOT / "docs" / "reference"
PACKAGES = [
    "actors",
    "actors.net",
    "actors.testing",
    "barrier",
    "sharing",
    "replica",
    "replica.model",
]
_DIRECTIVE = re.compile(
    r"^\.\. (?:autoclass|autofunction|autoexception|py:data|py:function|py:class)::\s+(\w+)\s*$",
    re.MULTILINE,
)
_FROM_MODEL = re.compile(r":py:obj:`~replica\.model\.(\w+)`")


def public_names(package: str) -> set[str]:
    module = importlib.import_module(package)
    return {
        name
        for name in dir(module)
        if not name.startswith("_") and not isinstance(getattr(module, name), types.ModuleType)
    }


def page(package: str) -> str:
    return (REFERENCE / f"{package}.rst").read_text(encoding="utf-8")


def documented(package: str) -> list[str]:
    return _DIRECTIVE.findall(page(package))


@pytest.mark.parametrize("package", PACKAGES)
def test_the_reference_documents_every_public_name_once(package: str) -> None:
    text = page(package)
    assert f".. automodule:: {package}\n" in text
    names = documented(package)
    assert sorted(name for name in set(names) if names.count(name) > 1) == []
    listed = set(_FROM_MODEL.findall(text)) if package == "replica" else set()
    assert sorted(listed & set(names)) == []  # listed from replica.model and documented again
    assert sorted(public_names(package) - set(names) - listed) == []  # undocumented
    assert sorted((set(names) | listed) - public_names(package)) == []  # gone from the code


def test_the_names_replica_lists_from_replica_model_are_those_objects() -> None:
    import replica
    import replica.model

    listed = set(_FROM_MODEL.findall(page("replica")))
    assert listed
    assert sorted(n for n in listed if getattr(replica, n) is not getattr(replica.model, n)) == []
    assert listed <= set(documented("replica.model"))
    # Everything replica takes from replica.model is listed, not documented again.
    same = {
        name
        for name in public_names("replica") & public_names("replica.model")
        if getattr(replica, name) is getattr(replica.model, name)
    }
    assert listed == same


def test_every_reference_page_is_in_the_index() -> None:
    index = (REFERENCE.parent / "index.md").read_text(encoding="utf-8")
    pages = {path.stem for path in REFERENCE.glob("*.rst")}
    assert pages == set(PACKAGES)
    assert sorted(p for p in pages if f"reference/{p}\n" not in index) == []


def test_the_reference_shows_every_public_member_of_a_class_documented_or_not() -> None:
    spec = importlib.util.spec_from_file_location("docs_conf", ROOT / "docs" / "conf.py")
    assert spec is not None
    assert spec.loader is not None
    conf = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(conf)
    assert conf.autodoc_default_options["undoc-members"] is True
    import actors
    from replica import ShardCatalog

    skip = conf._skip_foreign
    # A member of the project's own, with or without a docstring, is shown...
    assert skip(None, "class", "shard", ShardCatalog.shard, False, None) is None
    assert skip(None, "class", "address", actors.ActorRef.address, False, None) is None
    # ... what a class inherits from Python's is not.
    assert skip(None, "exception", "add_note", BaseException.add_note, False, None) is True
