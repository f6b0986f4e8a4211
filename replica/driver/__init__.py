"""The ``trio-reconcile`` command."""

from ._cli import main as main
