"""The channel adapter: stashing early responses, and dropping a gone
connection's queued commands (DESIGN.md §2.2)."""

from __future__ import annotations

import math

import attrs
import pytest
import trio
import trio.testing

import actors
from actors import Inbox
from replica import (
    CancelPeek,
    Command,
    ConnectionOrder,
    CreateInstance,
    Frontier,
    Frontiers,
    Hello,
    Peek,
    Response,
    SequencedCommand,
)
from replica.runtime._connection import RuntimeConnection
from replica.runtime._process import MAINTENANCE, ChannelAdapter, Process


async def command_log(inbox: Inbox[SequencedCommand], log: list[SequencedCommand]) -> None:
    async for envelope in inbox:
        log.append(envelope.message)


def collecting(connection: RuntimeConnection) -> list[tuple[int, Response]]:
    """What the adapters hand ``connection``, as the process's merge would get it."""
    got: list[tuple[int, Response]] = []
    connection.deliver = lambda local, response: got.append((local, response))
    return got


async def test_a_failed_response_send_drops_queued_commands_and_the_next_connection_is_served() -> (
    None
):
    log: list[SequencedCommand] = []
    order = ConnectionOrder()
    for nonce in (11, 22, 33):
        order.record(nonce)
    offer, connections = trio.open_memory_channel[RuntimeConnection](math.inf)
    async with actors.open_system() as system, trio.open_nursery() as nursery:
        member = await system.spawn(command_log, log, capacity=math.inf)
        channel = system.sequencer([member], name="command-channel")
        adapter = ChannelAdapter(0, 0, connections, channel, order)
        nursery.start_soon(adapter.run)

        first = RuntimeConnection.open(11, adapters=1)
        collecting(first)
        offer.send_nowait(first)
        await trio.testing.wait_all_tasks_blocked()
        # The worker already answers for connection 22, which the adapter has
        # not seen: it stashes the response and leaves connection 11.
        adapter.accept(22, Frontiers(5, Frontier.at(1)))
        await trio.testing.wait_all_tasks_blocked()
        assert adapter.stash == [(22, Frontiers(5, Frontier.at(1)))]
        assert first.dropped_commands == 0

        # Connection 22 arrives with commands queued, but its controller is gone.
        second = RuntimeConnection.open(22, adapters=1)
        collecting(second)
        second.forward([Hello(22)])
        second.forward([CreateInstance()])
        second.broken = True
        offer.send_nowait(second)
        third = RuntimeConnection.open(33, adapters=1)
        collecting(third)
        third.forward([Hello(33)])
        offer.send_nowait(third)
        await trio.testing.wait_all_tasks_blocked()

        assert second.dropped_commands == 2
        assert log == [SequencedCommand(33, 2, Hello(33))]
        nursery.cancel_scope.cancel()


async def test_responses_for_the_current_connection_go_out_tagged_with_the_local_worker() -> None:
    offer, connections = trio.open_memory_channel[RuntimeConnection](math.inf)
    async with trio.open_nursery() as nursery:
        adapter = ChannelAdapter(3, 1, connections, None, None)
        nursery.start_soon(adapter.run)
        connection = RuntimeConnection.open(7, adapters=1)
        got = collecting(connection)
        offer.send_nowait(connection)
        await trio.testing.wait_all_tasks_blocked()
        adapter.accept(7, Frontiers(1, Frontier.at(2)))
        adapter.accept(6, Frontiers(1, Frontier.at(1)))  # not seen: stashed, and it leaves
        assert got == [(1, Frontiers(1, Frontier.at(2)))]
        assert adapter.stash == [(6, Frontiers(1, Frontier.at(1)))]
        nursery.cancel_scope.cancel()


def test_a_command_for_a_connection_its_adapters_left_is_dropped_and_counted() -> None:
    from replica.runtime._process import _deliver

    connection = RuntimeConnection.open(5, adapters=1)
    connection.forward([Hello(5)])
    connection.leave(drop_queued=True)
    _deliver(connection, CreateInstance())
    _deliver(connection, None)
    assert connection.dropped_commands == 2
    assert connection.ended.is_set()


async def test_responses_after_the_adapter_left_are_kept_for_the_next_connection_in_order() -> None:
    # The worker answers twice for a connection the adapter has not seen yet:
    # the adapter leaves its connection on the first answer and must keep the
    # second one too, behind the first (a lost peek answer would leave a read
    # waiting forever).
    offer, connections = trio.open_memory_channel[RuntimeConnection](math.inf)
    async with trio.open_nursery() as nursery:
        adapter = ChannelAdapter(1, 1, connections, None, None)
        nursery.start_soon(adapter.run)
        old = RuntimeConnection.open(11, adapters=1)
        collecting(old)
        offer.send_nowait(old)
        await trio.testing.wait_all_tasks_blocked()
        answers = [(22, Frontiers(5, Frontier.at(1))), (22, Frontiers(6, Frontier.at(2)))]
        for nonce, response in answers:
            adapter.accept(nonce, response)
        await trio.testing.wait_all_tasks_blocked()
        assert adapter.stash == answers
        new = RuntimeConnection.open(22, adapters=1)
        got = collecting(new)
        offer.send_nowait(new)
        await trio.testing.wait_all_tasks_blocked()
        assert got == [(1, response) for _, response in answers]
        nursery.cancel_scope.cancel()


def _routed(*, hold: bool) -> dict[str, list[object]]:
    """What the multiplexer forwards to each runtime for one turn of
    commands, batched (nothing held) or command by command (a runtime held,
    then released)."""
    from replica import (
        CancelPeek,
        CreateDataflow,
        DataflowClass,
        DataflowDescription,
        GlobalId,
        Peek,
        Schedule,
    )
    from replica.runtime._process import INTERACTIVE, MAINTENANCE, Process

    process = Process(0, workers=1)
    for name in (MAINTENANCE, INTERACTIVE):
        process.adapters[name] = [trio.open_memory_channel[RuntimeConnection](math.inf)[0]]
    runtimes = {name: RuntimeConnection.open(9, adapters=1) for name in process.adapters}
    query = attrs.evolve(
        DataflowDescription.index(GlobalId.transient(1), "s", GlobalId.transient(2), (0,), 0),
        until=1,
        dataflow_class=DataflowClass.ONE_SHOT_READ,
    )
    index = DataflowDescription.index(10, "s", 11, (0,), 0)
    commands: list[Command] = [
        Hello(9),
        CreateInstance(),
        CreateDataflow(index),
        CreateDataflow(query),
        Schedule(11),
        Schedule(GlobalId.transient(2)),
        Peek(1, 11, 0),
        CancelPeek(1),
    ]
    if hold:
        process.hold(MAINTENANCE)
    process._route(commands, runtimes)
    if hold:
        process.release(MAINTENANCE)
    got: dict[str, list[object]] = {}
    for name, runtime in runtimes.items():
        got[name] = []
        while True:
            try:
                got[name] += runtime.batches.receive_nowait()
            except trio.WouldBlock:
                break
    assert process.order.position(9) == 0
    # The renderer alone reports: the one-shot read's index interactive, the
    # maintained index maintenance.
    assert process.owners == {
        GlobalId.transient(2): (INTERACTIVE,),
        GlobalId.user(11): (MAINTENANCE,),
    }
    return got


def test_a_turn_of_commands_reaches_each_runtime_alike_batched_or_one_by_one() -> None:
    batched, one_by_one = _routed(hold=False), _routed(hold=True)
    assert batched == one_by_one
    interactive = [type(c).__name__ for c in batched["interactive"]]
    maintenance = [type(c).__name__ for c in batched["maintenance"]]
    # Every command reaches both runtimes, a one-shot read's too (each decides
    # from the class whether it renders it); peeks go to interactive only.
    assert maintenance == [
        "Hello",
        "CreateInstance",
        "CreateDataflow",
        "CreateDataflow",
        "Schedule",
        "Schedule",
    ]
    assert interactive == [
        "Hello",
        "CreateInstance",
        "CreateDataflow",
        "CreateDataflow",
        "Schedule",
        "Schedule",
        "Peek",
        "CancelPeek",
    ]


@pytest.mark.parametrize("hold", [False, True])
def test_a_solo_process_forwards_every_command_to_its_one_runtime(hold: bool) -> None:
    process = Process(0, workers=1)
    process.adapters[MAINTENANCE] = [trio.open_memory_channel[RuntimeConnection](math.inf)[0]]
    runtime = RuntimeConnection.open(9, adapters=1)
    commands: list[Command] = [Hello(9), CreateInstance(), Peek(1, 11, 0), CancelPeek(1)]
    if hold:
        process.hold(MAINTENANCE)
    process._route(list(commands), {MAINTENANCE: runtime})
    if hold:
        process.release(MAINTENANCE)
    batches: list[list[Command]] = []
    while True:
        try:
            batches.append(runtime.batches.receive_nowait())
        except trio.WouldBlock:
            break
    # Nothing held: the turn goes on as one batch.
    assert batches == ([[c] for c in commands] if hold else [commands])
    assert process.order.position(9) == 0


def _responses_through_a_merge(*, at_once: bool) -> tuple[list[Response], ChannelAdapter]:
    """Five frontiers of one worker handed to its adapter one by one or at
    once, through the process's merge, to a controller that goes away after
    taking two of them."""
    from replica.runtime._connection import CommandLine, ResponseLine, ServerEnd

    process = Process(0, workers=1)
    process.adapters[MAINTENANCE] = [trio.open_memory_channel[RuntimeConnection](math.inf)[0]]
    runtime = RuntimeConnection.open(7, adapters=1)
    taken: list[Response] = []

    def controller(response: Response) -> None:
        taken.append(response)
        if len(taken) == 2:
            line.close()

    line = ResponseLine(controller)
    process._merge(ServerEnd(7, CommandLine(), line), {MAINTENANCE: runtime})
    adapter = ChannelAdapter(0, 0, trio.open_memory_channel[RuntimeConnection](0)[1], None, None)
    adapter.current = runtime
    adapter.seen.add(7)
    responses: list[Response] = [Frontiers(id, Frontier.at(id)) for id in range(1, 6)]
    if at_once:
        adapter.accept_many(7, responses)
    else:
        for response in responses:
            adapter.accept(7, response)
    return taken, adapter


def test_responses_handed_on_at_once_fare_as_one_by_one_when_the_controller_goes() -> None:
    taken, adapter = _responses_through_a_merge(at_once=True)
    one_by_one, alone = _responses_through_a_merge(at_once=False)
    assert taken == one_by_one == [Frontiers(1, Frontier.at(1)), Frontiers(2, Frontier.at(2))]
    # The third found the controller gone; the fourth made the adapter leave
    # (lost, as the third); the fifth waits in the stash, as it did.
    assert adapter.stash == alone.stash == [(7, Frontiers(5, Frontier.at(5)))]
    assert adapter.current is None
    assert alone.current is None


def test_responses_handed_on_at_once_without_a_merge_go_one_by_one() -> None:
    connection = RuntimeConnection.open(7, adapters=1)
    got = collecting(connection)
    responses: list[Response] = [Frontiers(id, Frontier.at(id)) for id in range(1, 4)]
    assert connection.send_many(0, responses) == 3
    connection.broken = True
    assert connection.send_many(0, responses) == 0
    assert got == [(0, response) for response in responses]


def test_a_response_line_hands_a_batch_to_a_reader_of_batches_or_one_by_one() -> None:
    from replica.runtime._connection import ResponseLine

    responses: list[Response] = [Frontiers(id, Frontier.at(id)) for id in range(1, 4)]
    batches: list[list[Response]] = []
    one: list[Response] = []
    line = ResponseLine(one.append, reader_many=batches.append)
    line.send_many_nowait(responses)
    assert (batches, one) == ([responses], [])

    def reader(response: Response) -> None:
        one.append(response)
        plain.close()  # the controller goes away after the first

    plain = ResponseLine(reader)
    with pytest.raises(trio.BrokenResourceError):
        plain.send_many_nowait(responses)
    assert one == responses[:1]
    line.close()
    with pytest.raises(trio.BrokenResourceError, match=r"^the controller closed the connection$"):
        line.send_many_nowait(responses)
    assert batches == [responses]


def test_a_merge_hands_what_completes_to_a_reader_of_batches_at_once() -> None:
    from replica.runtime._connection import CommandLine, ResponseLine, ServerEnd

    process = Process(0, workers=2)
    process.adapters[MAINTENANCE] = [trio.open_memory_channel[RuntimeConnection](math.inf)[0]] * 2
    runtime = RuntimeConnection.open(7, adapters=2)
    batches: list[list[Response]] = []
    line = ResponseLine(lambda response: batches.append([response]), reader_many=batches.append)
    process._merge(ServerEnd(7, CommandLine(), line), {MAINTENANCE: runtime})
    first: list[Response] = [Frontiers(1, Frontier.at(3)), Frontiers(2, Frontier.at(3))]
    assert runtime.send_many(0, first) == 2
    assert batches == []  # the other worker has not reported yet
    second: list[Response] = [Frontiers(1, Frontier.at(2)), Frontiers(2, Frontier.at(5))]
    assert runtime.send_many(1, second) == 2
    assert batches == [[Frontiers(1, Frontier.at(2)), Frontiers(2, Frontier.at(3))]]


def test_commands_sequenced_in_bulk_are_the_ones_the_constructor_builds() -> None:
    # all_of writes these slots and no others: a new field must be added there.
    assert [field.name for field in attrs.fields(SequencedCommand)] == [
        "nonce",
        "position",
        "command",
    ]
    commands: list[Command] = [Hello(5), CreateInstance()]
    sequenced = SequencedCommand.all_of(5, 2, commands)
    built = [SequencedCommand(5, 2, command) for command in commands]
    assert sequenced == built
    assert [hash(item) for item in sequenced] == [hash(item) for item in built]
    assert [repr(item) for item in sequenced] == [repr(item) for item in built]
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        sequenced[0].position = 3  # type: ignore[misc]
