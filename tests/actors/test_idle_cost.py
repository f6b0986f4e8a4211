"""What an idle actor holds: only what every actor needs. Monitors, timers,
asks, framework messages and the registry cost nothing to an actor that does
not use them (their structures stay None), and an actor's task keeps nothing
of the start-up that spawned it."""

from __future__ import annotations

import gc

import attrs
import trio
import trio.testing

import actors
from actors import Down, Inbox, Listing

from .messages import Add, CounterMessage, Total, counter

KEY = actors.ServiceKey[CounterMessage]("counters")


@attrs.frozen
class Tick:
    pass


async def busy(
    inbox: Inbox[Tick | Down | Listing[CounterMessage]], target: actors.ActorRef[CounterMessage]
) -> None:
    """Monitors ``target`` and ticks every second."""
    inbox.monitor(target)
    inbox.timers.send_every(1, Tick())
    async for _ in inbox:
        pass


def lazy_structures(ref: actors.ActorRef[CounterMessage]) -> tuple[object, ...]:
    cell = ref._cell
    return cell.links, cell.pending, cell.system_queue


async def test_an_idle_named_actor_holds_none_of_the_lazy_structures() -> None:
    async with actors.open_system() as system:
        ref = await system.spawn(counter, name="idle")
        await ref.tell(Add(1))
        ref.tell_nowait(Add(1))
        await trio.testing.wait_all_tasks_blocked()
        assert system.lookup("idle") == ref
        assert lazy_structures(ref) == (None, None, None)


async def test_an_end_waited_for_builds_none_of_the_lazy_structures() -> None:
    """A stop, a kill and a wait for the end park on the cell's own lot: an
    actor that used nothing ends without making its links, and every end
    of it reads the same reason."""
    async with actors.open_system() as system:
        stopped = await system.spawn(counter, name="stopped")
        killed = await system.spawn(counter, name="killed")
        await trio.testing.wait_all_tasks_blocked()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(stopped.wait_stopped)
            await trio.testing.wait_all_tasks_blocked()
            await stopped.stop()
        await killed.kill()
        assert lazy_structures(stopped) == lazy_structures(killed) == (None, None, None)
        assert await stopped.wait_stopped() == actors.Stopped()
        assert await killed.wait_stopped() == actors.Killed()
        assert stopped._cell.incarnation_ended is not None


async def test_features_used_around_an_actor_cost_it_nothing() -> None:
    async with actors.open_system() as system:
        bystander = await system.spawn(counter, name="bystander")
        target = await system.spawn(counter, name="target")
        watcher = await system.spawn(busy, target, name="busy")
        system.register(KEY, target)
        system.subscribe(KEY, watcher)
        assert await target.ask(Total, timeout=1) == 0
        await trio.sleep(3.5)  # three ticks
        assert lazy_structures(bystander) == (None, None, None)
        # The target is watched and registered: it holds the watcher and its
        # end callback, and no timers.
        links = target._cell.links
        assert links is not None
        assert (len(links.watchers), len(links.on_end), links.timers, links.timed) == (
            1,
            1,
            None,
            None,
        )


async def test_an_actor_task_keeps_nothing_of_its_start_up() -> None:
    async with actors.open_system() as system:
        for index in range(10):
            await system.spawn(counter, name=f"idle-{index}")
        await trio.testing.wait_all_tasks_blocked()
        gc.collect()
        start_ups = [thing for thing in gc.get_objects() if type(thing).__name__ == "_TaskStatus"]
        assert start_ups == []
