"""The audit behind ``replica/driver/run/_shared.py``: the explorer's
reduction is sound only if every mutable object that tasks of two owners
touch is recorded (docs/actors.md, "Reduction"). This test watches every
attribute read of every instance of every mutable class of ``replica``,
``barrier`` and ``sharing`` that the list leaves out, explores schedules of
the bundled proof scenarios at P=2 W=2, and fails if any such object was
touched by two owners (two actors, an actor and a task outside actors, or
tasks that ``belong`` to different objects).

What it cannot see: a built-in container or closure that two owners reach
without going through an attribute of a watched instance, and a class
instantiated only on paths these schedules do not take.
"""

from __future__ import annotations

import collections
import enum
import functools
import importlib
import inspect
import pkgutil
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import Any

import attrs
import pytest
import trio

from actors._core import _footprint
from actors._core._envelope import current_address
from actors.testing import explore
from replica.driver.lang._spec import Spec, read_spec
from replica.driver.run._bundled import bundled_spec
from replica.driver.run._runner import Topology, _run
from replica.driver.run._shared import SHARED

PACKAGES = ("replica", "barrier", "sharing")
# Not run under the explorer: real processes, the command, the durable
# catalogs, the pictures; and ``__main__`` modules, which run when imported.
SKIPPED = ("__main__", "procs", "driver.cli", "persist", "postgres", "pictures")
SCENARIOS = (
    "two_runtime_recreate_index.spec",
    "two_runtime_recreate_race.spec",
    "divergent_compaction_interactive_only.spec",
    "divergent_drop_maintenance_only.spec",
    "divergent_create_interactive_only.spec",
    "reconnects.spec",
)


def _frozen(cls: type) -> bool:
    """A class whose instances cannot change once made: attrs' frozen classes
    refuse every setattr, as frozen dataclasses do."""
    params = getattr(cls, "__dataclass_params__", None)
    if params is not None and params.frozen:
        return True
    return getattr(cls.__setattr__, "__name__", "") == "_frozen_setattrs"


@functools.cache
def _classes() -> tuple[type, ...]:
    """The mutable classes of the packages that SHARED leaves out."""
    classes: dict[type, None] = {}
    for package in PACKAGES:
        for info in pkgutil.walk_packages(importlib.import_module(package).__path__, f"{package}."):
            if any(part in info.name for part in SKIPPED):
                continue
            module = importlib.import_module(info.name)
            for _, cls in inspect.getmembers(module, inspect.isclass):
                if cls.__module__ != info.name or cls in SHARED:
                    continue
                if issubclass(cls, (BaseException, tuple, enum.Enum)) or _frozen(cls):
                    continue
                if inspect.isabstract(cls) or getattr(cls, "_is_protocol", False):
                    continue
                classes[cls] = None
    return tuple(classes)


def _owner() -> str | None:
    """Who the running task's steps belong to, as the recorder names it."""
    try:
        task = trio.lowlevel.current_task()
    except RuntimeError:
        return None
    address = task.context.get(current_address)
    if address is not None:
        return f"actor {address.name}"
    owner = task.context.get(_footprint.owner)
    return "outside actors" if owner is None else f"{type(owner).__name__} {id(owner):#x}"


@attrs.define(repr=False)  # its repr would be the whole replica's
class _Audit:
    owners: dict[int, set[str]] = attrs.field(factory=lambda: collections.defaultdict(set))
    kinds: dict[int, str] = attrs.field(factory=dict)
    # Kept alive so that no id is reused by another object during the audit.
    kept: list[object] = attrs.field(factory=list)

    def touched(self, obj: object) -> None:
        if _footprint.sink is None or type(obj) in SHARED:
            return
        owner = _owner()
        if owner is None:
            return
        key = id(obj)
        if key not in self.kinds:
            self.kinds[key] = type(obj).__qualname__
            self.kept.append(obj)
        self.owners[key].add(owner)

    def shared(self) -> dict[str, list[str]]:
        found: dict[str, list[str]] = {}
        for key, owners in self.owners.items():
            if len(owners) > 1:
                found.setdefault(self.kinds[key], sorted(owners))
        return found


@contextmanager
def _watching(audit: _Audit) -> Iterator[None]:
    saved: list[tuple[type, object]] = []
    try:
        for cls in _classes():
            original = cls.__dict__.get("__getattribute__")
            inherited = cls.__getattribute__

            def getattribute(self: Any, name: str, _inherited: Any = inherited) -> Any:
                audit.touched(self)
                return _inherited(self, name)

            try:
                setattr(cls, "__getattribute__", getattribute)  # noqa: B010
            except TypeError:  # a class that takes no new attributes
                continue
            saved.append((cls, original))
        yield
    finally:
        for cls, original in reversed(saved):
            if original is None:
                del cls.__getattribute__
            else:
                setattr(cls, "__getattribute__", original)  # noqa: B010 (a slot wrapper)


def _spec(name: str) -> Spec:
    with bundled_spec(name) as path:
        return read_spec(path, name)


def _program(spec: Spec) -> Callable[[], Awaitable[None]]:
    async def main() -> None:
        await _run(spec, Topology(2, 2), None)

    return main


def test_the_audit_watches_the_replicas_mutable_classes_only() -> None:
    names = {cls.__qualname__ for cls in _classes()}
    # Mutable and left out of SHARED: watched. Frozen, or declared: not.
    assert {"Dataflow", "Export"} <= names
    assert not set(_classes()) & set(SHARED)
    assert "Frontier" not in names  # a frozen value


@pytest.mark.parametrize("name", SCENARIOS)
def test_no_object_two_owners_touch_is_left_out_of_shared(name: str) -> None:
    audit = _Audit()
    with _watching(audit):
        exploration = explore(
            _program(_spec(name)),
            strategy="dfs",
            bound=1,
            delays=1,
            budget=12,
            shared=SHARED,
            raise_on_failure=False,
        )
    assert exploration.runs == 12
    assert audit.owners  # the watch saw the replica's objects at all
    assert audit.shared() == {}
