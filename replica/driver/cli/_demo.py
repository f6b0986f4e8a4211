"""``trio-reconcile demo``: its options, and the race shown with the barrier
off, then its fix with it on (:mod:`replica.driver.run._demo`)."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from ..run._demo import demo
from ..run._paths import check_outputs
from ._arguments import add_seed, new_command

if TYPE_CHECKING:
    from ._arguments import Commands


def add_arguments(commands: Commands) -> None:
    """The ``demo`` command and its options."""
    demo = new_command(
        commands,
        "demo",
        "show the race and its fix",
        "the race showed without the barrier and the fix with it",
        "either did not show",
    )
    add_seed(demo, "the seed of Trio's scheduler")
    demo.add_argument("--timeline", metavar="FILE", help="draw both runs side by side as SVG")


def execute(args: argparse.Namespace) -> int:
    """``demo``: check that the timeline can be written, then show the race
    and its fix (:func:`replica.driver.run._demo.demo`)."""
    if args.timeline is not None:
        check_outputs([("--timeline", args.timeline)])
    return demo(args.seed, sys.stdout, args.timeline)
