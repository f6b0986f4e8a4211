"""Inbox.receive_batch: everything the mailbox holds, in one checkpoint."""

from __future__ import annotations

import math

import attrs
import pytest
import trio
import trio.testing

import actors
from actors import Down, EventKind, Inbox

from .messages import Add, Hold, Total, counter


@attrs.define
class Batches:
    """A behaviour that receives in batches (of at most ``limit``) and logs
    each batch's (message, stamp) pairs; it waits on a ``Hold`` it receives
    and answers a ``Total`` with the number of envelopes taken so far."""

    limit: int | None = None
    batches: list[list[tuple[object, int]]] = attrs.field(factory=list)
    ended: bool = False

    async def behaviour(self, inbox: Inbox[object]) -> None:
        while True:
            try:
                batch = await inbox.receive_batch(self.limit)
            except trio.EndOfChannel:
                self.ended = True
                return
            self.batches.append([(envelope.message, envelope.seq) for envelope in batch])
            for envelope in batch:
                match envelope.message:
                    case Hold(event):
                        await event.wait()
                    case Total(reply):
                        reply.send(sum(len(batch) for batch in self.batches))


async def test_receive_batch_takes_everything_queued_in_order_in_one_call() -> None:
    batches = Batches()
    async with actors.open_system() as system:
        ref = await system.spawn(batches.behaviour, capacity=math.inf)
        await trio.testing.wait_all_tasks_blocked()
        ref.tell_nowait("first")
        for value in range(5):
            ref.tell_nowait(value)
        await trio.testing.wait_all_tasks_blocked()
        assert ref.statistics().delivered == 6
        ref.tell_nowait("later")
        await trio.testing.wait_all_tasks_blocked()
    # The first wakes the actor, which takes the rest with it.
    assert batches.batches == [
        [("first", 0), (0, 1), (1, 2), (2, 3), (3, 4), (4, 5)],
        [("later", 6)],
    ]


async def test_receive_batch_takes_at_most_limit_and_leaves_the_rest_queued() -> None:
    batches = Batches(limit=2)
    release = trio.Event()
    async with actors.open_system() as system:
        ref = await system.spawn(batches.behaviour, capacity=math.inf)
        ref.tell_nowait(Hold(release))
        await trio.testing.wait_all_tasks_blocked()
        for value in range(5):
            ref.tell_nowait(value)
        release.set()
        await trio.testing.wait_all_tasks_blocked()
    assert batches.batches == [[(Hold(release), 0)], [(0, 1), (1, 2)], [(2, 3), (3, 4)], [(4, 5)]]


async def test_receive_batch_ends_with_end_of_channel_once_closed_and_drained() -> None:
    batches = Batches()
    release = trio.Event()
    async with actors.open_system() as system:
        ref = await system.spawn(batches.behaviour, capacity=math.inf)
        ref.tell_nowait(Hold(release))
        await trio.testing.wait_all_tasks_blocked()
        ref.tell_nowait(1)
        ref.tell_nowait(2)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(ref.stop)
            await trio.testing.wait_all_tasks_blocked()
            release.set()
    assert batches.batches == [[(Hold(release), 0)], [(1, 1), (2, 2)]]
    assert batches.ended


@pytest.mark.parametrize("limit", [0, -1])
async def test_receive_batch_refuses_a_limit_below_one(limit: int) -> None:
    raised: list[BaseException] = []

    async def behaviour(inbox: Inbox[int], ready: trio.Event) -> None:
        await ready.wait()
        try:
            await inbox.receive_batch(limit)
        except ValueError as error:
            raised.append(error)
        assert inbox.ref.statistics().delivered == 0

    ready = trio.Event()
    async with actors.open_system() as system:
        ref = await system.spawn(behaviour, ready, name="taker", capacity=math.inf)
        ref.tell_nowait(1)
        ready.set()
        await ref.wait_stopped()
    assert [str(error) for error in raised] == [
        f"receive_batch on the inbox of actor 'taker': limit must be at least 1, not {limit}"
    ]


@pytest.mark.parametrize("limit", ["2", 1.5, True])
async def test_receive_batch_refuses_a_limit_that_is_not_an_int(limit: object) -> None:
    async def behaviour(inbox: Inbox[int]) -> None:
        with pytest.raises(
            TypeError,
            match=r"^receive_batch on the inbox of actor 'taker': limit must be an int, not \w+$",
        ):
            await inbox.receive_batch(limit)  # type: ignore[arg-type]

    async with actors.open_system() as system:
        ref = await system.spawn(behaviour, name="taker")
        await ref.wait_stopped()


async def test_receive_batch_cancelled_while_waiting_takes_nothing() -> None:
    taken: list[list[int]] = []

    async def behaviour(inbox: Inbox[int]) -> None:
        with trio.move_on_after(1):
            await inbox.receive_batch()
        batch = await inbox.receive_batch()
        taken.append([envelope.message for envelope in batch])

    async with actors.open_system() as system:
        ref = await system.spawn(behaviour, capacity=math.inf)
        await trio.sleep(2)
        ref.tell_nowait(7)
        ref.tell_nowait(8)
        await ref.wait_stopped()
    assert taken == [[7, 8]]


async def test_receive_batch_cancelled_with_messages_queued_takes_nothing() -> None:
    taken: list[list[int]] = []

    async def behaviour(inbox: Inbox[int], ready: trio.Event) -> None:
        await ready.wait()
        with trio.CancelScope() as scope:
            scope.cancel()
            await inbox.receive_batch()
        assert scope.cancelled_caught
        assert inbox.ref.statistics().delivered == 0
        batch = await inbox.receive_batch()
        taken.append([envelope.message for envelope in batch])

    ready = trio.Event()
    async with actors.open_system() as system:
        ref = await system.spawn(behaviour, ready, capacity=math.inf)
        ref.tell_nowait(1)
        ref.tell_nowait(2)
        ready.set()
        await ref.wait_stopped()
    assert taken == [[1, 2]]


async def test_receive_batch_is_one_schedule_point_however_many_it_takes() -> None:
    steps = 0

    class CountSteps(trio.abc.Instrument):
        def __init__(self, task: trio.lowlevel.Task) -> None:
            self.task = task

        def before_task_step(self, task: trio.lowlevel.Task) -> None:
            nonlocal steps
            if task is self.task:
                steps += 1

    sizes: list[int] = []

    async def behaviour(inbox: Inbox[int], ready: trio.Event) -> None:
        await ready.wait()
        instrument = CountSteps(trio.lowlevel.current_task())
        trio.lowlevel.add_instrument(instrument)
        try:
            sizes.append(len(await inbox.receive_batch()))
        finally:
            trio.lowlevel.remove_instrument(instrument)

    ready = trio.Event()
    async with actors.open_system() as system:
        ref = await system.spawn(behaviour, ready, capacity=math.inf)
        for value in range(10 * actors.RECEIVE_BATCH):
            ref.tell_nowait(value)
        ready.set()
        await ref.wait_stopped()
    assert sizes == [10 * actors.RECEIVE_BATCH]
    # The step it was called in, then one step after its checkpoint.
    assert steps == 1


async def test_receive_batch_answers_asks_and_counts_what_it_took() -> None:
    batches = Batches()
    release = trio.Event()
    async with actors.open_system() as system:
        ref = await system.spawn(batches.behaviour, capacity=math.inf)
        ref.tell_nowait(Hold(release))
        await trio.testing.wait_all_tasks_blocked()
        ref.tell_nowait(1)
        async with trio.open_nursery() as nursery:

            async def ask() -> None:
                assert await ref.ask(Total) == 3

            nursery.start_soon(ask)
            await trio.testing.wait_all_tasks_blocked()
            release.set()
        assert ref.statistics().pending_asks == 0
        assert ref.statistics().delivered == 3


async def test_receive_batch_puts_a_down_that_found_the_mailbox_full_in_its_turn() -> None:
    taken: list[list[object]] = []
    release = trio.Event()

    async def slow_watcher(inbox: Inbox[object], target: actors.ActorRef[Add]) -> None:
        inbox.monitor(target)
        first = await inbox.receive()
        taken.append([first.message])
        await release.wait()
        while not any(isinstance(message, Down) for message in taken[-1]):
            batch = await inbox.receive_batch()
            taken.append([envelope.message for envelope in batch])

    async with actors.open_system() as system:
        target = await system.spawn(counter, name="target")
        slow = await system.spawn(slow_watcher, target, name="slow", capacity=2)
        await slow.tell(0)
        await trio.testing.wait_all_tasks_blocked()  # it holds 0 and waits
        slow.tell_nowait(1)
        slow.tell_nowait(2)
        await target.stop()  # its Down goes beyond the capacity
        async with trio.open_nursery() as nursery:
            nursery.start_soon(slow.tell, 4)  # waits for room: accepted after the Down
            await trio.testing.wait_all_tasks_blocked()
            release.set()
        await slow.wait_stopped()
    assert taken[0] == [0]
    assert [type(message).__name__ for message in taken[1]] == ["int", "int", "Down", "int"]
    assert (taken[1][:2], taken[1][3]) == ([1, 2], 4)


async def test_receive_batch_records_each_delivery_in_the_trace() -> None:
    trace = actors.Trace()
    batches = Batches()
    async with actors.open_system(tracer=trace) as system:
        ref = await system.spawn(batches.behaviour, name="taker", capacity=math.inf)
        await trio.testing.wait_all_tasks_blocked()
        for value in range(3):
            ref.tell_nowait(value)
        await trio.testing.wait_all_tasks_blocked()
    delivered = [
        event.seq for event in trace.for_actor("taker") if event.kind == EventKind.DELIVERED
    ]
    assert delivered == [0, 1, 2]
    assert batches.batches == [[(0, 0), (1, 1), (2, 2)]]


async def test_receive_batch_skips_the_message_of_a_timer_cancelled_since() -> None:
    taken: list[list[object]] = []

    async def behaviour(inbox: Inbox[str], release: trio.Event) -> None:
        inbox.timers.send_after(1, "stale", key="k")
        await release.wait()
        assert inbox.timers.cancel("k") is True
        taken.append([envelope.message for envelope in await inbox.receive_batch()])

    release = trio.Event()
    async with actors.open_system() as system:
        ref = await system.spawn(behaviour, release, capacity=math.inf)
        await ref.tell("before")
        await trio.sleep(2)  # "stale" posted at 1, behind "before"
        await ref.tell("after")
        assert ref.statistics().queued == 3
        release.set()
        await ref.wait_stopped()
    assert taken == [["before", "after"]]


@pytest.mark.parametrize("queued", [1, 2])
async def test_receive_batch_lets_a_sender_waiting_for_room_in_once_it_took_some(
    queued: int,
) -> None:
    # A batch cut by its limit still frees room in the mailbox: a sender that
    # waited for room goes in at once, as receive lets it in (it must not
    # stay parked while the actor handles the batch, here waiting on the
    # sender itself: that would be a deadlock).
    batches = Batches(limit=1)
    first, second = trio.Event(), trio.Event()
    sent: list[str] = []

    async def late_sender(ref: actors.ActorRef[object]) -> None:
        await ref.tell("late")
        sent.append("late")
        second.set()

    async with actors.open_system() as system:
        ref = await system.spawn(batches.behaviour, capacity=queued)
        ref.tell_nowait(Hold(first))
        await trio.testing.wait_all_tasks_blocked()  # it holds `first`
        ref.tell_nowait(Hold(second))
        for value in range(queued - 1):
            ref.tell_nowait(value)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(late_sender, ref)
            await trio.testing.wait_all_tasks_blocked()
            assert sent == []  # the mailbox is full
            first.set()
            await trio.testing.wait_all_tasks_blocked()
            # The actor took `second` and waits on it: the sender got in.
            assert sent == ["late"]
    taken = [message for batch in batches.batches for message, _ in batch]
    assert taken == [Hold(first), Hold(second), *range(queued - 1), "late"]
