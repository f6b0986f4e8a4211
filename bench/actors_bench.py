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
* ``actors ask timeout=5``: the same with ``timeout=5.0`` (the deadline is
  kept by the system's timer task).
* ``actors tell``: one-way ``await ref.tell(i)`` to a counting actor with the
  default mailbox capacity, timed until it has received all of them.
* ``actors timers N=n``: n actors (default mailboxes) each with
  ``send_every(1, Tick())``, on Trio's autojump ``MockClock``; one op is one
  tick taken by its actor, timed over :data:`TIMER_ROUNDS` beats (so the time
  is the cost of the firings, not the virtual seconds). Compare with ``trio
  sleep loops N=n``: n bare tasks in ``while True: await trio.sleep(1)``, one
  op one wake-up, measured the same way.
* ``actors Down N=n``: one watcher monitors n idle actors living in their own
  nursery; the nursery is cancelled, and one op is one ``Down`` the watcher
  takes, timed from the cancel until it has all n. Compare with ``actors
  tell`` (time per message), and with ``actors end N=n``: the same without
  the watcher, timed until the n actors ended (what the ``Down`` adds is the
  difference of the times per op), and ``trio tasks cancelled N=n``: n bare
  tasks parked on a memory channel, cancelled the same way (what trio's own
  cancellation of n parked tasks costs). ``actors Down stopped N=n``: the
  n monitored actors stopped gracefully with ``ref.stop_nowait()`` instead
  of cancelled, timed until the watcher has every ``Down``. ``actors Down
  delivery N=n``: one
  actor monitored n times by one watcher is killed, one op one ``Down``
  taken: the delivery of a ``Down`` alone, the end it reports paid once
  (another reading of "time per Down" than ``actors Down``, which charges
  each ``Down`` the end of its actor).

Not rows: :func:`idle_actor_memory` (bytes per idle actor, with tracemalloc),
which ``bench/run.py`` prints after the table, and the same figure for an
actor that uses a feature (:func:`feature_memory`), which ``python
bench/actors_bench.py`` prints.
"""

from __future__ import annotations

import gc
import sys
import time
import tracemalloc
from collections.abc import Awaitable, Callable
from typing import Any

import attrs
import trio
import trio.testing

import actors
from actors import Down, Inbox, Reply

SEQUENCER_BATCH = 64
"""Messages per ``broadcast_many`` call in the ``actors sequencer K=k`` rows."""

SEQUENCER_M = 10_000  # messages broadcast (deliveries = M * K)
SEQUENCER_KS = (1, 2, 4, 8, 16)
ASK_N = 20_000  # round trips
TELL_N = 50_000  # one-way messages
TIMER_ACTORS = 10_000  # actors with a periodic timer (and bare tasks in a sleep loop)
TIMER_ROUNDS = 5  # beats timed
DOWN_ACTORS = 10_000  # monitored actors ended
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


@attrs.frozen
class Tick:
    pass


TICK = Tick()


@attrs.define
class Countdown:
    """Counts ops across tasks; ``done`` once ``left`` reaches 0."""

    left: int
    done: trio.Event = attrs.field(factory=trio.Event)

    def count(self) -> None:
        self.left -= 1
        if self.left == 0:
            self.done.set()


async def ticking(inbox: Inbox[Tick], countdown: Countdown) -> None:
    inbox.timers.send_every(1, TICK)
    async for _ in inbox:
        countdown.count()


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
                elapsed = time.perf_counter() - t0  # stopping the members is not timed
            return elapsed

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
            elapsed = time.perf_counter() - t0  # stopping the actor is not timed
        return elapsed

    return n, trio.run(main)


# --------------------------------------------------------------------------
# Timers, against bare trio sleep loops
# --------------------------------------------------------------------------


def _on_mock_clock(main: Callable[[], Awaitable[float]]) -> float:
    """``trio.run(main)`` on the autojump ``MockClock``: virtual seconds
    cost nothing, so ``main`` times only the work of each beat."""
    result: float = trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))
    return result


def actors_timers(n: int) -> tuple[int, float]:
    async def main() -> float:
        countdown = Countdown(n * TIMER_ROUNDS)
        async with actors.open_system() as system:
            for i in range(n):
                await system.spawn(ticking, countdown, name=f"ticking-{i}")
            await trio.testing.wait_all_tasks_blocked()  # every timer set, none due
            t0 = time.perf_counter()
            await countdown.done.wait()
            elapsed = time.perf_counter() - t0
            system.cancel()
        return elapsed

    return n * TIMER_ROUNDS, _on_mock_clock(main)


def trio_sleep_loops(n: int) -> tuple[int, float]:
    async def main() -> float:
        countdown = Countdown(n * TIMER_ROUNDS)

        async def loop() -> None:
            while True:
                await trio.sleep(1)
                countdown.count()

        async with trio.open_nursery() as nursery:
            for _ in range(n):
                nursery.start_soon(loop)
            await trio.testing.wait_all_tasks_blocked()
            t0 = time.perf_counter()
            await countdown.done.wait()
            elapsed = time.perf_counter() - t0
            nursery.cancel_scope.cancel()
        return elapsed

    return n * TIMER_ROUNDS, _on_mock_clock(main)


# --------------------------------------------------------------------------
# Down delivery
# --------------------------------------------------------------------------


async def watching(
    inbox: Inbox[Down], targets: list[actors.ActorRef[int]], countdown: Countdown
) -> None:
    for target in targets:
        inbox.monitor(target)
    async for _ in inbox:
        countdown.count()


async def _nursery_of_its_own(
    emptied: trio.Event, *, task_status: trio.TaskStatus[trio.Nursery]
) -> None:
    """A nursery whose cancellation ends only what was spawned in it;
    ``emptied`` is set once all of that ended."""
    try:
        async with trio.open_nursery() as nursery:
            task_status.started(nursery)
            await trio.sleep_forever()  # until the nursery is cancelled
    finally:
        emptied.set()


def downs_of_stops(n: int) -> tuple[int, float]:
    """n idle actors, all monitored by one watcher, stopped gracefully with
    ``ref.stop_nowait()`` (each drains its empty mailbox and ends as
    ``Stopped``); timed from the first stop until the watcher has every
    ``Down``."""

    async def main() -> float:
        countdown = Countdown(n)
        async with actors.open_system() as system:
            targets = [await system.spawn(idle, name=f"idle-{i}") for i in range(n)]
            await system.spawn(watching, targets, countdown, name="watcher")
            await trio.testing.wait_all_tasks_blocked()
            t0 = time.perf_counter()
            for target in targets:
                target.stop_nowait()
            await countdown.done.wait()
            elapsed = time.perf_counter() - t0
        return elapsed

    return n, trio.run(main)


def make_ends(monitored: bool) -> BenchFn:
    """``fn(n)``: n idle actors in a nursery of their own, which is cancelled;
    timed until a watcher monitoring them all has taken every ``Down``
    (``monitored``), or until they all ended."""

    def bench(n: int) -> tuple[int, float]:
        async def main() -> float:
            countdown = Countdown(n)
            emptied = trio.Event()
            async with actors.open_system() as system, trio.open_nursery() as outer:
                doomed: trio.Nursery = await outer.start(_nursery_of_its_own, emptied)
                targets = [
                    await system.spawn(idle, name=f"idle-{i}", nursery=doomed) for i in range(n)
                ]
                if monitored:
                    await system.spawn(watching, targets, countdown, name="watcher")
                await trio.testing.wait_all_tasks_blocked()
                t0 = time.perf_counter()
                doomed.cancel_scope.cancel()
                await (countdown.done if monitored else emptied).wait()
                elapsed = time.perf_counter() - t0
            return elapsed

        return n, trio.run(main)

    return bench


async def watching_one(
    inbox: Inbox[Down], target: actors.ActorRef[int], n: int, countdown: Countdown
) -> None:
    for _ in range(n):
        inbox.monitor(target)
    async for _ in inbox:
        countdown.count()


def down_delivery(n: int) -> tuple[int, float]:
    """The Down alone: one actor monitored n times by one watcher is killed;
    timed until the watcher has taken every ``Down``. One end, n Downs: the
    time per Down is what delivering one costs (its making, its mailbox or
    system queue, its receive), without the end of an actor per Down that
    ``actors Down`` charges it (see ``actors end``)."""

    async def main() -> float:
        countdown = Countdown(n)
        async with actors.open_system() as system:
            target = await system.spawn(idle, name="target")
            await system.spawn(watching_one, target, n, countdown, name="watcher")
            await trio.testing.wait_all_tasks_blocked()
            t0 = time.perf_counter()
            await target.kill()
            await countdown.done.wait()
            elapsed = time.perf_counter() - t0
            system.cancel()  # the watcher's end is not timed
        return elapsed

    return n, trio.run(main)


def bare_task_ends(n: int) -> tuple[int, float]:
    """The bare-trio reference of ``actors end``: n tasks parked on a
    capacity-64 memory channel each, in a nursery of their own, which is
    cancelled; timed until they all ended."""

    async def main() -> float:
        emptied = trio.Event()
        async with trio.open_nursery() as outer:
            doomed: trio.Nursery = await outer.start(_nursery_of_its_own, emptied)
            channels = []
            for _ in range(n):
                send, receive = trio.open_memory_channel[int](64)
                channels.append(send)
                doomed.start_soon(_drain, receive)
            await trio.testing.wait_all_tasks_blocked()
            t0 = time.perf_counter()
            doomed.cancel_scope.cancel()
            await emptied.wait()
            return time.perf_counter() - t0

    return n, trio.run(main)


async def _drain(receive: trio.MemoryReceiveChannel[int]) -> None:
    async for _ in receive:
        pass


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


async def idle_ticking(inbox: Inbox[Tick]) -> None:
    inbox.timers.send_every(3600, TICK)  # set, and not due while measured
    async for _ in inbox:
        pass


async def idle_echo(inbox: Inbox[Echo]) -> None:
    async for envelope in inbox:
        envelope.message.reply.send(envelope.seq)


_SERVICE = actors.ServiceKey[int]("idle")


async def _use_feature(system: actors.ActorSystem, feature: str, n: int) -> None:
    """Spawn ``n`` actors that use ``feature``, and use it."""
    if feature == "timer":
        for i in range(n):
            await system.spawn(idle_ticking, name=f"idle-{i}")
        return
    if feature == "asked":
        for i in range(n):
            echoing = await system.spawn(idle_echo, name=f"idle-{i}")
            await echoing.ask(Echo, timeout=5)
        return
    refs = [await system.spawn(idle, name=f"idle-{i}") for i in range(n)]
    if feature == "monitored":
        await system.spawn(watching, refs, Countdown(n + 1), name="watcher")
    elif feature == "registered":
        for ref in refs:
            system.register(_SERVICE, ref)
    elif feature == "group member":
        group: actors.Sequencer[int] = system.sequencer(name="group")
        for ref in refs:
            group.join(ref)
    else:
        assert feature == "none", feature


FEATURES = ("none", "monitored", "timer", "registered", "group member", "asked")
"""What :func:`feature_memory` measures: idle actors that use nothing, each
watched by a monitor (one watcher monitors them all), each with a periodic
timer, each registered under one service key, each a member of one group,
each asked once with a timeout."""


def feature_memory(feature: str, n: int = 10_000) -> float:
    """Bytes per idle actor that uses ``feature`` (see :data:`FEATURES`),
    everything the feature made counted (the watcher's monitors, the
    registry's entries, the group's members), measured as
    :func:`idle_actor_memory`."""

    async def main() -> float:
        async with actors.open_system() as system:
            await trio.testing.wait_all_tasks_blocked()
            gc.collect()
            before = tracemalloc.take_snapshot()
            await _use_feature(system, feature, n)
            await trio.testing.wait_all_tasks_blocked()
            gc.collect()
            after = tracemalloc.take_snapshot()
            grown = _traced_diff(before, after)
            system.cancel()
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
        Bench(
            f"actors timers N={TIMER_ACTORS}",
            actors_timers,
            TIMER_ACTORS,
            TIMER_ACTORS // QUICK,
            "firing",
        ),
        Bench(
            f"trio sleep loops N={TIMER_ACTORS}",
            trio_sleep_loops,
            TIMER_ACTORS,
            TIMER_ACTORS // QUICK,
            "wake-up",
        ),
        Bench(
            f"actors Down N={DOWN_ACTORS}",
            make_ends(monitored=True),
            DOWN_ACTORS,
            DOWN_ACTORS // QUICK,
            "Down",
        ),
        Bench(
            f"actors Down stopped N={DOWN_ACTORS}",
            downs_of_stops,
            DOWN_ACTORS,
            DOWN_ACTORS // QUICK,
            "Down",
        ),
        Bench(
            f"actors end N={DOWN_ACTORS}",
            make_ends(monitored=False),
            DOWN_ACTORS,
            DOWN_ACTORS // QUICK,
            "end",
        ),
        Bench(
            f"actors Down delivery N={DOWN_ACTORS}",
            down_delivery,
            DOWN_ACTORS,
            DOWN_ACTORS // QUICK,
            "Down",
        ),
        Bench(
            f"trio tasks cancelled N={DOWN_ACTORS}",
            bare_task_ends,
            DOWN_ACTORS,
            DOWN_ACTORS // QUICK,
            "end",
        ),
    ]
    return rows


def __getattr__(name: str) -> Any:
    """``BENCHMARKS``, made when the baseline asks for it (so that running this
    file on its own, for the memory figures, needs no baseline)."""
    if name == "BENCHMARKS":
        return actors_benchmarks()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def main(argv: list[str]) -> int:
    """``python bench/actors_bench.py [N]``: bytes per idle actor for each of
    :data:`FEATURES` (N actors, default 10,000), and a bare trio task's."""
    n = int(argv[0]) if argv else 10_000
    bare = idle_trio_task_memory(n)
    plain = feature_memory("none", n)
    print(f"bytes per idle actor ({n:,} actors, tracemalloc):")
    for feature in FEATURES:
        figure = plain if feature == "none" else feature_memory(feature, n)
        print(f"  {feature:<14} {figure:>8,.0f}  ({figure - plain:+,.0f} for the feature)")
    print(f"  bare trio task on a capacity-64 memory channel: {bare:,.0f} ({plain / bare:.2f}x)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
