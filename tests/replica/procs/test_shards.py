"""Shard mirrors in the replica processes fed by the host's pushes, and
their compare-and-append through it."""

from __future__ import annotations

from typing import Any

import pytest

from replica import (
    ShardCatalog,
    UpperMismatchError,
)
from replica.procs import MirrorCatalog, ShardHost, _wire
from replica.procs._items import (
    AppendShard,
    Item,
    ShardPush,
    SubscribeShard,
)


def _host_and_mirror() -> tuple[ShardHost, MirrorCatalog, list[Any]]:
    to_host: list[Any] = []
    catalog = ShardCatalog()
    mirror = MirrorCatalog(token=7, send=to_host.append)

    def push(process: str, item: Item) -> None:
        assert process == "p0"
        assert isinstance(item, ShardPush)
        mirror.receive(item)

    return ShardHost(catalog, push), mirror, to_host


def _serve(host: ShardHost, to_host: list[Any]) -> None:
    while to_host:
        match to_host.pop(0):
            case SubscribeShard(token, name):
                host.subscribe("p0", token, name)
            case AppendShard(name, updates, lower, upper):
                host.append(name, updates, lower, upper)


def test_a_mirror_gets_the_shard_then_every_change_pushed() -> None:
    host, mirror, to_host = _host_and_mirror()
    host.catalog.shard("s").write(0, [(1,), (2,)])
    shard = mirror.shard("s")
    woken: list[None] = []
    shard.listen(lambda: woken.append(None))
    assert shard.upper == 0
    _serve(host, to_host)
    assert shard.updates == [((1,), 0, 1), ((2,), 0, 1)]
    assert shard.upper == 1
    host.catalog.shard("s").advance(5)
    assert shard.upper == 5
    assert len(woken) == 2


def test_a_mirror_appends_through_the_host_with_compare_and_append() -> None:
    host, mirror, to_host = _host_and_mirror()
    shard = mirror.shard("s")
    _serve(host, to_host)
    shard.append([((1,), 0, 1)], 0, 1)
    assert shard.upper == 0  # not applied here: the host pushes it back
    shard.append([((1,), 0, 1)], 0, 1)  # a second step before the push: the same batch
    _serve(host, to_host)
    assert host.catalog.shard("s").updates == [((1,), 0, 1)]
    assert shard.updates == [((1,), 0, 1)]
    assert shard.upper == 1
    with pytest.raises(UpperMismatchError):
        shard.append([((2,), 0, 1)], 0, 1)


def test_a_push_for_an_earlier_subscription_is_ignored() -> None:
    host, mirror, to_host = _host_and_mirror()
    mirror.shard("s")
    _serve(host, to_host)
    mirror.receive(ShardPush(6, "s", 0, [((9,), 0, 1)], 1))
    assert mirror.shard("s").updates == []


def test_a_big_snapshot_completes_times_only_with_its_last_chunk() -> None:
    from replica.procs import _shards

    host, mirror, to_host = _host_and_mirror()
    rows = [(n,) for n in range(_shards.PUSH_CHUNK + 10)]
    host.catalog.shard("s").write(0, rows)
    seen: list[tuple[int, int]] = []
    shard = mirror.shard("s")
    shard.listen(lambda: seen.append((len(shard.updates), shard.upper)))
    _serve(host, to_host)
    assert seen == [(_shards.PUSH_CHUNK, 0), (len(rows), 1)]


def test_a_push_of_big_rows_is_split_under_a_frame_whatever_its_count(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Rows of 10 kB, fewer than PUSH_CHUNK of them but more bytes than a
    push may carry: several pushes, each within PUSH_BYTES (one over
    MAX_FRAME was a CodecError that ended the run); one row bigger than that
    goes alone."""
    from replica.procs import _shards

    monkeypatch.setattr(_shards, "PUSH_BYTES", 64 * 1024)
    pushed: list[bytes] = []
    host, mirror, to_host = _host_and_mirror()
    push = host.send

    def measure(process: str, item: Item) -> None:
        pushed.append(_wire.encode(item))
        push(process, item)

    host.send = measure
    rows = [(n, "x" * 10_000) for n in range(30)] + [(30, "y" * 100_000)]
    host.catalog.shard("s").write(0, rows)
    shard = mirror.shard("s")
    _serve(host, to_host)
    assert [row for row, _, _ in shard.updates] == rows
    assert shard.upper == 1
    assert len(pushed) > 1
    assert all(len(data) <= 64 * 1024 for data in pushed[:-1])
    assert len(_wire.encode(pushed[-1])) > 100_000  # the big row, alone


def test_a_mirror_that_lost_pushes_resubscribes_and_catches_up() -> None:
    """Pushes lost with a dropped connection to the host: the mirror ignores
    the later ones (they do not start where it stands) until it subscribes
    again, when the host's whole push overlaps what it holds and it takes
    the rest."""
    host, mirror, to_host = _host_and_mirror()
    source = host.catalog.shard("s")
    source.write(0, [(1,)])
    shard = mirror.shard("s")
    _serve(host, to_host)
    deliver = host.send
    host.send = lambda process, item: None  # the connection dropped
    source.write(1, [(2,)])
    host.send = deliver
    source.write(2, [(3,)])
    assert [row for row, _, _ in shard.updates] == [(1,)]  # a gap: ignored
    mirror.resubscribe()
    _serve(host, to_host)
    assert [row for row, _, _ in shard.updates] == [(1,), (2,), (3,)]
    assert shard.upper == source.upper == 3
