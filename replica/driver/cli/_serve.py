"""``trio-reconcile serve``: its options, and one replica process, until a
signal stops it (what ``run --spawn`` starts; docs/processes.md)."""

from __future__ import annotations

import argparse
import os
from typing import TYPE_CHECKING

import trio

from ..lang._escape import print_error
from ._arguments import (
    MAX_PROCESSES,
    PROG,
    CommandParser,
    add_holds,
    add_no_align,
    add_shape,
    add_tls,
    finish_tls,
    new_command,
    parse_address,
    parse_addresses,
    parse_peer_timeout,
    parse_seconds,
    up_to,
)
from ._exits import leaves

if TYPE_CHECKING:
    from ._arguments import Commands


def add_arguments(commands: Commands) -> None:
    """The ``serve`` command and its options."""
    serve = new_command(
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
        type=up_to(MAX_PROCESSES - 1, least=0),
        required=True,
        metavar="I",
        help=f"this process's index, 0 to {MAX_PROCESSES - 1} (below --processes)",
    )
    add_shape(serve, default=1)
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
    add_no_align(serve)
    add_holds(serve)
    listen = serve.add_mutually_exclusive_group(required=True)
    listen.add_argument(
        "--listen",
        type=parse_address,
        metavar="HOST:PORT",
        help="where this process's node listens (the controller and the other processes dial "
        "it); it binds HOST:PORT as it starts",
    )
    listen.add_argument(
        "--listen-fd",
        type=up_to(2**31 - 1, least=0),
        metavar="N",
        help="listen on the listening TCP socket inherited as file descriptor N instead (what "
        "run --spawn passes: it binds every process's port before any starts and holds it, so "
        "no other program can take it meanwhile, nor while a process is started again)",
    )
    serve.add_argument(
        "--peers",
        type=parse_addresses,
        required=True,
        metavar="ADDR,...",
        help="every replica process's HOST:PORT, in process order (--processes of them; "
        "this process's own among them)",
    )
    serve.add_argument(
        "--shards",
        type=parse_address,
        required=True,
        metavar="HOST:PORT",
        help="the shard host's node (the driver's): shards are mirrored from it",
    )
    serve.add_argument(
        "--secret-file",
        required=True,
        metavar="FILE",
        help="a file holding the nodes' shared secret (at least 16 bytes, used as is; at most "
        "64 KiB, a longer one refused, exit 2): a regular file, or a pipe or FIFO (shell "
        "process substitution, <(...), gives a pipe) read to its end within 5 s, else exit 2, "
        "named",
    )
    serve.add_argument(
        "--shards-patience",
        type=parse_seconds,
        default=10.0,
        metavar="SECONDS",
        help="how long to dial the shard host at --shards (at start, or after its "
        "connection dropped) before giving up and ending with exit 1 (default 10)",
    )
    serve.add_argument(
        "--peer-timeout",
        type=parse_peer_timeout,
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
        type=up_to(2**62, least=0),
        default=0,
        metavar="N",
        help="the controller reset this process's first replica belongs to (default 0, "
        "as every process of a cluster starts): items between replica processes carry "
        "it, and a process applies only its own epoch's. The driver gives a process it "
        "starts again a fresh one",
    )
    add_tls(serve, "")


def finish_arguments(serve: CommandParser, args: argparse.Namespace) -> None:
    """The checks between ``serve``'s options that argparse cannot express:
    the TLS files, ``--process`` below ``--processes``, and one address a
    process in ``--peers``."""
    finish_tls(serve, args)
    if args.process >= args.processes:
        serve.error(f"argument --process: must be below --processes ({args.processes})")
    if len(args.peers) != args.processes:
        serve.error(f"argument --peers: {len(args.peers)} addresses for {args.processes} processes")
    for n, (host, port) in enumerate(args.peers):
        if (host, port) in args.peers[:n]:
            serve.error(
                f"argument --peers: {host}:{port} twice (each process listens on its own address)"
            )


def execute(args: argparse.Namespace) -> int:
    """``serve``: one replica process, until a signal stops it."""
    import signal
    import socket

    from replica import ReplicaConfig
    from replica.procs import (
        HandlerFailedError,
        ItemTooLargeError,
        ProcessAbortedError,
        SecretFileError,
        ServeOptions,
        ShardHostLostError,
        read_secret_file,
        serve,
    )

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
        holds=args.holds,
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
    except* (
        OSError,
        ShardHostLostError,
        HandlerFailedError,
        ItemTooLargeError,
        ProcessAbortedError,
    ) as group:
        failures += leaves(group)
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
