"""The reconcile barrier: its state without Trio, and the actor around it.
The cases of the originating change: passing on the same connection, both
reasons a later arrival counts, the wake of a parked waiter; and its death."""

from __future__ import annotations

import pytest
import trio
import trio.testing

import actors
from barrier import (
    ArrivalRegressionError,
    BarrierBrokenError,
    BarrierState,
    BarrierStatistics,
    Inspect,
    ReconcileBarrier,
    Side,
)

MAINT, INTER = Side.MAINTENANCE, Side.INTERACTIVE


def test_a_waiter_passes_when_the_other_side_arrived_at_the_same_connection() -> None:
    state = BarrierState()
    state.arrive(INTER, 1)
    assert state.passes(MAINT, 1)


def test_a_waiter_waits_while_the_other_side_is_behind() -> None:
    state = BarrierState()
    state.arrive(INTER, 0)
    assert not state.passes(MAINT, 1)
    assert state.passes(MAINT, 0)  # the same connection passes


def test_a_later_arrival_counts_when_the_other_side_overwrote_its_arrival() -> None:
    # The other side arrived at this connection, then at the next one, before
    # the waiter looked: only the later arrival is kept, and it must count.
    state = BarrierState()
    state.arrive(INTER, 1)
    state.arrive(INTER, 2)
    assert state.latest(INTER) == 2
    assert state.passes(MAINT, 1)


def test_a_later_arrival_counts_when_the_other_side_never_reconciled_the_connection() -> None:
    # The other runtime's adapter dropped connection 1's commands: it never
    # arrives at 1, and arrives next at 2. The parked waiter at 1 passes.
    state = BarrierState()
    state.arrive(MAINT, 1)
    assert not state.passes(MAINT, 1)
    state.arrive(INTER, 2)
    assert state.passes(MAINT, 1)
    assert state.statistics() == BarrierStatistics(maintenance=1, interactive=2, waiting=())


def test_an_arrival_short_of_a_waiters_position_does_not_let_it_pass() -> None:
    state = BarrierState()
    state.arrive(MAINT, 3)
    state.arrive(INTER, 2)
    assert not state.passes(MAINT, 3)
    assert state.passes(INTER, 2)


def test_an_arrival_below_the_sides_latest_is_refused_and_changes_nothing() -> None:
    state = BarrierState()
    state.arrive(MAINT, 4)
    with pytest.raises(
        ArrivalRegressionError, match=r"^maintenance arrived at position 3 after position 4$"
    ):
        state.arrive(MAINT, 3)
    assert state.latest(MAINT) == 4


def test_the_sides_know_each_other() -> None:
    assert (MAINT.other, INTER.other) == (INTER, MAINT)


async def test_the_actor_passes_on_the_same_connection() -> None:
    async with actors.open_system() as system:
        barrier = await ReconcileBarrier.spawn(system, name="b")
        async with trio.open_nursery() as nursery:
            passed: list[int] = []

            async def maintenance() -> None:
                passed.append(await barrier.arrive_and_wait(MAINT, 1))

            nursery.start_soon(maintenance)
            await trio.testing.wait_all_tasks_blocked()
            assert passed == []
            assert barrier.statistics().waiting == (MAINT,)
            assert await barrier.arrive_and_wait(INTER, 1) == 1
        assert passed == [1]


async def test_the_actor_wakes_a_parked_waiter_on_a_later_arrival() -> None:
    async with actors.open_system() as system:
        barrier = await ReconcileBarrier.spawn(system, name="b")
        async with trio.open_nursery() as nursery:
            passed: list[int] = []

            async def interactive() -> None:
                passed.append(await barrier.arrive_and_wait(INTER, 1))

            nursery.start_soon(interactive)
            await trio.testing.wait_all_tasks_blocked()
            async with trio.open_nursery() as inner:
                inner.start_soon(barrier.arrive_and_wait, MAINT, 2)
                await trio.testing.wait_all_tasks_blocked()
                assert passed == [2]  # woken: 2 is later than 1
                # maintenance at 2 waits in turn, until interactive reaches 2
                assert barrier.statistics().waiting == (MAINT,)
                assert await barrier.arrive_and_wait(INTER, 2) == 2


async def test_a_waiter_gets_an_error_not_a_hang_when_the_barrier_dies() -> None:
    async with actors.open_system() as system:
        barrier = await ReconcileBarrier.spawn(system, name="b")
        async with trio.open_nursery() as nursery:
            errors: list[str] = []

            async def maintenance() -> None:
                try:
                    await barrier.arrive_and_wait(MAINT, 1)
                except BarrierBrokenError as error:
                    errors.append(str(error))

            nursery.start_soon(maintenance)
            await trio.testing.wait_all_tasks_blocked()
            await barrier.ref.kill()
        assert errors == ["reconcile barrier 'b' stopped while maintenance waited at position 1"]


async def test_the_actor_answers_inspection() -> None:
    async with actors.open_system() as system:
        barrier = await ReconcileBarrier.spawn(system, name="b")
        async with trio.open_nursery() as nursery:
            nursery.start_soon(barrier.arrive_and_wait, MAINT, 3)
            await trio.testing.wait_all_tasks_blocked()
            assert await barrier.ref.ask(Inspect) == BarrierStatistics(
                maintenance=3, interactive=None, waiting=(MAINT,)
            )
            await barrier.arrive_and_wait(INTER, 3)


async def test_arrivals_after_the_barrier_ended_are_refused() -> None:
    async with actors.open_system() as system:
        barrier = await ReconcileBarrier.spawn(system, name="b")
        await barrier.ref.stop()
        with pytest.raises(BarrierBrokenError):
            await barrier.arrive_and_wait(MAINT, 0)
        assert barrier.statistics() == BarrierStatistics(None, None, ())


async def test_the_actor_refuses_a_regressing_arrival_and_goes_on() -> None:
    async with actors.open_system() as system:
        barrier = await ReconcileBarrier.spawn(system, name="b")
        async with trio.open_nursery() as nursery:
            nursery.start_soon(barrier.arrive_and_wait, MAINT, 5)
            await trio.testing.wait_all_tasks_blocked()
            with pytest.raises(ArrivalRegressionError):
                await barrier.arrive_and_wait(MAINT, 4)
            assert await barrier.arrive_and_wait(INTER, 5) == 5
