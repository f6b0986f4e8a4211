"""Groups: actors join and leave a sequencer while it keeps one total order.
A message goes to the members of the moment it is stamped."""

from __future__ import annotations

import math

import pytest
import trio
import trio.testing

import actors
from actors import ActorStoppedError, EventKind, Sequencer

from .messages import Hold
from .test_sequencer import stamp_recorder

Log = list[tuple[int, object]]


async def test_an_actor_that_joins_receives_the_messages_stamped_after_its_join() -> None:
    early: Log = []
    late: Log = []
    async with actors.open_system() as system:
        first = await system.spawn(stamp_recorder, early, name="first")
        sequencer = system.sequencer([first], name="room")
        await sequencer.broadcast_many(["a", "b"])
        joiner = await system.spawn(stamp_recorder, late, name="joiner")
        assert sequencer.join(joiner) == 2
        assert sequencer.members == (first.address, joiner.address)
        await sequencer.broadcast_many(["c", "d"])
    assert early == [(0, "a"), (1, "b"), (2, "c"), (3, "d")]
    assert late == [(2, "c"), (3, "d")]


async def test_a_member_that_leaves_receives_nothing_stamped_after_it_left() -> None:
    logs: tuple[Log, Log] = ([], [])
    async with actors.open_system() as system:
        stays = await system.spawn(stamp_recorder, logs[0], name="stays")
        goes = await system.spawn(stamp_recorder, logs[1], name="goes")
        sequencer = system.sequencer([stays, goes], name="room")
        await sequencer.broadcast("a")
        assert sequencer.leave(goes) is True
        assert sequencer.leave(goes) is False
        await sequencer.broadcast("b")
        assert sequencer.members == (stays.address,)
        assert goes.statistics().state is actors.ActorState.RUNNING  # leaving is not stopping
    assert logs == ([(0, "a"), (1, "b")], [(0, "a")])


async def test_a_member_that_ends_leaves_the_group_at_once() -> None:
    trace = actors.Trace()
    async with actors.open_system(tracer=trace) as system:
        stays = await system.spawn(stamp_recorder, [], name="stays")
        ends = await system.spawn(stamp_recorder, [], name="ends")
        sequencer = system.sequencer([stays, ends], name="room")
        await sequencer.broadcast("a")
        await ends.stop()
        assert sequencer.members == (stays.address,)
        assert sequencer.statistics().left == (ends.address,)
    left = [(e.actor, e.seq, e.detail) for e in trace if e.kind is EventKind.LEFT]
    assert left[0] == ("ends", 1, "room")


async def test_an_actor_that_left_may_join_again_and_misses_what_was_stamped_between() -> None:
    log: Log = []
    async with actors.open_system() as system:
        member = await system.spawn(stamp_recorder, log, name="m")
        sequencer = system.sequencer([member], name="room")
        await sequencer.broadcast("a")
        sequencer.leave(member)
        await sequencer.broadcast("b")
        assert sequencer.join(member) == 2
        await sequencer.broadcast("c")
    assert log == [(0, "a"), (2, "c")]


async def test_a_group_may_start_empty() -> None:
    log: Log = []
    async with actors.open_system() as system:
        room: Sequencer[object] = system.sequencer(name="room")
        assert await room.broadcast("nobody hears this") == 0
        room.join(await system.spawn(stamp_recorder, log, name="m"))
        await room.broadcast("heard")
    assert log == [(1, "heard")]


async def test_an_actor_that_joins_while_a_broadcast_waits_starts_with_the_next_message() -> None:
    release = trio.Event()
    fast: Log = []
    slow: Log = []
    joiner_log: Log = []
    async with actors.open_system() as system:
        fast_ref = await system.spawn(stamp_recorder, fast, name="fast", capacity=math.inf)
        slow_ref = await system.spawn(stamp_recorder, slow, name="slow", capacity=1)
        await slow_ref.tell(Hold(release))
        sequencer = system.sequencer([fast_ref, slow_ref], name="room")
        async with trio.open_nursery() as nursery:
            nursery.start_soon(sequencer.broadcast_many, range(4))
            await trio.testing.wait_all_tasks_blocked()  # waits to give 1 to "slow"
            joiner = await system.spawn(stamp_recorder, joiner_log, name="joiner")
            assert sequencer.join(joiner) == 2
            release.set()
    assert fast == slow == [(i, i) for i in range(4)]
    assert joiner_log == [(2, 2), (3, 3)]


async def test_a_member_that_leaves_while_a_broadcast_waits_still_gets_the_message_in_flight() -> (
    None
):
    release = trio.Event()
    fast: Log = []
    async with actors.open_system() as system:
        slow_ref = await system.spawn(stamp_recorder, [], name="slow", capacity=1)
        fast_ref = await system.spawn(stamp_recorder, fast, name="fast", capacity=math.inf)
        await slow_ref.tell(Hold(release))
        sequencer = system.sequencer([slow_ref, fast_ref], name="room")
        async with trio.open_nursery() as nursery:
            nursery.start_soon(sequencer.broadcast_many, range(4))
            await trio.testing.wait_all_tasks_blocked()  # waits to give 1 to "slow"
            assert sequencer.leave(fast_ref) is True  # 1 was stamped while it was in
            release.set()
    assert fast == [(0, 0), (1, 1)]


async def test_joining_a_member_again_is_refused() -> None:
    async with actors.open_system() as system:
        member = await system.spawn(stamp_recorder, [], name="m")
        sequencer = system.sequencer([member], name="room")
        with pytest.raises(ValueError, match=r"^sequencer 'room': actor 'm' is already a member$"):
            sequencer.join(member)


async def test_joining_an_actor_whose_mailbox_is_closed_is_refused() -> None:
    async with actors.open_system() as system:
        member = await system.spawn(stamp_recorder, [], name="m")
        sequencer: Sequencer[object] = system.sequencer(name="room")
        await member.stop()
        with pytest.raises(ActorStoppedError, match=r"^actor 'm' is stopped$"):
            sequencer.join(member)
        assert sequencer.members == ()


async def test_joins_and_leaves_are_traced_with_the_first_stamp_received_and_missed() -> None:
    trace = actors.Trace()
    async with actors.open_system(tracer=trace) as system:
        member = await system.spawn(stamp_recorder, [], name="m")
        sequencer: Sequencer[object] = system.sequencer(name="room")
        await sequencer.broadcast("a")
        sequencer.join(member)
        await sequencer.broadcast_many(["b", "c"])
        sequencer.leave(member)
    events = [
        (e.kind, e.actor, e.seq, e.detail)
        for e in trace
        if e.kind in (EventKind.JOINED, EventKind.LEFT)
    ]
    assert events == [(EventKind.JOINED, "m", 1, "room"), (EventKind.LEFT, "m", 3, "room")]
