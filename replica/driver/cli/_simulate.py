"""``trio-reconcile simulate``: its options, and random programs (seeded),
each against a fresh replica of a random shape, checked against the
reference model (:mod:`replica.driver.oracle`) and the replica's
invariants; each failure written as a spec that replays it."""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from ...compute._holds import HoldMechanism
from ..lang._spec import parse_spec
from ..oracle._programs import GENERATED, RandomChooser, generate
from ..run._paths import check_outputs, make_folder, write_text
from ..run._runner import Topology, run_spec
from ._arguments import (
    MAX_PROGRAMS,
    add_holds,
    add_no_align,
    add_seed,
    new_command,
    parse_rate,
    up_to,
)

if TYPE_CHECKING:
    from ._arguments import Commands


def add_arguments(commands: Commands) -> None:
    """The ``simulate`` command and its options."""
    simulate = new_command(
        commands,
        "simulate",
        "run random programs against the replica and the reference model",
        "every program passed",
        "a program failed (each failure is written to --out as a replayable spec)",
    )
    simulate.add_argument(
        "--programs",
        type=up_to(MAX_PROGRAMS),
        default=50,
        metavar="N",
        help=f"how many programs to generate and run, 1 to {MAX_PROGRAMS:,} (default 50)",
    )
    add_seed(simulate, "the seed of the programs, their replicas' shapes and their runs")
    simulate.add_argument(
        "--faults",
        type=parse_rate,
        default=0.0,
        metavar="RATE",
        help="inject seed-driven faults at RATE, from 0 to 1 (default 0)",
    )
    simulate.add_argument(
        "--no-barrier",
        dest="barrier",
        action="store_false",
        default=True,
        help="turn off the reconcile barrier (unsafe: failures are expected)",
    )
    add_no_align(simulate)
    add_holds(simulate)
    simulate.add_argument(
        "--out",
        default="simulation-failures",
        metavar="DIR",
        help="the folder failing programs are written to, created on the first failure "
        "(its parent must exist; default simulation-failures)",
    )


def execute(args: argparse.Namespace) -> int:
    """``simulate``: check that the output folder can be written, then run
    the programs."""
    check_outputs([], folder=("--out", args.out))
    return simulate_command(
        args.programs,
        args.seed,
        args.faults,
        args.barrier,
        Path(args.out),
        sys.stdout,
        align=args.align,
        holds=HoldMechanism(args.holds),
    )


def simulate_command(
    programs: int,
    seed: int,
    faults: float,
    barrier: bool,
    out_dir: Path,
    out: TextIO,
    *,
    align: bool = True,
    holds: HoldMechanism = HoldMechanism.PUBLISHER,
) -> int:
    """Random programs (seeded), each against a fresh replica of a random shape,
    checked against the reference model and the replica's invariants; a line
    of progress per program, and a replayable spec for each failure."""
    failed = 0
    start = time.perf_counter()
    for number in range(programs):
        rng = random.Random(f"simulate/{seed}/{number}")
        topology = Topology(
            rng.randint(1, 2), rng.randint(1, 4), True, barrier, faults, align, holds
        )
        program = generate(RandomChooser(rng))
        text = program.spec_text()
        run_seed = rng.randrange(2**16)
        run = run_spec(parse_spec(text, GENERATED), topology, seed=run_seed, trace=None)
        stanzas = len(run.outcomes)
        # A generated program names only ids it made: a command the replica
        # refused for an unknown id is a protocol violation.
        unknown = [*run.unknown_ids(), *run.misfits]
        if run.passed and not unknown:
            print(
                f"[{number + 1}/{programs}] {topology}: ok ({stanzas} stanzas)",
                file=out,
                flush=True,
            )
            continue
        failed += 1
        make_folder("--out", str(out_dir))
        path = out_dir / f"program-{seed}-{number}.spec"
        write_text("--out", str(path), text)
        flags = f"--workers {topology.workers} --processes {topology.processes} --seed {run_seed}"
        flags += "" if barrier else " --no-barrier"
        flags += "" if align else " --no-align"
        flags += "" if holds is HoldMechanism.PUBLISHER else f" --holds {holds}"
        flags += f" --faults {faults:g}" if faults else ""
        print(
            f"[{number + 1}/{programs}] {topology}: FAIL; "
            f"replay: trio-reconcile run {path} {flags}",
            file=out,
            flush=True,
        )
        for refusal in unknown:
            print(f"  a protocol violation: {refusal}", file=out, flush=True)
    rate = programs / (time.perf_counter() - start)
    print(f"simulate: {programs} programs, {failed} failed ({rate:.1f} programs/s)", file=out)
    return 1 if failed else 0
