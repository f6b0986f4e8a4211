"""A replica process's server: the handlers of the items that reach it, the
heartbeats and the shared fate of its connections to the other replica
processes, and the run loop that starts one generation (:mod:`._generation`)
after another, at each controller reset or after a lost peer (see
:mod:`._serve`)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import attrs
import trio
import trio.testing

from actors.net import Peer

from ..protocol import ProtocolError
from ..runtime._worker import SequencedCommand
from . import _wire
from ._errors import ProcessAbortedError, ProcsError, ShardHostLostError
from ._generation import Generation, open_generation
from ._items import (
    Commands,
    End,
    ExchangeFrontier,
    ExchangeUpdates,
    Hello,
    Hold,
    LostPeer,
    Open,
    Ping,
    Pong,
    Probe,
    Probed,
    Ready,
    Refused,
    Release,
    Reset,
    ResetDone,
    Sequenced,
    ShardPush,
)
from ._limits import MIN_PEER_TIMEOUT
from ._links import Hub
from ._options import CONTROLLER, SHARDS, ServeOptions, process_node

logger = logging.getLogger("replica.procs")


@attrs.define(eq=False)
class Server:
    options: ServeOptions
    hub: Hub
    nursery: trio.Nursery
    generation: Generation | None = None
    token: int = 0
    # The last controller reset taken (see Generation.epoch).
    epoch: int = attrs.field(
        default=attrs.Factory(lambda self: self.options.epoch, takes_self=True)
    )
    _restart: trio.Event = attrs.field(factory=trio.Event)
    _reset_tokens: list[int] = attrs.field(factory=list)
    # Set when a controller reset arrives (a generation that ended for a lost
    # peer waits for one: see run).
    _reset_came: trio.Event = attrs.field(factory=trio.Event)
    # The generation ended for a lost peer: the next starts at the next reset.
    awaiting_reset: bool = False
    # Set when the process must end: the shard host cannot be reached (see
    # SHARDS_PATIENCE), or a worker panicked (shared fate); the first reason.
    ended: trio.Event = attrs.field(factory=trio.Event)
    end_error: ProcsError | None = None
    # Why the last generation ended for a lost peer (see _open).
    lost_reason: str = ""
    # The connections to and from other replica processes, by id, with the
    # process's node name; and those written off (their process's loss was
    # handled once, when another of its connections dropped).
    _links: dict[int, tuple[str, Peer]] = attrs.field(factory=dict)
    _written_off: set[int] = attrs.field(factory=set)

    def install(self) -> None:
        hub = self.hub
        hub.on(Hello, self._hello)
        hub.on(Open, self._open)
        hub.on(Commands, self._current(lambda g, item: g.commands(item.nonce, item.commands)))
        hub.on(End, self._current(lambda g, item: g.end(item.nonce)))
        hub.on(Hold, self._current(lambda g, item: g.process.hold(item.runtime)))
        hub.on(Release, self._current(lambda g, item: g.process.release(item.runtime)))
        hub.on(Ping, self._ping)
        # The shard host's answer to a ping: its arrival is what counts.
        hub.on(Pong, lambda source, item: None)
        hub.on(Probe, self._probe)
        hub.on(Reset, self._reset)
        hub.on(Sequenced, self._seq)
        hub.on(
            ExchangeUpdates,
            self._current_epoch(
                lambda g, x: g.fabrics[x.runtime].arrive(
                    x.dataflow, x.place, x.destination, x.updates
                )
            ),
        )
        hub.on(
            ExchangeFrontier,
            self._current_epoch(
                lambda g, x: g.fabrics[x.runtime].heard(x.dataflow, x.place, x.worker, x.frontier)
            ),
        )
        hub.on(ShardPush, self._shard)
        self.hub.on_lost.append(self._lost)
        self.hub.on_connected.append(self._connected)
        self.hub.on_unreachable.append(self._unreachable)

    def _end(self, error: ProcsError) -> None:
        if self.end_error is None:
            self.end_error = error
            self.ended.set()

    def _aborted(self, reason: str) -> None:
        self._end(ProcessAbortedError(reason))

    def _unreachable(self, target: str, error: Exception) -> None:
        if target == SHARDS:
            self._end(ShardHostLostError(f"the shard host is gone ({error})"))

    def _current(self, handle: Callable[[Generation, Any], None]) -> Callable[[str, Any], None]:
        """A handler applied to the current generation; an item that comes
        while none runs (between two) belonged to the one that ended."""

        def handler(source: str, item: Any) -> None:
            if self.generation is not None:
                handle(self.generation, item)

        return handler

    def _open(self, source: str, item: Open) -> None:
        """The controller opened a connection. With no replica here (one
        ended for a lost peer and the controller's reset has not come, or a
        fresh one is starting), it is refused, named: dropped, the
        controller's commands on it would get no answer, and nothing would
        say why."""
        nonce = item.nonce
        if self.generation is not None:
            self.generation.open(nonce)
            return
        process = self.options.process
        if self.awaiting_reset:
            reason = (
                f"replica process {process} has no replica: it {self.lost_reason} and "
                "waits for the controller's reset (Cluster.recover)"
            )
        else:
            reason = f"replica process {process} was starting a fresh replica (a reset)"
        self.hub.send(CONTROLLER, Refused(nonce, reason))

    def _current_epoch(
        self, handle: Callable[[Generation, Any], None]
    ) -> Callable[[str, Any], None]:
        """A handler of another replica process's items, applied to the
        current generation if the item carries its epoch: one sent before a
        controller reset (still on a connection that stayed open) belonged
        to the replica the reset ended."""

        def handler(source: str, item: Any) -> None:
            generation = self._generation_of(item.epoch)
            if generation is not None:
                handle(generation, item)

        return handler

    def _generation_of(self, epoch: int) -> Generation | None:
        """The current generation, if an item of ``epoch`` from another
        replica process is for it; ``None`` otherwise (the item of an ended
        epoch is then not counted: see :meth:`Hub.uncount`)."""
        generation = self.generation
        if generation is not None and epoch == generation.epoch:
            return generation
        if epoch != self.epoch:
            self.hub.uncount()
        return None

    def _shard(self, source: str, push: ShardPush) -> None:
        """The host's push to subscription ``token`` (this process's
        generation token): one for a generation before the last reset is not
        counted (see :meth:`Hub.uncount`); the mirror ignores it."""
        if push.token != self.token:
            self.hub.uncount()
        if self.generation is not None:
            self.generation.shards.receive(push)

    def _hello(self, source: str, item: Hello) -> None:
        if source == CONTROLLER:
            # A new connection from the controller: answer over it.
            self.hub.inbound(CONTROLLER).refresh()
        elif source.startswith("p"):
            # Another replica process dialled this one.
            for peer in self.hub.node.peers:
                if peer.node == source:
                    self._watch_link(source, peer)

    def _ping(self, source: str, ping: Ping) -> None:
        # Another process's pings only need to arrive (see heartbeats).
        if source == CONTROLLER:
            self.hub.send(CONTROLLER, Pong(ping.sent_at))

    async def heartbeats(self) -> None:
        """Ping every other replica process and the shard host (a quarter of
        ``peer_timeout`` apart), and close the connections to one not heard
        from for ``peer_timeout``: a partition (frames dropped, the
        connections open) then behaves as a dropped connection (another
        process's: see :meth:`_watch_link`; the host's is dialled again, and
        the mirrors subscribe again: see :meth:`_lost`). The host answers a
        ping (``pong``); another process's pings are enough."""
        timeout = self.options.peer_timeout
        others = [
            process_node(other)
            for other in range(self.options.config.processes)
            if other != self.options.process
        ]
        heard = self.hub.last_heard
        while True:
            now = trio.current_time()
            for name in [*others, SHARDS]:
                last = heard.setdefault(name, now)
                if now - last > timeout:
                    logger.warning(
                        "%s: nothing from %s for %gs: closing its connections",
                        self.hub.name,
                        "the shard host" if name == SHARDS else f"replica process {name}",
                        timeout,
                    )
                    heard[name] = now
                    for peer in [p for p in self.hub.node.peers if p.node == name]:
                        self.nursery.start_soon(peer.close, "heartbeat missed")
                self.hub.send(name, Ping(now))
            await trio.sleep(max(timeout, MIN_PEER_TIMEOUT) / 4)

    def _connected(self, target: str, peer: Peer) -> None:
        if target.startswith("p"):
            self._watch_link(target, peer)

    def _watch_link(self, name: str, peer: Peer) -> None:
        """Watch a connection to or from replica process ``name``: losing
        either is losing that process (a timely cluster's connections are
        its processes' shared fate)."""
        if id(peer) not in self._links:
            self._links[id(peer)] = (name, peer)
            self.nursery.start_soon(self._watch, name, peer)

    async def _watch(self, name: str, peer: Peer) -> None:
        try:
            await peer.closed.wait()
        finally:
            del self._links[id(peer)]
        if id(peer) in self._written_off:
            self._written_off.discard(id(peer))
        else:
            self._peer_lost(name, peer.reason or "the connection was lost")

    def _peer_lost(self, peer: str, reason: str) -> None:
        """A connection to replica process ``peer`` dropped (it died, or only
        the connection did) for ``reason``: the processes of a cluster share
        fate, so this one ends its replica, starts the next at the
        controller's next reset (see :meth:`run`), and tells the controller,
        whose connections to this process ended with the old one (a real
        process halts and restarts: the controller sees its connections
        fail). A warning, unless the other process closed it stopping in
        order (SIGTERM: the driver stops them all)."""
        # One loss a process: its other connections say nothing more, and end
        # now (as a real process's restart ends them all) if they did not
        # with it. One left open would stay written off: its own loss, in
        # the fresh replica, would go unnoticed, and what it carried lost.
        for key, (name, other) in self._links.items():
            if name == peer and key not in self._written_off:
                self._written_off.add(key)
                self.nursery.start_soon(other.close, f"shared fate: {reason}")
        if self.generation is None or self._restart.is_set():
            return  # a fresh replica is on its way already
        logger.log(
            logging.INFO if reason.endswith(": node closing") else logging.WARNING,
            "%s: lost the connection to replica process %s (%s): its replica ends; "
            "the next starts at the controller's next reset",
            self.hub.name,
            peer,
            reason,
        )
        if CONTROLLER in self.hub.outlinks:
            self.hub.send(CONTROLLER, LostPeer(peer))
        self.awaiting_reset = True
        self.lost_reason = f"lost its connection to replica process {peer[1:]} ({reason})"
        self._restart.set()
        self._forget_peer_items()

    def _forget_peer_items(self) -> None:
        """Drop what the ending generation queued for other replica processes
        (commands relayed, exchanges): sent later, on a connection dialled
        anew, it would reach their fresh replicas. (Items already written to
        a connection that has not dropped yet can still arrive: generations
        are not tagged on the wire.)"""
        for name, outlink in self.hub.outlinks.items():
            if name.startswith("p"):
                outlink.discard()

    async def _seq(self, source: str, item: Sequenced) -> None:
        generation = self._generation_of(item.epoch)
        if generation is None:
            return  # for the replica that ended (see _current_epoch)
        relay = generation.relays.get(item.runtime)
        if relay is None:
            raise ProtocolError(f"process {self.options.process} relays no {item.runtime} runtime")
        await relay.broadcast_many(
            SequencedCommand.all_of(item.nonce, item.position, _wire.split(item.commands))
        )

    def _probe(self, source: str, item: Probe) -> None:
        self.nursery.start_soon(self._answer_probe, item.token, item.final)

    async def _answer_probe(self, token: int, final: bool) -> None:
        await trio.testing.wait_all_tasks_blocked(0.001)
        hub = self.hub
        generation = self.generation
        report = generation.report() if final and generation is not None else {}
        hub.send(
            CONTROLLER,
            Probed(token, self.options.process, hub.sent, hub.received + hub.dropped, report),
        )

    def _reset(self, source: str, item: Reset) -> None:
        self._reset_tokens.append(item.token)
        self._reset_came.set()
        # Between two generations (one ended, for a lost peer), the next is
        # fresh already and says it did the reset: no second one after it,
        # which would drop what the controller sends once told it is done.
        if self.generation is not None:
            self._restart.set()

    def _lost(self, target: str) -> None:
        if target == SHARDS:
            # Dial the host again now (not at the next item for it, which an
            # idle process may never have): if it is gone for good (the driver
            # was killed), this process ends instead of outliving it.
            self.hub.send(SHARDS, Hello())
            # What was in flight on the dropped connection (pushes, a sink's
            # append) is lost: every mirror asks for its shard again.
            if self.generation is not None:
                self.generation.shards.resubscribe()
            return
        if target == CONTROLLER and self.generation is not None:
            # The controller went away: every connection it opened ends.
            self.generation.end_all()
        # A link to another replica process: see _watch_link.

    async def run(self) -> None:
        while True:
            if self.awaiting_reset:
                # After a lost peer, the next replica starts at the
                # controller's next reset, at its epoch, as every other
                # process's does (a real process halts, and the controller
                # reconnects with a new epoch): one started at the epoch it
                # had could take what the other processes' ended replicas
                # wrote to connections still closing.
                while not self._reset_tokens:
                    await self._reset_came.wait()
                    self._reset_came = trio.Event()
                self.awaiting_reset = False
            self.token += 1
            # The last reset taken, before or between generations.
            self.epoch = max([self.epoch, *self._reset_tokens])
            async with open_generation(
                self.options, self.hub, self.token, self.epoch
            ) as generation:
                self.generation = generation
                generation.process.on_abort = self._aborted
                # With every reset taken, those that came while it started too.
                self.epoch = generation.epoch = max([self.epoch, *self._reset_tokens])
                # A quiescence test counts within one generation.
                self.hub.sent = self.hub.received = self.hub.dropped = 0
                self.hub.send(SHARDS, Ready(self.options.process, self.token))
                for token in self._reset_tokens:
                    self.hub.send(CONTROLLER, ResetDone(token, self.options.process, self.token))
                self._reset_tokens = []
                await self._restart.wait()
                self._restart = trio.Event()
                self.generation = None
                self._forget_peer_items()
