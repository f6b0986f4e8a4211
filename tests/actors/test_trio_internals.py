"""The Trio internals the actors read on every message, pinned with the trio
range in pyproject.toml: if one of these fails, trio moved them (see
actors/_core/_util.py; the deadlock hook is pinned in test_deadlock.py)."""

from __future__ import annotations

import outcome
import pytest
import trio
import trio.testing
from trio._core._run import GLOBAL_RUN_CONTEXT

from actors._core._util import (
    buffered,
    current_time,
    has_queued,
    has_room,
    in_trio_thread,
    send_all_nowait,
)


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


async def test_the_runners_io_manager_waits_for_a_readable_socket() -> None:
    # actors.net's reader waits with the io manager's wait_readable (the
    # function trio.lowlevel.wait_readable wraps).
    a, b = trio.socket.socketpair()
    with a, b:
        wait_readable = GLOBAL_RUN_CONTEXT.runner.io_manager.wait_readable
        async with trio.open_nursery() as nursery:
            nursery.start_soon(wait_readable, a.fileno())
            await trio.testing.wait_all_tasks_blocked()
            await b.send(b"x")
        assert await a.recv(1) == b"x"


async def test_a_receiver_parked_on_a_memory_channel_is_registered_on_it() -> None:
    # Inbox.__anext__ parks on an empty mailbox as receive() does: the
    # channel's _tasks, its state's receive_tasks, the task's custom_sleep_data.
    send, receive = trio.open_memory_channel[int](1)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(receive.receive)
        await trio.testing.wait_all_tasks_blocked()
        (task,) = receive._tasks
        assert list(receive._state.receive_tasks) == [task]
        assert task.custom_sleep_data is receive
        assert receive._state.open_send_channels == 1
        assert not receive._closed
        send.send_nowait(1)


async def test_the_runner_reschedules_a_parked_task_as_trio_lowlevel_reschedule_does() -> None:
    # A reply wakes its asker with the runner's reschedule (the method
    # trio.lowlevel.reschedule wraps).
    parked: list[trio.lowlevel.Task] = []
    woken: list[object] = []

    async def park() -> None:
        parked.append(trio.lowlevel.current_task())
        woken.append(
            await trio.lowlevel.wait_task_rescheduled(lambda _: trio.lowlevel.Abort.SUCCEEDED)
        )

    async with trio.open_nursery() as nursery:
        nursery.start_soon(park)
        await trio.testing.wait_all_tasks_blocked()
        GLOBAL_RUN_CONTEXT.runner.reschedule(parked[0], outcome.Value("answer"))
    assert woken == ["answer"]


async def test_a_bulk_send_is_what_send_nowait_one_by_one_would_do() -> None:
    # Sequencer._deliver_at_once: the first value as send_nowait (to a parked
    # receiver), the rest into the buffer, and the buffer's peak statistic.
    send, receive = trio.open_memory_channel[int](3)
    got: list[int] = []
    async with trio.open_nursery() as nursery:
        nursery.start_soon(lambda: _receive_into(receive, got))
        await trio.testing.wait_all_tasks_blocked()
        assert has_room(send, 3)
        assert not has_room(send, 4)
        send_all_nowait(send, [1, 2, 3, 4])  # 1 to the parked receiver: room for the rest
        assert receive.statistics().current_buffer_used == 3
        assert send.statistics().current_buffer_used == 3
        send_all_nowait(send, [])
    assert got == [1]
    assert [receive.receive_nowait() for _ in range(3)] == [2, 3, 4]
    assert receive._state.peak_buffer_used == 3
    send.close()
    with pytest.raises(trio.ClosedResourceError):
        send_all_nowait(send, [5, 6])
    assert not has_queued(receive)


async def _receive_into(receive: trio.MemoryReceiveChannel[int], got: list[int]) -> None:
    got.append(await receive.receive())
