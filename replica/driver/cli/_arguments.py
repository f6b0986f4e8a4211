"""The command line's parser (``argparse``): the parser of the command and of
each of its commands, which exits 2 with one escaped line on bad arguments;
the options several commands share; the parsers of option values (whole
numbers in ASCII digits, seconds, rates, addresses); and the program's name,
default seed and the bounds on its arguments. Each command's own options
are in its module (:mod:`._run`, :mod:`._serve` ...); :mod:`._main` builds
the whole parser from them."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ...compute._holds import HoldMechanism
from ..lang._escape import print_error
from ..lang._headers import DIGITS
from ..lang._spec import MAX_TIMEOUT_SECS

PROG = "trio-reconcile"
DEFAULT_SEED = 1
MAX_WORKERS = 64
MAX_PROCESSES = 16
MAX_PROGRAMS = 1_000_000_000


_EXIT = """\
exit status:
  0    {ok}
  1    {failed}
  2    bad input or bad arguments (found before anything runs),
       or an output that cannot be written
  130  interrupted (Ctrl-C)"""


if TYPE_CHECKING:
    Commands = argparse._SubParsersAction["CommandParser"]


class CommandParser(argparse.ArgumentParser):
    """Exits 2 with ``PROG: error: message`` on bad arguments (the message
    :func:`~replica.driver.lang._escape.escaped`), and knows its commands (by
    name, in order)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.subcommands: dict[str, CommandParser] = {}

    @property
    def commands(self) -> tuple[str, ...]:
        return tuple(self.subcommands)

    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        # argparse quotes some arguments bare (unrecognized arguments: ...).
        print_error(f"{self.prog}: error: {message}")
        raise SystemExit(2)


def new_command(
    commands: Commands, name: str, help: str, ok: str, failed: str, more: str = ""
) -> CommandParser:
    """Command ``name`` of ``commands``: its help, and an epilog of its exit
    statuses (``ok`` for 0, ``failed`` for 1) and ``more``."""
    return commands.add_parser(
        name,
        help=help,
        description=help[0].upper() + help[1:] + ".",
        epilog=exit_text(ok, failed) + (f"\n\n{more}" if more else ""),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )


def exit_text(ok: str, failed: str) -> str:
    """The exit statuses of a command: ``ok`` for 0, ``failed`` for 1."""
    return _EXIT.format(ok=ok, failed=failed)


def add_shape(command: argparse.ArgumentParser, *, default: int | None) -> None:
    """``--workers`` and ``--processes``."""
    for option, metavar, what, most in (
        ("--workers", "W", "workers per process", MAX_WORKERS),
        ("--processes", "P", "processes per runtime", MAX_PROCESSES),
    ):
        command.add_argument(
            option,
            type=up_to(most),
            default=default,
            metavar=metavar,
            help=f"{what}, 1 to {most} (default 1)",
        )


def add_no_align(command: argparse.ArgumentParser) -> None:
    """``--no-align``."""
    command.add_argument(
        "--no-align",
        dest="align",
        action="store_false",
        default=True,
        help="turn off the alignment of the runtimes' incarnations at reconciliation (unsafe: "
        "a runtime that applied a lost connection's command the other dropped leaves a peer "
        "parked or frozen)",
    )


def add_holds(command: argparse.ArgumentParser) -> None:
    """``--holds``: how a shared arrangement is held for its reader."""
    command.add_argument(
        "--holds",
        choices=[mechanism.value for mechanism in HoldMechanism],
        default=HoldMechanism.PUBLISHER.value,
        help="how the reading runtime holds a shared arrangement, with two runtimes (with "
        "--solo nothing is shared and it changes nothing): publisher (the design of record, the "
        "default), or the refuted broadcast and routed (unsafe: maintenance may compact an index "
        "past the as_of of a dataflow the interactive runtime has yet to build)",
    )


def add_seed(parser: CommandParser, what: str) -> None:
    """``--seed``, the seed of ``what``."""
    parser.add_argument(
        "--seed", type=int, default=DEFAULT_SEED, metavar="N", help=f"{what} (default 1)"
    )


def add_tls(command: argparse.ArgumentParser, prefix: str) -> None:
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


def finish_tls(
    command: CommandParser, args: argparse.Namespace, *, only_with: str | None = None
) -> None:
    """``args.tls``: the TLS files ``--tls-cert``, ``--tls-key`` and
    ``--tls-ca`` name, checked (``None`` without them); a usage error of
    ``command`` for files that do not serve, or given without ``only_with``."""
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


def up_to(most: int, *, least: int = 1) -> Callable[[str], int]:
    """A parser of whole numbers from ``least`` to ``most``, in ASCII digits
    (``int`` would take ``٣``, ``+3`` or `` 3``)."""

    def count(text: str) -> int:
        if not DIGITS.fullmatch(text):
            raise argparse.ArgumentTypeError(f"not a whole number (digits 0-9): {text[:20]!r}")
        # The length first: int() refuses more than 4,300 digits.
        if len(text.lstrip("0")) > len(str(most)) or int(text) > most:
            shown = text if len(text) <= 20 else f"{text[:20]}... ({len(text)} digits)"
            raise argparse.ArgumentTypeError(f"must be at most {most}: {shown}")
        if int(text) < least:
            raise argparse.ArgumentTypeError(f"must be at least {least}: {int(text)}")
        return int(text)

    return count


def parse_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text[:20]!r}") from None
    if not 0 < value <= MAX_TIMEOUT_SECS:
        raise argparse.ArgumentTypeError(f"must be above 0 and at most {MAX_TIMEOUT_SECS:,}")
    return value


def parse_peer_timeout(text: str) -> float:
    value = parse_seconds(text)
    # replica.procs loads actors.net (msgspec, the net extra): only when asked.
    from ...procs import MIN_PEER_TIMEOUT

    if value < MIN_PEER_TIMEOUT:
        raise argparse.ArgumentTypeError(f"must be at least {MIN_PEER_TIMEOUT}")
    return value


def parse_rate(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"a rate is between 0 and 1: {value}")
    return value


def parse_address(text: str) -> tuple[str, int]:
    host, colon, port = text.rpartition(":")
    if not colon or not host or not DIGITS.fullmatch(port) or len(port) > 5:
        raise argparse.ArgumentTypeError(f"not HOST:PORT: {text[:60]!r}")
    if int(port) > 65535:
        raise argparse.ArgumentTypeError(f"a port is at most 65535: {text[:60]!r}")
    return host.strip("[]"), int(port)


def parse_addresses(text: str) -> tuple[tuple[str, int], ...]:
    return tuple(parse_address(part) for part in text.split(","))
