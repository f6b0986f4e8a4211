"""The ``trio-reconcile`` command (SPEC_FORMAT.md, The command).

Exit status: 0 when every stanza matched, 1 when any did not, 2 on bad input
or bad arguments (nothing runs then) or an output that cannot be written, 130
when interrupted (Ctrl-C); a command that runs out of memory says so in one
line, exit 1 (the replica's limits keep a spec from getting there). Output
paths are checked before anything runs; ``--rewrite`` replaces each spec
whole or not at all (:mod:`._paths`), and only once every output is
written. ``run`` takes folders as well as files (:mod:`._inputs`), and
``--topologies`` runs every spec on several topologies and prints a table
(:mod:`._matrix`).

Input is shown escaped (:mod:`._escape`): every line written to stderr (an
error, a log record), and on stdout each line that names a spec or quotes its
directive; a mismatch's expected and actual blocks are written as they are.

Limits on spec files (bad input beyond them, exit 2 before anything runs):
a regular file of at most 16 MiB; at most 1,000,000 rows a write and
4,000,000 a spec; ids, times and key columns at most 2^64-1; a key of at
most 64 columns and ``literals=`` of at most 100,000 values; ``timeout-secs``
at most 1,000,000 virtual seconds. The numbers live in :mod:`._spec` and
:mod:`._headers`.

Limits on arguments (exit 2 beyond them): ``--workers`` 1 to 64 and
``--processes`` 1 to 16 (at most 1,024 workers a runtime), ``--programs`` 1 to
1,000,000,000, each written in ASCII digits. The numbers live in
:mod:`._parser`.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import random
import sys
import time
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

import attrs
import trio

import actors
from actors.testing import ScheduleError

from ._bundled import BUNDLED_TWO_RUNTIME, bundled_spec
from ._demo import demo
from ._escape import EscapingFormatter, escaped, print_error
from ._explore import ExploreOptions, explore_command
from ._export import write_chrome_trace
from ._inputs import load_specs, spec_files
from ._matrix import TOPOLOGIES, matrix_command
from ._parser import INTERRUPTED, PROG, TERMINATED, build_parser, command_list, parse
from ._paths import (
    OutputError,
    check_outputs,
    check_rewritable,
    make_folder,
    replace_text,
    write_output,
    write_text,
)
from ._programs import RandomChooser, generate
from ._report import report, report_violations, rewritten
from ._runner import SpecRun, Topology, run_spec
from ._spec import Spec, SpecError, parse_spec, read_spec
from ._timeline import Panel, render

if TYPE_CHECKING:
    from replica.procs import TlsFiles

WORKFLOW_TOPOLOGIES = (
    Topology(processes=1, workers=1),
    Topology(processes=1, workers=2),
    Topology(processes=2, workers=1),
    Topology(processes=2, workers=2),
)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command; return its exit status."""
    parser = build_parser()
    try:
        args = parse(parser, argv)
    except SystemExit as exit_:
        return exit_.code if isinstance(exit_.code, int) else 2
    if args.command is None:
        parser.print_usage(sys.stderr)
        print_error(f"{PROG}: error: a command is required ({command_list(parser)})")
        return 2
    if args.verbose or args.command == "serve":
        # A serve process's warnings (a lost peer, the shard host gone) show
        # without -v (under run --spawn too: the processes share its stderr).
        level = logging.INFO if args.verbose > 1 else logging.WARNING
        handler = logging.StreamHandler()
        handler.setFormatter(EscapingFormatter("%(levelname)s %(name)s: %(message)s"))
        logging.basicConfig(level=level, handlers=[handler])
    try:
        return _command(args)
    except BaseException as error:
        if not _out_of_memory(error):
            raise
    # Past the handler, the error and the run's state its frames held are
    # gone: there is memory again to say so in one line.
    print(f"{PROG}: error: out of memory", file=sys.stderr)
    return 1


def _out_of_memory(error: BaseException) -> bool:
    """Whether ``error`` ended a command for want of memory: a
    ``MemoryError``, alone, as the cause of the ``TrioInternalError`` Trio
    raises when its own loop could not allocate, or in a group of them."""
    if isinstance(error, BaseExceptionGroup):
        return any(_out_of_memory(inner) for inner in error.exceptions)
    if isinstance(error, trio.TrioInternalError) and error.__cause__ is not None:
        return _out_of_memory(error.__cause__)
    return isinstance(error, MemoryError)


def _command(args: argparse.Namespace) -> int:
    """Run the parsed command: its exit status, or the one of its bad
    input, bad output or interruption."""
    try:
        return _dispatch(args)
    except OutputError as error:
        print_error(f"{PROG}: error: {error}")
        return 2
    except SpecError as error:
        print_error(str(error))
        return 2
    except (KeyboardInterrupt, BaseExceptionGroup) as error:
        # Trio may wrap the KeyboardInterrupt in a group with what it cancelled.
        if isinstance(error, BaseExceptionGroup) and error.subgroup(KeyboardInterrupt) is None:
            raise
        # Ctrl-C can land in trio's start of a task, between making its
        # coroutine and running it: the coroutine, dropped with the run, would
        # warn that it was never awaited. The run is over: one line says so.
        warnings.filterwarnings("ignore", "coroutine .* was never awaited", RuntimeWarning)
        print_error(f"{PROG}: interrupted")
        return INTERRUPTED


def _dispatch(args: argparse.Namespace) -> int:
    """Check every output, then run the command."""
    match args.command:
        case "run":
            return _run(args)
        case "workflow":
            return workflow_command(args.seed, sys.stdout)
        case "simulate":
            check_outputs([], folder=("--out", args.out))
            return simulate_command(
                args.programs,
                args.seed,
                args.faults,
                args.barrier,
                Path(args.out),
                sys.stdout,
                align=args.align,
            )
        case "demo":
            if args.timeline is not None:
                check_outputs([("--timeline", args.timeline)])
            return demo(args.seed, sys.stdout, args.timeline)
        case "explore":
            return _explore(args)
        case "serve":
            return _serve(args)
    raise AssertionError(f"unknown command {args.command!r}")


def _explore(args: argparse.Namespace) -> int:
    """``explore``: read every spec, then explore each."""
    paths = spec_files(args.specs)
    if args.replay is not None and len(paths) > 1:
        print_error(f"{PROG}: error: --replay replays one spec, and {len(paths)} are named")
        return 2
    specs = load_specs(paths)
    topology = Topology(
        args.processes, args.workers, args.interactive, barrier=args.barrier, align=args.align
    )
    options = [f"--workers={args.workers}", f"--processes={args.processes}"]
    options += [] if args.interactive else ["--solo"]
    options += [] if args.barrier else ["--no-barrier"]
    options += [] if args.align else ["--no-align"]
    options += [f"--seed={args.seed}"]
    how = ExploreOptions(
        strategy=args.strategy,
        budget=args.budget,
        bound=args.bound,
        depth=args.depth,
        seed=args.seed,
        replay=args.replay,
        options=tuple(options),
    )
    try:
        return explore_command(specs, topology, how, sys.stdout)
    except ScheduleError as error:
        # Only a replayed schedule can fail to fit the spec.
        print_error(f"{PROG}: error: --replay: {error}")
        return 2


def _run(args: argparse.Namespace) -> int:
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
        return attrs.evolve(topology, barrier=args.barrier, faults=args.faults, align=args.align)

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
        replace_text(spec.path, rewritten(spec, run.outcomes))
        print(f"rewrote {escaped(spec.path)} ({len(run.outcomes)} stanzas, {topology})", file=out)
    return 1 if failed else 0


def spawn_command(
    specs: Sequence[Spec],
    topology: Topology,
    seed: int,
    out: TextIO,
    *,
    max_wait: float = 5.0,
    persist: str | None = None,
    tls: TlsFiles | None = None,
    peer_timeout: float | None = None,
) -> int:
    """``run --spawn``: each spec against replica processes started as OS
    processes, the shards stored as ``persist`` says (see
    :func:`replica.procs.spec_catalogs`); reported as :func:`run_command`
    reports. A store that cannot serve the run is exit 2, before any process
    starts."""
    from replica.persist import PersistError
    from replica.procs import ClusterError, run_spawned, spec_catalogs
    from replica.procs._links import HandlerFailed, ItemTooLarge
    from replica.procs._run import Terminated

    failed = False

    def done(spec: Spec, run: SpecRun) -> None:
        nonlocal failed
        failed |= report(spec, run.outcomes, topology, out)
        failed |= report_violations(spec, run, out)
        out.flush()

    broken: list[BaseException] = []
    terminated = False
    with contextlib.ExitStack() as stack:
        try:
            catalogs = stack.enter_context(spec_catalogs(persist, len(specs)))
        except (ValueError, PersistError) as refused:
            print_error(f"{PROG}: error: argument --persist: {refused}")
            return 2
        try:
            run_spawned(
                specs,
                topology,
                seed,
                done,
                max_wait=max_wait,
                catalogs=catalogs,
                tls=tls,
                peer_timeout=peer_timeout,
            )
        except* Terminated:
            terminated = True
        except* (ClusterError, ItemTooLarge, HandlerFailed) as group:
            broken.extend(_leaves(group))
    if terminated:
        print_error(f"{PROG}: terminated")
        return TERMINATED
    for error in broken:
        print_error(f"{PROG}: error: {error}")
    return 1 if failed or broken else 0


def _leaves(group: BaseExceptionGroup[BaseException]) -> list[BaseException]:
    found: list[BaseException] = []
    for error in group.exceptions:
        found += _leaves(error) if isinstance(error, BaseExceptionGroup) else [error]
    return found


def _serve(args: argparse.Namespace) -> int:
    """``serve``: one replica process, until a signal stops it."""
    import signal
    import socket

    from replica import ReplicaConfig
    from replica.procs import ServeOptions, serve
    from replica.procs._links import HandlerFailed, ItemTooLarge
    from replica.procs._secret import SecretFileError, read_secret_file
    from replica.procs._serve import ShardHostLost

    try:
        secret = read_secret_file(args.secret_file)
    except SecretFileError as error:
        print_error(f"{PROG}: error: --secret-file: {error}")
        return 2
    if len(secret) < 16:
        print_error(f"{PROG}: error: --secret-file: a secret is at least 16 bytes")
        return 2
    if args.listen_fd is not None:
        try:
            args.listen = _inherited_listener(args.listen_fd)
        except OSError as error:
            print_error(f"{PROG}: error: --listen-fd {args.listen_fd}: {error}")
            return 2
    else:
        host, port = args.listen
        try:
            socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
        except (socket.gaierror, UnicodeError) as error:
            # Bad input, named, before anything starts (a port in use is exit 1).
            why = error.strerror if isinstance(error, socket.gaierror) else str(error)
            print_error(f"{PROG}: error: --listen: cannot resolve {host!r}: {why}")
            return 2
    config = ReplicaConfig(
        processes=args.processes,
        workers=args.workers,
        interactive=args.interactive,
        barrier=args.barrier,
        align=args.align,
    )
    options = ServeOptions(
        args.process,
        config,
        args.listen,
        args.peers,
        args.shards,
        secret,
        tls=args.tls,
        shards_patience=args.shards_patience,
        peer_timeout=args.peer_timeout,
        epoch=args.epoch,
        listen_fd=args.listen_fd,
    )

    async def until_terminated() -> None:
        # SIGTERM (how run --spawn stops its processes) ends the process
        # cleanly: its connections are closed, its peers see it go.
        with trio.open_signal_receiver(signal.SIGTERM) as signals:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(serve, options)
                async for _ in signals:
                    nursery.cancel_scope.cancel()
                    return

    failures: list[BaseException] = []
    try:
        trio.run(until_terminated)
    except* (OSError, ShardHostLost, HandlerFailed, ItemTooLarge) as group:
        failures += _leaves(group)
    for failure in failures:
        print_error(f"{PROG}: error: serve --process {args.process}: {failure}")
    return 1 if failures else 0


def _inherited_listener(fd: int) -> tuple[str, int]:
    """The address of the listening TCP socket open as file descriptor
    ``fd`` (``serve --listen-fd``), left open for the node. Raises
    :class:`OSError`, named, for a descriptor that is not one (not open,
    not a socket, not TCP, or not listening)."""
    import socket

    try:
        os.fstat(fd)
    except OSError as error:
        raise OSError(f"not an open file descriptor ({error.strerror})") from None
    try:
        sock = socket.socket(fileno=fd)
    except OSError as error:
        raise OSError(f"not a socket ({error.strerror})") from None
    try:
        listening = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN)
        if sock.family not in (socket.AF_INET, socket.AF_INET6) or sock.type != socket.SOCK_STREAM:
            raise OSError("not a TCP socket")
        if not listening:
            raise OSError("a TCP socket that is not listening")
        host, port = sock.getsockname()[:2]
    finally:
        # The node takes the descriptor over (see serve).
        sock.detach()
    return host, port


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
    """Run each spec twice with ``seed``; the traces must be identical."""
    failed = False
    for spec in specs:
        first, second = actors.Trace(), actors.Trace()
        run_spec(spec, topology, seed=seed, trace=first)
        run_spec(spec, topology, seed=seed, trace=second)
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


def simulate_command(
    programs: int,
    seed: int,
    faults: float,
    barrier: bool,
    out_dir: Path,
    out: TextIO,
    *,
    align: bool = True,
) -> int:
    """Random programs (seeded), each against a fresh replica of a random shape,
    checked against the reference model and the replica's invariants; a line
    of progress per program, and a replayable spec for each failure."""
    failed = 0
    start = time.perf_counter()
    for number in range(programs):
        rng = random.Random(f"simulate/{seed}/{number}")
        topology = Topology(rng.randint(1, 2), rng.randint(1, 4), True, barrier, faults, align)
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
        make_folder("--out", str(out_dir))
        path = out_dir / f"program-{seed}-{number}.spec"
        write_text("--out", str(path), text)
        flags = f"--workers {topology.workers} --processes {topology.processes} --seed {run_seed}"
        flags += "" if barrier else " --no-barrier"
        flags += "" if align else " --no-align"
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
