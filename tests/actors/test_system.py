from __future__ import annotations

from pathlib import Path

import pytest
import trio
import trio.testing
from mypy import api as mypy_api

import actors
from actors import ActorNameError, EventKind, Inbox

from .messages import Add, Boom, Total, counter, recorder


async def test_spawn_returns_a_reference_that_accepts_messages_at_once() -> None:
    async with actors.open_system() as system:
        ref = await system.spawn(counter, name="ready")
        ref.tell_nowait(Add(5))
        assert await ref.ask(Total) == 5
        assert ref.name == "ready"
        assert ref.address.name == "ready"


async def test_leaving_the_system_stops_actors_last_spawned_first() -> None:
    trace = actors.Trace()
    async with actors.open_system(tracer=trace) as system:
        for name in ("first", "second", "third"):
            await system.spawn(counter, name=name)
    stopped = [event.actor for event in trace if event.kind is EventKind.STOPPED]
    assert stopped == ["third", "second", "first"]


async def test_a_producer_spawned_after_its_consumer_drains_into_it_on_exit() -> None:
    seen: list[object] = []

    async def producer(inbox: Inbox[int], sink: actors.ActorRef[object]) -> None:
        async for envelope in inbox:
            await sink.tell(envelope.message)

    async with actors.open_system() as system:
        sink = await system.spawn(recorder, seen, name="sink")
        source = await system.spawn(producer, sink, name="source")
        for value in range(10):
            await source.tell(value)
    assert seen == list(range(10))


async def test_a_live_name_cannot_be_taken_twice_but_a_stopped_one_can() -> None:
    async with actors.open_system() as system:
        first = await system.spawn(counter, name="unique")
        with pytest.raises(ActorNameError, match=r"^an actor named 'unique' is already running$"):
            await system.spawn(counter, name="unique")
        assert await first.ask(Total) == 0  # the refused spawn changed nothing
        await first.stop()
        second = await system.spawn(counter, name="unique")
        assert second != first


async def test_default_names_come_from_the_behaviour() -> None:
    async with actors.open_system() as system:
        ref = await system.spawn(counter)
        assert ref.name.startswith("counter-")


async def test_an_actor_can_live_in_a_nursery_passed_in() -> None:
    async with actors.open_system() as system, trio.open_nursery() as nursery:
        ref = await system.spawn(counter, nursery=nursery)
        await ref.tell(Add(3))
        assert await ref.ask(Total) == 3
        await ref.stop()


async def test_a_failing_actor_cancels_its_siblings_and_its_error_reaches_the_caller() -> None:
    trace = actors.Trace()
    with pytest.RaisesGroup(pytest.RaisesExc(ValueError, match=r"^boom\n")) as info:
        async with actors.open_system(tracer=trace) as system:
            await system.spawn(counter, name="sibling")
            failing = await system.spawn(counter, name="failing")
            await failing.tell(Boom())
            await trio.sleep_forever()
    (error,) = info.value.exceptions
    assert error.__notes__ == ["raised by actor 'failing' while handling message 0"]
    kinds = {(event.actor, event.kind) for event in trace}
    assert ("failing", EventKind.FAILED) in kinds
    assert ("sibling", EventKind.STOPPED) in kinds


async def test_the_system_seed_defaults_to_zero_and_drives_its_random() -> None:
    async with actors.open_system() as first, actors.open_system(seed=0) as second:
        assert first.seed == 0
        assert first.random.random() == second.random.random()
    async with actors.open_system(seed=7) as seeded:
        assert seeded.seed == 7


async def test_a_cancelled_system_ends_at_once_and_reports_queued_messages() -> None:
    trace = actors.Trace()
    never = trio.Event()

    async def stuck(inbox: Inbox[int]) -> None:
        await inbox.receive()
        await never.wait()

    async with actors.open_system(tracer=trace) as system:
        ref = await system.spawn(stuck, name="stuck")
        await ref.tell(1)
        await ref.tell(2)
        await trio.testing.wait_all_tasks_blocked()
        system.cancel()
    assert ref.statistics().state is actors.ActorState.STOPPED
    assert [(e.kind, e.seq) for e in trace.for_actor("stuck")][-2:] == [
        (EventKind.DROPPED, 1),
        (EventKind.STOPPED, None),
    ]


async def test_a_cancelled_system_ends_its_actors_living_in_a_nursery_passed_in() -> None:
    async with trio.open_nursery() as outer:
        async with actors.open_system() as system:
            ref = await system.spawn(counter, name="outside", nursery=outer)
            system.cancel()
        assert await ref.wait_stopped() == actors.Killed()
        assert system.lookup("outside") is None
    assert trio.current_time() == 0


async def test_a_failing_system_ends_its_actors_living_in_a_nursery_passed_in() -> None:
    async with trio.open_nursery() as outer:
        with pytest.RaisesGroup(pytest.RaisesExc(ValueError, match=r"^boom\n")):
            async with actors.open_system() as system:
                ref = await system.spawn(counter, name="outside", nursery=outer)
                failing = await system.spawn(counter, name="failing")
                await failing.tell(Boom())
                await trio.sleep_forever()
        assert await ref.wait_stopped() == actors.Killed()
    assert trio.current_time() == 0


def plain(inbox: Inbox[Add]) -> None:
    """A behaviour written with ``def`` by mistake."""


async def test_a_plain_function_is_refused_at_once_and_the_name_stays_free() -> None:
    async with actors.open_system() as system:
        with pytest.raises(TypeError, match=r"plain returned NoneType, not something to await"):
            await system.spawn(plain, name="plain")  # type: ignore[arg-type]
        assert system.lookup("plain") is None
        ref = await system.spawn(counter, name="plain")  # the system goes on
        assert await ref.ask(Total) == 0


async def test_a_coroutine_object_or_a_non_callable_is_refused_before_anything_starts() -> None:
    async with actors.open_system() as system:
        with pytest.raises(TypeError, match=r"not spawn\(worker\(arg\)\)"):
            await system.spawn(counter(None), name="c")  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="not int"):
            await system.spawn(3, name="c")  # type: ignore[arg-type]
        assert system.lookup("c") is None


async def test_a_pool_or_a_supervisor_of_plain_functions_is_refused_at_once() -> None:
    async with actors.open_system() as system:
        with pytest.raises(TypeError, match="not something to await"):
            await system.pool(plain, size=2, name="p")  # type: ignore[arg-type]
        assert system.lookup("p") is None
        assert system.lookup("p/0") is None
        async with system.open_supervisor(actors.OneForOne()) as supervisor:
            with pytest.raises(TypeError, match="not something to await"):
                await supervisor.spawn(plain, name="s")  # type: ignore[arg-type]
            ref = await supervisor.spawn(counter, name="s")
            assert await ref.ask(Total) == 0


async def test_cancel_ends_the_rest_of_the_block_without_an_error() -> None:
    reached: list[str] = []
    async with actors.open_system() as system:
        reached.append("before")
        system.cancel()
        await trio.lowlevel.checkpoint()
        reached.append("after")  # never: the block is cancelled
    assert reached == ["before"]


def test_mypy_knows_the_block_may_end_early(tmp_path: Path) -> None:
    snippet = tmp_path / "snippet.py"
    snippet.write_text(
        "import actors\n\n\n"
        "async def name() -> str:\n"
        "    async with actors.open_system() as system:\n"
        "        return system.random.choice('ab')\n",
        encoding="utf-8",
    )
    report, errors, status = mypy_api.run(
        ["--strict", "--no-error-summary", "--cache-dir", str(tmp_path / "cache"), str(snippet)]
    )
    assert (errors, status) == ("", 1)
    assert report.strip() == "snippet.py:4: error: Missing return statement  [return]".replace(
        "snippet.py", str(snippet)
    )


async def test_a_refused_behaviour_leaves_no_trace_of_an_actor() -> None:
    trace = actors.Trace()

    async def generator(inbox: Inbox[Add]) -> None:  # type: ignore[misc]
        yield  # an async generator function: no behaviour

    async with actors.open_system(tracer=trace) as system:
        with pytest.raises(TypeError, match="not something to await"):
            await system.spawn(plain, name="plain")  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="is an async generator function"):
            await system.spawn(generator, name="gen")  # type: ignore[arg-type]
    assert [event for event in trace if event.actor in ("plain", "gen")] == []
