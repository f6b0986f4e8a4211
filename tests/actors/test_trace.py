from __future__ import annotations

import io

import trio
import trio.lowlevel

import actors
from actors import EventKind, Inbox, Trace, TraceEvent

from .messages import Add, Total, counter


def test_a_trace_round_trips_through_json_lines() -> None:
    trace = Trace(
        [
            TraceEvent(0.0, "a", EventKind.SPAWNED),
            TraceEvent(1.5, "a", EventKind.DELIVERED, 0, "sender-é"),
            TraceEvent(2.0, "a", EventKind.FAILED, None, 'ValueError("x\\n")'),
        ]
    )
    buffer = io.StringIO()
    trace.write_jsonl(buffer)
    lines = buffer.getvalue().splitlines()
    assert lines[1] == (
        '{"actor": "a", "detail": "sender-é", "kind": "delivered", "seq": 0, "time": 1.5}'
    )
    assert Trace.read_jsonl(lines).events == trace.events


async def test_the_trace_records_deliveries_with_stamp_sender_and_trio_time() -> None:
    trace = Trace()
    async with actors.open_system(tracer=trace) as system:
        ref = await system.spawn(counter, name="c")
        await trio.sleep(2)
        await ref.tell(Add(1))
        await ref.ask(Total)
    assert [(e.time, e.actor, e.kind, e.seq, e.detail) for e in trace] == [
        (0.0, "c", EventKind.SPAWNED, None, None),
        (2.0, "c", EventKind.DELIVERED, 0, None),
        (2.0, "c", EventKind.DELIVERED, 1, None),
        (2.0, "c", EventKind.STOPPING, None, None),
        (2.0, "c", EventKind.STOPPED, None, "stopped"),
    ]


async def racing_program() -> list[TraceEvent]:
    """Five actors race to feed one sink; who wins each round is the scheduler's call."""
    trace = Trace()

    async def sink(inbox: Inbox[int]) -> None:
        async for _ in inbox:
            pass

    async def feeder(inbox: Inbox[int], target: actors.ActorRef[int]) -> None:
        async for envelope in inbox:
            for round_ in range(envelope.message):
                await target.tell(round_)
                await trio.lowlevel.checkpoint()

    async with actors.open_system(tracer=trace) as system:
        target = await system.spawn(sink, name="sink", capacity=1)
        feeders = [await system.spawn(feeder, target, name=f"feeder-{i}") for i in range(5)]
        for ref in feeders:
            ref.tell_nowait(1 + system.random.randrange(4))
    return trace.events


def test_the_same_seed_gives_the_same_trace() -> None:
    first = actors.run(racing_program, seed=11)
    second = actors.run(racing_program, seed=11)
    assert first == second
    assert len(first) > 20


def test_the_seed_drives_the_schedule() -> None:
    # Not vacuous: different seeds do interleave the racing feeders differently.
    traces = {tuple(actors.run(racing_program, seed=seed)) for seed in range(8)}
    assert len(traces) > 1


def test_run_restores_trios_scheduler_settings() -> None:
    import trio._core._run as trio_run

    state = trio_run._r.getstate()
    flag = trio_run._ALLOW_DETERMINISTIC_SCHEDULING
    actors.run(racing_program, seed=3)
    assert trio_run._r.getstate() == state
    assert flag == trio_run._ALLOW_DETERMINISTIC_SCHEDULING


def test_the_run_seed_is_the_systems_default_seed() -> None:
    async def seed_of_system() -> int:
        assert actors.current_seed() == 42
        async with actors.open_system() as system:
            seed = system.seed
        return seed

    assert actors.run(seed_of_system, seed=42) == 42


async def test_a_behaviour_can_mark_its_own_events_in_the_trace() -> None:
    trace = Trace()

    async def phases(inbox: Inbox[int]) -> None:
        async for envelope in inbox:
            inbox.mark(f"phase {envelope.message}", envelope.seq)

    async with actors.open_system(tracer=trace) as system:
        ref = await system.spawn(phases, name="p")
        await ref.tell(7)
    marks = [(e.kind, e.seq, e.detail) for e in trace if e.kind is EventKind.MARK]
    assert marks == [(EventKind.MARK, 0, "phase 7")]
