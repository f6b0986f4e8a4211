"""One replica process as an OS process (``trio-reconcile serve``).

Process ``I`` of ``P`` hosts process ``I``'s workers of each runtime, its
multiplexer and channel adapters, and (with two runtimes) its registries and
barriers, composed as :func:`replica.open_replica` composes them for every
process in one Trio run; what crosses to another process goes over
``actors.net`` (:mod:`._links`):

- the controller's connections: ``open``/``cmds``/``end`` in, each
  connection's responses out (``resp``), over the connection the controller
  dialled;
- the command channel: process 0's global worker 0 adapter sequences each
  batch onto the link to every other process (``seq``, one item a batch) and
  into the sequencer of process 0's workers; at another process a local
  sequencer hands the batch to its workers: the same commands in the same
  order everywhere;
- exchanges (:mod:`._fabric`) and shards (:mod:`._shards`);
- the materialized-view counters (``metric``), summed by the controller.

A *generation* is one such composition. ``reset`` (a fresh replica for the
next spec, or after a loss) ends the generation and starts a fresh one, as a
restarted process starts, in place: the node, its links and its address
stay. The loss of another replica process (a process of a replica that lost
one of its peers cannot go on: its dataflows' exchanges span the lost one)
ends the generation too, and the next starts at the controller's next reset
(``Cluster.recover``), as a real process halts and serves again when the
controller reconnects with a new epoch.
"""

from __future__ import annotations

import gc
import socket

import trio

import actors
from actors.net import open_node

from ._errors import ListenFailedError
from ._links import MAX_FRAME, Hub, codec
from ._options import SHARDS, ServeOptions, process_node
from ._server import Server


async def serve(
    options: ServeOptions, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
) -> None:
    """Run replica process ``options.process`` until cancelled (the process's
    one task: what it loaded to start, the modules and classes, is frozen
    out of the garbage collector's full collections, which a stream of
    commands otherwise makes scan it again and again)."""
    name = process_node(options.process)
    async with (
        actors.open_system() as system,
        open_node(
            system,
            name=name,
            secret=options.secret,
            codec=codec(),
            listen=await _listener(options),
            max_frame=MAX_FRAME,
            peer_timeout=None,  # the links ping and judge silence (--peer-timeout)
            ssl_context=None if options.tls is None else options.tls.server_context(),
        ) as node,
        trio.open_nursery() as nursery,
    ):
        client = None if options.tls is None else options.tls.client_context()
        hub = Hub(name, node, nursery, ssl_context=client)
        await hub.start()
        hub.dial(SHARDS, options.shards, patience=options.shards_patience)
        for other, address in enumerate(options.peers):
            if other != options.process:
                hub.dial(process_node(other), address)
        server = Server(options, hub, nursery)
        server.install()
        gc.freeze()
        task_status.started()
        nursery.start_soon(server.run)
        nursery.start_soon(server.heartbeats)
        await server.ended.wait()
        assert server.end_error is not None, "set with the event"
        raise server.end_error


async def _listener(options: ServeOptions) -> trio.SocketListener | tuple[str, int]:
    """What the node listens on: the socket inherited as ``listen_fd``, or
    ``listen`` (checked here, so that a failure is :class:`ListenFailedError`,
    named: the node's own listen would say only the OS's words)."""
    if options.listen_fd is not None:
        inherited = socket.socket(fileno=options.listen_fd)
        return trio.SocketListener(trio.socket.from_stdlib_socket(inherited))
    host, port = options.listen
    try:
        for listener in await trio.open_tcp_listeners(port, host=host):
            await listener.aclose()
    except OSError as error:
        raise ListenFailedError(
            f"cannot listen on --listen {host}:{port}: {error.strerror or error}"
        ) from None
    return options.listen
