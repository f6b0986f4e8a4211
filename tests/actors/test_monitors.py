"""Self references, monitors, Down messages and wait_stopped."""

from __future__ import annotations

import attrs
import pytest
import trio
import trio.testing

import actors
from actors import (
    ActorRef,
    Down,
    EventKind,
    Failed,
    Inbox,
    Killed,
    Monitor,
    Normal,
    OneForOne,
    Stopped,
)

from .messages import Add, Boom, CounterMessage, Total, counter


@attrs.frozen
class Watch:
    target: ActorRef[CounterMessage]


@attrs.frozen
class Unwatch:
    reply: actors.Reply[bool]


WatcherMessage = Watch | Unwatch | Down


async def watcher(inbox: Inbox[WatcherMessage], downs: list[Down]) -> None:
    """Monitors what it is told to; records each Down; Unwatch removes the last monitor."""
    monitors: list[Monitor] = []
    async for envelope in inbox:
        match envelope.message:
            case Watch(target):
                monitors.append(inbox.monitor(target))
            case Unwatch(reply):
                reply.send(inbox.demonitor(monitors.pop()))
            case Down() as down:
                downs.append(down)


async def watched_end(end: str) -> Down:
    """The Down a watcher gets when the counter it watches ends by ``end``."""
    downs: list[Down] = []
    async with actors.open_system() as system:
        target = await system.spawn(counter, name="target")
        watching = await system.spawn(watcher, downs, name="watcher")
        await watching.tell(Watch(target))
        await trio.testing.wait_all_tasks_blocked()
        if end == "stop":
            await target.stop()
        elif end == "kill":
            await target.kill()
        await trio.testing.wait_all_tasks_blocked()
    (down,) = downs
    return down


async def test_inbox_ref_is_the_actors_own_reference_and_survives_restarts() -> None:
    seen: list[ActorRef[CounterMessage | str]] = []

    async def introduces_itself(inbox: Inbox[CounterMessage | str]) -> None:
        seen.append(inbox.ref)
        async for envelope in inbox:
            if envelope.message == "crash":
                raise ValueError("crash")

    async with (
        actors.open_system() as system,
        system.open_supervisor(OneForOne(intensity=1)) as supervisor,
    ):
        ref = await supervisor.spawn(introduces_itself, name="self")
        await ref.tell("crash")
        await trio.testing.wait_all_tasks_blocked()
        assert seen == [ref, ref]
        assert seen[0].address == ref.address


async def test_down_says_stopped_after_ref_stop() -> None:
    down = await watched_end("stop")
    assert (down.address.name, down.reason) == ("target", Stopped())
    assert down.monitor.target == down.address


async def test_down_says_killed_after_kill() -> None:
    assert (await watched_end("kill")).reason == Killed()


async def test_down_says_normal_when_the_behaviour_returns_on_its_own() -> None:
    downs: list[Down] = []

    async def returns(inbox: Inbox[int]) -> None:
        await inbox.receive()

    async with actors.open_system() as system:
        target = await system.spawn(returns, name="target")
        watching = await system.spawn(watcher, downs, name="watcher")
        await watching.tell(Watch(target))  # type: ignore[arg-type]
        await trio.testing.wait_all_tasks_blocked()
        await target.tell(1)
        await trio.testing.wait_all_tasks_blocked()
        assert [down.reason for down in downs] == [Normal()]


async def test_down_says_failed_with_the_error_and_the_stamp_of_the_message_being_handled() -> None:
    downs: list[Down] = []
    with pytest.RaisesGroup(pytest.RaisesExc(ValueError, match=r"^boom")):
        async with actors.open_system() as system:
            target = await system.spawn(counter, name="target")
            watching = await system.spawn(watcher, downs, name="watcher")
            await watching.tell(Watch(target))
            await trio.testing.wait_all_tasks_blocked()
            for message in (Add(1), Add(2), Boom()):
                await target.tell(message)
            await trio.sleep_forever()
    (down,) = downs
    assert isinstance(down.reason, Failed)
    assert (repr(down.reason.error), down.reason.seq) == ("ValueError('boom')", 2)
    assert str(down.reason) == "failed handling message 2: ValueError('boom')"


async def test_the_failed_trace_event_names_the_stamp_of_the_message_being_handled() -> None:
    trace = actors.Trace()
    async with (
        actors.open_system(tracer=trace) as system,
        system.open_supervisor(OneForOne(intensity=1)) as supervisor,
    ):
        ref = await supervisor.spawn(counter, name="c")
        await ref.tell(Add(1))
        await ref.tell(Boom())
        assert await ref.ask(Total) == 0
    failed = [(e.seq, e.detail) for e in trace.for_actor("c") if e.kind is EventKind.FAILED]
    assert failed == [(1, "ValueError('boom')")]


async def test_a_monitor_of_an_actor_that_already_ended_delivers_its_down_at_once() -> None:
    downs: list[Down] = []
    async with actors.open_system() as system:
        target = await system.spawn(counter, name="target")
        await target.kill()
        watching = await system.spawn(watcher, downs, name="watcher")
        await watching.tell(Watch(target))
        await trio.testing.wait_all_tasks_blocked()
        assert [(down.address, down.reason) for down in downs] == [(target.address, Killed())]


async def test_each_monitor_delivers_its_own_down_exactly_once() -> None:
    downs: list[Down] = []
    async with actors.open_system() as system:
        target = await system.spawn(counter, name="target")
        watching = await system.spawn(watcher, downs, name="watcher")
        await watching.tell(Watch(target))
        await watching.tell(Watch(target))
        await trio.testing.wait_all_tasks_blocked()
        await target.stop()
        await trio.testing.wait_all_tasks_blocked()
        await target.stop()  # a second stop sends nothing more
        await trio.testing.wait_all_tasks_blocked()
    assert [down.monitor.number for down in downs] == [0, 1]
    assert repr(downs[1].monitor) == "<Monitor 1 of 'target' by 'watcher'>"


async def test_demonitor_before_the_end_means_no_down_comes() -> None:
    downs: list[Down] = []
    async with actors.open_system() as system:
        target = await system.spawn(counter, name="target")
        watching = await system.spawn(watcher, downs, name="watcher")
        await watching.tell(Watch(target))
        assert await watching.ask(Unwatch) is True
        await target.stop()
        await trio.testing.wait_all_tasks_blocked()
    assert downs == []


async def test_demonitor_after_the_down_was_sent_returns_false() -> None:
    downs: list[Down] = []
    async with actors.open_system() as system:
        target = await system.spawn(counter, name="target")
        watching = await system.spawn(watcher, downs, name="watcher")
        await watching.tell(Watch(target))
        await target.stop()
        assert await watching.ask(Unwatch) is False
    assert len(downs) == 1


async def test_down_reaches_a_full_mailbox_after_the_messages_it_already_held() -> None:
    order: list[object] = []
    release = trio.Event()

    async def slow_watcher(inbox: Inbox[int | Down], target: ActorRef[CounterMessage]) -> None:
        inbox.monitor(target)
        async for envelope in inbox:
            order.append(envelope.message)
            await release.wait()

    async with actors.open_system() as system:
        target = await system.spawn(counter, name="target")
        slow = await system.spawn(slow_watcher, target, name="slow", capacity=2)
        await slow.tell(0)
        await trio.testing.wait_all_tasks_blocked()  # it holds 0 and waits
        slow.tell_nowait(1)
        slow.tell_nowait(2)
        with pytest.raises(trio.WouldBlock):
            slow.tell_nowait(3)
        await target.stop()  # its Down goes beyond the capacity
        assert slow.statistics().queued == 3
        with pytest.raises(trio.WouldBlock):
            slow.tell_nowait(3)  # and takes no room from senders
        async with trio.open_nursery() as nursery:
            nursery.start_soon(slow.tell, 4)  # waits for room: accepted after the Down
            await trio.testing.wait_all_tasks_blocked()
            release.set()
    assert order[:3] == [0, 1, 2]
    assert isinstance(order[3], Down)
    assert order[4:] == [4]


async def test_down_comes_after_every_message_the_watched_actor_sent_before_it_ended() -> None:
    order: list[object] = []

    async def producer(inbox: Inbox[ActorRef[int]]) -> None:
        envelope = await inbox.receive()
        for value in range(5):
            await envelope.message.tell(value)

    async def consumer(inbox: Inbox[int | Down | ActorRef[ActorRef[int]]]) -> None:
        async for envelope in inbox:
            match envelope.message:
                case ActorRef() as producing:
                    inbox.monitor(producing)
                    await producing.tell(inbox.ref)
                case Down(reason=reason):
                    order.append(reason)
                    return
                case value:
                    order.append(value)
                    await trio.sleep(1)  # slow: the producer waits for room

    async with actors.open_system() as system:
        sink = await system.spawn(consumer, name="sink", capacity=1)
        await sink.tell(await system.spawn(producer, name="producer"))
        await sink.wait_stopped()
    assert order == [0, 1, 2, 3, 4, Normal()]


async def test_down_comes_after_a_message_handed_to_a_watcher_that_has_not_run_yet() -> None:
    """The watched actor's first message goes straight to the parked
    watcher, its second fills the mailbox, and it ends before the watcher
    runs: the Down, beyond the capacity, still comes after both."""
    order: list[object] = []

    async def writer(inbox: Inbox[ActorRef[int]]) -> None:
        envelope = await inbox.receive()
        envelope.message.tell_nowait(1)  # handed to the parked watcher
        envelope.message.tell_nowait(2)  # fills its mailbox

    async def watching(inbox: Inbox[int | Down | ActorRef[ActorRef[int]]]) -> None:
        async for envelope in inbox:
            match envelope.message:
                case ActorRef() as watched:
                    inbox.monitor(watched)
                case Down():
                    order.append("down")
                    return
                case value:
                    order.append(value)

    async with actors.open_system() as system:
        sink = await system.spawn(watching, name="sink", capacity=1)
        source = await system.spawn(writer, name="writer")
        await sink.tell(source)
        await trio.testing.wait_all_tasks_blocked()
        source.tell_nowait(sink)
        await sink.wait_stopped()
    assert order == [1, 2, "down"]


async def test_a_restart_of_the_watched_actor_sends_no_down() -> None:
    downs: list[Down] = []
    async with actors.open_system() as system:
        watching = await system.spawn(watcher, downs, name="watcher")
        async with system.open_supervisor(OneForOne(intensity=1)) as supervisor:
            target = await supervisor.spawn(counter, name="target")
            await watching.tell(Watch(target))
            await target.tell(Boom())
            assert await target.ask(Total) == 0
            assert downs == []
        await trio.testing.wait_all_tasks_blocked()
    assert [down.reason for down in downs] == [Stopped()]


async def test_a_watchers_monitors_end_with_its_incarnation() -> None:
    downs: list[Down] = []

    async def forgetful(inbox: Inbox[Watch | Down | str]) -> None:
        async for envelope in inbox:
            match envelope.message:
                case Watch(target):
                    inbox.monitor(target)
                case "crash":
                    raise ValueError("crash")
                case Down() as down:
                    downs.append(down)

    async with actors.open_system() as system:
        target = await system.spawn(counter, name="target")
        async with system.open_supervisor(OneForOne(intensity=1)) as supervisor:
            ref = await supervisor.spawn(forgetful, name="forgetful")
            await ref.tell(Watch(target))
            await ref.tell("crash")
            await trio.testing.wait_all_tasks_blocked()
            await target.stop()
            await trio.testing.wait_all_tasks_blocked()
    assert downs == []


async def test_an_actor_cannot_monitor_itself() -> None:
    errors: list[str] = []

    async def narcissist(inbox: Inbox[Down]) -> None:
        try:
            inbox.monitor(inbox.ref)
        except ValueError as error:
            errors.append(str(error))

    async with actors.open_system() as system:
        await system.spawn(narcissist, name="narcissist")
    assert errors == ["actor 'narcissist' cannot monitor itself"]


async def test_an_ended_watchers_inbox_makes_no_monitor_and_leaves_nothing_on_the_target() -> None:
    inboxes: list[Inbox[Down]] = []

    async def watcher(inbox: Inbox[Down]) -> None:
        inboxes.append(inbox)

    async with actors.open_system() as system:
        target = await system.spawn(counter, name="target")
        await (await system.spawn(watcher, name="w")).wait_stopped()
        message = (
            r"^monitor of actor 'w': the actor is stopped, "
            r"and timers and monitors belong to a running incarnation$"
        )
        with pytest.raises(actors.ActorStoppedError, match=message):
            inboxes[0].monitor(target)
        assert target._cell.links is None or not target._cell.links.watchers


async def test_an_inbox_between_incarnations_makes_no_monitor_for_the_next_one() -> None:
    inboxes: list[Inbox[Down | str]] = []

    async def crashing(inbox: Inbox[Down | str]) -> None:
        inboxes.append(inbox)
        async for _ in inbox:
            raise ValueError("crash")

    backoff = actors.Backoff(minimum=5, maximum=5, jitter=0)
    async with (
        actors.open_system() as system,
        system.open_supervisor(OneForOne(intensity=2, backoff=backoff)) as supervisor,
    ):
        target = await system.spawn(counter, name="target")
        ref = await supervisor.spawn(crashing, name="crashing")
        await ref.tell("crash")
        await trio.testing.wait_all_tasks_blocked()  # it waits 5 s to restart
        message = r"^monitor of actor 'crashing': the actor waits to be restarted, "
        with pytest.raises(actors.ActorStoppedError, match=message):
            inboxes[0].monitor(target)
        assert target._cell.links is None or not target._cell.links.watchers
        await supervisor.terminate_child(ref)


def test_a_watcher_whose_messages_exclude_down_is_refused_by_the_type_checker() -> None:
    def watch(inbox: Inbox[int], target: ActorRef[int]) -> Monitor:
        return inbox.monitor(target)  # type: ignore[misc]

    def watch_wider(inbox: Inbox[int | Down], target: ActorRef[int]) -> Monitor:
        return inbox.monitor(target)

    assert watch.__name__ != watch_wider.__name__  # checked by mypy, not run


async def test_wait_stopped_waits_for_the_end_without_stopping_and_returns_its_reason() -> None:
    async with actors.open_system() as system:
        ref = await system.spawn(counter, name="c")
        reasons: list[actors.ExitReason] = []
        async with trio.open_nursery() as nursery:

            async def wait() -> None:
                reasons.append(await ref.wait_stopped())

            nursery.start_soon(wait)
            await trio.testing.wait_all_tasks_blocked()
            assert reasons == []
            assert ref.statistics().state is actors.ActorState.RUNNING
            await ref.kill()
        assert reasons == [Killed()]
        assert await ref.wait_stopped() == Killed()  # at once, once it has ended


async def test_an_actor_cannot_wait_for_its_own_end() -> None:
    errors: list[str] = []

    async def waits_for_itself(inbox: Inbox[str]) -> None:
        async for _ in inbox:
            try:
                await inbox.ref.wait_stopped()
            except actors.ActorError as error:
                errors.append(str(error))

    async with actors.open_system() as system:
        ref = await system.spawn(waits_for_itself, name="w")
        await ref.tell("wait")
        await trio.testing.wait_all_tasks_blocked()
        assert ref.statistics().state is actors.ActorState.RUNNING
    assert errors == ["actor 'w' cannot wait for its own end"]


async def test_wait_stopped_waits_through_restarts() -> None:
    async with actors.open_system() as system:
        async with system.open_supervisor(OneForOne(intensity=5)) as supervisor:
            ref = await supervisor.spawn(counter, name="c")
            async with trio.open_nursery() as nursery:
                reasons: list[actors.ExitReason] = []

                async def wait() -> None:
                    reasons.append(await ref.wait_stopped())

                nursery.start_soon(wait)
                await ref.tell(Boom())
                await trio.testing.wait_all_tasks_blocked()
                await ref.kill()
                await trio.testing.wait_all_tasks_blocked()
                assert (reasons, ref.statistics().restarts) == ([], 2)
                await supervisor.terminate_child(ref)
        assert reasons == [Stopped()]


def test_exit_reasons_say_what_they_are() -> None:
    error = KeyError("k")
    assert [str(r) for r in (Normal(), Stopped(), Killed(), Failed(error, None))] == [
        "normal",
        "stopped",
        "killed",
        "failed before taking a message: KeyError('k')",
    ]
    assert [r.abnormal for r in (Normal(), Stopped(), Killed(), Failed(error, 3))] == [
        False,
        False,
        True,
        True,
    ]


async def test_downs_beyond_a_full_mailbox_are_taken_in_batches_as_the_mailbox_is() -> None:
    # 200 actors end together; their Downs fill a 1-message mailbox and wait
    # beyond it. The watcher takes them without a schedule point each: a turn
    # per RECEIVE_BATCH, as for the messages of its mailbox.
    downs: list[Down] = []
    steps = 0
    go = trio.Event()

    async def ends_on_go(inbox: Inbox[CounterMessage]) -> None:
        await go.wait()

    async def watcher_of_all(inbox: Inbox[Down], targets: list[ActorRef[CounterMessage]]) -> None:
        for target in targets:
            inbox.monitor(target)
        async for envelope in inbox:
            downs.append(envelope.message)

    class CountWatcherSteps(trio.abc.Instrument):
        def before_task_step(self, task: trio.lowlevel.Task) -> None:
            nonlocal steps
            if task.name == "watcher":
                steps += 1

    async with actors.open_system() as system:
        targets = [await system.spawn(ends_on_go, name=f"t{i}") for i in range(200)]
        await system.spawn(watcher_of_all, targets, name="watcher", capacity=1)
        await trio.testing.wait_all_tasks_blocked()
        trio.lowlevel.add_instrument(CountWatcherSteps())
        go.set()
        await trio.testing.wait_all_tasks_blocked()
    assert len(downs) == 200
    assert steps <= 200 // actors.RECEIVE_BATCH + 3


async def test_stop_nowait_stops_gracefully_without_waiting_and_monitors_learn_it(
    autojump_clock: trio.testing.MockClock,
) -> None:
    taken: list[int] = []
    downs: list[actors.Down] = []

    async def slow(inbox: Inbox[int]) -> None:
        async for envelope in inbox:
            await trio.sleep(1)
            taken.append(envelope.message)

    async def watcher(inbox: Inbox[actors.Down], target: actors.ActorRef[int]) -> None:
        inbox.monitor(target)
        async for envelope in inbox:
            downs.append(envelope.message)

    async with actors.open_system() as system:
        ref = await system.spawn(slow, name="slow")
        await system.spawn(watcher, ref, name="watcher")
        ref.tell_nowait(1)
        ref.tell_nowait(2)
        await trio.testing.wait_all_tasks_blocked()
        start = trio.current_time()
        ref.stop_nowait()
        ref.stop_nowait()  # idempotent
        # It returned at once (no virtual time passed) and the mailbox is closed.
        assert trio.current_time() == start
        with pytest.raises(actors.ActorStoppedError):
            ref.tell_nowait(3)
        await ref.wait_stopped()
        assert taken == [1, 2]  # what it accepted was delivered
        await trio.testing.wait_all_tasks_blocked()
        assert [type(down.reason) for down in downs] == [actors.Stopped]
        ref.stop_nowait()  # on an ended actor: nothing


async def test_an_actor_may_stop_itself_without_waiting() -> None:
    ended: list[str] = []

    async def quits(inbox: Inbox[int]) -> None:
        async for envelope in inbox:
            inbox.ref.stop_nowait()
            ended.append(f"took {envelope.message}")

    async with actors.open_system() as system:
        ref = await system.spawn(quits, name="quits")
        await ref.tell(1)
        await ref.wait_stopped()
    assert ended == ["took 1"]


async def _watch_with_timeouts() -> None:
    async def target(inbox: actors.Inbox[object]) -> None:
        await trio.sleep(1)

    async def watcher(inbox: actors.Inbox[object], ref: actors.ActorRef[object]) -> None:
        inbox.monitor(ref)
        while True:
            # A receive that times out at the very time the Down is posted.
            with trio.move_on_after(1):
                envelope = await inbox.receive()
                if isinstance(envelope.message, actors.Down):
                    return

    async with actors.open_system() as system:
        target_ref = await system.spawn(target, name="target")
        watching = await system.spawn(watcher, target_ref, name="watcher", capacity=0)
        with trio.move_on_after(100) as scope:
            await watching.wait_stopped()
        assert not scope.cancelled_caught, "the watcher never got its Down"


@pytest.mark.parametrize("seed", range(20))
def test_a_down_posted_as_a_receive_is_cancelled_is_delivered(seed: int) -> None:
    # A receive cancelled in the batch the Down is posted in took nothing:
    # the Down must not wait for one more message than the mailbox holds.
    actors.run(_watch_with_timeouts, seed=seed)
