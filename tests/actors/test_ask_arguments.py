"""ref.ask(Msg, *args, timeout=): the message is built from the arguments and
the reply, typed end to end (mypy checks the arguments against the message)."""

from __future__ import annotations

import functools
import re
import textwrap
from pathlib import Path

import attrs
from mypy import api as mypy_api

import actors
from actors import Inbox, Reply


@attrs.frozen
class Put:
    key: str
    value: int
    reply: Reply[bool]


@attrs.frozen
class Get:
    key: str
    reply: Reply[int | None]


@attrs.frozen
class Size:
    reply: Reply[int]


StoreMessage = Put | Get | Size


async def store(inbox: Inbox[StoreMessage]) -> None:
    data: dict[str, int] = {}
    async for envelope in inbox:
        match envelope.message:
            case Put(key, value, reply):
                reply.send(key not in data)
                data[key] = value
            case Get(key, reply):
                reply.send(data.get(key))
            case Size(reply):
                reply.send(len(data))


async def test_ask_builds_the_message_from_its_arguments_then_the_reply() -> None:
    async with actors.open_system() as system:
        ref = await system.spawn(store, name="store")
        assert await ref.ask(Put, "a", 1, timeout=5) is True
        assert await ref.ask(Put, "a", 2) is False
        assert await ref.ask(Get, "a", timeout=5) == 2
        assert await ref.ask(Get, "b") is None


async def test_ask_still_takes_any_callable_of_the_reply() -> None:
    async with actors.open_system() as system:
        ref = await system.spawn(store, name="store")
        await ref.ask(Put, "a", 1)
        assert await ref.ask(Size) == 1
        assert await ref.ask(functools.partial(Get, "a"), timeout=1) == 1


async def test_a_pool_ask_builds_the_message_from_its_arguments() -> None:
    async with actors.open_system() as system:
        pool = await system.pool(store, size=2, name="stores")
        assert await pool.ask(Put, "a", 1, timeout=5) is True  # member 0
        assert await pool.ask(Get, "a") is None  # member 1: its own data
        assert await pool.ask(Get, "a", timeout=5) == 1  # member 0 again


SNIPPET = """
    import attrs

    from actors import ActorRef, Pool, Reply


    @attrs.frozen
    class Put:
        key: str
        value: int
        reply: Reply[bool]


    @attrs.frozen
    class Get:
        key: str
        reply: Reply[int | None]


    async def use(ref: ActorRef[Put | Get], gets: ActorRef[Get], pool: Pool[Put]) -> None:
        added: bool = await ref.ask(Put, "a", 1, timeout=1)
        found: int | None = await ref.ask(Get, "a")
        await ref.ask(Put, "a", "one")  # line 22: a str for the int
        await ref.ask(Put, "a")  # line 23: an argument missing
        await ref.ask(Get, "a", 2)  # line 24: one too many
        await gets.ask(Put, "a", 1)  # line 25: a message the actor does not accept
        wrong: str = await ref.ask(Get, "a")  # line 26: the reply's type is int | None
        await pool.ask(Put, 1, 1)  # line 27: a pool checks the same way
        print(await ref.ask(Get, "a"))  # fine: a reply is contravariant, print takes any object
        anything: object = await ref.ask(Put, "a", 1)  # fine: a bool is an object


    def widen(reply: Reply[int]) -> Reply[bool]:
        return reply  # fine: a reply that takes any int takes a bool


    def narrow(reply: Reply[bool]) -> Reply[int]:
        return reply  # line 37: a reply for bools is no reply for ints
"""


def test_mypy_refuses_arguments_that_do_not_fit_the_message(tmp_path: Path) -> None:
    snippet = tmp_path / "snippet.py"
    snippet.write_text(textwrap.dedent(SNIPPET).lstrip("\n"), encoding="utf-8")
    report, errors, status = mypy_api.run(
        [
            "--strict",
            "--no-error-summary",
            "--cache-dir",
            str(tmp_path / "cache"),
            str(snippet),
        ]
    )
    assert (errors, status) == ("", 1)
    lines = {int(match[1]) for match in re.finditer(r"snippet\.py:(\d+): error:", report)}
    assert lines == {22, 23, 24, 25, 26, 27, 37}, report
    assert (
        'snippet.py:22: error: Argument 1 to "ask" of "ActorRef" has incompatible type '
        '"type[Put]"; expected "Callable[[str, str, Reply[bool]], Put | Get]"  [arg-type]'
    ) in report
