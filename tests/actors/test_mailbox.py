from __future__ import annotations

import math

import pytest
import trio
import trio.testing

import actors
from actors import ActorState, ActorStoppedError, EventKind, Inbox

from .messages import Add, CounterMessage, Hold, Total, counter, recorder


async def test_tell_delivers_in_order_with_stamps_and_sender() -> None:
    seen: list[tuple[object, int, str | None]] = []

    async def stamps(inbox: Inbox[int]) -> None:
        async for envelope in inbox:
            sender = None if envelope.sender is None else envelope.sender.name
            seen.append((envelope.message, envelope.seq, sender))

    async def forwarder(inbox: Inbox[int], target: actors.ActorRef[int]) -> None:
        async for envelope in inbox:
            await target.tell(envelope.message * 10)

    async with actors.open_system() as system:
        sink = await system.spawn(stamps, name="sink")
        relay = await system.spawn(forwarder, sink, name="relay")
        await sink.tell(1)
        sink.tell_nowait(2)
        await relay.tell(3)
        await relay.stop()
    assert seen == [(1, 0, None), (2, 1, None), (30, 2, "relay")]


async def test_tell_nowait_on_a_full_mailbox_raises_would_block_and_queues_nothing() -> None:
    release = trio.Event()
    async with actors.open_system() as system:
        ref = await system.spawn(counter, capacity=1)
        ref.tell_nowait(Hold(release))
        await trio.testing.wait_all_tasks_blocked()
        ref.tell_nowait(Add(1))
        with pytest.raises(trio.WouldBlock):
            ref.tell_nowait(Add(100))
        assert ref.statistics().queued == 1
        release.set()
        assert await ref.ask(Total) == 1


async def test_tell_waits_for_room_in_a_full_mailbox() -> None:
    release = trio.Event()
    async with actors.open_system() as system:
        ref = await system.spawn(counter, capacity=1)
        await ref.tell(Hold(release))
        await ref.tell(Add(1))
        with trio.move_on_after(10) as scope:
            await ref.tell(Add(2))
        assert scope.cancelled_caught, "a full mailbox must make tell wait"
        async with trio.open_nursery() as nursery:
            nursery.start_soon(ref.tell, Add(4))
            await trio.testing.wait_all_tasks_blocked()
            release.set()
        assert await ref.ask(Total) == 5


async def test_a_cancelled_tell_leaves_a_gap_in_the_stamps_and_nothing_queued() -> None:
    release = trio.Event()
    stamps: list[int] = []

    async def stamper(inbox: Inbox[CounterMessage]) -> None:
        async for envelope in inbox:
            stamps.append(envelope.seq)
            if isinstance(envelope.message, Hold):
                await envelope.message.event.wait()

    async with actors.open_system() as system:
        ref = await system.spawn(stamper, capacity=0)
        await ref.tell(Hold(release))
        with trio.move_on_after(1):
            await ref.tell(Add(1))
        release.set()
        await ref.tell(Add(2))
    assert stamps == [0, 2]


async def test_a_message_to_a_stopped_actor_raises_actor_stopped_error() -> None:
    async with actors.open_system() as system:
        ref = await system.spawn(counter, name="gone")
        await ref.stop()
        with pytest.raises(ActorStoppedError, match=r"^actor 'gone' is stopped$"):
            await ref.tell(Add(1))
        with pytest.raises(ActorStoppedError, match=r"^actor 'gone' is stopped$"):
            ref.tell_nowait(Add(1))
        with pytest.raises(trio.BrokenResourceError):
            await ref.ask(Total)
        assert ref.statistics().state is ActorState.STOPPED


async def test_graceful_stop_delivers_everything_already_accepted() -> None:
    seen: list[object] = []
    async with actors.open_system() as system:
        ref = await system.spawn(recorder, seen, capacity=math.inf)
        for i in range(200):
            ref.tell_nowait(i)
        await ref.stop()
        assert seen == list(range(200))
        await ref.stop()  # stopping again returns at once


async def test_a_sender_waiting_for_room_when_the_actor_stops_gets_actor_stopped_error() -> None:
    release = trio.Event()
    outcomes: list[str] = []

    async def blocked_sender(ref: actors.ActorRef[CounterMessage]) -> None:
        try:
            await ref.tell(Add(1))
        except ActorStoppedError:
            outcomes.append("refused")

    async with actors.open_system() as system:
        ref = await system.spawn(counter, capacity=0)
        await ref.tell(Hold(release))
        async with trio.open_nursery() as nursery:
            nursery.start_soon(blocked_sender, ref)
            await trio.testing.wait_all_tasks_blocked()
            nursery.start_soon(ref.stop)
            await trio.testing.wait_all_tasks_blocked()
            release.set()
    assert outcomes == ["refused"]


async def test_an_actor_stops_itself_by_closing_its_inbox_and_draining() -> None:
    seen: list[int] = []

    async def until_zero(inbox: Inbox[int]) -> None:
        async for envelope in inbox:
            seen.append(envelope.message)
            if envelope.message == 0:
                inbox.close()

    async with actors.open_system() as system:
        ref = await system.spawn(until_zero)
        for value in (3, 0, 7):
            ref.tell_nowait(value)
        await ref.stop()
        assert seen == [3, 0, 7]


async def test_an_actor_cannot_wait_for_its_own_stop() -> None:
    errors: list[str] = []

    async def selfish(inbox: Inbox[actors.ActorRef[object]]) -> None:
        async for envelope in inbox:
            try:
                await envelope.message.stop()
            except actors.ActorError as error:
                errors.append(str(error))

    async with actors.open_system() as system:
        ref = await system.spawn(selfish, name="selfish")
        await ref.tell(ref)  # type: ignore[arg-type]
    assert errors == [
        "actor 'selfish' cannot wait for its own stop; close its inbox and let its loop drain"
    ]


async def test_messages_left_when_a_behaviour_returns_are_reported_as_dropped() -> None:
    trace = actors.Trace()

    async def takes_one(inbox: Inbox[int]) -> None:
        await inbox.receive()

    async with actors.open_system(tracer=trace) as system:
        ref = await system.spawn(takes_one, name="one", capacity=4)
        for value in range(3):
            ref.tell_nowait(value)
        await trio.testing.wait_all_tasks_blocked()
        assert ref.statistics().state is ActorState.STOPPED
    kinds = [(event.kind, event.seq) for event in trace.for_actor("one")]
    assert kinds == [
        (EventKind.SPAWNED, None),
        (EventKind.DELIVERED, 0),
        (EventKind.STOPPING, None),
        (EventKind.DROPPED, 1),
        (EventKind.DROPPED, 2),
        (EventKind.STOPPED, None),
    ]


async def test_kill_cancels_the_actor_and_reports_undelivered_messages() -> None:
    trace = actors.Trace()
    never = trio.Event()
    async with actors.open_system(tracer=trace) as system:
        ref = await system.spawn(counter, name="victim")
        await ref.tell(Hold(never))
        await ref.tell(Add(1))
        await ref.kill()
        assert ref.statistics().state is ActorState.STOPPED
    assert [event.kind for event in trace.for_actor("victim")][-3:] == [
        EventKind.STOPPING,
        EventKind.DROPPED,
        EventKind.STOPPED,
    ]


@pytest.mark.parametrize("capacity", [-1, 1.5, math.nan])
async def test_a_bad_capacity_is_refused_and_spawns_nothing(capacity: float) -> None:
    async with actors.open_system() as system:
        with pytest.raises(ValueError, match=r"^capacity must be a whole number >= 0"):
            await system.spawn(counter, name="bad", capacity=capacity)
        ref = await system.spawn(counter, name="bad")  # the name was not taken
        assert await ref.ask(Total) == 0


async def test_statistics_describe_the_mailbox() -> None:
    release = trio.Event()
    async with actors.open_system() as system:
        ref = await system.spawn(counter, name="stats", capacity=8)
        await ref.tell(Hold(release))
        await trio.testing.wait_all_tasks_blocked()
        ref.tell_nowait(Add(1))
        ref.tell_nowait(Add(2))
        stats = ref.statistics()
        assert (stats.address.name, stats.state, stats.queued, stats.capacity) == (
            "stats",
            ActorState.RUNNING,
            2,
            8,
        )
        assert (stats.delivered, stats.restarts, stats.pending_asks) == (1, 0, 0)
        release.set()


async def test_a_busy_inbox_yields_to_the_scheduler_once_per_batch() -> None:
    steps = 0

    class CountSteps(trio.abc.Instrument):
        def __init__(self, task: trio.lowlevel.Task) -> None:
            self.task = task

        def before_task_step(self, task: trio.lowlevel.Task) -> None:
            nonlocal steps
            if task is self.task:
                steps += 1

    async def drain(inbox: Inbox[int], done: trio.Event) -> None:
        instrument = CountSteps(trio.lowlevel.current_task())
        trio.lowlevel.add_instrument(instrument)
        try:
            async for envelope in inbox:
                if envelope.message == -1:
                    done.set()
                    return
        finally:
            trio.lowlevel.remove_instrument(instrument)

    done = trio.Event()
    async with actors.open_system() as system:
        ref = await system.spawn(drain, done, capacity=math.inf)
        await trio.testing.wait_all_tasks_blocked()
        for value in range(10 * actors.RECEIVE_BATCH):
            ref.tell_nowait(value)
        ref.tell_nowait(-1)
        await done.wait()
    # one wake-up for the first message, then one turn per batch (plus the last)
    assert steps <= 10 + 2
