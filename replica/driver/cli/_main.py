"""The ``trio-reconcile`` command (README.md, The ``trio-reconcile`` command):
its parser, built from each command's options, and the dispatch to the
command's module (:mod:`._run`, :mod:`._workflow`, :mod:`._simulate`,
:mod:`._demo`, :mod:`._explore`, :mod:`._serve`).

Exit status: 0 when every stanza matched, 1 when any did not, 2 on bad input
or bad arguments (nothing runs then) or an output that cannot be written, 130
when interrupted (Ctrl-C); a command that runs out of memory says so in one
line, exit 1 (the replica's limits keep a spec from getting there). Output
paths are checked before anything runs; ``--rewrite`` replaces each spec
whole or not at all (:mod:`replica.driver.run._paths`), and only once every
output is written. ``run`` takes folders as well as files
(:mod:`replica.driver.lang._inputs`), and ``--topologies`` runs every spec on
several topologies and prints a table (:mod:`replica.driver.run._matrix`).

Input is shown escaped (:mod:`replica.driver.lang._escape`): every line
written to stderr (an error, a log record), and on stdout each line that
names a spec or quotes its directive; a mismatch's expected and actual blocks
are written as they are.

Limits on spec files (bad input beyond them, exit 2 before anything runs):
a regular file of at most 16 MiB; at most 1,000,000 rows a write and
4,000,000 a spec; ids, times and key columns at most 2^64-1; a key of at
most 64 columns and ``literals=`` of at most 100,000 values; ``timeout-secs``
at most 1,000,000 virtual seconds. The numbers live in
:mod:`replica.driver.lang._spec` and :mod:`replica.driver.lang._headers`.

Limits on arguments (exit 2 beyond them): ``--workers`` 1 to 64 and
``--processes`` 1 to 16 (at most 1,024 workers a runtime), ``--programs`` 1 to
1,000,000,000, each written in ASCII digits. The numbers live in
:mod:`._arguments`.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence

import trio

import actors
from actors._extras import EXTRA_MODULES

from ..lang._escape import EscapingFormatter, print_error
from ..lang._spec import SpecError
from ..run._paths import OutputError
from . import _demo, _explore, _run, _serve, _simulate, _workflow
from ._arguments import PROG, CommandParser, exit_text
from ._exits import INTERRUPTED


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
    except ModuleNotFoundError as error:
        if error.name not in EXTRA_MODULES:
            raise
        print_error(f"{PROG}: error: {error}")  # which extra to install
        return 2
    except SpecError as error:
        print_error(str(error))
        return 2
    except (KeyboardInterrupt, BaseExceptionGroup) as error:
        # Trio may wrap the KeyboardInterrupt in a group with what it cancelled.
        if isinstance(error, BaseExceptionGroup) and error.subgroup(KeyboardInterrupt) is None:
            raise
        # The runs take it at a checkpoint (run_spec, explore), never inside
        # trio's bookkeeping: nothing of theirs is left half-made to warn.
        print_error(f"{PROG}: interrupted")
        return INTERRUPTED


def _dispatch(args: argparse.Namespace) -> int:
    """Run the command parsed (each checks its outputs before it runs)."""
    match args.command:
        case "run":
            return _run.execute(args)
        case "workflow":
            return _workflow.execute(args)
        case "simulate":
            return _simulate.execute(args)
        case "demo":
            return _demo.execute(args)
        case "explore":
            return _explore.execute(args)
        case "serve":
            return _serve.execute(args)
    raise AssertionError(f"unknown command {args.command!r}")


def build_parser() -> CommandParser:
    """The parser of the command and of each of its commands, in order."""
    parser = CommandParser(
        prog=PROG,
        description="Run spec files against a model of a two-runtime compute replica.",
        epilog=exit_text("the command succeeded", "a stanza or a check failed"),
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
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=CommandParser)
    _run.add_arguments(commands)
    _workflow.add_arguments(commands)
    _simulate.add_arguments(commands)
    _demo.add_arguments(commands)
    _explore.add_arguments(commands)
    _serve.add_arguments(commands)
    parser.subcommands = dict(commands.choices)
    return parser


def parse(parser: CommandParser, argv: Sequence[str] | None) -> argparse.Namespace:
    """``parser.parse_args(argv)``, then the checks between ``run``'s options;
    :class:`SystemExit` (2) with a usage error for bad arguments."""
    args = parser.parse_args(argv)
    if args.command == "run":
        _run.finish_arguments(parser.subcommands["run"], args)
    elif args.command == "serve":
        _serve.finish_arguments(parser.subcommands["serve"], args)
    return args


def command_list(parser: CommandParser) -> str:
    """``run, workflow, simulate, demo, explore or serve``."""
    *rest, last = parser.commands
    return f"{', '.join(rest)} or {last}"
