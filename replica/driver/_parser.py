"""The command line of ``trio-reconcile``: commands, options and their help,
and the checks between options that argparse cannot express."""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import actors

from ._escape import print_error
from ._headers import MAX_KEY_COLUMNS, MAX_LITERALS, MIN_PEER_TIMEOUT
from ._matrix import ALL, TOPOLOGIES, topology_names
from ._spec import MAX_SPEC_BYTES, MAX_TIMEOUT_SECS, ROWS_PER_SPEC, ROWS_PER_WRITE

PROG = "trio-reconcile"
DEFAULT_SEED = 1
INTERRUPTED = 130
TERMINATED = 143
"""``run --spawn`` stopped by SIGTERM (its replica processes stopped first)."""
MAX_WORKERS = 64
MAX_PROCESSES = 16
MAX_PROGRAMS = 1_000_000_000
MAX_BOUND = 100
MAX_SCHEDULE = 1_000_000

_EXIT = """\
exit status:
  0    {ok}
  1    {failed}
  2    bad input or bad arguments (found before anything runs),
       or an output that cannot be written
  130  interrupted (Ctrl-C)"""

LIMITS = f"""\
limits (beyond them a spec is bad input):
  a spec file is a regular file of at most {MAX_SPEC_BYTES >> 20} MiB
  a write holds at most {ROWS_PER_WRITE:,} rows; a spec writes at most {ROWS_PER_SPEC:,} in all
  synthetic rows: at most 1 MiB each, 256 MiB a write, 1 GiB a spec
  ids, times and key columns are at most 2^64-1 (u64)
  a key (key=[..]) has at most {MAX_KEY_COLUMNS} columns
  literals=[..] holds at most {MAX_LITERALS:,} values
  timeout-secs is at most {MAX_TIMEOUT_SECS:,} (virtual seconds)
  a body integer outside int64 is the stanza's error line, as in the real driver"""


if TYPE_CHECKING:
    Commands = argparse._SubParsersAction["_Parser"]


class _Parser(argparse.ArgumentParser):
    """Exits 2 with ``PROG: error: message`` on bad arguments (the message
    :func:`escaped`), and knows its commands (by name, in order)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.subcommands: dict[str, _Parser] = {}

    @property
    def commands(self) -> tuple[str, ...]:
        return tuple(self.subcommands)

    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        # argparse quotes some arguments bare (unrecognized arguments: ...).
        print_error(f"{self.prog}: error: {message}")
        raise SystemExit(2)


def build_parser() -> _Parser:
    parser = _Parser(
        prog=PROG,
        description="Run spec files against a model of a two-runtime compute replica.",
        epilog=_exit("the command succeeded", "a stanza or a check failed"),
        formatter_class=argparse.RawDescriptionHelpFormatter,
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
    _add_run(commands)
    _add_workflow(commands)
    _add_simulate(commands)
    _add_demo(commands)
    _add_explore(commands)
    _add_serve(commands)
    parser.subcommands = dict(commands.choices)
    return parser


def parse(parser: _Parser, argv: Sequence[str] | None) -> argparse.Namespace:
    """``parser.parse_args(argv)``, then the checks between ``run``'s options;
    :class:`SystemExit` (2) with a usage error for bad arguments."""
    args = parser.parse_args(argv)
    if args.command == "run":
        _finish_run(parser.subcommands["run"], args)
    elif args.command == "serve":
        _finish_serve(parser.subcommands["serve"], args)
    return args


def _finish_run(run: _Parser, args: argparse.Namespace) -> None:
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
        args.max_wait = 5.0
    if args.persist is not None and not args.spawn:
        run.error("argument --persist: only with --spawn")
    if args.peer_timeout is not None and not args.spawn:
        run.error("argument --peer-timeout: only with --spawn")
    _finish_tls(run, args, only_with="--spawn" if not args.spawn else None)
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


def command_list(parser: _Parser) -> str:
    """``run, workflow, simulate, demo, explore or serve``."""
    *rest, last = parser.commands
    return f"{', '.join(rest)} or {last}"


def _command(
    commands: Commands, name: str, help: str, ok: str, failed: str, more: str = ""
) -> _Parser:
    return commands.add_parser(
        name,
        help=help,
        description=help[0].upper() + help[1:] + ".",
        epilog=_exit(ok, failed) + (f"\n\n{more}" if more else ""),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )


def _exit(ok: str, failed: str) -> str:
    return _EXIT.format(ok=ok, failed=failed)


def _add_run(commands: Commands) -> None:
    run = _command(
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
        help="spec files (SPEC_FORMAT.md) or folders, run in order; a folder stands for "
        "every *.spec file directly in it (not in its sub-folders; hidden files aside), "
        "sorted by name, and a folder without one is bad input",
    )
    # No defaults here: _finish_run tells a given option from a default.
    _add_shape(run, default=None)
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
    _add_no_align(run)
    _add_seed(run, "the seed of Trio's scheduler and of injected faults")
    run.add_argument(
        "--faults",
        type=_rate,
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
        type=_seconds,
        default=None,
        metavar="SECONDS",
        help="with --spawn: a stanza waits at most SECONDS real seconds, whatever its "
        "timeout-secs (default 5; the output still names the spec's timeout): a spec whose "
        "waits are meant to time out does not take its 600-second default each",
    )
    run.add_argument(
        "--peer-timeout",
        type=_peer_timeout,
        default=None,
        metavar="SECONDS",
        help="with --spawn: each replica process's serve --peer-timeout (it pings the other "
        "processes and the shard host, and closes the connections to one silent for SECONDS: "
        "a partition then behaves as a dropped connection, which ends the run, named; it "
        "checks every quarter of SECONDS, so a process frozen is found 0.75 to 1.25 times "
        "SECONDS after); the driver's own pings of the processes keep 10 s, and find one "
        "silent that long, if sooner (default 10)",
    )
    _add_tls(run, "with --spawn: ")
    run.add_argument(
        "--persist",
        metavar="URL",
        help="with --spawn: where the shard host stores the shards (docs/persist.md): "
        "sqlite:PATH or postgresql://... (one spec, and the store must hold no shard yet), "
        "or memory: (fresh for each spec); default: a SQLite file a spec, in a temporary "
        "folder removed at the end",
    )


def _add_shape(command: argparse.ArgumentParser, *, default: int | None) -> None:
    """``--workers`` and ``--processes``."""
    for option, metavar, what, most in (
        ("--workers", "W", "workers per process", MAX_WORKERS),
        ("--processes", "P", "processes per runtime", MAX_PROCESSES),
    ):
        command.add_argument(
            option,
            type=_up_to(most),
            default=default,
            metavar=metavar,
            help=f"{what}, 1 to {most} (default 1)",
        )


def _add_no_align(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--no-align",
        dest="align",
        action="store_false",
        default=True,
        help="turn off the alignment of the runtimes' incarnations at reconciliation (unsafe: "
        "a runtime that applied a lost connection's command the other dropped leaves a peer "
        "parked or frozen)",
    )


def _add_workflow(commands: Commands) -> None:
    workflow = _command(
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
    _add_seed(workflow, "the seed of Trio's scheduler")


def _add_simulate(commands: Commands) -> None:
    simulate = _command(
        commands,
        "simulate",
        "run random programs against the replica and the reference model",
        "every program passed",
        "a program failed (each failure is written to --out as a replayable spec)",
    )
    simulate.add_argument(
        "--programs",
        type=_up_to(MAX_PROGRAMS),
        default=50,
        metavar="N",
        help=f"how many programs to generate and run, 1 to {MAX_PROGRAMS:,} (default 50)",
    )
    _add_seed(simulate, "the seed of the programs, their replicas' shapes and their runs")
    simulate.add_argument(
        "--faults",
        type=_rate,
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
    _add_no_align(simulate)
    simulate.add_argument(
        "--out",
        default="simulation-failures",
        metavar="DIR",
        help="the folder failing programs are written to, created on the first failure "
        "(its parent must exist; default simulation-failures)",
    )


def _add_demo(commands: Commands) -> None:
    demo = _command(
        commands,
        "demo",
        "show the race and its fix",
        "the race showed without the barrier and the fix with it",
        "either did not show",
    )
    _add_seed(demo, "the seed of Trio's scheduler")
    demo.add_argument("--timeline", metavar="FILE", help="draw both runs side by side as SVG")


def _add_explore(commands: Commands) -> None:
    explore = _command(
        commands,
        "explore",
        "run specs under schedules chosen on purpose (actors.testing.explore)",
        "no schedule made a stanza differ, an invariant break or the run deadlock",
        "a schedule did; it is printed minimised, with the command that replays it\n"
        "       (or a spec ran differently under one schedule: no replay then)",
        "A choice point is a pick among the tasks Trio runs in one batch; a schedule is\n"
        "the list of picks other than the default (creation order), as '1:12=1,40=2'.\n"
        "dfs runs every schedule with at most --bound such picks (then says complete);\n"
        "pct and random run --budget schedules. See docs/protocol.md, Exploring schedules.",
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
        type=_up_to(MAX_PROGRAMS),
        default=1000,
        metavar="N",
        help="at most N schedules a spec (default 1000)",
    )
    explore.add_argument(
        "--bound",
        type=_up_to(MAX_BOUND, least=0),
        default=2,
        metavar="B",
        help=f"dfs: at most B non-default picks a schedule, 0 to {MAX_BOUND} (default 2)",
    )
    explore.add_argument(
        "--depth",
        type=_up_to(MAX_BOUND),
        default=3,
        metavar="D",
        help=f"pct: the bug depth targeted, 1 to {MAX_BOUND} (default 3)",
    )
    _add_shape(explore, default=1)
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
    _add_no_align(explore)
    _add_seed(explore, "the seed of each run and of the pct and random strategies")
    explore.add_argument(
        "--replay",
        type=_schedule,
        metavar="SCHEDULE",
        help="run this one schedule (as printed by a failure) instead of exploring",
    )


def _add_serve(commands: Commands) -> None:
    serve = _command(
        commands,
        "serve",
        "run one replica process as an OS process (what run --spawn starts)",
        "stopped by SIGTERM (how run --spawn stops it)",
        "the process failed: it could not listen on --listen, a link's handler\n"
        "       raised (a bug, or a peer breaking the protocol), or the shard host at\n"
        "       --shards could not be reached for 10 s (the driver that started it is gone)",
        "Process I hosts process I's workers of each runtime, its multiplexer and its\n"
        "channel adapters. Everything that crosses processes goes over actors.net nodes\n"
        "(MessagePack frames, an HMAC handshake with the shared secret): the controller's\n"
        "connections (the controller dials --listen), the command channel (process 0's\n"
        "global worker 0 adapter sequences for every process), the exchanges between\n"
        "workers, and the shards, mirrored from the shard host at --shards, which pushes\n"
        "their changes. See docs/processes.md.",
    )
    serve.add_argument(
        "--process",
        type=_up_to(MAX_PROCESSES - 1, least=0),
        required=True,
        metavar="I",
        help=f"this process's index, 0 to {MAX_PROCESSES - 1} (below --processes)",
    )
    _add_shape(serve, default=1)
    serve.add_argument(
        "--solo",
        dest="interactive",
        action="store_false",
        default=True,
        help="one runtime that does everything (default: two runtimes)",
    )
    serve.add_argument(
        "--no-barrier",
        dest="barrier",
        action="store_false",
        default=True,
        help="turn off the reconcile barrier (unsafe)",
    )
    _add_no_align(serve)
    listen = serve.add_mutually_exclusive_group(required=True)
    listen.add_argument(
        "--listen",
        type=_address,
        metavar="HOST:PORT",
        help="where this process's node listens (the controller and the other processes dial "
        "it); it binds HOST:PORT as it starts",
    )
    listen.add_argument(
        "--listen-fd",
        type=_up_to(2**31 - 1, least=0),
        metavar="N",
        help="listen on the listening TCP socket inherited as file descriptor N instead (what "
        "run --spawn passes: it binds every process's port before any starts and holds it, so "
        "no other program can take it meanwhile, nor while a process is started again)",
    )
    serve.add_argument(
        "--peers",
        type=_addresses,
        required=True,
        metavar="ADDR,...",
        help="every replica process's HOST:PORT, in process order (--processes of them; "
        "this process's own among them)",
    )
    serve.add_argument(
        "--shards",
        type=_address,
        required=True,
        metavar="HOST:PORT",
        help="the shard host's node (the driver's): shards are mirrored from it",
    )
    serve.add_argument(
        "--secret-file",
        required=True,
        metavar="FILE",
        help="a file holding the nodes' shared secret (at least 16 bytes, used as is; at most "
        "64 KiB read): a regular file, or a pipe or FIFO (shell process substitution, "
        "<(...), gives a pipe) read to its end within 5 s, else exit 2, named",
    )
    serve.add_argument(
        "--shards-patience",
        type=_seconds,
        default=10.0,
        metavar="SECONDS",
        help="how long to dial the shard host at --shards (at start, or after its "
        "connection dropped) before giving up and ending with exit 1 (default 10)",
    )
    serve.add_argument(
        "--peer-timeout",
        type=_peer_timeout,
        default=10.0,
        metavar="SECONDS",
        help="close the connections to another replica process, or to the shard host, not "
        "heard from for SECONDS (every process pings the others and the host), so that a "
        "partition behaves as a dropped connection: another process's ends this process's "
        "replica (the next starts at the controller's next reset) and is told the "
        "controller; the host's is dialled again (default 10)",
    )
    serve.add_argument(
        "--epoch",
        type=_up_to(2**62, least=0),
        default=0,
        metavar="N",
        help="the controller reset this process's first replica belongs to (default 0, "
        "as every process of a cluster starts): items between replica processes carry "
        "it, and a process applies only its own epoch's. The driver gives a process it "
        "starts again a fresh one",
    )
    _add_tls(serve, "")


def _add_tls(command: argparse.ArgumentParser, prefix: str) -> None:
    """``--tls-cert``, ``--tls-key`` and ``--tls-ca`` (all three or none)."""
    for option, what in (
        ("--tls-cert", "the certificate chain every node presents (PEM)"),
        ("--tls-key", "its private key (PEM)"),
        ("--tls-ca", "the CA a peer's certificate must be signed by (PEM)"),
    ):
        command.add_argument(
            option,
            metavar="FILE",
            help=f"{prefix}{what}: with all three, the nodes' connections are mutual TLS "
            "(the certificate must name the addresses dialled, e.g. 127.0.0.1); a regular "
            "file: a FIFO or a pipe is refused, exit 2 (ssl loads the files by path, in every "
            "process)",
        )


def _finish_tls(
    command: _Parser, args: argparse.Namespace, *, only_with: str | None = None
) -> None:
    if args.tls_cert is None and args.tls_key is None and args.tls_ca is None:
        args.tls = None
        return
    from replica.procs import TlsError, TlsFiles

    try:
        args.tls = TlsFiles.from_options(args.tls_cert, args.tls_key, args.tls_ca)
        args.tls.check()
    except TlsError as error:
        command.error(f"argument --tls-cert: {error}")
    if args.tls is not None and only_with is not None:
        command.error(f"argument --tls-cert: only with {only_with}")


def _finish_serve(serve: _Parser, args: argparse.Namespace) -> None:
    _finish_tls(serve, args)
    if args.process >= args.processes:
        serve.error(f"argument --process: must be below --processes ({args.processes})")
    if len(args.peers) != args.processes:
        serve.error(f"argument --peers: {len(args.peers)} addresses for {args.processes} processes")
    for n, (host, port) in enumerate(args.peers):
        if (host, port) in args.peers[:n]:
            serve.error(
                f"argument --peers: {host}:{port} twice (each process listens on its own address)"
            )


def _address(text: str) -> tuple[str, int]:
    host, colon, port = text.rpartition(":")
    if not colon or not host or not _DIGITS.fullmatch(port) or len(port) > 5:
        raise argparse.ArgumentTypeError(f"not HOST:PORT: {text[:60]!r}")
    if int(port) > 65535:
        raise argparse.ArgumentTypeError(f"a port is at most 65535: {text[:60]!r}")
    return host.strip("[]"), int(port)


def _addresses(text: str) -> tuple[tuple[str, int], ...]:
    return tuple(_address(part) for part in text.split(","))


def _add_seed(parser: _Parser, what: str) -> None:
    parser.add_argument(
        "--seed", type=int, default=DEFAULT_SEED, metavar="N", help=f"{what} (default 1)"
    )


_DIGITS = re.compile(r"[0-9]+")


def _up_to(most: int, *, least: int = 1) -> Callable[[str], int]:
    """A parser of whole numbers from ``least`` to ``most``, in ASCII digits
    (``int`` would take ``٣``, ``+3`` or `` 3``)."""

    def count(text: str) -> int:
        if not _DIGITS.fullmatch(text):
            raise argparse.ArgumentTypeError(f"not a whole number (digits 0-9): {text[:20]!r}")
        # The length first: int() refuses more than 4,300 digits.
        if len(text.lstrip("0")) > len(str(most)) or int(text) > most:
            shown = text if len(text) <= 20 else f"{text[:20]}... ({len(text)} digits)"
            raise argparse.ArgumentTypeError(f"must be at most {most}: {shown}")
        if int(text) < least:
            raise argparse.ArgumentTypeError(f"must be at least {least}: {int(text)}")
        return int(text)

    return count


def _schedule(text: str) -> str:
    from actors.testing import Schedule, ScheduleError

    if len(text) > MAX_SCHEDULE:
        raise argparse.ArgumentTypeError(f"a schedule is at most {MAX_SCHEDULE:,} characters")
    try:
        return str(Schedule.parse(text))
    except ScheduleError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _topologies(text: str) -> tuple[str, ...]:
    try:
        return topology_names(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text[:20]!r}") from None
    if not 0 < value <= MAX_TIMEOUT_SECS:
        raise argparse.ArgumentTypeError(f"must be above 0 and at most {MAX_TIMEOUT_SECS:,}")
    return value


def _peer_timeout(text: str) -> float:
    value = _seconds(text)
    if value < MIN_PEER_TIMEOUT:
        raise argparse.ArgumentTypeError(f"must be at least {MIN_PEER_TIMEOUT}")
    return value


def _rate(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"a rate is between 0 and 1: {value}")
    return value
