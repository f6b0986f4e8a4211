from __future__ import annotations

import math
import sys

import pytest
import trio
import trio.testing

import actors
from actors import (
    ActorFailedError,
    ActorStoppedError,
    AlreadyRepliedError,
    AskTimeoutError,
    Inbox,
    OneForOne,
    Reply,
)

from .messages import Add, Boom, Hold, Total, counter


async def test_ask_returns_the_reply() -> None:
    async with actors.open_system() as system:
        ref = await system.spawn(counter)
        await ref.tell(Add(40))
        await ref.tell(Add(2))
        assert await ref.ask(Total, timeout=1) == 42
        assert ref.statistics().pending_asks == 0


async def test_ask_times_out_with_a_named_error() -> None:
    never = trio.Event()
    async with actors.open_system() as system:
        ref = await system.spawn(counter, name="slow")
        await ref.tell(Hold(never))
        start = trio.current_time()
        message = r"^ask of actor 'slow' got no reply within 2.5s$"
        with pytest.raises(AskTimeoutError, match=message):
            await ref.ask(Total, timeout=2.5)
        assert trio.current_time() - start == 2.5
        assert ref.statistics().pending_asks == 0
        never.set()  # the late reply goes nowhere and harms nothing
        assert await ref.ask(Total) == 0


async def test_a_timeout_is_also_a_trio_too_slow_error() -> None:
    never = trio.Event()
    async with actors.open_system() as system:
        ref = await system.spawn(counter)
        await ref.tell(Hold(never))
        with pytest.raises(trio.TooSlowError):
            await ref.ask(Total, timeout=1)
        never.set()


async def test_a_failed_reply_raises_in_the_asker() -> None:
    async def refuser(inbox: Inbox[Total]) -> None:
        async for envelope in inbox:
            envelope.message.reply.fail(LookupError("no total here"))

    async with actors.open_system() as system:
        ref = await system.spawn(refuser)
        with pytest.raises(LookupError, match=r"^no total here$"):
            await ref.ask(Total)


async def test_replying_twice_raises_and_keeps_the_first_reply() -> None:
    errors: list[str] = []

    async def twice(inbox: Inbox[Total]) -> None:
        async for envelope in inbox:
            envelope.message.reply.send(1)
            try:
                envelope.message.reply.send(2)
            except AlreadyRepliedError as error:
                errors.append(str(error))

    async with actors.open_system() as system:
        ref = await system.spawn(twice, name="twice")
        assert await ref.ask(Total) == 1
    assert errors == ["reply to message 0 of actor 'twice' was already sent"]


async def test_an_ask_the_actor_failed_on_raises_actor_failed_error() -> None:
    async def fails_on_ask(inbox: Inbox[Total]) -> None:
        async for _ in inbox:
            raise ValueError("no")

    async with (
        actors.open_system() as system,
        system.open_supervisor(OneForOne(intensity=5)) as supervisor,
    ):
        ref = await supervisor.spawn(fails_on_ask, name="flaky")
        with pytest.raises(
            ActorFailedError, match=r"^actor 'flaky' failed before replying to message 0$"
        ) as info:
            await ref.ask(Total)
        assert isinstance(info.value.__cause__, ValueError)


async def test_asks_not_yet_taken_survive_a_restart() -> None:
    release = trio.Event()
    async with (
        actors.open_system() as system,
        system.open_supervisor(OneForOne(intensity=5)) as supervisor,
    ):
        ref = await supervisor.spawn(counter)
        await ref.tell(Hold(release))
        await ref.tell(Boom())
        async with trio.open_nursery() as nursery:
            answers: list[int] = []

            async def ask_total() -> None:
                answers.append(await ref.ask(Total))

            nursery.start_soon(ask_total)
            await trio.testing.wait_all_tasks_blocked()
            release.set()
        assert answers == [0]


async def test_an_ask_taken_and_never_answered_before_a_graceful_stop_ends_by_its_timeout() -> None:
    async def hoards(inbox: Inbox[Total], kept: list[Reply[int]]) -> None:
        async for envelope in inbox:
            kept.append(envelope.message.reply)
            inbox.close()

    kept: list[Reply[int]] = []
    async with actors.open_system() as system:
        ref = await system.spawn(hoards, kept, name="hoarder")
        with pytest.raises(
            AskTimeoutError, match=r"^ask of actor 'hoarder' got no reply within 3s$"
        ):
            await ref.ask(Total, timeout=3)
    assert len(kept) == 1
    assert not kept[0].done


async def test_a_reply_may_come_later_from_another_message() -> None:
    async def deferred(inbox: Inbox[Total | Add]) -> None:
        waiting: list[Reply[int]] = []
        async for envelope in inbox:
            match envelope.message:
                case Total(reply):
                    waiting.append(reply)
                case Add(amount):
                    for reply in waiting:
                        reply.send(amount)
                    waiting.clear()

    async with actors.open_system() as system:
        ref = await system.spawn(deferred)
        async with trio.open_nursery() as nursery:
            answers: list[int] = []

            async def ask_total() -> None:
                answers.append(await ref.ask(Total))

            nursery.start_soon(ask_total)
            nursery.start_soon(ask_total)
            await trio.testing.wait_all_tasks_blocked()
            await ref.tell(Add(7))
        assert answers == [7, 7]


async def test_an_ask_waiting_for_room_fails_when_the_actor_stops() -> None:
    release = trio.Event()
    async with actors.open_system() as system:
        ref = await system.spawn(counter, name="full", capacity=0)
        await ref.tell(Hold(release))
        async with trio.open_nursery() as nursery:
            failures: list[str] = []

            async def ask_total() -> None:
                try:
                    await ref.ask(Total)
                except ActorStoppedError as error:
                    failures.append(str(error))

            nursery.start_soon(ask_total)
            await trio.testing.wait_all_tasks_blocked()
            nursery.start_soon(ref.stop)
            await trio.testing.wait_all_tasks_blocked()
            release.set()
        assert failures == ["actor 'full' is stopped"]
        assert ref.statistics().pending_asks == 0


async def test_a_cancelled_ask_sends_nothing() -> None:
    async with actors.open_system() as system:
        ref = await system.spawn(counter)
        with trio.CancelScope() as scope:
            scope.cancel()
            await ref.ask(Total)
        assert ref.statistics().pending_asks == 0
        await ref.stop()
        assert ref.statistics().delivered == 0


async def test_an_ask_times_out_waiting_for_room_and_its_message_is_never_delivered() -> None:
    release = trio.Event()
    async with actors.open_system() as system:
        ref = await system.spawn(counter, name="stuck", capacity=1)
        await ref.tell(Hold(release))
        await trio.testing.wait_all_tasks_blocked()
        await ref.tell(Add(1))  # the mailbox is full, its actor stuck
        start = trio.current_time()
        with pytest.raises(
            AskTimeoutError,
            match=(
                r"^ask of actor 'stuck' timed out after 2s before its mailbox accepted "
                r"the message; the message was not sent$"
            ),
        ):
            await ref.ask(Total, timeout=2)
        assert trio.current_time() - start == 2
        assert ref.statistics().pending_asks == 0
        release.set()
        assert await ref.ask(Total, timeout=1) == 1
        assert ref.statistics().delivered == 3  # Hold, Add and the second Total only


async def test_the_wait_for_room_counts_against_an_asks_timeout() -> None:
    first, second = trio.Event(), trio.Event()
    async with actors.open_system() as system:
        ref = await system.spawn(counter, name="slow", capacity=1)
        await ref.tell(Hold(first))
        await trio.testing.wait_all_tasks_blocked()
        await ref.tell(Hold(second))
        start = trio.current_time()
        async with trio.open_nursery() as nursery:

            async def free_room_later() -> None:
                await trio.sleep(1.5)
                first.set()

            nursery.start_soon(free_room_later)
            with pytest.raises(
                AskTimeoutError, match=r"^ask of actor 'slow' got no reply within 2s$"
            ):
                await ref.ask(Total, timeout=2)
        assert trio.current_time() - start == 2
        second.set()


@pytest.mark.parametrize(("bad", "shown"), [(-1, "-1"), (-0.5, r"-0\.5"), (math.nan, "nan")])
async def test_a_negative_or_nan_timeout_is_refused_before_anything_is_sent(
    bad: float, shown: str
) -> None:
    built: list[Reply[int]] = []

    def build(reply: Reply[int]) -> Total:
        built.append(reply)
        return Total(reply)

    async with actors.open_system() as system:
        ref = await system.spawn(counter)
        with pytest.raises(
            ValueError,
            match=rf"^ask timeout must be None or a number of seconds >= 0, not {shown}$",
        ):
            await ref.ask(build, timeout=bad)
        assert built == []
        await ref.stop()
        assert ref.statistics().delivered == 0


async def test_a_timeout_too_large_for_a_float_is_refused_before_anything_is_sent() -> None:
    async with actors.open_system() as system:
        ref = await system.spawn(counter)
        with pytest.raises(
            ValueError,
            match=(
                r"^ask timeout must be None or a number of seconds >= 0, not a number too large "
                r"for a float \(math\.inf waits as long as it takes\)$"
            ),
        ):
            await ref.ask(Total, timeout=10**400)
        await ref.stop()
        assert ref.statistics().delivered == 0


async def test_a_timeout_that_is_not_a_number_is_a_type_error_and_sends_nothing() -> None:
    async with actors.open_system() as system:
        ref = await system.spawn(counter)
        with pytest.raises(
            TypeError, match=r"^ask timeout must be None or a number of seconds, not '5'$"
        ):
            await ref.ask(Total, timeout="5")  # type: ignore[arg-type]
        await ref.stop()
        assert ref.statistics().delivered == 0


async def test_the_largest_float_timeout_waits_for_the_reply() -> None:
    async with actors.open_system() as system:
        ref = await system.spawn(counter)
        assert await ref.ask(Total, timeout=sys.float_info.max) == 0


async def test_a_negative_zero_timeout_is_a_zero_timeout_and_says_0s() -> None:
    async with actors.open_system() as system:
        ref = await system.spawn(counter, name="idle")
        with pytest.raises(
            AskTimeoutError,
            match=(
                r"^ask of actor 'idle' timed out after 0s before its mailbox accepted "
                r"the message; the message was not sent$"
            ),
        ):
            await ref.ask(Total, timeout=-0.0)
        await ref.stop()
        assert ref.statistics().delivered == 0


async def test_a_zero_timeout_sends_nothing_and_times_out_at_once() -> None:
    async with actors.open_system() as system:
        ref = await system.spawn(counter, name="idle")
        with pytest.raises(
            AskTimeoutError,
            match=(
                r"^ask of actor 'idle' timed out after 0s before its mailbox accepted "
                r"the message; the message was not sent$"
            ),
        ):
            await ref.ask(Total, timeout=0)
        assert trio.current_time() == 0
        await ref.stop()
        assert ref.statistics().delivered == 0


async def test_an_infinite_timeout_waits_as_long_as_it_takes() -> None:
    release = trio.Event()
    async with actors.open_system() as system:
        ref = await system.spawn(counter)
        await ref.tell(Hold(release))
        async with trio.open_nursery() as nursery:

            async def release_much_later() -> None:
                await trio.sleep(10_000)
                release.set()

            nursery.start_soon(release_much_later)
            assert await ref.ask(Total, timeout=math.inf) == 0
        assert trio.current_time() == 10_000
