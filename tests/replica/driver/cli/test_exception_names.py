"""Every exception class of the driver is a noun ending in ``Error``."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from collections.abc import Iterator
from types import ModuleType

import replica.driver


def driver_modules() -> Iterator[ModuleType]:
    for info in pkgutil.walk_packages(replica.driver.__path__, "replica.driver."):
        if info.name != "replica.driver.__main__":  # importing it runs the command
            yield importlib.import_module(info.name)


def test_every_exception_class_of_the_driver_ends_in_error() -> None:
    named = sorted(
        f"{module.__name__}.{name}"
        for module in driver_modules()
        for name, value in vars(module).items()
        if inspect.isclass(value)
        and issubclass(value, BaseException)
        and value.__module__ == module.__name__
        and not name.endswith("Error")
    )
    assert named == []


def test_the_check_sees_every_module() -> None:
    names = {module.__name__ for module in driver_modules()}
    assert {"replica.driver.run._spawned", "replica.driver.cli._main"} <= names
