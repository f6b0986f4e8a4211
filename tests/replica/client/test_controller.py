"""The controller (``replica.client``): commands sent in one call as one by
one, nothing sent unconnected or cancelled, the connection faults it may
inject, and the shape check of a one-shot read it sends."""

from __future__ import annotations

import logging

import attrs
import pytest
import trio
import trio.testing

from replica import (
    CreateDataflow,
    CreateInstance,
    DataflowClass,
    DataflowDescription,
    Hello,
    InitializationComplete,
    ProtocolError,
    Schedule,
    UpdateConfiguration,
    open_controller,
)

from ..runtime.test_placement import U
from ..runtime.test_replica import index, replica_and_controller
from ..runtime.test_two_runtimes import hydrate, send_all, two_runtimes


async def test_send_many_routes_each_command_as_send_does() -> None:
    async with replica_and_controller(processes=2) as (replica, controller, shards):
        shards.shard("data").write(0, [(1,)])
        setting = UpdateConfiguration((("peek_yielding", "work:5"),))
        await controller.send_many(
            [CreateInstance(), setting, CreateDataflow(index(1001)), Schedule(1001)]
        )
        await controller.send_many(iter([InitializationComplete()]))
        await controller.await_frontier(1001, 1)
        assert await controller.peek(1001, 0) == [(1,)]
        # Process 1 got only what goes to every process (nobody reads it there).
        (runtimes,) = replica.processes[1].served.values()
        queued: list[object] = []
        while True:
            try:
                queued += runtimes["maintenance"].batches.receive_nowait()
            except trio.WouldBlock:
                break
        (nonce,) = replica.processes[1].served
        assert queued == [Hello(nonce), setting]


async def test_send_many_before_connecting_or_cancelled_sends_nothing() -> None:
    async with (
        replica_and_controller() as (replica, _, _),
        open_controller(replica, connect=False) as idle,
    ):
        with pytest.raises(ProtocolError, match=r"^the controller is not connected$"):
            await idle.send_many([CreateInstance()])
    async with replica_and_controller() as (replica, controller, _):
        await controller.send(CreateInstance())
        with trio.CancelScope() as scope:
            scope.cancel()
            await controller.send_many([CreateDataflow(index(1001))])
        assert scope.cancelled_caught
        await controller.send(InitializationComplete())
        await trio.testing.wait_all_tasks_blocked()
        worker = replica.maintenance.workers[0]
        assert [type(command).__name__ for _, _, command in worker.applied] == [
            "Hello",
            "CreateInstance",
            "InitializationComplete",
        ]


async def test_the_first_connection_of_a_process_can_lose_no_hello_at_process_0() -> None:
    async with replica_and_controller() as (_, controller, _):
        with pytest.raises(ProtocolError, match=r"^process 0 must record"):
            await controller.connect(lose_hello_at={0})


async def test_the_controller_logs_a_one_shot_read_that_misses_the_shape(
    caplog: pytest.LogCaptureFixture,
) -> None:
    misfit = attrs.evolve(
        DataflowDescription.index(3000, "data", 3001, (0,), 0),
        until=1,
        dataflow_class=DataflowClass.ONE_SHOT_READ,
    )
    async with two_runtimes() as (replica, controller, shards):
        await hydrate(controller, shards)
        with caplog.at_level(logging.WARNING):
            await send_all(controller, CreateDataflow(misfit), Schedule(3001))
            await controller.await_frontier(3001, 1)
        # Sent all the same, and rendered where its class says.
        assert controller.misfits == ["one-shot read index u3001: export u3001 is not transient"]
        assert "misses the shape of a one-shot read" in caplog.text
        assert replica.processes[0].owners[U(3001)] == ("interactive",)
