"""A connection's command line: the controller's sends never block, and the
process takes everything queued in one item, in order."""

from __future__ import annotations

import pytest
import trio
import trio.testing

from replica import CreateInstance, Hello, InitializationComplete
from replica.runtime._connection import CommandLine


async def test_a_burst_is_one_item_in_order_and_the_end_comes_after_what_is_left() -> None:
    line = CommandLine()
    line.send_nowait(Hello(1))
    line.send_nowait(CreateInstance())
    assert await line.receive() == [Hello(1), CreateInstance()]
    line.send_nowait(InitializationComplete())
    line.close()
    with pytest.raises(trio.ClosedResourceError):
        line.send_nowait(Hello(2))  # refused: nothing queued behind the end
    assert [batch async for batch in line] == [[InitializationComplete()]]
    with pytest.raises(trio.EndOfChannel):
        await line.receive()


async def test_a_parked_reader_wakes_for_a_send_and_for_the_close() -> None:
    line = CommandLine()
    got: list[object] = []

    async def read() -> None:
        async for batch in line:
            got.append(batch)
        got.append("end")

    async with trio.open_nursery() as nursery:
        nursery.start_soon(read)
        await trio.testing.wait_all_tasks_blocked()
        line.send_nowait(Hello(1))
        line.send_nowait(Hello(2))
        await trio.testing.wait_all_tasks_blocked()
        assert got == [[Hello(1), Hello(2)]]
        line.close()
    assert got == [[Hello(1), Hello(2)], "end"]


async def test_a_cancelled_wait_loses_nothing_and_a_second_reader_is_refused() -> None:
    line = CommandLine()
    with trio.move_on_after(1):
        await line.receive()
    line.send_nowait(Hello(1))
    assert await line.receive() == [Hello(1)]

    async with trio.open_nursery() as nursery:
        nursery.start_soon(line.receive)
        await trio.testing.wait_all_tasks_blocked()
        with pytest.raises(trio.BusyResourceError):
            await line.receive()
        nursery.cancel_scope.cancel()


async def test_receiving_what_is_queued_is_still_a_checkpoint() -> None:
    line = CommandLine()
    line.send_nowait(Hello(1))
    with trio.CancelScope() as scope:
        scope.cancel()
        await line.receive()
    assert scope.cancelled_caught
    assert await line.receive() == [Hello(1)]


async def test_send_many_queues_a_burst_in_order_and_wakes_a_parked_reader_once() -> None:
    line = CommandLine()
    got: list[object] = []

    async def read() -> None:
        async for batch in line:
            got.append(batch)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(read)
        await trio.testing.wait_all_tasks_blocked()
        line.send_nowait(Hello(1))
        line.send_many_nowait([CreateInstance(), InitializationComplete()])
        line.send_many_nowait([])
        await trio.testing.wait_all_tasks_blocked()
        line.close()
    assert got == [[Hello(1), CreateInstance(), InitializationComplete()]]


async def test_send_many_on_a_closed_line_raises_and_queues_nothing() -> None:
    line = CommandLine()
    line.send_nowait(Hello(1))
    line.close()
    with pytest.raises(trio.ClosedResourceError, match=r"^the connection is closed$"):
        line.send_many_nowait([Hello(2), CreateInstance()])
    with pytest.raises(trio.ClosedResourceError):
        line.send_many_nowait([])
    assert [batch async for batch in line] == [[Hello(1)]]
