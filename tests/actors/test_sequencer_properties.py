"""Under random sends, stops and closures, every member of a sequencer's group
receives the same stamped messages in the same order: survivors all of them,
a stopped member exactly those broadcast before it stopped."""

from __future__ import annotations

import math

import attrs
import pytest
import trio
from hypothesis import given, settings
from hypothesis import strategies as st

import actors
from actors import Inbox


@attrs.frozen
class Send:
    count: int


@attrs.frozen
class Stop:
    member: int


@attrs.frozen
class Close:
    pass


Operation = Send | Stop | Close

operations = st.lists(
    st.one_of(
        st.builds(Send, st.integers(0, 12)),
        st.builds(Stop, st.integers(0, 3)),
        st.just(Close()),
    ),
    max_size=25,
)
capacities = st.lists(st.sampled_from([0, 1, 3, math.inf]), min_size=1, max_size=4)


async def slow_member(inbox: Inbox[int], log: list[tuple[int, int]], pause: float) -> None:
    async for envelope in inbox:
        log.append((envelope.seq, envelope.message))
        await trio.sleep(pause)


async def play(
    capacity: list[float], program: list[Operation]
) -> tuple[list[int], list[list[tuple[int, int]]], dict[int, int]]:
    logs: list[list[tuple[int, int]]] = [[] for _ in capacity]
    stamped: list[int] = []
    stopped_at: dict[int, int] = {}
    async with actors.open_system() as system:
        members = [
            await system.spawn(slow_member, log, index * 0.25, capacity=cap)
            for index, (log, cap) in enumerate(zip(logs, capacity, strict=True))
        ]
        sequencer = system.sequencer(members, name="seq")
        closed = False
        for operation in program:
            match operation:
                case Send(count):
                    batch = list(range(len(stamped), len(stamped) + count))
                    if closed:
                        with pytest.raises(trio.ClosedResourceError):
                            await sequencer.broadcast_many(batch)
                    else:
                        await sequencer.broadcast_many(batch)
                        stamped.extend(batch)
                case Stop(member) if member < len(members):
                    if member not in stopped_at:
                        stopped_at[member] = len(stamped)
                    await members[member].stop()
                case Close():
                    sequencer.close()
                    closed = True
    return stamped, logs, stopped_at


@settings(max_examples=150, deadline=None)
@given(capacity=capacities, program=operations, seed=st.integers(0, 2**32))
def test_members_receive_identical_stamped_sequences(
    capacity: list[float], program: list[Operation], seed: int
) -> None:
    stamped, logs, stopped_at = actors.run(play, capacity, program, seed=seed)
    expected = list(enumerate(stamped))
    for member, log in enumerate(logs):
        assert log == expected[: stopped_at.get(member, len(stamped))]
