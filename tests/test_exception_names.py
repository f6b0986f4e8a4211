"""Every exception class of the project is a noun ending in ``Error``, and
every public one is under its package's one base (``docs/architecture.md``):
a user catches a package's errors with one ``except``. A warning class is
no error: its name ends in ``Warning`` and it derives from one of Python's
warning categories, so ``-W error::RuntimeWarning`` and filters work."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from collections.abc import Iterator
from types import ModuleType

from actors import ActorError
from barrier import BarrierError
from replica import ComputeError
from replica.driver.lang._errors import DriverError
from replica.procs import ProcsError
from sharing import SharingError

from .test_layout import PACKAGES

BASES: dict[str, type[BaseException]] = {
    "actors": ActorError,
    "barrier": BarrierError,
    "sharing": SharingError,
    "replica": ComputeError,
    "replica.procs": ProcsError,
    "replica.driver": DriverError,
}
"""Each package's base, by the longest prefix of a module's name."""


def project_modules() -> Iterator[ModuleType]:
    for top in PACKAGES:
        package = importlib.import_module(top)
        yield package
        for info in pkgutil.walk_packages(package.__path__, f"{top}."):
            if not info.name.endswith(".__main__"):  # importing it runs the command
                yield importlib.import_module(info.name)


def exceptions(*, warnings: bool = False) -> Iterator[tuple[str, str, type[BaseException]]]:
    """The project's exception classes, or with ``warnings`` its warnings."""
    for module in project_modules():
        for name, value in vars(module).items():
            if (
                inspect.isclass(value)
                and issubclass(value, BaseException)
                and value.__module__ == module.__name__
                and issubclass(value, Warning) == warnings
            ):
                yield module.__name__, name, value


def base_of(module: str) -> type[BaseException]:
    prefix = max((p for p in BASES if module == p or module.startswith(p + ".")), key=len)
    return BASES[prefix]


def test_every_exception_class_ends_in_error() -> None:
    assert sorted(f"{m}.{n}" for m, n, _ in exceptions() if not n.endswith("Error")) == []


def test_every_public_exception_is_under_its_packages_base() -> None:
    strays = sorted(
        f"{module}.{name}"
        for module, name, error in exceptions()
        if not name.startswith("_") and not issubclass(error, base_of(module))
    )
    assert strays == []


def test_the_check_sees_every_package() -> None:
    seen = {module for module, _, _ in exceptions()}
    assert {
        "replica.driver.run._spawned",
        "replica.procs._errors",
        "actors.testing._schedule",
    } <= seen
    assert {"barrier._state", "sharing._registry", "replica.storage.persist._errors"} <= seen


def test_every_warning_class_ends_in_warning_under_a_python_category() -> None:
    warnings = list(exceptions(warnings=True))
    assert [f"{m}.{n}" for m, n, _ in warnings] == ["actors.MockClockWarning"]
    assert [n for _, n, _ in warnings if not n.endswith("Warning")] == []
    assert all(issubclass(w, RuntimeWarning | UserWarning) for _, _, w in warnings)
