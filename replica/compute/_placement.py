"""Placement by class: which runtime renders a dataflow (docs/protocol.md,
"Placement by class").

Every command reaches both runtimes; each decides from the dataflow's class
whether it renders the dataflow or records its exports as peers. Solo renders
everything; maintenance renders ``Maintained`` dataflows; interactive renders
``OneShotRead`` ones, unless the setting ``enable_compute_interactive_dataflows``
is off, which installs them as ``Maintained`` work (their peeks are still
served by interactive, from the published index). The decision is taken once,
when the dataflow is created.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from ..model._dataflow import DataflowClass, DataflowDescription

INTERACTIVE_DATAFLOWS: Final = "enable_compute_interactive_dataflows"
"""The setting that lets the interactive runtime render one-shot reads (on by
default): a bool, ``false`` (or ``off``) turns it off, ``true`` (or ``on``)
back on: the values the driver's configuration rows take for a bool, which
it checks against the row's type, as the real driver does."""

_OFF: Final = frozenset({"false", "off"})


def interactive_dataflows(configuration: Mapping[str, str]) -> bool:
    """Whether the setting lets the interactive runtime render one-shot reads."""
    return configuration.get(INTERACTIVE_DATAFLOWS) not in _OFF


def renders_interactively(
    description: DataflowDescription, configuration: Mapping[str, str]
) -> bool:
    """Whether the interactive runtime (not maintenance) renders the dataflow,
    under ``configuration`` as it is when the dataflow is created."""
    return description.dataflow_class is DataflowClass.ONE_SHOT_READ and interactive_dataflows(
        configuration
    )
