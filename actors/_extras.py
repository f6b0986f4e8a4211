"""The optional parts of the install (``pyproject.toml``'s extras): a module
that needs one says so by name when it is missing."""

from __future__ import annotations

EXTRA_MODULES = frozenset({"msgspec", "psycopg"})
"""The third-party modules the extras install (``net``, ``persist``: msgspec;
``postgres``: psycopg)."""


def missing(module: str, extra: str, user: str) -> ModuleNotFoundError:
    """The error for ``user``, which needs ``module``, installed by the
    ``extra`` (raise it ``from None`` in place of the import's)."""
    return ModuleNotFoundError(
        f"{user} needs {module}, which is not installed: pip install 'trio-reconcile[{extra}]'",
        name=module,
    )
