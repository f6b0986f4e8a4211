"""The dependency arrows run one way, computed from the code
(``docs/architecture.md``): ``actors`` <- ``barrier``, ``sharing`` <-
``replica``; inside ``actors`` the core below everything, inside ``replica``
each layer (a folder) on those below it; no two modules import each other in
a circle, not even for type annotations; the layers that hold no I/O import
no Trio; the replica on processes never imports the driver."""

from __future__ import annotations

import ast
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

from .paths import ROOT

PACKAGES = ("actors", "barrier", "sharing", "replica")

# What the driver's layers that run the replica may import of the layers
# below the driver.
_BELOW_THE_DRIVER = {
    "replica",
    "replica.model",
    "replica.protocol",
    "replica.storage",
    "replica.engine",
    "replica.compute",
    "replica.runtime",
    "replica.client",
    "replica.procs",
    "actors",
    "actors.net",
    "actors.testing",
    "barrier",
    "sharing",
}

# Each layer, and the layers (or packages) it may import besides itself. A
# module belongs to the longest layer its name starts with.
ALLOWED: dict[str, set[str]] = {
    "actors._core": set(),
    "actors": {"actors._core"},
    "actors.testing": {"actors", "actors._core"},
    "actors.net": {"actors", "actors._core"},
    "barrier": {"actors"},
    "sharing": {"actors"},
    "replica.model": set(),
    "replica.protocol": {"replica.model"},
    "replica.storage": {"replica.model"},
    "replica.engine": {"replica.model", "replica.storage", "sharing"},
    "replica.compute": {
        "replica.model",
        "replica.protocol",
        "replica.storage",
        "replica.engine",
        "sharing",
    },
    "replica.runtime": {
        "replica.model",
        "replica.protocol",
        "replica.storage",
        "replica.engine",
        "replica.compute",
        "actors",
        "barrier",
        "sharing",
    },
    "replica.client": {
        "replica.model",
        "replica.protocol",
        "replica.storage",
        "replica.runtime",
        "actors",
    },
    "replica.procs": {
        "replica.model",
        "replica.protocol",
        "replica.storage",
        "replica.engine",
        "replica.compute",
        "replica.runtime",
        "replica.client",
        "actors",
        "actors.net",
        "barrier",
        "sharing",
    },
    # The driver's layers: its language, the reference model that judges the
    # replica (never the engine it judges), the pictures, running specs, and
    # the command line over all of them.
    "replica.driver.lang": {"replica.model", "replica.protocol"},
    "replica.driver.oracle": {"replica.model", "replica.protocol", "replica.driver.lang"},
    "replica.driver.pictures": {"actors"},
    "replica.driver.run": _BELOW_THE_DRIVER
    | {"replica.driver.lang", "replica.driver.oracle", "replica.driver.pictures"},
    "replica.driver.cli": _BELOW_THE_DRIVER
    | {
        "replica.driver.lang",
        "replica.driver.oracle",
        "replica.driver.pictures",
        "replica.driver.run",
    },
    # The package's face and ``python -m``: the command.
    "replica.driver": {"replica.driver.cli"},
    # The package's face re-exports the layers under the driver.
    "replica": {
        "replica.model",
        "replica.protocol",
        "replica.storage",
        "replica.engine",
        "replica.compute",
        "replica.runtime",
        "replica.client",
    },
}
# The layers with no I/O of their own: plain synchronous code.
TRIO_FREE = ("replica.model", "replica.engine", "replica.compute")


def modules() -> dict[str, Path]:
    """Every module of the project's packages, by dotted name."""
    found = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


MODULES = modules()


def imports(name: str) -> Iterator[str]:
    """The names ``name``'s module imports, absolute, at any depth of its
    code (inside functions and ``if TYPE_CHECKING:`` too)."""
    path = MODULES[name]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                target = ".".join([*base, node.module] if node.module else base)
            else:
                target = node.module or ""
            for alias in node.names:
                submodule = f"{target}.{alias.name}"
                yield submodule if submodule in MODULES else target
        elif (literal := _imported_by_name(node)) is not None:
            yield literal


def _dynamic_import(node: ast.AST) -> ast.Call | None:
    """``node`` if it imports by name: ``importlib.import_module(...)`` (under
    any alias of the module) or ``__import__(...)``."""
    if not isinstance(node, ast.Call):
        return None
    function = node.func
    if isinstance(function, ast.Attribute) and function.attr == "import_module":
        return node
    if isinstance(function, ast.Name) and function.id in {"import_module", "__import__"}:
        return node
    return None


def _imported_by_name(node: ast.AST) -> str | None:
    """What a dynamic import with a literal name imports (an absolute name)."""
    call = _dynamic_import(node)
    if call is None or not call.args:
        return None
    first = call.args[0]
    if isinstance(first, ast.Constant) and isinstance(first.value, str):
        return first.value
    return None


# The imports by a name the code computes, which the table above cannot
# see: the face of ``replica`` loads each public name's module when it is
# first used (its ``TYPE_CHECKING`` imports say which, checked below), and
# the shards load the durable catalogs that register with them, the one load
# upward in the layers (docs/architecture.md).
DYNAMIC = {
    ("replica", "module"): "the face's lazy names",
    ("replica.storage._shard", "DURABLE_CATALOGS"): "replica.storage.persist",
    ("actors.net._child", "name"): "a node process's parent's main module (run with -m)",
}


def project_imports(name: str) -> set[str]:
    """The project's modules ``name`` imports (a ``from X import Y`` of a
    module ``X.Y`` is an import of it; of a name in ``X``, of ``X``)."""
    found = set()
    for target in imports(name):
        parts = target.split(".")
        for end in range(len(parts), 0, -1):
            candidate = ".".join(parts[:end])
            if candidate in MODULES:
                if candidate != name:
                    found.add(candidate)
                break
    return found


def layer_of(name: str) -> str:
    return max(
        (layer for layer in ALLOWED if name == layer or name.startswith(layer + ".")), key=len
    )


def test_every_module_has_a_layer() -> None:
    for name in MODULES:
        assert layer_of(name), name


@pytest.mark.parametrize("layer", sorted(ALLOWED))
def test_a_layer_imports_only_the_layers_below_it(layer: str) -> None:
    wrong = {}
    for name in MODULES:
        if layer_of(name) != layer:
            continue
        bad = sorted(
            target
            for target in project_imports(name)
            if layer_of(target) != layer and layer_of(target) not in ALLOWED[layer]
        )
        if bad:
            wrong[name] = bad
    assert wrong == {}


def circles() -> list[list[str]]:
    """The strongly connected components of more than one module of the
    project's import graph (Tarjan's algorithm, iteratively)."""
    graph = {name: sorted(project_imports(name)) for name in MODULES}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(graph[root]))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, edges = work[-1]
            for target in edges:
                if target not in index:
                    index[target] = low[target] = len(index)
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, iter(graph[target])))
                    break
                if target in on_stack:
                    low[node] = min(low[node], index[target])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def test_no_modules_import_each_other_in_a_circle() -> None:
    assert circles() == []


def test_the_circle_finder_finds_a_circle() -> None:
    # A check that cannot fail is no check: the graph with one edge added
    # back (the layer below importing the one above) has a circle.
    global project_imports
    real = project_imports

    def with_an_edge_back(name: str) -> set[str]:
        found = real(name)
        if name == "actors._core._envelope":
            found.add("actors._core._cell")
        return found

    project_imports = with_an_edge_back
    try:
        assert any({"actors._core._cell", "actors._core._envelope"} <= set(c) for c in circles())
    finally:
        project_imports = real


def test_every_import_by_name_is_a_known_one() -> None:
    found = set()
    for name, path in MODULES.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            call = _dynamic_import(node)
            if call is not None and _imported_by_name(node) is None:
                found.add((name, ast.unparse(call.args[0]) if call.args else ""))
    assert found == set(DYNAMIC)


def test_the_faces_lazy_names_are_its_type_checking_imports() -> None:
    import replica

    path = MODULES["replica"]
    declared = {}
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            for alias in node.names:
                declared[alias.asname or alias.name] = f".{node.module}"
    assert declared == replica._FROM
    assert replica.__all__ == sorted(declared)


_LOADED = """
import importlib, sys
for name in {names!r}:
    importlib.import_module(name)
print(sorted(m for m in sys.modules if m == "trio" or m.startswith("trio.")
      or m.split(".")[0] in {packages!r}))
"""


@pytest.mark.parametrize("layer", TRIO_FREE)
def test_the_layers_without_io_load_no_trio_when_imported(layer: str) -> None:
    # What Python runs, package faces and imports by name included: the
    # check above reads each module's own imports only.
    names = sorted(name for name in MODULES if layer_of(name) == layer)
    code = _LOADED.format(names=names, packages=PACKAGES)
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    loaded = ast.literal_eval(result.stdout.strip())
    assert [m for m in loaded if m.split(".")[0] == "trio"] == []
    layers = {layer_of(m) for m in loaded if m in MODULES}
    assert all(
        ALLOWED[layer] >= {other} or other == layer or other == "replica" for other in layers
    ), layers


def test_the_model_loads_nothing_else_of_the_replica() -> None:
    code = _LOADED.format(names=["replica.model"], packages=PACKAGES)
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    loaded = ast.literal_eval(result.stdout.strip())
    assert {layer_of(m) for m in loaded} == {"replica", "replica.model"}


@pytest.mark.parametrize("layer", TRIO_FREE)
def test_the_layers_without_io_import_no_trio(layer: str) -> None:
    users = sorted(
        name
        for name in MODULES
        if layer_of(name) == layer and any(t.split(".")[0] == "trio" for t in imports(name))
    )
    assert users == []


def _in_the_driver(layer: str) -> bool:
    return layer == "replica.driver" or layer.startswith("replica.driver.")


def test_the_replica_on_processes_never_imports_the_driver() -> None:
    users = sorted(
        name
        for name in MODULES
        if layer_of(name) == "replica.procs"
        and any(_in_the_driver(layer_of(target)) for target in project_imports(name))
    )
    assert users == []


def test_the_oracle_never_reaches_the_engine() -> None:
    # The reference model judges the engine: nothing it imports, at any depth,
    # is the engine's (the meanings they share are the model's).
    seen: set[str] = set()
    todo = [name for name in MODULES if layer_of(name) == "replica.driver.oracle"]
    while todo:
        name = todo.pop()
        if name not in seen:
            seen.add(name)
            todo.extend(project_imports(name))
    assert sorted(name for name in seen if layer_of(name) == "replica.engine") == []


def test_importing_actors_loads_no_other_project_package() -> None:
    code = (
        "import sys, actors; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in "
        f"{PACKAGES!r} and m.split('.')[0] != 'actors'))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "[]"


def test_every_package_is_installed() -> None:
    # setuptools installs the packages pyproject.toml lists, and only those.
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    listed = config["tool"]["setuptools"]["packages"]
    packages = sorted(name for name, path in MODULES.items() if path.name == "__init__.py")
    # Data-only directories are listed too (setuptools warns about package
    # data outside the listed packages): each has package data and no module.
    data = config["tool"]["setuptools"]["package-data"]
    data_only = sorted(set(listed) - set(packages))
    assert data_only == ["replica.driver.specs"]
    for name in data_only:
        assert name in data
        assert not list((ROOT / name.replace(".", "/")).glob("*.py"))
    assert sorted(set(listed) & set(packages)) == packages


OUTSIDE = ("DESIGN.md", "DRIVER_COMPAT.md", "SPEC_FORMAT.md", "STYLE.md", "../shared")


def test_module_docstrings_cite_the_repositorys_own_docs() -> None:
    # ../shared is beside a clone, not in it (nor in an installed package).
    citing = sorted(
        name
        for name, path in MODULES.items()
        if any(
            file in (ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or "")
            for file in OUTSIDE
        )
    )
    assert citing == []
