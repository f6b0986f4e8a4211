"""A chat server: a room actor per room, a session actor per TCP connection.

    .venv/bin/python examples/chat_server.py

It serves TCP on loopback (an ephemeral port), then drives three clients
through a conversation and prints what each one reads. What it shows:

- **names**: a room is the actor named ``room/<name>``; the lobby finds it
  with ``system.lookup`` or starts it;
- **monitors**: a room monitors each member's session, so a client that
  drops its connection leaves the room by itself (the room gets ``Down``);
- **ask with a timeout**: a session asks the lobby for a room and the room
  to join it, each bounded by ``timeout=``;
- **lifetimes**: a connection's handler owns its session actor and stops it
  when the connection ends; leaving ``open_system`` stops everything.

It runs on the real clock (it does I/O): ``actors.run(..., clock=RealClock())``.
"""

from __future__ import annotations

import functools
import sys
from typing import cast

import attrs
import trio

import actors
from actors import ActorRef, ActorSystem, Down, Inbox, Reply

TIMEOUT = 5.0


@attrs.frozen
class Said:
    """A line for a session to write to its client."""

    text: str


@attrs.frozen
class Line:
    """A line a session's client sent."""

    text: str


SessionMessage = Said | Line | Down


@attrs.frozen
class Join:
    nick: str
    session: ActorRef[Said]
    reply: Reply[list[str]]


@attrs.frozen
class Say:
    nick: str
    text: str


RoomMessage = Join | Say | Down


@attrs.frozen
class Enter:
    room: str
    reply: Reply[ActorRef[Join | Say]]


async def room(inbox: Inbox[RoomMessage]) -> None:
    """Members by their session's address; a member whose session ends is gone."""
    members: dict[actors.Address, tuple[str, ActorRef[Said]]] = {}

    def tell_all(text: str) -> None:
        for _, session in members.values():
            session.tell_nowait(Said(text))

    async for envelope in inbox:
        match envelope.message:
            case Join(nick, session, reply):
                inbox.monitor(session)
                tell_all(f"* {nick} joined")
                members[session.address] = (nick, session)
                reply.send([nick for nick, _ in members.values()])
            case Say(nick, text):
                tell_all(f"<{nick}> {text}")
            case Down(address):
                gone = members.pop(address, None)
                if gone is not None:
                    tell_all(f"* {gone[0]} left")


async def lobby(inbox: Inbox[Enter], system: ActorSystem) -> None:
    async for envelope in inbox:
        enter = envelope.message
        found = system.lookup(f"room/{enter.room}")
        if found is None:
            started = await system.spawn(room, name=f"room/{enter.room}")
            enter.reply.send(started)
        else:
            # A name says nothing of what an actor accepts: say it.
            enter.reply.send(cast("ActorRef[Join | Say]", found))


async def session(
    inbox: Inbox[SessionMessage], stream: trio.SocketStream, lobby: ActorRef[Enter]
) -> None:
    """One client: ``/nick NAME``, ``/join ROOM``, ``/quit``, or a line to say."""
    nick = "guest"
    current: ActorRef[Join | Say] | None = None
    async for envelope in inbox:
        match envelope.message:
            case Said(text):
                await stream.send_all(f"{text}\n".encode())
            case Line(text) if text.startswith("/nick "):
                nick = text.removeprefix("/nick ").strip()
            case Line(text) if text.startswith("/join "):
                name = text.removeprefix("/join ").strip()
                try:
                    joined = await lobby.ask(Enter, name, timeout=TIMEOUT)
                    joiner: ActorRef[Said] = inbox.ref
                    nicks = await joined.ask(Join, nick, joiner, timeout=TIMEOUT)
                except actors.AskTimeoutError:
                    await stream.send_all(f"! {name} did not answer\n".encode())
                    continue
                current = joined
                await stream.send_all(f"joined {name}: {', '.join(nicks)}\n".encode())
            case Line("/quit"):
                await stream.send_all(b"bye\n")
                inbox.close()
            case Line(text) if current is not None:
                await current.tell(Say(nick, text))
            case Line(_):
                await stream.send_all(b"! join a room first\n")
            case Down():
                pass


async def serve_connection(
    stream: trio.SocketStream, system: ActorSystem, lobby_ref: ActorRef[Enter]
) -> None:
    """The connection's handler: its session lives while the connection does."""
    async with stream:
        me = await system.spawn(session, stream, lobby_ref)
        buffered = b""
        try:
            async for chunk in stream:
                buffered += chunk
                *lines, buffered = buffered.split(b"\n")
                for line in lines:
                    await me.tell(Line(line.decode()))
        except (trio.BrokenResourceError, actors.ActorStoppedError):
            pass  # the client went away, or said /quit
        await me.stop()


@attrs.define
class Client:
    """A test client: sends lines, and prints each line it reads."""

    name: str
    stream: trio.SocketStream
    buffered: bytes = b""

    async def send(self, line: str) -> None:
        await self.stream.send_all(f"{line}\n".encode())

    async def read(self, count: int = 1) -> None:
        with trio.fail_after(TIMEOUT):
            while self.buffered.count(b"\n") < count:
                chunk = await self.stream.receive_some()
                if not chunk:
                    raise EOFError(f"{self.name}: the server closed the connection")
                self.buffered += chunk
        for _ in range(count):
            line, self.buffered = self.buffered.split(b"\n", 1)
            print(f"{self.name:<5} reads: {line.decode()}")


async def connect(name: str, port: int) -> Client:
    client = Client(name, await trio.open_tcp_stream("127.0.0.1", port))
    await client.send(f"/nick {name}")
    return client


async def main() -> None:
    async with actors.open_system() as system, trio.open_nursery() as server:
        lobby_ref = await system.spawn(lobby, system, name="lobby")

        async def handler(stream: trio.SocketStream) -> None:
            await serve_connection(stream, system, lobby_ref)

        listeners = await server.start(
            functools.partial(trio.serve_tcp, host="127.0.0.1"), handler, 0
        )
        port = listeners[0].socket.getsockname()[1]

        alice = await connect("alice", port)
        await alice.send("/join tea")
        await alice.read()
        bob = await connect("bob", port)
        await bob.send("/join tea")
        await bob.read()
        await alice.read()
        await alice.send("hello bob")
        await alice.read()
        await bob.read()

        print("bob drops his connection")
        await bob.stream.aclose()
        await alice.read()  # the room's monitor saw bob's session end

        carol = await connect("carol", port)
        await carol.send("/join tea")
        await carol.read()
        await alice.read()
        await alice.send("/quit")
        await alice.read()
        await carol.read()
        await carol.send("quiet now")
        await carol.read()
        await carol.stream.aclose()
        await alice.stream.aclose()
        server.cancel_scope.cancel()
    print("the server stopped; every actor ended with it")


if __name__ == "__main__":
    actors.run(main, seed=1, clock=actors.RealClock())
    sys.exit(0)
