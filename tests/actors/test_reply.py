"""Who may complete a reply, and what happens to it when its actor ends."""

from __future__ import annotations

import logging

import pytest
import trio
import trio.testing

import actors
from actors import (
    ActorFailedError,
    ActorRef,
    ActorStoppedError,
    AlreadyRepliedError,
    EventKind,
    Inbox,
    OneForOne,
    Reply,
)

from .messages import Add, Total


async def front(inbox: Inbox[Total], back: ActorRef[Reply[int]]) -> None:
    """Hands every reply on to ``back``."""
    async for envelope in inbox:
        await back.tell(envelope.message.reply)


async def front_that_fails(inbox: Inbox[Total], back: ActorRef[Reply[int]]) -> None:
    """Hands the reply on to ``back``, then raises."""
    async for envelope in inbox:
        await back.tell(envelope.message.reply)
        raise ValueError("front broke")


async def back(inbox: Inbox[Reply[int]], release: trio.Event, completed: list[bool]) -> None:
    """Answers each reply with 7 once ``release`` is set; records what ``send`` returned."""
    async for envelope in inbox:
        await release.wait()
        completed.append(envelope.message.send(7))


async def holder(inbox: Inbox[Total]) -> None:
    """Takes a message and never answers it."""
    await inbox.receive()
    await trio.sleep_forever()


async def test_a_reply_handed_on_stays_valid_after_the_actor_that_took_it_stops() -> None:
    release = trio.Event()
    completed: list[bool] = []
    answers: list[int] = []
    async with actors.open_system() as system:
        answerer = await system.spawn(back, release, completed, name="back")
        ref = await system.spawn(front, answerer, name="front")

        async def ask_front() -> None:
            answers.append(await ref.ask(Total, timeout=10))

        async with trio.open_nursery() as nursery:
            nursery.start_soon(ask_front)
            await trio.testing.wait_all_tasks_blocked()
            await ref.stop()
            assert ref.statistics().pending_asks == 1
            release.set()
    assert answers == [7]
    assert completed == [True]


async def test_asks_still_queued_when_the_behaviour_returns_fail_with_actor_stopped_error() -> None:
    async def takes_one(inbox: Inbox[Add | Total]) -> None:
        await inbox.receive()

    async with actors.open_system() as system:
        ref = await system.spawn(takes_one, name="once")
        ref.tell_nowait(Add(1))
        with pytest.raises(
            ActorStoppedError, match=r"^actor 'once' stopped before taking message 1$"
        ):
            await ref.ask(Total)
        assert ref.statistics().pending_asks == 0


async def test_killing_an_actor_that_holds_an_ask_fails_it_with_actor_stopped_error() -> None:
    async with actors.open_system() as system:
        ref = await system.spawn(holder, name="holder")
        async with trio.open_nursery() as nursery:
            failures: list[str] = []

            async def ask_holder() -> None:
                with pytest.raises(ActorStoppedError) as info:
                    await ref.ask(Total)
                failures.append(str(info.value))

            nursery.start_soon(ask_holder)
            await trio.testing.wait_all_tasks_blocked()
            await ref.kill()
        assert failures == ["actor 'holder' was cancelled before replying to message 0"]


async def test_a_late_send_on_a_reply_failed_by_a_kill_returns_false_and_is_recorded(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="actors")
    trace = actors.Trace()
    release = trio.Event()
    completed: list[bool] = []
    async with actors.open_system(tracer=trace) as system:
        answerer = await system.spawn(back, release, completed, name="back")
        ref = await system.spawn(front, answerer, name="front")
        async with trio.open_nursery() as nursery:

            async def ask_front() -> None:
                with pytest.raises(
                    ActorStoppedError,
                    match=r"^actor 'front' was cancelled before replying to message 0$",
                ):
                    await ref.ask(Total)

            nursery.start_soon(ask_front)
            await trio.testing.wait_all_tasks_blocked()
            await ref.kill()
        release.set()
        await trio.testing.wait_all_tasks_blocked()
        assert completed == [False]
    discarded = [event for event in trace if event.kind is EventKind.DISCARDED]
    assert [(event.actor, event.seq, event.detail) for event in discarded] == [("front", 0, "back")]
    assert (
        "actors",
        "INFO",
        "reply to message 0 of actor 'front' was sent late by 'back' and discarded: "
        "the ask already failed",
    ) in [(r.name, r.levelname, r.getMessage()) for r in caplog.records]


async def test_a_late_fail_on_a_reply_failed_by_a_failure_returns_false() -> None:
    handed_on: list[Reply[int]] = []

    async def keeps(inbox: Inbox[Reply[int]]) -> None:
        async for envelope in inbox:
            handed_on.append(envelope.message)

    async with (
        actors.open_system() as system,
        system.open_supervisor(OneForOne(intensity=1)) as supervisor,
    ):
        keeper = await system.spawn(keeps, name="keeper")
        ref = await supervisor.spawn(front_that_fails, keeper, name="front")
        with pytest.raises(
            ActorFailedError, match=r"^actor 'front' failed before replying to message 0$"
        ):
            await ref.ask(Total)
        (reply,) = handed_on
        assert reply.fail(LookupError("too late")) is False
        assert reply.send(1) is False


async def test_completing_a_failed_reply_again_raises_already_replied_error() -> None:
    errors: list[str] = []

    async def refuses_twice(inbox: Inbox[Total]) -> None:
        async for envelope in inbox:
            assert envelope.message.reply.fail(LookupError("no")) is True
            with pytest.raises(AlreadyRepliedError) as info:
                envelope.message.reply.send(1)
            errors.append(str(info.value))

    async with actors.open_system() as system:
        ref = await system.spawn(refuses_twice, name="refuser")
        with pytest.raises(LookupError, match=r"^no$"):
            await ref.ask(Total)
    assert errors == ["reply to message 0 of actor 'refuser' was already failed"]
