"""The ``trio-reconcile`` command (SPEC_FORMAT.md, The command).

Exit status: 0 when every stanza matched, 1 when any did not, 2 on bad input
or bad arguments (nothing runs then).
"""

from __future__ import annotations

import argparse
import logging
import os
import random
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

import actors

from ._bundled import BUNDLED_TWO_RUNTIME, bundled_spec
from ._demo import demo
from ._export import write_chrome_trace
from ._programs import RandomChooser, generate
from ._runner import Outcome, Topology, run_spec
from ._spec import Spec, SpecError, parse_spec, read_spec
from ._timeline import Panel, render

DEFAULT_SEED = 1
WORKFLOW_TOPOLOGIES = (
    Topology(processes=1, workers=1),
    Topology(processes=1, workers=2),
    Topology(processes=2, workers=1),
    Topology(processes=2, workers=2),
)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        print(f"{self.prog}: error: {message}", file=sys.stderr)
        raise SystemExit(2)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="trio-reconcile",
        description="Run spec files against a model of a two-runtime compute replica.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {actors.__version__}")
    parser.add_argument(
        "-v",
        "--verbose",
        action="count",
        default=0,
        help="log to stderr: -v warnings and rejections, -vv also what adapters and actors do",
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    run = commands.add_parser("run", help="run spec files against a fresh replica each")
    run.add_argument("specs", nargs="+", metavar="SPEC")
    run.add_argument("--workers", type=_positive, default=1, metavar="W")
    run.add_argument("--processes", type=_positive, default=1, metavar="P")
    runtimes = run.add_mutually_exclusive_group()
    runtimes.add_argument("--interactive", dest="interactive", action="store_true", default=True)
    runtimes.add_argument("--solo", dest="interactive", action="store_false")
    run.add_argument("--no-barrier", dest="barrier", action="store_false", default=True)
    run.add_argument("--seed", type=int, default=DEFAULT_SEED, metavar="N")
    run.add_argument(
        "--faults",
        type=_rate,
        default=0.0,
        metavar="RATE",
        help="inject seed-driven faults (delays, lost hellos, late barrier arrivals) at RATE",
    )
    run.add_argument("--rewrite", action="store_true")
    run.add_argument("--trace", metavar="FILE", help="write the trace as JSON lines")
    run.add_argument("--timeline", metavar="FILE", help="draw each run's timeline as SVG")
    run.add_argument(
        "--chrome-trace",
        metavar="FILE",
        help="write the trace in the Chrome trace-event format (Perfetto, chrome://tracing)",
    )
    run.add_argument(
        "--check-determinism",
        action="store_true",
        help="run each spec twice with the seed and fail if the traces differ",
    )
    workflow = commands.add_parser("workflow", help="run a bundled workflow")
    workflow.add_argument("name", choices=["two-runtime-compute"])
    workflow.add_argument("--seed", type=int, default=DEFAULT_SEED, metavar="N")
    simulate = commands.add_parser(
        "simulate", help="run random programs against the replica and the reference model"
    )
    simulate.add_argument("--programs", type=_positive, default=50, metavar="N")
    simulate.add_argument("--seed", type=int, default=DEFAULT_SEED, metavar="N")
    simulate.add_argument("--faults", type=_rate, default=0.0, metavar="RATE")
    simulate.add_argument("--no-barrier", dest="barrier", action="store_false", default=True)
    simulate.add_argument("--out", default="simulation-failures", metavar="DIR")
    show = commands.add_parser("demo", help="show the race and its fix")
    show.add_argument("--seed", type=int, default=DEFAULT_SEED, metavar="N")
    show.add_argument("--timeline", metavar="FILE", help="draw both runs side by side as SVG")
    return parser


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1: {value}")
    return value


def _rate(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"a rate is between 0 and 1: {value}")
    return value


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command; return its exit status."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:
        return exit_.code if isinstance(exit_.code, int) else 2
    if args.verbose:
        level = logging.INFO if args.verbose > 1 else logging.WARNING
        logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s")
    match args.command:
        case "run":
            rewrite = args.rewrite or os.environ.get("REWRITE") == "1"
            topology = Topology(
                args.processes, args.workers, args.interactive, args.barrier, args.faults
            )
            if args.check_determinism:
                return determinism_command(args.specs, topology, args.seed, sys.stdout)
            return run_command(
                args.specs,
                topology,
                args.seed,
                rewrite,
                args.trace,
                sys.stdout,
                args.chrome_trace,
                args.timeline,
            )
        case "workflow":
            return workflow_command(args.seed, sys.stdout)
        case "simulate":
            return simulate_command(
                args.programs, args.seed, args.faults, args.barrier, Path(args.out), sys.stdout
            )
        case "demo":
            return demo(args.seed, sys.stdout, args.timeline)
    parser.print_usage(sys.stderr)
    print(f"{parser.prog}: error: a command is required (run, workflow or demo)", file=sys.stderr)
    return 2


def _load(paths: Sequence[str]) -> list[Spec] | None:
    specs: list[Spec] = []
    for path in paths:
        try:
            specs.append(read_spec(Path(path), path))
        except SpecError as error:
            print(error, file=sys.stderr)
            return None
    return specs


def run_command(
    paths: Sequence[str],
    topology: Topology,
    seed: int,
    rewrite: bool,
    trace_path: str | None,
    out: TextIO,
    chrome_path: str | None = None,
    timeline_path: str | None = None,
) -> int:
    specs = _load(paths)
    if specs is None:
        return 2
    wanted = (trace_path, chrome_path, timeline_path)
    trace = actors.Trace() if any(path is not None for path in wanted) else None
    panels: list[Panel] = []
    failed = False
    for spec in specs:
        start = 0 if trace is None else len(trace)
        run = run_spec(spec, topology, seed=seed, trace=trace)
        if trace is not None and timeline_path is not None:
            this_run = actors.Trace(trace.events[start:])
            panels.append(Panel.from_trace(f"{spec.path} ({topology})", this_run))
        if rewrite:
            Path(spec.path).write_text(rewritten(spec, run.outcomes), encoding="utf-8")
            print(f"rewrote {spec.path} ({len(run.outcomes)} stanzas, {topology})", file=out)
            continue
        failed |= report(spec, run.outcomes, topology, out)
        if topology.faults:
            counts = ", ".join(f"{site} {n}" for site, n in sorted(run.injected.items()))
            print(f"  faults injected: {counts or 'none'}", file=out)
        for violation in run.violations:
            print(f"{spec.path}: invariant broken: {violation}", file=out)
        failed |= bool(run.violations)
    if trace is not None and trace_path is not None:
        with open(trace_path, "w", encoding="utf-8") as file:
            trace.write_jsonl(file)
    if trace is not None and chrome_path is not None:
        with open(chrome_path, "w", encoding="utf-8") as file:
            write_chrome_trace(trace, file)
    if timeline_path is not None:
        Path(timeline_path).write_text(render(panels), encoding="utf-8")
    return 1 if failed else 0


def determinism_command(paths: Sequence[str], topology: Topology, seed: int, out: TextIO) -> int:
    """Run each spec twice with ``seed``; the traces must be identical."""
    specs = _load(paths)
    if specs is None:
        return 2
    failed = False
    for spec in specs:
        first, second = actors.Trace(), actors.Trace()
        run_spec(spec, topology, seed=seed, trace=first)
        run_spec(spec, topology, seed=seed, trace=second)
        if first.events == second.events:
            print(f"deterministic {spec.path}: {len(first)} trace events, seed {seed}", file=out)
            continue
        failed = True
        at = next(
            (i for i, (a, b) in enumerate(zip(first, second, strict=False)) if a != b),
            min(len(first), len(second)),
        )
        print(f"NONDETERMINISTIC {spec.path}: traces differ at event {at} (seed {seed})", file=out)
    return 1 if failed else 0


def simulate_command(
    programs: int, seed: int, faults: float, barrier: bool, out_dir: Path, out: TextIO
) -> int:
    """Random programs (seeded), each against a fresh replica of a random shape,
    checked against the reference model and the replica's invariants; a line
    of progress per program, and a replayable spec for each failure."""
    failed = 0
    start = time.perf_counter()
    for number in range(programs):
        rng = random.Random(f"simulate/{seed}/{number}")
        topology = Topology(rng.randint(1, 2), rng.randint(1, 4), True, barrier, faults)
        program = generate(RandomChooser(rng))
        text = program.spec_text()
        run_seed = rng.randrange(2**16)
        run = run_spec(parse_spec(text, "generated.spec"), topology, seed=run_seed, trace=None)
        stanzas = len(run.outcomes)
        if run.passed:
            print(
                f"[{number + 1}/{programs}] {topology}: ok ({stanzas} stanzas)",
                file=out,
                flush=True,
            )
            continue
        failed += 1
        out_dir.mkdir(parents=True, exist_ok=True)
        path = out_dir / f"program-{seed}-{number}.spec"
        path.write_text(text, encoding="utf-8")
        flags = f"--workers {topology.workers} --processes {topology.processes} --seed {run_seed}"
        flags += "" if barrier else " --no-barrier"
        flags += f" --faults {faults:g}" if faults else ""
        print(
            f"[{number + 1}/{programs}] {topology}: FAIL; "
            f"replay: trio-reconcile run {path} {flags}",
            file=out,
            flush=True,
        )
    rate = programs / (time.perf_counter() - start)
    print(f"simulate: {programs} programs, {failed} failed ({rate:.1f} programs/s)", file=out)
    return 1 if failed else 0


def report(spec: Spec, outcomes: list[Outcome], topology: Topology, out: TextIO) -> bool:
    """Print mismatches (and a summary line); return whether any stanza differed."""
    mismatches = [outcome for outcome in outcomes if not outcome.matched]
    for outcome in mismatches:
        stanza = outcome.stanza
        print(f"{spec.path}:{stanza.line}: {spec.lines[stanza.line - 1]}", file=out)
        print("  expected:", file=out)
        for line in stanza.expected or ("(nothing)",):
            print(f"    {line}", file=out)
        print("  actual:", file=out)
        for line in outcome.actual or ("(nothing)",):
            print(f"    {line}", file=out)
    verdict = "FAIL" if mismatches else "ok"
    detail = f"{len(mismatches)} of {len(outcomes)} stanzas differ" if mismatches else ""
    print(f"{verdict} {spec.path}: {detail or f'{len(outcomes)} stanzas'} ({topology})", file=out)
    return bool(mismatches)


def rewritten(spec: Spec, outcomes: list[Outcome]) -> str:
    """The spec's text with every expected block replaced by what ran."""
    lines = list(spec.lines)
    for outcome in reversed(outcomes):
        stanza = outcome.stanza
        lines[stanza.divider_line : stanza.end_line - 1] = list(outcome.actual)
    text = "\n".join(lines)
    return text + "\n" if spec.trailing_newline else text


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
