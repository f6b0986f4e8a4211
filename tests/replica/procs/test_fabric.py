"""Exchanges across processes (``NetFabric``), with the items between
them delivered by hand."""

from __future__ import annotations

from replica.engine._exchange import CLOSED
from replica.procs._fabric import NetFabric
from replica.procs._items import (
    ExchangeFrontier,
    ExchangeUpdates,
    Item,
)


def _fabrics(processes: int, per_process: int) -> tuple[list[NetFabric], list[tuple[int, Item]]]:
    """Fabrics of one runtime in ``processes`` processes; what one puts on a
    link waits in ``wire`` (process, item) until delivered."""
    wire: list[tuple[int, Item]] = []
    fabrics = [
        NetFabric(
            processes * per_process,
            runtime="m",
            process=p,
            per_process=per_process,
            processes=processes,
            send_to=lambda process, item: wire.append((process, item)),
        )
        for p in range(processes)
    ]
    return fabrics, wire


def _deliver(fabrics: list[NetFabric], wire: list[tuple[int, Item]]) -> None:
    while wire:
        process, item = wire.pop(0)
        match item:
            case ExchangeUpdates(_, _, dataflow, place, destination, updates):
                fabrics[process].arrive(dataflow, place, destination, updates)
            case ExchangeFrontier(_, _, dataflow, place, worker, frontier):
                fabrics[process].heard(dataflow, place, worker, frontier)


def test_an_exchange_across_processes_completes_only_what_every_worker_said() -> None:
    fabrics, wire = _fabrics(2, 1)
    woken: list[int] = []
    here, there = fabrics[0].exchange(0, 0), fabrics[1].exchange(0, 0)
    here.join(0, lambda: woken.append(0))
    there.join(1, lambda: woken.append(1))
    here.send(0, {0: [((1,), 0, 1)], 1: [((2,), 0, 1)]})
    here.say(0, 1)
    assert here.take(0) == [((1,), 0, 1)]
    # Nothing arrived at process 1 yet: its frontier waits for worker 0.
    assert there.frontier() is None
    there.say(1, 1)
    assert there.frontier() is None
    _deliver(fabrics, wire)
    assert there.take(1) == [((2,), 0, 1)]
    assert there.frontier() == 1 == here.frontier()
    assert 1 in woken
    # A worker that leaves holds nobody back; the exchange goes once all left.
    fabrics[0].release(0, 0, 0)
    fabrics[1].release(0, 0, 1)
    _deliver(fabrics, wire)
    assert len(fabrics[0]) == len(fabrics[1]) == 0
    assert here.sent == [CLOSED, CLOSED]


def test_an_update_for_a_worker_that_left_is_dropped_on_arrival() -> None:
    fabrics, wire = _fabrics(2, 2)
    sender = fabrics[0].exchange(3, 1)
    sender.send(0, {3: [((1,), 0, 1)]})
    receiver = fabrics[1].exchange(3, 1)
    receiver.leave(3)
    _deliver(fabrics, wire)
    assert receiver.take(3) == []
