"""Synchronous entry points refuse a thread other than their system's Trio thread.

The tests call them from a real worker thread. While the scheduler waits for
that thread it looks idle, and the autojump clock would jump to the test's
virtual deadline, so the clock is held still for the thread's run.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Awaitable, Callable
from typing import TypeVar

import attrs
import pytest
import trio
import trio.testing

import actors
from actors import Inbox, Reply

from .messages import Total, recorder

T = TypeVar("T")

KEY = actors.ServiceKey[object]("key")


async def in_thread(clock: trio.testing.MockClock, fn: Callable[[], T]) -> T:
    """``fn()`` in a worker thread, on a clock held still until it returns."""
    clock.autojump_threshold = math.inf
    try:
        return await trio.to_thread.run_sync(fn)
    finally:
        clock.autojump_threshold = 0


async def test_tell_nowait_from_a_foreign_thread_raises_and_queues_nothing(
    autojump_clock: trio.testing.MockClock,
) -> None:
    seen: list[object] = []
    async with actors.open_system() as system:
        ref = await system.spawn(recorder, seen, name="r")
        await trio.testing.wait_all_tasks_blocked()  # parked in receive
        with pytest.raises(
            RuntimeError,
            match=(
                r"^tell_nowait to actor 'r' was called from a thread other than its actor "
                r"system's trio thread; from another thread, call "
                r"trio\.from_thread\.run_sync\(ref\.tell_nowait, message\)$"
            ),
        ):
            await in_thread(autojump_clock, functools.partial(ref.tell_nowait, 1))
        assert ref.statistics().queued == 0
    assert seen == []


async def test_tell_nowait_through_trio_from_thread_reaches_the_actor(
    autojump_clock: trio.testing.MockClock,
) -> None:
    seen: list[object] = []
    async with actors.open_system() as system:
        ref = await system.spawn(recorder, seen)
        await trio.testing.wait_all_tasks_blocked()
        await in_thread(
            autojump_clock, functools.partial(trio.from_thread.run_sync, ref.tell_nowait, 2)
        )
    assert seen == [2]


async def test_a_reply_sent_from_a_foreign_thread_raises_and_stays_pending(
    autojump_clock: trio.testing.MockClock,
) -> None:
    kept: list[Reply[int]] = []

    async def keeps(inbox: Inbox[Total]) -> None:
        async for envelope in inbox:
            kept.append(envelope.message.reply)

    async with actors.open_system() as system:
        ref = await system.spawn(keeps, name="keeper")
        async with trio.open_nursery() as nursery:
            answers: list[int] = []

            async def ask_keeper() -> None:
                answers.append(await ref.ask(Total))

            nursery.start_soon(ask_keeper)
            await trio.testing.wait_all_tasks_blocked()
            (reply,) = kept
            with pytest.raises(
                RuntimeError,
                match=(
                    r"^send on reply to message 0 of actor 'keeper' was called from a thread "
                    r"other than its actor system's trio thread; from another thread, call "
                    r"trio\.from_thread\.run_sync\(reply\.send, value\)$"
                ),
            ):
                await in_thread(autojump_clock, functools.partial(reply.send, 1))
            assert not reply.done
            await in_thread(
                autojump_clock, functools.partial(trio.from_thread.run_sync, reply.send, 2)
            )
        assert answers == [2]


async def test_closing_an_inbox_from_a_foreign_thread_raises_and_leaves_it_open(
    autojump_clock: trio.testing.MockClock,
) -> None:
    inboxes: list[Inbox[object]] = []

    async def hands_out_its_inbox(inbox: Inbox[object]) -> None:
        inboxes.append(inbox)
        async for _ in inbox:
            pass

    async with actors.open_system() as system:
        ref = await system.spawn(hands_out_its_inbox, name="open")
        (inbox,) = inboxes
        with pytest.raises(
            RuntimeError,
            match=(
                r"^close of the inbox of actor 'open' was called from a thread other than its "
                r"actor system's trio thread; from another thread, call "
                r"trio\.from_thread\.run_sync\(inbox\.close\)$"
            ),
        ):
            await in_thread(autojump_clock, inbox.close)
        assert ref.statistics().state is actors.ActorState.RUNNING


async def test_cancelling_a_system_from_a_foreign_thread_raises_and_cancels_nothing(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with actors.open_system() as system:
        ref = await system.spawn(recorder, [])
        with pytest.raises(
            RuntimeError,
            match=(
                r"^cancel of an actor system was called from a thread other than its actor "
                r"system's trio thread; from another thread, call "
                r"trio\.from_thread\.run_sync\(system\.cancel\)$"
            ),
        ):
            await in_thread(autojump_clock, system.cancel)
        assert ref.statistics().state is actors.ActorState.RUNNING


# The async entry points refuse another trio.run (here in a worker thread)
# the same way, before they touch anything: the actor is not wedged.


@attrs.define
class World:
    """An actor parked in its receive, with its inbox, a supervisor and a
    sequencer over it, all in the test's trio run."""

    system: actors.ActorSystem
    ref: actors.ActorRef[object]
    inbox: Inbox[object]
    supervisor: actors.Supervisor
    sequencer: actors.Sequencer[object]
    seen: list[tuple[int, object]]


ASYNC_ENTRY_POINTS: dict[str, tuple[Callable[[World], Awaitable[object]], str, str]] = {
    "tell": (lambda w: w.ref.tell(1), "tell to actor 'r'", r"run\(ref\.tell, message\)"),
    "ask": (lambda w: w.ref.ask(Total), "ask of actor 'r'", r"run\(ref\.ask, build\)"),
    "stop": (lambda w: w.ref.stop(), "stop of actor 'r'", r"run\(ref\.stop\)"),
    "kill": (lambda w: w.ref.kill(), "kill of actor 'r'", r"run\(ref\.kill\)"),
    "wait_stopped": (
        lambda w: w.ref.wait_stopped(),
        "wait_stopped of actor 'r'",
        r"run\(ref\.wait_stopped\)",
    ),
    "terminate_child": (
        lambda w: w.supervisor.terminate_child(w.ref),
        "terminate_child of supervisor 'sup'",
        r"run\(supervisor\.terminate_child, ref\)",
    ),
    "receive": (
        lambda w: w.inbox.receive(),
        "receive on the inbox of actor 'r'",
        r"run\(inbox\.receive\)",
    ),
    "iteration": (
        lambda w: anext(aiter(w.inbox)),
        "receive on the inbox of actor 'r'",
        r"run\(inbox\.receive\)",
    ),
    "receive_batch": (
        lambda w: w.inbox.receive_batch(),
        "receive_batch on the inbox of actor 'r'",
        r"run\(inbox\.receive_batch\)",
    ),
    "spawn": (
        lambda w: w.system.spawn(recorder, []),
        "spawn in an actor system",
        r"run\(system\.spawn, behaviour\)",
    ),
    "supervisor spawn": (
        lambda w: w.supervisor.spawn(recorder, []),
        "spawn under supervisor 'sup'",
        r"run\(supervisor\.spawn, behaviour\)",
    ),
    "broadcast": (
        lambda w: w.sequencer.broadcast(1),
        "broadcast on sequencer 'seq'",
        r"run\(sequencer\.broadcast, message\)",
    ),
    "broadcast_many": (
        lambda w: w.sequencer.broadcast_many([1]),
        "broadcast_many on sequencer 'seq'",
        r"run\(sequencer\.broadcast_many, messages\)",
    ),
}


async def stamps(
    inbox: Inbox[object], handed_out: list[Inbox[object]], seen: list[tuple[int, object]]
) -> None:
    handed_out.append(inbox)
    async for envelope in inbox:
        seen.append((envelope.seq, envelope.message))


async def in_another_run(
    clock: trio.testing.MockClock, call: Callable[[], Awaitable[object]]
) -> BaseException | None:
    """Await ``call()`` in a ``trio.run`` of a worker thread; what it raised."""

    def other_run() -> BaseException | None:
        async def awaits() -> None:
            await call()

        try:
            trio.run(awaits)
        except BaseException as error:
            return error
        return None

    return await in_thread(clock, other_run)


@pytest.mark.parametrize("entry", ASYNC_ENTRY_POINTS.values(), ids=ASYNC_ENTRY_POINTS.keys())
async def test_an_async_entry_point_awaited_in_another_trio_run_raises_and_changes_nothing(
    autojump_clock: trio.testing.MockClock,
    entry: tuple[Callable[[World], Awaitable[object]], str, str],
) -> None:
    call, name, instead = entry
    seen: list[tuple[int, object]] = []
    handed_out: list[Inbox[object]] = []
    async with actors.open_system() as system, system.open_supervisor(name="sup") as supervisor:
        ref: actors.ActorRef[object] = await system.spawn(stamps, handed_out, seen, name="r")
        sequencer = system.sequencer([ref], name="seq")
        await trio.testing.wait_all_tasks_blocked()  # parked in receive
        world = World(system, ref, handed_out[0], supervisor, sequencer, seen)
        error = await in_another_run(autojump_clock, lambda: call(world))
        assert isinstance(error, RuntimeError)
        assert re.fullmatch(
            f"{name} was called from a thread other than its actor system's trio thread; "
            rf"from another thread, call trio\.from_thread\.{instead}",
            str(error),
        ), str(error)
        assert ref.statistics().state is actors.ActorState.RUNNING
        assert sequencer.statistics().stamped == 0
        await ref.tell("after")
        await sequencer.broadcast("broadcast")
        await ref.stop()
    assert seen == [(0, "after"), (0, "broadcast")]


async def test_tell_driven_in_a_thread_without_trio_raises_and_queues_nothing(
    autojump_clock: trio.testing.MockClock,
) -> None:
    seen: list[object] = []
    async with actors.open_system() as system:
        ref = await system.spawn(recorder, seen, name="r")

        def drive() -> None:
            ref.tell(1).send(None)

        with pytest.raises(
            RuntimeError,
            match=(
                r"^tell to actor 'r' was called from a thread other than its actor system's "
                r"trio thread; from another thread, call "
                r"trio\.from_thread\.run\(ref\.tell, message\)$"
            ),
        ):
            await in_thread(autojump_clock, drive)
        assert ref.statistics().queued == 0
        await ref.tell("after")
    assert seen == ["after"]


async def test_tell_through_trio_from_thread_run_reaches_the_actor(
    autojump_clock: trio.testing.MockClock,
) -> None:
    seen: list[object] = []
    async with actors.open_system() as system:
        ref = await system.spawn(recorder, seen)
        await in_thread(autojump_clock, functools.partial(trio.from_thread.run, ref.tell, 3))
    assert seen == [3]


@pytest.mark.parametrize(
    ("call", "name", "instead"),
    [
        (
            lambda w: w.inbox.mark("note"),
            "mark on the inbox of actor 'r'",
            r"run_sync\(inbox\.mark, detail\)",
        ),
        (
            lambda w: w.sequencer.close(),
            "close of sequencer 'seq'",
            r"run_sync\(sequencer\.close\)",
        ),
        (
            lambda w: w.system.sequencer([w.ref], name="other"),
            "sequencer 'other' of an actor system",
            r"run_sync\(system\.sequencer, members, name\)",
        ),
        (
            lambda w: w.inbox.monitor(w.ref),
            "monitor by actor 'r'",
            r"run_sync\(inbox\.monitor, ref\)",
        ),
        (
            lambda w: w.inbox.demonitor(actors.Monitor(w.ref.address, w.ref.address, 0)),
            "demonitor by actor 'r'",
            r"run_sync\(inbox\.demonitor, monitor\)",
        ),
        (
            lambda w: w.system.lookup("r"),
            "lookup in an actor system",
            r"run_sync\(system\.lookup, key\)",
        ),
        (
            lambda w: w.system.register(KEY, w.ref),
            "register in an actor system",
            r"run_sync\(system\.register, key, ref\)",
        ),
        (
            lambda w: w.system.deregister(KEY, w.ref),
            "deregister in an actor system",
            r"run_sync\(system\.deregister, key, ref\)",
        ),
        (
            lambda w: w.system.find(KEY),
            "find in an actor system",
            r"run_sync\(system\.find, key\)",
        ),
        (
            lambda w: w.system.subscribe(KEY, w.ref),
            "subscribe in an actor system",
            r"run_sync\(system\.subscribe, key, subscriber\)",
        ),
        (
            lambda w: w.system.unsubscribe(KEY, w.ref),
            "unsubscribe in an actor system",
            r"run_sync\(system\.unsubscribe, key, subscriber\)",
        ),
        (
            lambda w: w.sequencer.join(w.ref),
            "join of sequencer 'seq'",
            r"run_sync\(sequencer\.join, ref\)",
        ),
        (
            lambda w: w.sequencer.leave(w.ref),
            "leave of sequencer 'seq'",
            r"run_sync\(sequencer\.leave, ref\)",
        ),
        (
            lambda w: w.inbox.timers.send_after(1, "m"),
            r"timers\.send_after of actor 'r'",
            r"run_sync\(inbox\.timers\.send_after, delay, message\)",
        ),
        (
            lambda w: w.inbox.timers.send_every(1, "m"),
            r"timers\.send_every of actor 'r'",
            r"run_sync\(inbox\.timers\.send_every, delay, message\)",
        ),
        (
            lambda w: w.inbox.timers.cancel("m"),
            r"timers\.cancel of actor 'r'",
            r"run_sync\(inbox\.timers\.cancel, key\)",
        ),
        (
            lambda w: w.inbox.timers.cancel_all(),
            r"timers\.cancel_all of actor 'r'",
            r"run_sync\(inbox\.timers\.cancel_all\)",
        ),
        (
            lambda w: w.inbox.timers.is_active("m"),
            r"timers\.is_active of actor 'r'",
            r"run_sync\(inbox\.timers\.is_active, key\)",
        ),
        (
            lambda w: w.ref.stop_nowait(),
            "stop of actor 'r'",
            r"run_sync\(ref\.stop_nowait\)",
        ),
    ],
    ids=[
        "mark",
        "sequencer close",
        "new sequencer",
        "monitor",
        "demonitor",
        "lookup",
        "register",
        "deregister",
        "find",
        "subscribe",
        "unsubscribe",
        "sequencer join",
        "sequencer leave",
        "timers send_after",
        "timers send_every",
        "timers cancel",
        "timers cancel_all",
        "timers is_active",
        "stop_nowait",
    ],
)
async def test_the_other_synchronous_entry_points_refuse_a_foreign_thread(
    autojump_clock: trio.testing.MockClock, call: Callable[[World], object], name: str, instead: str
) -> None:
    trace = actors.Trace()
    handed_out: list[Inbox[object]] = []
    async with actors.open_system(tracer=trace) as system, system.open_supervisor() as supervisor:
        ref: actors.ActorRef[object] = await system.spawn(stamps, handed_out, [], name="r")
        sequencer = system.sequencer([ref], name="seq")
        world = World(system, ref, handed_out[0], supervisor, sequencer, [])
        with pytest.raises(
            RuntimeError,
            match=(
                f"^{name} was called from a thread other than its actor system's trio thread; "
                rf"from another thread, call trio\.from_thread\.{instead}$"
            ),
        ):
            await in_thread(autojump_clock, lambda: call(world))
        assert not sequencer.statistics().closed
        assert [event.kind for event in trace] == [actors.EventKind.SPAWNED]
