"""The storage protocol in memory, on Trio's mock clock: two catalogs on one
``MemoryStorage`` behave as two processes on one database, and ``follow``
takes in the other's changes as they are pushed. Storage URLs."""

from __future__ import annotations

import pytest
import trio
import trio.testing

from replica import ShardCatalog, UpperMismatchError
from replica.storage.persist import (
    DurableShardCatalog,
    MemoryStorage,
    StorageUrlError,
    open_storage,
)


async def test_follow_wakes_a_listener_when_another_catalog_appends() -> None:
    storage = MemoryStorage()
    reader, writer = DurableShardCatalog.load(storage), DurableShardCatalog.load(storage)
    woken: list[int] = []
    async with trio.open_nursery() as nursery:
        await nursery.start(reader.follow)
        data = reader.shard("data")
        data.listen(lambda: woken.append(data.upper))
        writer.shard("data").write(0, [("a",)])
        writer.shard("data").advance(3)
        await trio.testing.wait_all_tasks_blocked()
        assert woken == [3]  # both changes in one wake-up
        writer.shard("data").append([(("b",), 3, 1)], 3, 4)
        await trio.testing.wait_all_tasks_blocked()
        assert woken == [3, 4]
        nursery.cancel_scope.cancel()
    assert data.updates == [(("a",), 0, 1), (("b",), 3, 1)]


async def test_a_catalog_is_not_woken_by_its_own_changes() -> None:
    storage = MemoryStorage()
    catalog = DurableShardCatalog.load(storage)
    woken: list[int] = []
    async with trio.open_nursery() as nursery:
        await nursery.start(catalog.follow)
        data = catalog.shard("data")
        data.listen(lambda: woken.append(data.upper))
        data.write(0, [("a",)])
        await trio.testing.wait_all_tasks_blocked()
        nursery.cancel_scope.cancel()
    assert woken == [1]


def test_a_reload_of_memory_storage_sees_every_shard() -> None:
    storage = MemoryStorage()
    first = DurableShardCatalog.load(storage)
    first.shard("data").write(2, [(1,), (2,)])
    first.close()
    again = DurableShardCatalog.load(storage)
    assert again.shard("data").updates == [((1,), 2, 1), ((2,), 2, 1)]
    with pytest.raises(UpperMismatchError):
        again.shard("data").append([], 2, 4)


def test_the_in_memory_catalog_is_unchanged_by_open() -> None:
    assert type(ShardCatalog.open("memory:")) is ShardCatalog
    assert type(ShardCatalog.open(" MEMORY: ")) is ShardCatalog
    assert isinstance(ShardCatalog.open(MemoryStorage()), DurableShardCatalog)


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("mysql://db", r"storage url 'mysql://db' has an unknown scheme 'mysql' "
         r"\(memory:, sqlite:, postgresql:\)"),
        ("shards.db", r"storage url 'shards.db' has no scheme \(memory:, sqlite:, postgresql:\)"),
        ("sqlite:", r"storage url 'sqlite:' names no file \(sqlite:PATH\)"),
        ("sqlite://", r"storage url 'sqlite://' names no file \(sqlite:PATH\)"),
        ("memory:x", r"storage url 'memory:x': memory: takes nothing after the colon"),
    ],
)  # fmt: skip
def test_a_bad_storage_url_is_refused(url: str, message: str) -> None:
    with pytest.raises(StorageUrlError, match=rf"^{message}$"):
        open_storage(url)


async def test_a_closed_catalog_on_memory_storage_refuses_changes_and_follow() -> None:
    storage = MemoryStorage()
    closed, other = DurableShardCatalog.load(storage), DurableShardCatalog.load(storage)
    data = closed.shard("data")
    data.write(0, [(1,)])
    closed.close()
    with pytest.raises(
        trio.ClosedResourceError, match=r"^the shard catalog on 'memory:' is closed$"
    ):
        data.write(1, [(2,)])
    with pytest.raises(
        trio.ClosedResourceError, match=r"^the shard catalog on 'memory:' is closed$"
    ):
        await closed.follow()
    other.shard("data").write(1, [(2,)])  # the store itself stays open to the others
    assert (data.upper, data.updates) == (1, [((1,), 0, 1)])
    with DurableShardCatalog.load(storage) as again:
        assert again.shard("data").upper == 2


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("sqlite:a\0b.db", "holds a NUL"),
        ("postgresql://someone@/db\0other?host=/nowhere", "holds a NUL"),
        ("postgresql://someone@/db?host=/tmp/\udc80", "is not UTF-8"),
    ],
)
def test_a_storage_url_with_a_nul_or_not_utf8_is_refused(url: str, why: str) -> None:
    """libpq would read such a URL up to the NUL only: another database."""
    with pytest.raises(StorageUrlError, match=rf"^storage url .* {why}$"):
        open_storage(url)
