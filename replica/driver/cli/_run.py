"""``trio-reconcile run``: its options, and the specs run against a fresh
replica each: reported stanza by stanza, rewritten (``--rewrite``), twice
to compare their traces (``--check-determinism``), on several topologies
(``--topologies``: :mod:`replica.driver.run._matrix`), or against replica
processes (``--spawn``: :mod:`._spawn`). Every output path is checked, and
every spec read, before the first stanza runs; the traces and timelines
asked for are written once every run ended, and only then a spec rewritten
(whole or not at all: :mod:`replica.driver.run._paths`)."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, TextIO

import attrs

import actors

from ...compute._holds import HoldMechanism
from ..lang._catalog import MAX_SPEC_SYNTHETIC_BYTES, MAX_SYNTHETIC_BYTES
from ..lang._escape import escaped
from ..lang._headers import MAX_KEY_COLUMNS, MAX_LITERALS, MAX_ROW_BYTES
from ..lang._inputs import load_specs, spec_files
from ..lang._payloads import DEFAULT_TIMEOUT
from ..lang._spec import MAX_SPEC_BYTES, MAX_TIMEOUT_SECS, ROWS_PER_SPEC, ROWS_PER_WRITE, Spec
from ..pictures._chrome_trace import write_chrome_trace
from ..pictures._timeline import Panel, render
from ..run._matrix import ALL, TOPOLOGIES, matrix_command, topology_names
from ..run._paths import check_outputs, check_rewritable, replace_text, write_output, write_text
from ..run._report import report, report_violations, rewritten
from ..run._runner import DEFAULT_MAX_WAIT, SpecRun, Topology, run_spec
from ._arguments import (
    CommandParser,
    add_holds,
    add_no_align,
    add_seed,
    add_shape,
    add_tls,
    finish_tls,
    new_command,
    parse_peer_timeout,
    parse_rate,
    parse_seconds,
)
from ._spawn import spawn_command

if TYPE_CHECKING:
    from ._arguments import Commands


_SYNTHETIC = (
    f"at most {MAX_ROW_BYTES >> 20} MiB each, {MAX_SYNTHETIC_BYTES >> 20} MiB a write, "
    f"{MAX_SPEC_SYNTHETIC_BYTES >> 30} GiB a spec"
)
LIMITS = f"""\
limits (beyond them a spec is bad input):
  a spec file is a regular file of at most {MAX_SPEC_BYTES >> 20} MiB
  a write holds at most {ROWS_PER_WRITE:,} rows; a spec writes at most {ROWS_PER_SPEC:,} in all
  synthetic rows: {_SYNTHETIC}
  ids, times and key columns are at most 2^64-1 (u64)
  a key (key=[..]) has at most {MAX_KEY_COLUMNS} columns
  literals=[..] holds at most {MAX_LITERALS:,} values
  timeout-secs is at most {MAX_TIMEOUT_SECS:,} (virtual seconds)
  a body integer outside int64 is the stanza's error line, as in the real driver"""


def add_arguments(commands: Commands) -> None:
    """The ``run`` command and its options."""
    run = new_command(
        commands,
        "run",
        "run spec files against a fresh replica each",
        "every stanza matched",
        "a stanza differed or an invariant broke\n"
        "       (--check-determinism: the two runs' traces differed)",
        LIMITS,
    )
    run.add_argument(
        "specs",
        nargs="+",
        metavar="SPEC",
        help="spec files (in the language the README describes) or "
        "folders, run in order; a folder stands for every *.spec file directly in it (not "
        "in its sub-folders; hidden files aside), sorted by name, and a folder without one "
        "is bad input",
    )
    # No defaults here: finish_arguments tells a given option from a default.
    add_shape(run, default=None)
    runtimes = run.add_mutually_exclusive_group()
    runtimes.add_argument(
        "--interactive",
        dest="interactive",
        action="store_true",
        default=None,
        help="two runtimes, maintenance and interactive (the default)",
    )
    runtimes.add_argument(
        "--solo", dest="interactive", action="store_false", help="one runtime that does everything"
    )
    run.add_argument(
        "--no-barrier",
        dest="barrier",
        action="store_false",
        default=True,
        help="turn off the reconcile barrier between the runtimes (unsafe: lets the race happen)",
    )
    add_no_align(run)
    add_holds(run)
    add_seed(run, "the seed of Trio's scheduler and of injected faults")
    run.add_argument(
        "--faults",
        type=parse_rate,
        default=0.0,
        metavar="RATE",
        help="inject seed-driven faults (delays, lost hellos, late barrier arrivals) at RATE",
    )
    run.add_argument(
        "--rewrite",
        action="store_true",
        help="replace each spec's expected blocks with what ran (also REWRITE=1); "
        "each file is replaced whole, keeping its permissions",
    )
    run.add_argument("--trace", metavar="FILE", help="write the trace as JSON lines")
    run.add_argument("--timeline", metavar="FILE", help="draw each run's timeline as SVG")
    run.add_argument(
        "--chrome-trace",
        metavar="FILE",
        help="write the trace in the Chrome trace-event format (Perfetto, chrome://tracing)",
    )
    run.add_argument(
        "--topologies",
        type=_topologies,
        metavar="NAMES",
        help=f"run each spec on several topologies and print a table (a row a spec, a column "
        f"a topology; a cell is ok, or FAIL (n) when n stanzas differed or invariants broke), "
        f"the mismatches and the totals: {ALL} for the five, or "
        f"a comma-separated list of {', '.join(TOPOLOGIES)} (solo: one runtime; two: both; "
        f"wN: N workers a process; p2: two processes a runtime); not with --workers, "
        f"--processes, --solo, --interactive or --check-determinism, and --rewrite only "
        f"with one",
    )
    run.add_argument(
        "--check-determinism",
        action="store_true",
        help="run each spec twice with the seed and fail if the traces differ",
    )
    run.add_argument(
        "--spawn",
        action="store_true",
        help="run against --processes replica processes started as OS processes "
        "('trio-reconcile serve', the same Python), over loopback TCP on the real clock "
        "(timeout-secs are real seconds), then stop them (SIGTERM, then SIGKILL 2 s later, or "
        "at once for one that stopped answering); one set of processes serves every "
        "spec, reset to a fresh replica before each; not with --topologies, "
        "--check-determinism, --faults, --rewrite, --trace, --timeline or --chrome-trace",
    )
    run.add_argument(
        "--max-wait",
        type=parse_seconds,
        default=None,
        metavar="SECONDS",
        help="with --spawn: a stanza waits at most SECONDS real seconds, whatever its "
        f"timeout-secs (default {DEFAULT_MAX_WAIT:g}; the output still names the spec's "
        "timeout): a spec whose waits are meant to time out does not take its "
        f"{DEFAULT_TIMEOUT}-second default each",
    )
    run.add_argument(
        "--peer-timeout",
        type=parse_peer_timeout,
        default=None,
        metavar="SECONDS",
        help="with --spawn: each replica process's serve --peer-timeout (it pings the other "
        "processes and the shard host, and closes the connections to one silent for SECONDS: "
        "a partition then behaves as a dropped connection, which ends the run, named; it "
        "checks every quarter of SECONDS, so a process frozen is found 0.75 to 1.25 times "
        "SECONDS after); the driver's own pings of the processes keep 10 s, and find one "
        "silent that long, if sooner (default 10)",
    )
    add_tls(run, "with --spawn: ")
    run.add_argument(
        "--persist",
        metavar="URL",
        help="with --spawn: where the shard host stores the shards (docs/persist.md): "
        "sqlite:PATH or postgresql://... (one spec, and the store must hold no shard yet), "
        "or memory: (fresh for each spec); default: a SQLite file a spec, in a temporary "
        "folder removed at the end",
    )


def finish_arguments(run: CommandParser, args: argparse.Namespace) -> None:
    """``--topologies`` excludes the options that choose one topology, and
    ``--rewrite`` (or ``REWRITE=1``, which sets it) takes one topology;
    without ``--topologies``, those options get their defaults."""
    # The real driver rewrites whenever REWRITE is set; 0 and empty mean no.
    args.rewrite = args.rewrite or os.environ.get("REWRITE", "") not in ("", "0")
    chosen = {
        "--workers": args.workers is not None,
        "--processes": args.processes is not None,
        "--solo": args.interactive is False,
        "--interactive": args.interactive is True,
        "--check-determinism": args.check_determinism,
    }
    if args.max_wait is not None and not args.spawn:
        run.error("argument --max-wait: only with --spawn")
    if args.max_wait is None:
        args.max_wait = DEFAULT_MAX_WAIT
    if args.persist is not None and not args.spawn:
        run.error("argument --persist: only with --spawn")
    if args.peer_timeout is not None and not args.spawn:
        run.error("argument --peer-timeout: only with --spawn")
    finish_tls(run, args, only_with="--spawn" if not args.spawn else None)
    if args.spawn:
        refused = {
            "--topologies": args.topologies is not None,
            "--check-determinism": args.check_determinism,
            "--faults": bool(args.faults),
            "--rewrite (or REWRITE=1)": args.rewrite,
            "--trace": args.trace is not None,
            "--timeline": args.timeline is not None,
            "--chrome-trace": args.chrome_trace is not None,
        }
        for option, given in refused.items():
            if given:
                run.error(
                    f"argument --spawn: not allowed with argument {option} (not supported "
                    "across OS processes)"
                )
    if args.topologies is None:
        args.workers = 1 if args.workers is None else args.workers
        args.processes = 1 if args.processes is None else args.processes
        args.interactive = True if args.interactive is None else args.interactive
        return
    for option, given in chosen.items():
        if given:
            run.error(f"argument --topologies: not allowed with argument {option}")
    if args.rewrite and len(args.topologies) > 1:
        run.error(
            f"--rewrite (or REWRITE=1) rewrites from one topology, and --topologies "
            f"names {len(args.topologies)}"
        )


def _topologies(text: str) -> tuple[str, ...]:
    try:
        return topology_names(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def execute(args: argparse.Namespace) -> int:
    """``run``: find the specs, check the outputs, read every spec, then run
    them (on each topology of ``--topologies``)."""
    paths = spec_files(args.specs)
    outputs = [
        (option, path)
        for option, path in (
            ("--trace", args.trace),
            ("--chrome-trace", args.chrome_trace),
            ("--timeline", args.timeline),
        )
        if path is not None
    ]
    check_outputs(outputs, specs=paths)
    if args.rewrite:
        check_rewritable(paths)
    specs = load_specs(paths)
    recording = Recording.of(args.trace, args.chrome_trace, args.timeline)

    def with_options(topology: Topology) -> Topology:
        return attrs.evolve(
            topology,
            barrier=args.barrier,
            faults=args.faults,
            align=args.align,
            holds=HoldMechanism(args.holds),
        )

    if args.topologies is not None:
        topologies = {name: with_options(TOPOLOGIES[name]) for name in args.topologies}
        if not args.rewrite:
            status = matrix_command(specs, topologies, args.seed, recording.run, sys.stdout)
            recording.write()
            return status
        # One topology (the parser refuses --rewrite with more).
        (topology,) = topologies.values()
    else:
        topology = with_options(Topology(args.processes, args.workers, args.interactive))
    if args.spawn:
        return spawn_command(
            specs,
            topology,
            args.seed,
            sys.stdout,
            max_wait=args.max_wait,
            persist=args.persist,
            tls=args.tls,
            peer_timeout=args.peer_timeout,
        )
    if args.check_determinism:
        return determinism_command(specs, topology, args.seed, sys.stdout)
    return run_command(specs, topology, args.seed, args.rewrite, recording, sys.stdout)


def run_command(
    specs: Sequence[Spec],
    topology: Topology,
    seed: int,
    rewrite: bool,
    recording: Recording,
    out: TextIO,
) -> int:
    """Run each spec on ``topology``; print its mismatches and verdict, or,
    with ``rewrite``, rewrite it once every output is written."""
    failed = False
    rewrites: list[tuple[Spec, SpecRun]] = []
    for spec in specs:
        run = recording.run(spec, topology, seed)
        if rewrite:
            rewrites.append((spec, run))
            continue
        failed |= report(spec, run.outcomes, topology, out)
        if topology.faults:
            counts = ", ".join(f"{site} {n}" for site, n in sorted(run.injected.items()))
            print(f"  faults injected: {counts or 'none'}", file=out)
        failed |= report_violations(spec, run, out)
    # The outputs first: one that cannot be written exits 2 with no spec rewritten.
    recording.write()
    for spec, run in rewrites:
        if run.aborted:
            # A replica that aborted printed no output to write down.
            failed = True
            report_violations(spec, run, out)
            print(f"not rewritten: {escaped(spec.path)}: the replica aborted", file=out)
            continue
        replace_text(spec.path, rewritten(spec, run.outcomes))
        print(f"rewrote {escaped(spec.path)} ({len(run.outcomes)} stanzas, {topology})", file=out)
    return 1 if failed else 0


@attrs.define
class Recording:
    """The trace and the timeline's panels gathered across a command's runs,
    and the files they go to."""

    trace_path: str | None
    chrome_path: str | None
    timeline_path: str | None
    trace: actors.Trace | None
    panels: list[Panel] = attrs.field(factory=list)

    @classmethod
    def of(
        cls, trace_path: str | None, chrome_path: str | None, timeline_path: str | None
    ) -> Recording:
        wanted = (trace_path, chrome_path, timeline_path)
        trace = actors.Trace() if any(path is not None for path in wanted) else None
        return cls(trace_path, chrome_path, timeline_path, trace)

    def run(self, spec: Spec, topology: Topology, seed: int) -> SpecRun:
        """Run ``spec``, recording its trace and its timeline's panel."""
        trace = self.trace
        start = 0 if trace is None else len(trace)
        run = run_spec(spec, topology, seed=seed, trace=trace)
        if trace is not None and self.timeline_path is not None:
            this_run = actors.Trace(trace.events[start:])
            self.panels.append(Panel.from_trace(f"{spec.path} ({topology})", this_run))
        return run

    def write(self) -> None:
        """Write every output asked for."""
        trace = self.trace
        if trace is not None and self.trace_path is not None:
            write_output("--trace", self.trace_path, trace.write_jsonl)
        if trace is not None and self.chrome_path is not None:
            write_output(
                "--chrome-trace", self.chrome_path, lambda file: write_chrome_trace(trace, file)
            )
        if self.timeline_path is not None:
            write_text("--timeline", self.timeline_path, render(self.panels))


def determinism_command(specs: Sequence[Spec], topology: Topology, seed: int, out: TextIO) -> int:
    """Run each spec twice with ``seed``; the traces must be identical. A
    spec whose run does not pass (its mismatches, the invariants it broke, a
    replica that aborted) fails too, reported as a run reports it."""
    failed = False
    for spec in specs:
        first, second = actors.Trace(), actors.Trace()
        run = run_spec(spec, topology, seed=seed, trace=first)
        run_spec(spec, topology, seed=seed, trace=second)
        if not run.passed:
            failed = True
            report(spec, run.outcomes, topology, out)
            report_violations(spec, run, out)
        if first.events == second.events:
            print(
                f"deterministic {escaped(spec.path)}: {len(first)} trace events, seed {seed}",
                file=out,
            )
            continue
        failed = True
        at = next(
            (i for i, (a, b) in enumerate(zip(first, second, strict=False)) if a != b),
            min(len(first), len(second)),
        )
        print(
            f"NONDETERMINISTIC {escaped(spec.path)}: traces differ at event {at} (seed {seed})",
            file=out,
        )
    return 1 if failed else 0
