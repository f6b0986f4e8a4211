"""Benchmarks of the ``actors`` library, as rows beside ``../shared/bench/baseline.py``.

Loaded by the baseline with ``--extra bench/actors_bench.py`` (``bench/run.py``
does that), which registers the baseline as module ``baseline`` first, so
``from baseline import Bench`` finds the same class. Each ``fn(size)`` does its
own setup, times only its hot loop with :func:`time.perf_counter`, tears down
and returns ``(ops, seconds)``, like the baseline's rows. Every row runs under a
plain :func:`trio.run`, as the baseline's trio rows do.

Rows:

* ``actors sequencer K=k`` (k = 1, 2, 4, 8, 16): one :class:`~actors.Sequencer`
  broadcasts M messages (ints) to k member actors with default mailboxes, with
  ``broadcast_many`` in batches of :data:`SEQUENCER_BATCH` (64) messages; one op
  is one delivery (ops = M * k), timed until every member has received all M.
  Compare with the baseline's ``trio fan-out K=k``.
* ``actors sequencer K=8 batch=1``: the same with ``broadcast(msg)``, one
  message per call.
* ``actors ask``: ``await ref.ask(Echo)`` round trips to an echo actor, no
  timeout. Compare with ``trio ping-pong`` and ``pykka ThreadingActor ask``.
* ``actors ask timeout=5``: the same with ``timeout=5.0``.
* ``actors tell``: one-way ``await ref.tell(i)`` to a counting actor with the
  default mailbox capacity, timed until it has received all of them.

Not a row: :func:`idle_actor_memory` (bytes per idle actor, with tracemalloc),
which ``bench/run.py`` prints after the table.
"""

from __future__ import annotations

import gc
import time
import tracemalloc
from collections.abc import Callable
from typing import Any

import attrs
import trio
import trio.testing

import actors
from actors import Inbox, Reply

SEQUENCER_BATCH = 64
"""Messages per ``broadcast_many`` call in the ``actors sequencer K=k`` rows."""

SEQUENCER_M = 10_000  # messages broadcast (deliveries = M * K)
SEQUENCER_KS = (1, 2, 4, 8, 16)
ASK_N = 20_000  # round trips
TELL_N = 50_000  # one-way messages
QUICK = 10  # --quick divides sizes by this

BenchFn = Callable[[int], tuple[int, float]]


# --------------------------------------------------------------------------
# Behaviours and messages
# --------------------------------------------------------------------------


@attrs.frozen
class Echo:
    """Ask the echo actor for the stamp its mailbox gave this message."""

    reply: Reply[int]


async def echo(inbox: Inbox[Echo]) -> None:
    async for envelope in inbox:
        envelope.message.reply.send(envelope.seq)


async def count_to(inbox: Inbox[int], target: int, done: trio.Event) -> None:
    """Count what arrives; set ``done`` once ``target`` messages arrived."""
    count = 0
    async for _ in inbox:
        count += 1
        if count == target:
            done.set()


async def idle(inbox: Inbox[int]) -> None:
    async for _ in inbox:
        pass


# --------------------------------------------------------------------------
# Sequencer fan-out
# --------------------------------------------------------------------------


def make_sequencer(k: int, batch: int) -> BenchFn:
    """``fn(m)``: broadcast m messages to k members, ``batch`` per call
    (``batch=1`` uses ``broadcast``); ops = m * k deliveries."""

    def bench(m: int) -> tuple[int, float]:
        async def main() -> float:
            async with actors.open_system() as system:
                done = [trio.Event() for _ in range(k)]
                members = [
                    await system.spawn(count_to, m, done[i], name=f"member-{i}") for i in range(k)
                ]
                seq = system.sequencer(members, name="seq")
                await trio.lowlevel.checkpoint()  # let the members park on receive
                t0 = time.perf_counter()
                if batch == 1:
                    for i in range(m):
                        await seq.broadcast(i)
                else:
                    for start in range(0, m, batch):
                        await seq.broadcast_many(range(start, min(start + batch, m)))
                for event in done:
                    await event.wait()
                return time.perf_counter() - t0  # stopping the members is not timed

        return m * k, trio.run(main)

    return bench


# --------------------------------------------------------------------------
# Ask round trips
# --------------------------------------------------------------------------


def make_ask(timeout: float | None) -> BenchFn:
    def bench(n: int) -> tuple[int, float]:
        async def main() -> float:
            async with actors.open_system() as system:
                ref = await system.spawn(echo, name="echo")
                await ref.ask(Echo)  # the actor is up and parked on receive
                last = -1
                t0 = time.perf_counter()
                if timeout is None:
                    for _ in range(n):
                        last = await ref.ask(Echo)
                else:
                    for _ in range(n):
                        last = await ref.ask(Echo, timeout=timeout)
                elapsed = time.perf_counter() - t0
            assert last == n, last
            return elapsed

        return n, trio.run(main)

    return bench


# --------------------------------------------------------------------------
# One-way tells
# --------------------------------------------------------------------------


def actors_tell(n: int) -> tuple[int, float]:
    async def main() -> float:
        async with actors.open_system() as system:
            done = trio.Event()
            ref = await system.spawn(count_to, n, done, name="counter")
            await trio.lowlevel.checkpoint()
            t0 = time.perf_counter()
            for i in range(n):
                await ref.tell(i)
            await done.wait()
            return time.perf_counter() - t0  # stopping the actor is not timed

    return n, trio.run(main)


# --------------------------------------------------------------------------
# Memory per idle actor (not a row)
# --------------------------------------------------------------------------


def _traced_diff(before: tracemalloc.Snapshot, after: tracemalloc.Snapshot) -> int:
    ignore = [tracemalloc.Filter(False, tracemalloc.__file__)]
    before = before.filter_traces(ignore)
    after = after.filter_traces(ignore)
    return sum(stat.size_diff for stat in after.compare_to(before, "filename"))


def idle_actor_memory(n: int = 10_000) -> float:
    """Bytes per idle actor: spawn ``n`` actors that wait in ``async for _ in
    inbox`` (default capacity), and divide the growth of the memory tracemalloc
    traced, between a snapshot before and one after, by ``n``."""

    async def main() -> float:
        async with actors.open_system() as system:
            await trio.testing.wait_all_tasks_blocked()
            gc.collect()
            before = tracemalloc.take_snapshot()
            for i in range(n):
                await system.spawn(idle, name=f"idle-{i}")
            await trio.testing.wait_all_tasks_blocked()  # every actor parked on receive
            gc.collect()
            after = tracemalloc.take_snapshot()
            grown = _traced_diff(before, after)
        return grown / n

    return _with_tracemalloc(main)


def idle_trio_task_memory(n: int = 10_000) -> float:
    """For scale: bytes per bare trio task parked in ``async for`` on its own
    memory channel of capacity 64 (what an actor is built from), measured the
    same way as :func:`idle_actor_memory`."""

    async def main() -> float:
        async def task(recv: trio.MemoryReceiveChannel[int]) -> None:
            async for _ in recv:
                pass

        async with trio.open_nursery() as nursery:
            await trio.testing.wait_all_tasks_blocked()
            gc.collect()
            before = tracemalloc.take_snapshot()
            sends = []
            for _ in range(n):
                send, recv = trio.open_memory_channel[int](64)
                sends.append(send)
                nursery.start_soon(task, recv)
            await trio.testing.wait_all_tasks_blocked()  # every task parked on receive
            gc.collect()
            after = tracemalloc.take_snapshot()
            grown = _traced_diff(before, after)
            for send in sends:
                send.close()
        return grown / n

    return _with_tracemalloc(main)


def _with_tracemalloc(main: Callable[[], Any]) -> float:
    was_tracing = tracemalloc.is_tracing()
    if not was_tracing:
        tracemalloc.start()
    try:
        result: float = trio.run(main)
    finally:
        if not was_tracing:
            tracemalloc.stop()
    return result


# --------------------------------------------------------------------------
# Registry
# --------------------------------------------------------------------------


def actors_benchmarks() -> list[Any]:
    from baseline import Bench

    rows = [
        Bench(
            f"actors sequencer K={k}",
            make_sequencer(k, SEQUENCER_BATCH),
            SEQUENCER_M,
            SEQUENCER_M // QUICK,
            "delivery",
        )
        for k in SEQUENCER_KS
    ]
    rows += [
        Bench(
            "actors sequencer K=8 batch=1",
            make_sequencer(8, 1),
            SEQUENCER_M,
            SEQUENCER_M // QUICK,
            "delivery",
        ),
        Bench("actors ask", make_ask(None), ASK_N, ASK_N // QUICK, "round trip"),
        Bench("actors ask timeout=5", make_ask(5.0), ASK_N, ASK_N // QUICK, "round trip"),
        Bench("actors tell", actors_tell, TELL_N, TELL_N // QUICK, "message"),
    ]
    return rows


BENCHMARKS = actors_benchmarks()
