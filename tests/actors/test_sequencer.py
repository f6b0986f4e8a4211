from __future__ import annotations

import math

import attrs
import pytest
import trio
import trio.testing

import actors
from actors import Address, EventKind, Inbox
from actors._core._envelope import stamp_all

from .messages import Hold


async def stamp_recorder(inbox: Inbox[object], seen: list[tuple[int, object]]) -> None:
    async for envelope in inbox:
        if isinstance(envelope.message, Hold):
            await envelope.message.event.wait()
        else:
            seen.append((envelope.seq, envelope.message))


async def test_every_member_receives_the_same_messages_with_the_same_stamps() -> None:
    logs: list[list[tuple[int, object]]] = [[], [], []]
    async with actors.open_system() as system:
        members = [
            await system.spawn(stamp_recorder, log, capacity=capacity)
            for log, capacity in zip(logs, [0, 2, math.inf], strict=True)
        ]
        sequencer = system.sequencer(members, name="seq")
        assert await sequencer.broadcast("a") == 0
        assert await sequencer.broadcast_many(["b", "c", "d"]) == range(1, 4)
        assert await sequencer.broadcast_many([]) == range(4, 4)
    expected = [(0, "a"), (1, "b"), (2, "c"), (3, "d")]
    assert logs == [expected, expected, expected]


async def test_broadcast_envelopes_name_the_sequencer_as_sender() -> None:
    senders: list[str | None] = []

    async def who(inbox: Inbox[int]) -> None:
        async for envelope in inbox:
            senders.append(None if envelope.sender is None else envelope.sender.name)

    async with actors.open_system() as system:
        member = await system.spawn(who)
        await system.sequencer([member], name="leader").broadcast(1)
    assert senders == ["leader"]


async def test_a_batch_checkpoints_once_when_every_mailbox_has_room() -> None:
    steps = 0
    leader = trio.lowlevel.current_task()

    class CountLeaderSteps(trio.abc.Instrument):
        def before_task_step(self, task: trio.lowlevel.Task) -> None:
            nonlocal steps
            if task is leader:
                steps += 1

    async with actors.open_system() as system:
        members = [await system.spawn(stamp_recorder, [], capacity=math.inf) for _ in range(4)]
        sequencer = system.sequencer(members, name="seq")
        instrument = CountLeaderSteps()
        trio.lowlevel.add_instrument(instrument)
        await sequencer.broadcast_many(range(100))
        trio.lowlevel.remove_instrument(instrument)
    assert steps == 1, "400 deliveries must cost the leader one turn, not one each"


async def test_a_full_member_makes_the_broadcast_wait_and_the_order_holds() -> None:
    release = trio.Event()
    slow_log: list[tuple[int, object]] = []
    fast_log: list[tuple[int, object]] = []
    async with actors.open_system() as system:
        fast = await system.spawn(stamp_recorder, fast_log, capacity=math.inf)
        slow = await system.spawn(stamp_recorder, slow_log, capacity=1)
        await slow.tell(Hold(release))
        sequencer = system.sequencer([fast, slow], name="seq")
        async with trio.open_nursery() as nursery:
            nursery.start_soon(sequencer.broadcast_many, range(5))
            await trio.testing.wait_all_tasks_blocked()
            assert len(fast_log) == 2  # message 1 waits for room in the slow mailbox
            release.set()
    assert fast_log == slow_log == [(i, i) for i in range(5)]


async def test_a_batch_that_just_fits_every_mailbox_is_delivered_without_waiting() -> None:
    release = trio.Event()
    logs: list[list[tuple[int, object]]] = [[], []]
    async with actors.open_system() as system:
        parked = await system.spawn(stamp_recorder, logs[0], capacity=3)
        busy = await system.spawn(stamp_recorder, logs[1], capacity=4)
        await busy.tell(Hold(release))
        await trio.testing.wait_all_tasks_blocked()
        await busy.tell("x")  # one place taken: room for 3 more
        sequencer = system.sequencer([parked, busy], name="seq")
        with trio.fail_after(1):  # it never waits for room
            assert await sequencer.broadcast_many(["a", "b", "c"]) == range(3)
        assert busy.statistics().queued == 4
        release.set()
    assert logs == [[(0, "a"), (1, "b"), (2, "c")], [(1, "x"), (0, "a"), (1, "b"), (2, "c")]]


async def test_a_member_whose_mailbox_closed_leaves_at_the_first_stamp_of_a_batch() -> None:
    trace = actors.Trace()
    release = trio.Event()
    stays_log: list[tuple[int, object]] = []

    async def closes(inbox: Inbox[object]) -> None:
        await inbox.receive()
        inbox.close()  # it accepts nothing more, and has not ended yet
        await release.wait()

    async with actors.open_system(tracer=trace) as system:
        stays = await system.spawn(stamp_recorder, stays_log, name="stays")
        closing = await system.spawn(closes, name="closing")
        sequencer = system.sequencer([stays, closing], name="seq")
        await sequencer.broadcast("a")
        await trio.testing.wait_all_tasks_blocked()
        assert await sequencer.broadcast_many(["b", "c"]) == range(1, 3)
        assert [address.name for address in sequencer.statistics().left] == ["closing"]
        release.set()
    assert stays_log == [(0, "a"), (1, "b"), (2, "c")]
    left = [(event.actor, event.seq) for event in trace if event.kind is EventKind.LEFT]
    assert left[0] == ("closing", 1)


async def test_a_second_concurrent_broadcast_is_refused_as_busy() -> None:
    release = trio.Event()
    async with actors.open_system() as system:
        member = await system.spawn(stamp_recorder, [], capacity=0)
        await member.tell(Hold(release))
        sequencer = system.sequencer([member], name="seq")
        async with trio.open_nursery() as nursery:
            nursery.start_soon(sequencer.broadcast, 1)
            await trio.testing.wait_all_tasks_blocked()
            with pytest.raises(
                trio.BusyResourceError,
                match=r"^another task is already broadcasting on sequencer 'seq'$",
            ):
                await sequencer.broadcast(2)
            release.set()
        assert sequencer.statistics().stamped == 1


async def test_a_broadcast_cancelled_midway_breaks_the_sequencer() -> None:
    never = trio.Event()
    first: list[tuple[int, object]] = []
    async with actors.open_system() as system:
        ready = await system.spawn(stamp_recorder, first, capacity=math.inf)
        stuck = await system.spawn(stamp_recorder, [], capacity=0)
        await stuck.tell(Hold(never))
        sequencer = system.sequencer([ready, stuck], name="seq")
        with trio.move_on_after(1):
            await sequencer.broadcast("x")
        message = (
            r"^sequencer 'seq' is broken: a broadcast was cancelled after "
            r"delivering message 0 to 1 of 2 members$"
        )
        with pytest.raises(trio.BrokenResourceError, match=message):
            await sequencer.broadcast("y")
        assert sequencer.statistics().broken
        await stuck.kill()
    assert first == [(0, "x")]


async def test_a_stopped_member_leaves_and_the_others_go_on() -> None:
    trace = actors.Trace()
    logs: list[list[tuple[int, object]]] = [[], []]
    async with actors.open_system(tracer=trace) as system:
        stays = await system.spawn(stamp_recorder, logs[0], name="stays")
        goes = await system.spawn(stamp_recorder, logs[1], name="goes")
        sequencer = system.sequencer([stays, goes], name="seq")
        await sequencer.broadcast("a")
        await goes.stop()
        await sequencer.broadcast("b")
        stats = sequencer.statistics()
        assert [address.name for address in stats.members] == ["stays"]
        assert [address.name for address in stats.left] == ["goes"]
    assert logs == [[(0, "a"), (1, "b")], [(0, "a")]]
    left = [event for event in trace if event.kind is EventKind.LEFT]
    assert [(event.actor, event.seq, event.detail) for event in left] == [
        ("goes", 1, "seq"),
        ("stays", 2, "seq"),  # it ended with the system
    ]


async def test_a_closed_sequencer_refuses_broadcasts() -> None:
    async with actors.open_system() as system:
        member = await system.spawn(stamp_recorder, [])
        sequencer = system.sequencer([member], name="seq")
        sequencer.close()
        sequencer.close()
        with pytest.raises(trio.ClosedResourceError, match=r"^sequencer 'seq' is closed$"):
            await sequencer.broadcast(1)
        assert member.statistics().delivered == 0


async def test_a_stopped_member_is_refused_and_nothing_is_built() -> None:
    async with actors.open_system() as system:
        live = await system.spawn(stamp_recorder, [], name="live")
        stopped = await system.spawn(stamp_recorder, [], name="gone")
        await stopped.stop()
        with pytest.raises(actors.ActorStoppedError, match=r"^actor 'gone' is stopped$"):
            system.sequencer([live, stopped], name="seq")
        assert live._cell.links is None or live._cell.links.on_end == []


async def test_a_member_listed_twice_is_refused_and_nothing_is_built() -> None:
    async with actors.open_system() as system:
        member = await system.spawn(stamp_recorder, [], name="f")
        with pytest.raises(
            ValueError, match=r"^sequencer 'seq': actor 'f' is listed twice as a member$"
        ):
            system.sequencer([member, member], name="seq")
        sequencer = system.sequencer([member], name="seq")
        assert sequencer.address.uid == member.address.uid + 1  # the refusal took no uid
        assert member.statistics().queued == 0


def test_envelopes_stamped_in_bulk_are_the_envelopes_the_constructor_builds() -> None:
    # stamp_all writes these slots and no others: a new field must be added there.
    assert [field.name for field in attrs.fields(actors.Envelope)] == ["message", "seq", "sender"]
    sender = Address("leader", 3)
    stamped = stamp_all(["a", "b"], 7, sender)
    built = [actors.Envelope("a", 7, sender), actors.Envelope("b", 8, sender)]
    assert stamped == built
    assert [hash(envelope) for envelope in stamped] == [hash(envelope) for envelope in built]
    assert [repr(envelope) for envelope in stamped] == [repr(envelope) for envelope in built]
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        stamped[0].seq = 9  # type: ignore[misc]
    assert stamp_all([], 0, None) == []
