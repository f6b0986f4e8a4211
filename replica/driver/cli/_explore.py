"""``trio-reconcile explore``: its options, and each spec run under
schedules chosen on purpose (:mod:`replica.driver.run._explore`)."""

from __future__ import annotations

import argparse
import re
import sys
from typing import TYPE_CHECKING

from actors.testing import ScheduleError
from actors.testing._split import MAX_JOBS

from ...compute._holds import HoldMechanism
from ..lang._escape import print_error
from ..lang._inputs import load_specs, spec_files
from ..run._explore import ExploreOptions, explore_command
from ..run._paths import check_outputs
from ..run._runner import Topology
from ._arguments import (
    MAX_PROGRAMS,
    PROG,
    add_holds,
    add_no_align,
    add_seed,
    add_shape,
    new_command,
    up_to,
)

if TYPE_CHECKING:
    from ._arguments import Commands


MAX_BOUND = 100
# A latency's seconds: digits, a point, digits (no sign, exponent, nan, inf).
DECIMAL = re.compile(r"[0-9]{1,12}(\.[0-9]{1,12})?|\.[0-9]{1,12}")
MAX_SCHEDULE = 1_000_000


def add_arguments(commands: Commands) -> None:
    """The ``explore`` command and its options."""
    explore = new_command(
        commands,
        "explore",
        "run specs under schedules chosen on purpose (actors.testing.explore)",
        "no schedule made a stanza differ, an invariant break or the run deadlock",
        "a schedule did; it is printed minimised, with the command that replays it\n"
        "       (or a spec ran differently under one schedule: no replay then)",
        "A choice point is a pick among the tasks Trio runs in one batch; a schedule is\n"
        "the list of picks other than the default (creation order), as '1:12=1,40=2'.\n"
        "dfs runs every schedule with at most --bound such picks and --delays tasks held\n"
        "back (then says complete); pct and random run --budget schedules. See\n"
        "docs/protocol.md, Exploring schedules.",
    )
    explore.add_argument(
        "specs",
        nargs="+",
        metavar="SPEC",
        help="spec files or folders, as for run; each is explored on its own",
    )
    explore.add_argument(
        "--strategy",
        choices=["dfs", "pct", "random"],
        default="pct",
        help="dfs: depth-first over every schedule within --bound; pct: probabilistic "
        "concurrency testing of bug depth --depth; random: uniform picks (default pct)",
    )
    explore.add_argument(
        "--budget",
        type=up_to(MAX_PROGRAMS),
        default=1000,
        metavar="N",
        help="at most N schedules a spec (default 1000)",
    )
    explore.add_argument(
        "--bound",
        type=up_to(MAX_BOUND, least=0),
        default=2,
        metavar="B",
        help=f"dfs: at most B non-default picks a schedule, 0 to {MAX_BOUND} (default 2)",
    )
    explore.add_argument(
        "--depth",
        type=up_to(MAX_BOUND),
        default=3,
        metavar="D",
        help=f"pct: the bug depth targeted, 1 to {MAX_BOUND} (default 3)",
    )
    explore.add_argument(
        "--delays",
        type=up_to(MAX_BOUND, least=0),
        default=0,
        metavar="N",
        help=f"the delay budget, 0 to {MAX_BOUND} (default 0): dfs and random may hold up to N "
        "tasks back a run (for one batch, or until no other task can run); not for pct, which "
        "runs the highest-priority runnable task at each step",
    )
    explore.add_argument(
        "--latency",
        type=_latency,
        metavar="SECONDS",
        help="deliver each tell, ask and reply between actors after a seeded virtual delay "
        "drawn from [0, SECONDS] (or LOW,HIGH), keeping each sender's order to each receiver "
        "(the replica's sequenced command channels are not delayed: see docs/actors.md)",
    )
    explore.add_argument(
        "--reduction",
        choices=("traces", "states", "none"),
        default="traces",
        help="dfs: traces (the default) runs one schedule of each order of dependent steps "
        "as far as it can tell (partial-order reduction over the steps' footprints, the "
        "replica's shared state declared); states skips only what reaches a state by the "
        "same steps; none runs every schedule within the bounds (the cross-check)",
    )
    explore.add_argument(
        "--no-reduction",
        dest="reduction",
        action="store_const",
        const="none",
        help="the same as --reduction none",
    )
    explore.add_argument(
        "--count-traces",
        action="store_true",
        help="record every run's footprints and report the distinct traces (the classes of "
        "runs up to the order of independent steps: what a reduction must keep)",
    )
    explore.add_argument(
        "--dependence",
        action="store_true",
        help="record every run's footprints and report the pairs of steps run in one batch "
        "that were dependent, by what both touched, most first (what keeps the reduction "
        "from merging orders)",
    )
    explore.add_argument(
        "--jobs",
        type=up_to(MAX_JOBS),
        default=1,
        metavar="N",
        help=f"dfs: N processes, 1 to {MAX_JOBS} (default 1), share the search: forked "
        "after the default run, each explores its share of the subtrees below the first "
        "deviations, at every level, and reports back (a platform with os.fork)",
    )
    explore.add_argument(
        "--timeline",
        metavar="FILE",
        help="draw the failing run (replayed once more with a trace) as SVG",
    )
    add_shape(explore, default=1)
    explore.add_argument(
        "--solo",
        dest="interactive",
        action="store_false",
        default=True,
        help="one runtime that does everything (default: two runtimes)",
    )
    explore.add_argument(
        "--no-barrier",
        dest="barrier",
        action="store_false",
        default=True,
        help="turn off the reconcile barrier (unsafe: the race is there to be found)",
    )
    add_no_align(explore)
    add_holds(explore)
    add_seed(explore, "the seed of each run and of the pct and random strategies")
    explore.add_argument(
        "--replay",
        type=_schedule,
        metavar="SCHEDULE",
        help="run this one schedule (as printed by a failure) instead of exploring",
    )


MAX_LATENCY = 3600.0


def _latency(text: str) -> float | tuple[float, float]:
    parts = text.split(",")
    try:
        values = [float(part) for part in parts if DECIMAL.fullmatch(part)]
    except ValueError:
        values = []
    if len(values) != len(parts) or len(values) > 2:
        raise argparse.ArgumentTypeError(
            f"not a latency: {text[:40]!r} (seconds, as 0.001, or LOW,HIGH, as 0.001,0.005)"
        )
    if any(value > MAX_LATENCY for value in values):
        raise argparse.ArgumentTypeError(f"a latency is at most {MAX_LATENCY:g} seconds")
    if len(values) == 2:
        if values[0] > values[1]:
            raise argparse.ArgumentTypeError(f"LOW,HIGH needs LOW <= HIGH: {text[:40]!r}")
        return (values[0], values[1])
    return values[0]


def _schedule(text: str) -> str:
    from actors.testing import Schedule, ScheduleError

    if len(text) > MAX_SCHEDULE:
        raise argparse.ArgumentTypeError(f"a schedule is at most {MAX_SCHEDULE:,} characters")
    try:
        return str(Schedule.parse(text))
    except ScheduleError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def execute(args: argparse.Namespace) -> int:
    """``explore``: read every spec, then explore each."""
    paths = spec_files(args.specs)
    if args.replay is not None and len(paths) > 1:
        print_error(f"{PROG}: error: --replay replays one spec, and {len(paths)} are named")
        return 2
    if args.strategy == "pct" and args.delays and args.replay is None:
        print_error(
            f"{PROG} explore: error: argument --delays: pct holds no task back (it runs the "
            "highest-priority runnable task at each step); --delays is for dfs and random"
        )
        return 2
    if args.jobs > 1 and (args.strategy != "dfs" or args.replay is not None):
        print_error(
            f"{PROG} explore: error: argument --jobs: the processes share a dfs search: "
            "for --strategy dfs without --replay"
        )
        return 2
    if args.timeline is not None:
        check_outputs([("--timeline", args.timeline)])
    specs = load_specs(paths)
    topology = Topology(
        args.processes,
        args.workers,
        args.interactive,
        barrier=args.barrier,
        align=args.align,
        holds=HoldMechanism(args.holds),
    )
    options = [f"--workers={args.workers}", f"--processes={args.processes}"]
    options += [] if args.interactive else ["--solo"]
    options += [] if args.barrier else ["--no-barrier"]
    options += [] if args.align else ["--no-align"]
    options += [] if args.holds == HoldMechanism.PUBLISHER else [f"--holds={args.holds}"]
    options += [f"--seed={args.seed}"]
    if args.latency is not None:
        latency = args.latency
        # repr: the shortest text that reads back as the same float.
        options += [
            f"--latency={latency[0]!r},{latency[1]!r}"
            if isinstance(latency, tuple)
            else f"--latency={latency!r}"
        ]
    how = ExploreOptions(
        strategy=args.strategy,
        budget=args.budget,
        bound=args.bound,
        depth=args.depth,
        seed=args.seed,
        replay=args.replay,
        options=tuple(options),
        delays=args.delays,
        latency=args.latency,
        timeline=args.timeline,
        reduction=args.reduction,
        count_traces=args.count_traces,
        count_dependence=args.dependence,
        jobs=args.jobs,
    )
    try:
        return explore_command(specs, topology, how, sys.stdout)
    except ScheduleError as error:
        # Only a replayed schedule can fail to fit the spec.
        print_error(f"{PROG}: error: --replay: {error}")
        return 2
