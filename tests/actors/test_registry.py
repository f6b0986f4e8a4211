"""Looking actors up by name or address, and the typed service registry."""

from __future__ import annotations

from typing import Never

import pytest
import trio
import trio.testing

import actors
from actors import ActorRef, ActorStoppedError, Inbox, Listing, OneForOne, ServiceKey

from .messages import Add, Boom, CounterMessage, Total, counter

COUNTERS = ServiceKey[CounterMessage]("counters")


async def listener(inbox: Inbox[Listing[CounterMessage]], seen: list[list[str]]) -> None:
    async for envelope in inbox:
        seen.append([ref.name for ref in envelope.message.refs])


async def test_lookup_finds_a_live_actor_by_name_or_address() -> None:
    async with actors.open_system() as system:
        ref = await system.spawn(counter, name="c")
        assert system.lookup("c") == ref
        assert system.lookup(ref.address) == ref
        assert system.lookup("nobody") is None


async def test_lookup_of_an_address_finds_no_later_actor_of_the_same_name() -> None:
    async with actors.open_system() as system:
        first = await system.spawn(counter, name="c")
        await first.stop()
        assert system.lookup(first.address) is None
        second = await system.spawn(counter, name="c")
        assert system.lookup(first.address) is None
        assert system.lookup("c") == second


async def test_lookup_finds_an_actor_across_its_restarts() -> None:
    async with (
        actors.open_system() as system,
        system.open_supervisor(OneForOne(intensity=1)) as supervisor,
    ):
        ref = await supervisor.spawn(counter, name="c")
        await ref.tell(Boom())
        assert await ref.ask(Total) == 0
        assert system.lookup(ref.address) == ref


async def test_a_looked_up_reference_is_told_once_cast_to_what_the_actor_accepts() -> None:
    async with actors.open_system() as system:
        await system.spawn(counter, name="c")
        found = system.lookup("c")
        assert found is not None
        typed: ActorRef[CounterMessage] = found  # type: ignore[assignment]
        await typed.tell(Add(2))
        assert await typed.ask(Total) == 2


async def test_a_sequencers_address_looks_up_nothing() -> None:
    async with actors.open_system() as system:
        member = await system.spawn(counter, name="m")
        sequencer = system.sequencer([member], name="seq")
        assert system.lookup(sequencer.address) is None


@pytest.mark.parametrize("key", [3, None, ("m", 0)], ids=["int", "none", "tuple"])
async def test_lookup_of_what_is_neither_a_name_nor_an_address_is_a_type_error(
    key: object,
) -> None:
    async with actors.open_system() as system:
        await system.spawn(counter, name="m")
        with pytest.raises(TypeError, match=r"^lookup takes a name or an Address, not "):
            system.lookup(key)  # type: ignore[arg-type]


async def test_the_registry_refuses_what_is_not_a_service_key() -> None:
    with pytest.raises(TypeError, match=r"^a service key's name must be a str, not 3$"):
        ServiceKey(3)  # type: ignore[arg-type]
    async with actors.open_system() as system:
        ref = await system.spawn(counter, name="c")
        with pytest.raises(TypeError, match=r"^register takes a ServiceKey, not 'counters'$"):
            system.register("counters", ref)  # type: ignore[arg-type]
        with pytest.raises(TypeError, match=r"^find takes a ServiceKey, not 'counters'$"):
            system.find("counters")  # type: ignore[arg-type]
        with pytest.raises(TypeError, match=r"^subscribe takes an ActorRef, not None$"):
            system.subscribe(COUNTERS, None)  # type: ignore[arg-type]
        assert system.find(COUNTERS) == ()


async def test_find_returns_the_actors_of_a_key_in_registration_order() -> None:
    async with actors.open_system() as system:
        refs = [await system.spawn(counter, name=name) for name in ("b", "a", "c")]
        assert system.find(COUNTERS) == ()
        for ref in (refs[2], refs[0], refs[2]):
            system.register(COUNTERS, ref)
        assert system.find(COUNTERS) == (refs[2], refs[0])
        for found in system.find(COUNTERS):
            await found.tell(Add(1))
        assert system.find(ServiceKey[CounterMessage]("counters")) == (refs[2], refs[0])


async def test_an_entry_stays_through_restarts_and_leaves_when_its_actor_ends() -> None:
    async with actors.open_system() as system:
        async with system.open_supervisor(OneForOne(intensity=1)) as supervisor:
            ref = await supervisor.spawn(counter, name="c")
            system.register(COUNTERS, ref)
            await ref.tell(Boom())
            assert await ref.ask(Total) == 0
            assert system.find(COUNTERS) == (ref,)
        assert system.find(COUNTERS) == ()


async def test_deregister_withdraws_an_entry_and_says_whether_there_was_one() -> None:
    async with actors.open_system() as system:
        ref = await system.spawn(counter, name="c")
        system.register(COUNTERS, ref)
        assert system.deregister(COUNTERS, ref) is True
        assert system.deregister(COUNTERS, ref) is False
        assert system.find(COUNTERS) == ()


async def test_a_subscriber_gets_the_listing_at_once_and_after_every_change() -> None:
    seen: list[list[str]] = []
    async with actors.open_system() as system:
        first = await system.spawn(counter, name="first")
        system.register(COUNTERS, first)
        subscriber = await system.spawn(listener, seen, name="listener")
        system.subscribe(COUNTERS, subscriber)
        second = await system.spawn(counter, name="second")
        system.register(COUNTERS, second)
        system.deregister(COUNTERS, first)
        await second.kill()
        await trio.testing.wait_all_tasks_blocked()
        assert seen == [["first"], ["first", "second"], ["second"], []]
        assert system.unsubscribe(COUNTERS, subscriber) is True
        assert system.unsubscribe(COUNTERS, subscriber) is False
        system.register(COUNTERS, first)
        await trio.testing.wait_all_tasks_blocked()
        assert len(seen) == 4


async def test_listings_reach_a_full_subscriber_without_waiting() -> None:
    seen: list[list[str]] = []
    release = trio.Event()

    async def busy(inbox: Inbox[Listing[CounterMessage] | int]) -> None:
        async for envelope in inbox:
            match envelope.message:
                case Listing(refs=refs):
                    seen.append([ref.name for ref in refs])
                case _:
                    await release.wait()

    async with actors.open_system() as system:
        subscriber = await system.spawn(busy, name="busy", capacity=1)
        await subscriber.tell(0)
        await subscriber.tell(1)  # full now
        ref = await system.spawn(counter, name="c")
        system.subscribe(COUNTERS, subscriber)
        system.register(COUNTERS, ref)  # replaces the listing that waits
        assert subscriber.statistics().queued == 2
        release.set()
        await trio.testing.wait_all_tasks_blocked()
    assert seen == [["c"], []]  # the last: "c" stopped before "busy" did


async def test_a_stuck_subscriber_holds_one_listing_per_key_and_gets_the_newest() -> None:
    seen: list[tuple[int, list[str]]] = []
    release = trio.Event()

    async def stuck(inbox: Inbox[Listing[CounterMessage] | int]) -> None:
        async for envelope in inbox:
            match envelope.message:
                case Listing(refs=refs):
                    seen.append((envelope.seq, [ref.name for ref in refs]))
                case _:
                    await release.wait()

    async with actors.open_system() as system:
        subscriber = await system.spawn(stuck, name="stuck", capacity=1)
        await subscriber.tell(0)  # taken: it waits
        await subscriber.tell(1)  # full now
        system.subscribe(COUNTERS, subscriber)
        kept = await system.spawn(counter, name="kept")
        system.register(COUNTERS, kept)
        for index in range(100):
            ref = await system.spawn(counter, name=f"c{index}")
            system.register(COUNTERS, ref)
            await ref.stop()
        assert subscriber.statistics().queued == 2  # 1, and one listing
        release.set()
        await trio.testing.wait_all_tasks_blocked()
        assert [names for _, names in seen] == [["kept"]]
        # After message 1, with the newest stamp: it took the newest's turn.
        assert seen[0][0] > 2


async def test_a_subscription_ends_with_its_subscriber() -> None:
    seen: list[list[str]] = []
    async with actors.open_system() as system:
        subscriber = await system.spawn(listener, seen, name="listener")
        system.subscribe(COUNTERS, subscriber)
        await subscriber.stop()
        assert system.unsubscribe(COUNTERS, subscriber) is False
        system.register(COUNTERS, await system.spawn(counter, name="c"))
    assert seen == [[]]


async def test_a_stopped_actor_cannot_be_registered() -> None:
    async with actors.open_system() as system:
        ref = await system.spawn(counter, name="gone")
        await ref.stop()
        with pytest.raises(ActorStoppedError, match=r"^actor 'gone' is stopped$"):
            system.register(COUNTERS, ref)
        assert system.find(COUNTERS) == ()


async def test_an_actor_of_another_system_cannot_be_registered() -> None:
    async with actors.open_system() as system, actors.open_system() as other:
        stranger = await other.spawn(counter, name="stranger")
        with pytest.raises(ValueError, match=r"^actor 'stranger' is not an actor of this system$"):
            system.register(COUNTERS, stranger)


def test_a_registration_is_typed_by_its_key() -> None:
    def offer(system: actors.ActorSystem, ref: ActorRef[int]) -> None:
        system.register(COUNTERS, ref)  # type: ignore[misc]

    def subscribe(system: actors.ActorSystem, ref: ActorRef[int]) -> None:
        system.subscribe(COUNTERS, ref)  # type: ignore[arg-type]

    def anything(system: actors.ActorSystem, ref: ActorRef[object]) -> None:
        system.register(COUNTERS, ref)

    def found(system: actors.ActorSystem) -> tuple[ActorRef[CounterMessage], ...]:
        return system.find(COUNTERS)

    def unknown(system: actors.ActorSystem) -> ActorRef[Never] | None:
        return system.lookup("c")

    assert {offer, subscribe, anything, found, unknown}  # checked by mypy, not run
