"""Under random broadcasts and, concurrently, random joins, leaves and stops
of members with small mailboxes and slow loops, on random schedules: each
actor receives, for each time it was in the group, exactly the stamps from its
join (what ``join`` returned) to its leave (the stamps used when it left), in
order, each with the one message of that stamp. An actor that is stopped
receives a prefix of that: its closed mailbox refuses the rest, a message a
broadcast was still waiting to give it included."""

from __future__ import annotations

import math

import attrs
import pytest
import trio
from hypothesis import given, settings
from hypothesis import strategies as st

import actors
from actors import ActorStoppedError, Inbox

MEMBERS = 4


@attrs.frozen
class Send:
    count: int


@attrs.frozen
class Pause:
    seconds: float


@attrs.frozen
class Join:
    member: int


@attrs.frozen
class Leave:
    member: int


@attrs.frozen
class Stop:
    member: int


members = st.integers(0, MEMBERS - 1)
pauses = st.builds(Pause, st.sampled_from([0, 0.25, 1]))
leader_programs = st.lists(st.one_of(st.builds(Send, st.integers(1, 6)), pauses), max_size=15)
membership_programs = st.lists(
    st.one_of(
        st.builds(Join, members), st.builds(Leave, members), st.builds(Stop, members), pauses
    ),
    max_size=15,
)
capacities = st.lists(st.sampled_from([0, 1, 3, math.inf]), min_size=MEMBERS, max_size=MEMBERS)
batching = st.lists(st.sampled_from([0, None, 1, 2]), min_size=MEMBERS, max_size=MEMBERS)
slowness = st.lists(st.sampled_from([0, 0.25, 0.5]), min_size=MEMBERS, max_size=MEMBERS)
initial = st.sets(members)


@attrs.define
class Period:
    """One time an actor was in the group: from stamp ``first`` to ``end``
    (exclusive; None while it is in)."""

    first: int
    end: int | None = None


async def slow_member(
    inbox: Inbox[int], log: list[tuple[int, int]], pause: float, batch: int | None = 0
) -> None:
    """Log each envelope, pausing after each; ``batch`` 0 receives one at a
    time, else batches of at most ``batch`` (``None``: no limit)."""
    if batch == 0:
        async for envelope in inbox:
            log.append((envelope.seq, envelope.message))
            await trio.sleep(pause)
        return
    while True:
        try:
            envelopes = await inbox.receive_batch(batch)
        except trio.EndOfChannel:
            return
        for envelope in envelopes:
            log.append((envelope.seq, envelope.message))
            await trio.sleep(pause)


async def play(
    capacity: list[float],
    pause: list[float],
    start: set[int],
    leader: list[Send | Pause],
    membership: list[Join | Leave | Stop | Pause],
    batch: list[int | None] | None = None,
) -> tuple[list[list[tuple[int, int]]], list[list[Period]], set[int], int]:
    logs: list[list[tuple[int, int]]] = [[] for _ in range(MEMBERS)]
    periods: list[list[Period]] = [[] for _ in range(MEMBERS)]
    async with actors.open_system() as system:
        refs = [
            await system.spawn(
                slow_member,
                logs[i],
                pause[i],
                0 if batch is None else batch[i],
                name=f"m{i}",
                capacity=capacity[i],
            )
            for i in range(MEMBERS)
        ]
        sequencer = system.sequencer([refs[i] for i in sorted(start)], name="group")
        for i in start:
            periods[i].append(Period(0))
        stopped: set[int] = set()

        async def lead() -> None:
            sent = 0
            for step in leader:
                match step:
                    case Send(count):
                        stamps = await sequencer.broadcast_many(range(sent, sent + count))
                        assert stamps == range(sent, sent + count)
                        sent += count
                    case Pause(seconds):
                        await trio.sleep(seconds)

        async def change() -> None:
            for step in membership:
                match step:
                    case Pause(seconds):
                        await trio.sleep(seconds)
                    case Join(i) | Leave(i) | Stop(i) if i in stopped:
                        pass
                    case Join(i) if periods[i] and periods[i][-1].end is None:
                        with pytest.raises(ValueError, match=r"is already a member$"):
                            sequencer.join(refs[i])
                    case Join(i):
                        periods[i].append(Period(sequencer.join(refs[i])))
                    case Leave(i):
                        member = bool(periods[i]) and periods[i][-1].end is None
                        assert sequencer.leave(refs[i]) is member
                        if member:
                            periods[i][-1].end = sequencer.statistics().stamped
                    case Stop(i):
                        stopped.add(i)
                        if periods[i] and periods[i][-1].end is None:
                            periods[i][-1].end = sequencer.statistics().stamped
                        await refs[i].stop()
                        assert refs[i].address not in sequencer.members
                        with pytest.raises(ActorStoppedError):
                            sequencer.join(refs[i])

        async with trio.open_nursery() as nursery:
            nursery.start_soon(lead)
            nursery.start_soon(change)
        total = sequencer.statistics().stamped
    return logs, periods, stopped, total


@settings(max_examples=150, deadline=None)
@given(
    capacity=capacities,
    pause=slowness,
    start=initial,
    leader=leader_programs,
    membership=membership_programs,
    batch=batching,
    seed=st.integers(0, 2**32),
)
def test_each_member_receives_exactly_the_stamps_of_its_times_in_the_group(
    capacity: list[float],
    pause: list[float],
    start: set[int],
    leader: list[Send | Pause],
    membership: list[Join | Leave | Stop | Pause],
    batch: list[int | None],
    seed: int,
) -> None:
    # Members receive one at a time or in batches (of at most 1 or 2, or
    # everything there is), mailboxes of 0 to unbounded room.
    logs, periods, stopped, total = actors.run(
        play, capacity, pause, start, leader, membership, batch, seed=seed
    )
    for member, (log, times) in enumerate(zip(logs, periods, strict=True)):
        assert all(seq == message for seq, message in log)  # one message per stamp
        received = [seq for seq, _ in log]
        expected = [
            seq
            for period in times
            for seq in range(period.first, total if period.end is None else period.end)
        ]
        if member in stopped:
            assert received == expected[: len(received)]
        else:
            assert received == expected
