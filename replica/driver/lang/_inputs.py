"""The spec files a command reads: each argument a file, or a folder that
stands for every ``*.spec`` file directly in it."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from ._spec import Spec, SpecError, read_spec


def spec_files(arguments: Sequence[str]) -> list[str]:
    """The spec files ``arguments`` name, in order. A folder is replaced by
    its entries named ``*.spec`` that are not folders and not hidden (``.x``),
    sorted by name; sub-folders are not searched. Raises :class:`SpecError`
    for a folder that cannot be listed or holds no spec file."""
    files: list[str] = []
    for argument in arguments:
        if not os.path.isdir(argument):
            files.append(argument)
            continue
        try:
            names = os.listdir(argument)
        except OSError as error:
            raise SpecError(argument, None, f"cannot list the folder: {error.strerror}") from None
        found = sorted(
            name
            for name in names
            if name.endswith(".spec")
            and not name.startswith(".")
            and not os.path.isdir(os.path.join(argument, name))
        )
        if not found:
            raise SpecError(
                argument,
                None,
                "no *.spec file directly in the folder (folders are not searched recursively)",
            )
        files += [os.path.join(argument, name) for name in found]
    return files


def load_specs(paths: Sequence[str]) -> list[Spec]:
    """Read and parse every spec of ``paths``, all before anything runs;
    :class:`SpecError` for the first with bad input."""
    return [read_spec(Path(path), path) for path in paths]
