"""The Trio internals the actors read on every message, pinned with the trio
range in pyproject.toml: if one of these fails, trio moved them (see
actors/_util.py; the deadlock hook is pinned in test_deadlock.py)."""

from __future__ import annotations

import trio
import trio.testing
from trio._core._run import GLOBAL_RUN_CONTEXT

from actors._util import buffered, current_time, has_queued, in_trio_thread


async def test_the_runner_holds_the_token_current_trio_token_returns() -> None:
    token = trio.lowlevel.current_trio_token()
    assert GLOBAL_RUN_CONTEXT.runner.trio_token is token
    assert in_trio_thread(token)


async def test_the_runners_clock_tells_trios_time() -> None:
    await trio.sleep(1.5)  # on the mock clock: exactly
    assert current_time() == trio.current_time() == 1.5


def test_outside_a_run_no_token_is_current_and_another_runs_token_is_not() -> None:
    async def token() -> trio.lowlevel.TrioToken:
        return trio.lowlevel.current_trio_token()

    earlier = trio.run(token)
    assert not in_trio_thread(earlier)

    async def check() -> bool:
        return in_trio_thread(earlier)

    assert trio.run(check) is False


async def test_a_memory_channel_shows_its_buffer_and_its_waiting_senders() -> None:
    send, receive = trio.open_memory_channel[int](1)
    assert not has_queued(receive)
    send.send_nowait(1)
    assert has_queued(receive)
    assert buffered(receive) == receive.statistics().current_buffer_used == 1
    assert receive.receive_nowait() == 1
    unbuffered_send, unbuffered = trio.open_memory_channel[int](0)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(unbuffered_send.send, 2)
        await trio.testing.wait_all_tasks_blocked()
        assert has_queued(unbuffered)  # a sender waits: receive_nowait takes its value
        assert unbuffered.receive_nowait() == 2
    assert not has_queued(unbuffered)


async def test_the_run_context_holds_the_current_task() -> None:
    # ActorRef.ask parks with GLOBAL_RUN_CONTEXT.task (current_task, inline).
    assert GLOBAL_RUN_CONTEXT.task is trio.lowlevel.current_task()
