"""``trio-reconcile workflow``: its options, and the bundled workflow: every
bundled two-runtime spec, with both runtimes, on four topologies."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, TextIO

from ..lang._spec import read_spec
from ..run._bundled import BUNDLED_TWO_RUNTIME, bundled_spec
from ..run._report import report
from ..run._runner import Topology, run_spec
from ._arguments import add_seed, new_command

if TYPE_CHECKING:
    from ._arguments import Commands


WORKFLOW_TOPOLOGIES = (
    Topology(processes=1, workers=1),
    Topology(processes=1, workers=2),
    Topology(processes=2, workers=1),
    Topology(processes=2, workers=2),
)


def add_arguments(commands: Commands) -> None:
    """The ``workflow`` command and its options."""
    workflow = new_command(
        commands,
        "workflow",
        "run a bundled workflow",
        "every spec matched on every topology",
        "a stanza differed or an invariant broke",
    )
    workflow.add_argument(
        "name",
        choices=["two-runtime-compute"],
        metavar="NAME",
        help="two-runtime-compute: every bundled two-runtime spec, with both runtimes, "
        "on four topologies (1 and 2 processes, 1 and 2 workers)",
    )
    add_seed(workflow, "the seed of Trio's scheduler")


def execute(args: argparse.Namespace) -> int:
    """``workflow``: run the workflow named (there is one)."""
    return workflow_command(args.seed, sys.stdout)


def workflow_command(seed: int, out: TextIO) -> int:
    """Every bundled two-runtime spec, with both runtimes, on every topology."""
    failed = False
    print(f"{'spec':<36} {'topology':<28} result", file=out)
    for name in BUNDLED_TWO_RUNTIME:
        with bundled_spec(name) as path:
            spec = read_spec(path, name)
            for topology in WORKFLOW_TOPOLOGIES:
                run = run_spec(spec, topology, seed=seed, trace=None)
                outcomes = run.outcomes
                bad = sum(not outcome.matched for outcome in outcomes) + len(run.violations)
                result = f"ok ({len(outcomes)} stanzas)" if not bad else f"FAIL ({bad} differ)"
                print(f"{name:<36} {topology!s:<28} {result}", file=out, flush=True)
                if bad:
                    report(spec, outcomes, topology, out)
                failed |= bool(bad)
    print("workflow two-runtime-compute: " + ("FAILED" if failed else "passed"), file=out)
    return 1 if failed else 0
