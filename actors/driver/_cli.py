"""The ``trio-reconcile`` command line."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

import actors


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="trio-reconcile",
        description="A Trio actor framework and a model of a two-runtime compute replica.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {actors.__version__}")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command; return its exit status (2 for bad arguments)."""
    parser = build_parser()
    try:
        parser.parse_args(argv)
    except SystemExit as exit_:
        return exit_.code if isinstance(exit_.code, int) else 2
    parser.print_help(sys.stdout)
    return 0
