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


def run_mypy(tmp_path: Path, snippet_text: str, *, plugin: bool) -> str:
    """mypy --strict on the snippet, with a configuration of its own (the
    project's plugin or none); returns the report, after checking that
    mypy ran and found errors."""
    snippet = tmp_path / "snippet.py"
    snippet.write_text(textwrap.dedent(snippet_text).lstrip("\n"), encoding="utf-8")
    config = tmp_path / "mypy.ini"
    config.write_text("[mypy]\n" + ("plugins = actors.mypy\n" if plugin else ""), "utf-8")
    report, errors, status = mypy_api.run(
        [
            "--strict",
            "--no-error-summary",
            "--config-file",
            str(config),
            "--cache-dir",
            str(tmp_path / "cache"),
            str(snippet),
        ]
    )
    assert (errors, status) == ("", 1), (errors, report)
    return report


def error_lines(report: str) -> set[int]:
    return {int(match[1]) for match in re.finditer(r"snippet\.py:(\d+): error:", report)}


ARGUMENT_ERROR = (
    'snippet.py:22: error: Argument 1 to "ask" of "ActorRef" has incompatible type '
    '"type[Put]"; expected "Callable[[str, str, Reply[bool]], Put | Get]"  [arg-type]'
)


def test_mypy_refuses_arguments_that_do_not_fit_the_message(tmp_path: Path) -> None:
    report = run_mypy(tmp_path, SNIPPET, plugin=False)
    assert error_lines(report) == {22, 23, 24, 25, 26, 27, 37}, report
    assert ARGUMENT_ERROR in report
    # Without the plugin, mypy infers the answer's type from the assignment
    # first, and blames the ask's first argument.
    assert (
        'snippet.py:26: error: Argument 1 to "ask" of "ActorRef" has incompatible type '
        '"type[Get]"; expected "Callable[[str, Reply[str]], Put | Get]"  [arg-type]'
    ) in report


def test_with_the_plugin_a_wrong_annotation_is_the_assignments_error(tmp_path: Path) -> None:
    report = run_mypy(tmp_path, SNIPPET, plugin=True)
    assert error_lines(report) == {22, 23, 24, 25, 26, 27, 37}, report
    assert ARGUMENT_ERROR in report  # the arguments are checked as before
    assert (
        "snippet.py:26: error: Incompatible types in assignment (expression has type "
        '"int | None", variable has type "str")  [assignment]'
    ) in report


PLUGIN_SNIPPET = """
    import functools
    from typing import Generic, TypeVar

    import attrs

    import snippet_messages as messages
    from actors import ActorRef, Pool, Reply

    T = TypeVar("T")


    @attrs.frozen
    class Box(Generic[T]):
        item: T
        reply: Reply[T]


    def total(reply: Reply[int]) -> messages.Size:
        return messages.Size(reply)


    async def use(
        ref: ActorRef[messages.Size | Box[int]], pool: Pool[messages.Size]
    ) -> None:
        a: str = await ref.ask(messages.Size)  # line 25: an attribute
        b: str = await pool.ask(messages.Size)  # line 26: a pool
        c: str = await ref.ask(total)  # line 27: a function
        d: str = await ref.ask(Box, 1)  # line 28: generic: left to mypy
        f: str = await ref.ask(nowhere)  # line 29: an undefined name, once
        g: int = await ref.ask(messages.Size)  # fine
        h: int = await ref.ask(Box, 1)  # fine
        i: int = await ref.ask(functools.partial(Box, 1))  # fine: left to mypy
        reveal_type(await ref.ask(total))  # line 33
"""

MESSAGES = """
    import attrs

    from actors import Reply


    @attrs.frozen
    class Size:
        reply: Reply[int]
"""


def test_the_plugin_reads_names_attributes_and_functions_and_leaves_the_rest(
    tmp_path: Path,
) -> None:
    (tmp_path / "snippet_messages.py").write_text(textwrap.dedent(MESSAGES), "utf-8")
    report = run_mypy(tmp_path, PLUGIN_SNIPPET, plugin=True)
    assert error_lines(report) == {25, 26, 27, 28, 29}, report
    for line in (25, 26, 27):
        assert (
            f"snippet.py:{line}: error: Incompatible types in assignment (expression has "
            'type "int", variable has type "str")  [assignment]'
        ) in report
    assert 'snippet.py:28: error: Argument 1 to "ask" of "ActorRef"' in report
    assert 'snippet.py:29: error: Name "nowhere" is not defined  [name-defined]' in report
    assert len(re.findall(r"snippet\.py:29: error", report)) == 1, report
    assert 'snippet.py:33: note: Revealed type is "int"' in report
