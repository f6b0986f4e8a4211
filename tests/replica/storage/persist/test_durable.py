"""Durable shards on each storage (SQLite and PostgreSQL): what a restart
keeps, compare-and-append against the stored upper, two writers, and
updates that cannot be stored."""

from __future__ import annotations

import contextlib
import random
from collections.abc import Iterable
from typing import ClassVar

import pytest
import trio

from replica import (
    ShardCatalog,
    Update,
    UpperMismatchError,
    UpperRegressionError,
    WriteBelowUpperError,
)
from replica.storage.persist import DurableShardCatalog, UnstorableError, open_catalog


def durable(url: str) -> DurableShardCatalog:
    catalog = ShardCatalog.open(url)
    assert isinstance(catalog, DurableShardCatalog)
    return catalog


def test_rows_and_uppers_survive_a_reopen(url: str) -> None:
    with durable(url) as catalog:
        data = catalog.shard("data")
        data.write(0, [(1, "a"), (2, None)])
        data.append([((3, True, 1.5), 4, -1), ((4, -(2**63)), 5, 2)], 1, 6)
        data.advance(9)
        catalog.shard("other").advance(3)
        catalog.shard("empty")
    with durable(url) as reopened:
        data = reopened.shard("data")
        assert data.upper == 9
        assert data.updates == [
            ((1, "a"), 0, 1),
            ((2, None), 0, 1),
            ((3, True, 1.5), 4, -1),
            ((4, -(2**63)), 5, 2),
        ]
        assert [type(datum) for datum in data.updates[2][0]] == [int, bool, float]
        assert reopened.shard("other").upper == 3
        assert sorted(reopened.shards) == ["data", "other"]


def test_a_compare_and_append_after_a_reopen_checks_the_stored_upper(url: str) -> None:
    with durable(url) as catalog:
        catalog.shard("data").append([(("a",), 0, 1)], 0, 2)
    with durable(url) as reopened:
        data = reopened.shard("data")
        with pytest.raises(
            UpperMismatchError, match=r"^append to shard 'data' expected upper 0, found 2$"
        ):
            data.append([(("b",), 0, 1)], 0, 1)
        data.append([(("c",), 2, 1)], 2, 3)
    with durable(url) as again:
        assert again.shard("data").updates == [(("a",), 0, 1), (("c",), 2, 1)]
        assert again.shard("data").upper == 3


def test_of_two_catalogs_appending_at_the_same_lower_exactly_one_wins(url: str) -> None:
    with durable(url) as first, durable(url) as second:
        first.shard("data").append([(("first",), 0, 1)], 0, 1)
        loser = second.shard("data")
        with pytest.raises(
            UpperMismatchError, match=r"^append to shard 'data' expected upper 0, found 1$"
        ):
            loser.append([(("second",), 0, 1)], 0, 1)
        # The loser caught up with the winner, and stored nothing.
        assert (loser.upper, loser.updates) == (1, [(("first",), 0, 1)])
    with durable(url) as reopened:
        assert reopened.shard("data").updates == [(("first",), 0, 1)]


def test_a_stale_catalogs_append_takes_in_the_other_writers_batches_first(url: str) -> None:
    with durable(url) as first, durable(url) as second:
        stale = second.shard("data")
        first.shard("data").advance(5)
        stale.append([(("mine",), 5, 1)], 5, 6)
        first.shard("data").append([(("theirs",), 6, 1)], 6, 7)
        stale.append([(("mine again",), 7, 1)], 7, 8)
        assert stale.updates == [(("mine",), 5, 1), (("theirs",), 6, 1), (("mine again",), 7, 1)]
        assert stale.upper == 8


def test_a_write_below_another_writers_upper_is_refused(url: str) -> None:
    with durable(url) as first, durable(url) as second:
        first.shard("data").write(4, [("x",)])
        stale = second.shard("data")
        with pytest.raises(
            WriteBelowUpperError, match=r"^write at ts 3 is below the shard upper 5$"
        ):
            stale.write(3, [("y",)])
        assert stale.write(5, [("y",), ("z",)]) == 2
        assert first.refresh() == ["data"]
        assert first.shard("data").read_at(5) == [("x",), ("y",), ("z",)]


def test_an_advance_below_another_writers_upper_is_a_regression(url: str) -> None:
    with durable(url) as first, durable(url) as second:
        first.shard("data").advance(7)
        stale = second.shard("data")
        with pytest.raises(UpperRegressionError, match=r"^upper 5 is below the shard upper 7$"):
            stale.advance(5)
        assert stale.upper == 7
        stale.advance(8)
    with durable(url) as reopened:
        assert reopened.shard("data").upper == 8


def test_refresh_takes_in_another_catalogs_changes_and_wakes_listeners(url: str) -> None:
    with durable(url) as first, durable(url) as second:
        woken: list[str] = []
        second.shard("data").listen(lambda: woken.append("data"))
        first.shard("data").write(0, [("a",)])
        first.shard("new").advance(2)
        assert woken == []  # not told yet
        assert sorted(second.refresh()) == ["data", "new"]
        assert woken == ["data"]
        assert second.shard("data").updates == [(("a",), 0, 1)]
        assert second.shard("new").upper == 2
        assert second.refresh() == []
        assert second.refresh(["data"]) == []
        assert woken == ["data"]


@pytest.mark.parametrize(
    ("update", "why"),
    [
        (((b"bytes",), 0, 1), r"holds a bytes: b'bytes'"),
        ((([1],), 0, 1), r"holds a list: \[1\]"),
        (((2**64,), 0, 1), r"holds an int out of 64 bits: 18446744073709551616"),
        ((("\udc80",), 0, 1), r"holds a string that is not UTF-8: '\\udc80'"),
        (((1,), 0, 2**63), r"has a diff out of signed 64 bits: 9223372036854775808"),
        (((1,), 0.5, 1), r"has a time out of \[0, 2\*\*64\): 0.5"),
        (([1], 0, 1), r"is not a \(row, time, diff\) tuple of a row tuple"),
    ],
)
def test_an_update_that_cannot_be_stored_writes_nothing(url: str, update: object, why: str) -> None:
    with durable(url) as catalog:
        data = catalog.shard("data")
        with pytest.raises(
            UnstorableError, match=rf"^shard 'data': update .* cannot be stored: it {why}$"
        ):
            data.append([((0,), 0, 1), update], 0, 1)  # type: ignore[list-item]
        assert (data.upper, data.updates) == (0, [])
    with durable(url) as reopened:
        assert (reopened.shard("data").upper, reopened.shard("data").updates) == (0, [])


def test_a_shard_name_with_a_nul_cannot_be_stored(url: str) -> None:
    with (
        durable(url) as catalog,
        pytest.raises(
            UnstorableError,
            match=r"^shard name 'a\\x00b' cannot be stored \(a NUL, or not UTF-8\)$",
        ),
    ):
        catalog.shard("a\0b")


def test_times_use_the_whole_unsigned_range(url: str) -> None:
    top = 2**64 - 1
    with durable(url) as catalog:
        catalog.shard("data").append([(("last",), top - 1, 1)], 0, top)
        with pytest.raises(
            UnstorableError,
            match=r"^shard 'data': upper 18446744073709551616 is out of \[0, 2\*\*64\)$",
        ):
            catalog.shard("data").write(top, [("x",)])
    with durable(url) as reopened:
        assert reopened.shard("data").upper == top
        assert reopened.shard("data").updates == [(("last",), top - 1, 1)]


def test_open_catalog_of_memory_is_todays_in_memory_catalog() -> None:
    catalog = open_catalog("memory:")
    assert type(catalog) is ShardCatalog
    with catalog:
        catalog.shard("data").write(0, [(1,)])
    assert catalog.shard("data").upper == 1


def test_a_listener_that_raises_does_not_keep_the_others_asleep(url: str) -> None:
    def fail() -> None:
        raise RuntimeError("listener failed")

    with durable(url) as catalog:
        data = catalog.shard("data")
        woken: list[int] = []
        data.listen(fail)
        data.listen(lambda: woken.append(data.upper))
        with pytest.raises(RuntimeError, match=r"^listener failed$"):
            data.write(0, [(1,)])
        assert woken == [1]  # woken all the same: the change stands
    with durable(url) as reopened:
        assert reopened.shard("data").updates == [((1,), 0, 1)]


def test_refresh_of_one_name_given_as_a_string_is_refused(url: str) -> None:
    with durable(url) as first, durable(url) as second:
        first.shard("data").write(0, [(1,)])
        with pytest.raises(TypeError, match=r"^refresh takes shard names, not one name: "):
            second.refresh("data")
        assert second.refresh(["data"]) == ["data"]


def test_refresh_of_a_name_with_a_nul_is_unstorable(url: str) -> None:
    with durable(url) as catalog, pytest.raises(UnstorableError, match=r"^shard name 'a\\x00b' "):
        catalog.refresh(["a\0b"])


def test_an_update_that_cannot_be_stored_is_named_briefly(url: str) -> None:
    huge = "x" * 10_000_000
    with durable(url) as catalog, pytest.raises(UnstorableError) as error:
        catalog.shard("data").write(0, [(huge, b"bytes")])  # type: ignore[list-item]
    assert len(str(error.value)) < 1_000
    assert str(error.value).endswith("cannot be stored: it holds a bytes: b'bytes'")


def test_a_closed_catalog_refuses_every_change(url: str) -> None:
    catalog = durable(url)
    data = catalog.shard("data")
    data.write(0, [(1,)])
    catalog.close()
    catalog.close()
    closed = r"^the shard catalog on '.*' is closed$"
    for change in (
        lambda: data.write(1, [(2,)]),
        lambda: data.append([], 1, 2),
        lambda: data.advance(5),
        lambda: catalog.shard("new").write(0, [(1,)]),
        catalog.refresh,
    ):
        with pytest.raises(trio.ClosedResourceError, match=closed):
            change()
    assert (data.upper, data.read_at(0)) == (1, [(1,)])


@pytest.mark.parametrize(
    "change",
    [
        lambda data: data.write(0, [(10**5_000,)]),
        lambda data: data.append([((1,), 0, 10**5_000)], 0, 1),
        lambda data: data.append([], 0, 10**5_000),
        lambda data: data.write(10**5_000, [(1,)]),
        lambda data: data.advance(10**5_000),
    ],
)
def test_an_int_too_large_to_print_is_unstorable(url: str, change: object) -> None:
    with durable(url) as catalog:
        data = catalog.shard("data")
        with pytest.raises(UnstorableError, match=r"too large to show"):
            change(data)  # type: ignore[operator]
        assert (data.upper, data.updates) == (0, [])


class WatchedList(list[Update]):
    """A shard's updates that record whether a KeyboardInterrupt would be
    deferred (Trio's KI protection) while they grow."""

    protected: ClassVar[list[bool]] = []

    def extend(self, updates: Iterable[Update]) -> None:
        WatchedList.protected.append(trio.lowlevel.currently_ki_protected())
        super().extend(updates)


def test_memory_changes_with_keyboard_interrupt_deferred(url: str) -> None:
    async def main() -> None:
        with durable(url) as first, durable(url) as second:
            mine, theirs = first.shard("data"), second.shard("data")
            mine.updates, theirs.updates = WatchedList(), WatchedList()
            mine.write(0, [(1,)])
            mine.append([((2,), 1, 1)], 1, 2)
            assert second.refresh() == ["data"]

    WatchedList.protected.clear()
    trio.run(main)
    assert WatchedList.protected == [True, True, True]


def test_three_catalogs_interleaving_changes_and_refreshes_agree_with_the_store(
    url: str,
) -> None:
    rng = random.Random(7)
    catalogs = [durable(url) for _ in range(3)]
    names = ["a", "é🙂", ""]
    try:
        for step in range(400):
            catalog = rng.choice(catalogs)
            shard = catalog.shard(rng.choice(names))
            op = rng.random()
            with contextlib.suppress(
                UpperMismatchError, WriteBelowUpperError, UpperRegressionError
            ):
                if op < 0.3:
                    shard.write(shard.upper + rng.randint(-1, 2), [(step,)])
                elif op < 0.6:
                    lower = shard.upper + rng.choice([0, 0, 1])
                    shard.append([((step,), lower, 1)], lower, lower + rng.randint(1, 3))
                elif op < 0.7:
                    shard.advance(shard.upper + rng.randint(0, 2))
                elif op < 0.85:
                    catalog.refresh()
                else:
                    catalog.refresh([shard.name])
        for catalog in catalogs:
            catalog.refresh()
        with durable(url) as fresh:
            for name in names:
                stored = fresh.shard(name)
                steps = [row[0] for row, _, _ in stored.updates]
                assert len(steps) == len(set(steps))  # no batch taken in twice
                assert [t for _, t, _ in stored.updates] == sorted(t for _, t, _ in stored.updates)
                for catalog in catalogs:
                    mine = catalog.shard(name)
                    assert (mine.upper, mine.updates) == (stored.upper, stored.updates)
    finally:
        for catalog in catalogs:
            catalog.close()


def test_an_append_of_a_generator_keeps_every_update(url: str) -> None:
    with durable(url) as catalog, ShardCatalog() as memory:
        for shard in (catalog.shard("data"), memory.shard("data")):
            shard.append((update for update in [((1,), 0, 1), ((2,), 1, 1)]), 0, 2)
            assert (shard.upper, shard.updates) == (2, [((1,), 0, 1), ((2,), 1, 1)])
    with durable(url) as reopened:
        assert reopened.shard("data").updates == [((1,), 0, 1), ((2,), 1, 1)]
