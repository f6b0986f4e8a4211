"""Under random programs of timers set, replaced and cancelled on several
actors, on random schedules, every actor receives exactly the messages of
the timers still set when they come due, each at its due time, in the order
of their due times and then of their scheduling (a periodic timer is
scheduled again each time it fires), after the messages told to it earlier
in the same instant.

The program runs at times on a grid that never meets a due time: every wait
is a whole number of seconds plus 1/64, and delays and intervals are whole,
so each timer comes due at the fraction of a second it was set at, which no
later operation shares. So the expected log is exact.
"""

from __future__ import annotations

import heapq
import itertools
import math

import attrs
import trio
from hypothesis import given, settings
from hypothesis import strategies as st

import actors
from actors import Inbox

ACTORS = 3
KEYS = ("a", "b", "c")
TICK = 1 / 64  # the fraction each wait adds


@attrs.frozen
class After:
    actor: int
    key: str
    delay: int


@attrs.frozen
class Every:
    actor: int
    key: str
    interval: int
    delay: int


@attrs.frozen
class Cancel:
    actor: int
    key: str


@attrs.frozen
class Tell:
    actor: int


@attrs.frozen
class Wait:
    seconds: int


Operation = After | Every | Cancel | Tell | Wait
Message = tuple[str, int]  # (key, the operation's number); ("told", n) for a tell
Log = list[tuple[float, Message]]

actor_ids = st.integers(0, ACTORS - 1)
key_names = st.sampled_from(KEYS)
operations = st.lists(
    st.one_of(
        st.builds(After, actor_ids, key_names, st.integers(0, 4)),
        st.builds(Every, actor_ids, key_names, st.integers(1, 3), st.integers(0, 3)),
        st.builds(Cancel, actor_ids, key_names),
        st.builds(Tell, actor_ids),
        st.builds(Wait, st.integers(0, 3)),
    ),
    max_size=30,
)


def expected_logs(program: list[Operation], horizon: float) -> list[Log]:
    """The model: what each actor receives, and when, running until ``horizon``."""
    logs: list[Log] = [[] for _ in range(ACTORS)]
    order = itertools.count()
    heap: list[tuple[float, int, int, str, int]] = []  # (due, order, actor, key, number)
    # The timer set under each key of each actor: (its number, its interval).
    active: list[dict[str, tuple[int, int | None]]] = [{} for _ in range(ACTORS)]
    now = 0.0

    def run_until(end: float) -> None:
        while heap and heap[0][0] <= end:
            due, _, actor, key, number = heapq.heappop(heap)
            timer = active[actor].get(key)
            if timer is None or timer[0] != number:
                continue  # cancelled or replaced
            logs[actor].append((due, (key, number)))
            interval = timer[1]
            if interval is None:
                del active[actor][key]
            else:
                heapq.heappush(heap, (due + interval, next(order), actor, key, number))

    for number, operation in enumerate(program):
        match operation:
            case After(actor, key, delay):
                active[actor][key] = (number, None)
                heapq.heappush(heap, (now + delay, next(order), actor, key, number))
            case Every(actor, key, interval, delay):
                active[actor][key] = (number, interval)
                heapq.heappush(heap, (now + delay, next(order), actor, key, number))
            case Cancel(actor, key):
                active[actor].pop(key, None)
            case Tell(actor):
                logs[actor].append((now, ("told", number)))
            case Wait(seconds):
                run_until(now)  # what came due at this instant, after its operations
                now += seconds + TICK
                run_until(now)  # what came due meanwhile (none at the new instant yet)
    run_until(horizon)
    return logs


async def play(program: list[Operation], horizon: float) -> list[Log]:
    logs: list[Log] = [[] for _ in range(ACTORS)]
    inboxes: list[Inbox[Message]] = []

    async def record(inbox: Inbox[Message], log: Log) -> None:
        inboxes.append(inbox)
        async for envelope in inbox:
            log.append((trio.current_time(), envelope.message))

    async with actors.open_system() as system:
        refs = [
            await system.spawn(record, log, name=f"actor-{index}", capacity=math.inf)
            for index, log in enumerate(logs)
        ]
        for number, operation in enumerate(program):
            match operation:
                case After(actor, key, delay):
                    inboxes[actor].timers.send_after(delay, (key, number), key=key)
                case Every(actor, key, interval, delay):
                    inboxes[actor].timers.send_every(interval, (key, number), key=key, delay=delay)
                case Cancel(actor, key):
                    inboxes[actor].timers.cancel(key)
                case Tell(actor):
                    refs[actor].tell_nowait(("told", number))
                case Wait(seconds):
                    await trio.sleep(seconds + TICK)
        await trio.sleep(horizon - trio.current_time())
    return logs


@settings(max_examples=200, deadline=None)
@given(program=operations, seed=st.integers(0, 2**32))
def test_each_actor_receives_its_live_timers_messages_at_their_due_times_in_order(
    program: list[Operation], seed: int
) -> None:
    waits = sum(operation.seconds + TICK for operation in program if isinstance(operation, Wait))
    horizon = waits + 6 + TICK / 2  # past every one-off timer; off the grid
    assert actors.run(play, program, horizon, seed=seed) == expected_logs(program, horizon)
