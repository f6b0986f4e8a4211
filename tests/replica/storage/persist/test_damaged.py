"""A damaged store (rows deleted, counts wrong, values of another type or
range, batches out of order) is a ``StorageCorruptError`` naming the shard
and what is wrong, at load, at a refresh and at a change; never an
``AssertionError``, nor a shard loaded short. Each test damages a store of
one shard ``src`` (three batches, ``[0, 1)``, ``[1, 2)``, ``[2, 3)``) with
SQL, as a disk, a bug or a hand in the database would."""

from __future__ import annotations

import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import msgspec
import psycopg
import pytest
import trio

from replica.driver import main
from replica.storage.persist import (
    DurableShardCatalog,
    MemoryStorage,
    ShardState,
    StorageCorruptError,
    StoredBatch,
    open_catalog,
    open_storage,
)

from .children import CHILD_TIMEOUT

TIME_LIMIT = 20  # real seconds, for the notification of a PostgreSQL test


def damage(url: str, *statements: str, params: tuple[object, ...] = ()) -> None:
    """Run ``statements`` on the store ``url`` in one transaction (``?`` for
    a parameter, in either database)."""
    if url.startswith("sqlite:"):
        db = sqlite3.connect(url.removeprefix("sqlite:"))
        with db:
            for statement in statements:
                db.execute(statement, params if "?" in statement else ())
        db.close()
        return
    with psycopg.connect(url) as pg:
        for statement in statements:
            pg.execute(statement.replace("?", "%s"), params if "?" in statement else None)


def durable(url: str) -> DurableShardCatalog:
    return DurableShardCatalog.load(open_storage(url))


def store_three_batches(url: str) -> None:
    with open_catalog(url) as catalog:
        for ts in range(3):
            catalog.shard("src").write(ts, [(ts + 1,)])


def batch(*updates: tuple[tuple[object, ...], int, int]) -> bytes:
    return msgspec.msgpack.encode(list(updates))


@pytest.mark.parametrize(
    ("statements", "params", "what"),
    [
        (
            ["DELETE FROM persist_batches WHERE seq = 1"],
            (),
            "batch 1 is missing (the store says it holds 3)",
        ),
        (
            ["DELETE FROM persist_batches WHERE seq = 2"],
            (),
            "batch 2 is missing (the store says it holds 3)",
        ),
        (
            ["UPDATE persist_shards SET batches = 2"],
            (),
            "batch 2 is stored, beyond the 2 batches the store says it holds",
        ),
        (
            ["UPDATE persist_shards SET batches = 4"],
            (),
            "batch 3 is missing (the store says it holds 4)",
        ),
        (["UPDATE persist_shards SET batches = -1"], (), "its batch count -1 is negative"),
        (
            ["UPDATE persist_shards SET upper_ts = upper_ts - 1"],
            (),
            "its upper 2 is below the upper 3 of batch 2",
        ),
        (
            [
                "INSERT INTO persist_batches"
                " SELECT shard, 3, lower_ts, upper_ts, data FROM persist_batches WHERE seq = 2",
                "UPDATE persist_shards SET batches = 4",
            ],
            (),
            "batch 3 starts at 2, below the upper 3 of batch 2",
        ),
        (
            [
                "INSERT INTO persist_batches"
                " SELECT shard, 3, lower_ts, upper_ts, data FROM persist_batches WHERE seq = 2",
            ],
            (),
            "batch 3 is stored, beyond the 3 batches the store says it holds",
        ),
        (
            ["UPDATE persist_batches SET data = ? WHERE seq = 1"],
            (batch(((2,), 1, 2**64 - 1)),),
            "batch 1 holds update ((2,), 1, 18446744073709551615), "
            "whose diff is out of signed 64 bits",
        ),
        (
            ["UPDATE persist_batches SET data = ? WHERE seq = 1"],
            (batch(((2,), -1, 1)),),
            "batch 1 holds update ((2,), -1, 1), whose time is out of [0, 2**64)",
        ),
        (
            ["UPDATE persist_batches SET data = ? WHERE seq = 1"],
            (batch(((2,), 5, 1)),),
            "batch 1 covers [1, 2) but holds update ((2,), 5, 1)",
        ),
        (
            ["UPDATE persist_batches SET lower_ts = upper_ts WHERE seq = 1"],
            (),
            "batch 1 covers [2, 2): nothing",
        ),
        (
            ["DELETE FROM persist_shards"],
            (),
            "its batches are stored without its upper and batch count",
        ),
    ],
)
def test_a_damaged_store_is_refused_at_load_naming_the_shard(
    url: str, statements: list[str], params: tuple[object, ...], what: str
) -> None:
    store_three_batches(url)
    damage(url, *statements, params=params)
    with pytest.raises(StorageCorruptError, match=rf"^shard 'src' is damaged: {re.escape(what)}$"):
        open_catalog(url)


@pytest.mark.parametrize(
    ("statement", "what"),
    [
        ("UPDATE persist_shards SET upper_ts = 'abc'", "its upper is stored as a str ('abc')"),
        # Stored as time - 2**63: this upper would load as 9223372036854775809.5.
        ("UPDATE persist_shards SET upper_ts = 1.5", "its upper is stored as a float (1.5)"),
        ("UPDATE persist_shards SET batches = 'x'", "its batch count is stored as a str ('x')"),
        (
            "UPDATE persist_batches SET seq = 1.5 WHERE seq = 1",
            "a batch's position is stored as a float (1.5)",
        ),
        (
            "UPDATE persist_batches SET lower_ts = 'x' WHERE seq = 1",
            "batch 1's lower is stored as a str ('x')",
        ),
        (
            "UPDATE persist_batches SET upper_ts = 2.5 WHERE seq = 1",
            "batch 1's upper is stored as a float (2.5)",
        ),
    ],
)
def test_a_sqlite_value_of_another_type_is_refused_at_load(
    sqlite_url: str, statement: str, what: str
) -> None:
    store_three_batches(sqlite_url)
    damage(sqlite_url, statement)
    with pytest.raises(
        StorageCorruptError,
        match=rf"^shard 'src' is damaged: {re.escape(what)}, not an integer$",
    ):
        open_catalog(sqlite_url)


def test_a_sqlite_batch_stored_as_text_is_refused_at_load(sqlite_url: str) -> None:
    store_three_batches(sqlite_url)
    damage(sqlite_url, "UPDATE persist_batches SET data = 'text' WHERE seq = 1")
    with pytest.raises(
        StorageCorruptError,
        match=r"^shard 'src' is damaged: batch 1 is stored as a str \('text'\), not bytes$",
    ):
        open_catalog(sqlite_url)


@pytest.mark.parametrize(
    ("statement", "what"),
    [
        (
            "UPDATE persist_shards SET name = x'00'",
            r"a shard's name is stored as a bytes \(b'\\x00'\), not text",
        ),
        (
            "UPDATE persist_shards SET name = 'a' || char(0)",
            r"a shard's name holds a NUL: 'a\\x00'",
        ),
    ],
)
def test_a_sqlite_shard_name_that_is_no_name_is_refused_at_load(
    sqlite_url: str, statement: str, what: str
) -> None:
    store_three_batches(sqlite_url)
    damage(sqlite_url, statement)
    with pytest.raises(StorageCorruptError, match=rf"^the shard store is damaged: {what}$"):
        open_catalog(sqlite_url)


@pytest.mark.parametrize(
    ("statement", "what"),
    [
        (
            "ALTER TABLE persist_batches ALTER COLUMN lower_ts TYPE text",
            r"batch 0's lower is stored as a str \('-9223372036854775808'\), not an integer",
        ),
        (
            "ALTER TABLE persist_batches ALTER COLUMN data TYPE text USING encode(data, 'hex')",
            r"batch 0 is stored as a str \('919391010001'\), not bytes",
        ),
    ],
)
def test_a_postgresql_column_of_another_type_is_refused_at_load(
    postgres_url: str, statement: str, what: str
) -> None:
    store_three_batches(postgres_url)
    damage(postgres_url, statement)
    with pytest.raises(StorageCorruptError, match=rf"^shard 'src' is damaged: {what}$"):
        open_catalog(postgres_url)


def test_batches_without_their_shard_are_refused_when_refreshed_by_name(url: str) -> None:
    with durable(url) as catalog:
        store_three_batches(url)
        damage(url, "DELETE FROM persist_shards")
        with pytest.raises(
            StorageCorruptError,
            match=r"^shard 'src' is damaged: its batches are stored without its upper "
            r"and batch count$",
        ):
            catalog.refresh(["src"])
        assert "src" not in catalog.shards


@pytest.mark.parametrize(
    ("statements", "what"),
    [
        (
            ["DELETE FROM persist_batches WHERE seq = 3"],
            "batch 3 is missing (the store says it holds 5)",
        ),
        (
            ["UPDATE persist_batches SET lower_ts = lower_ts - 1 WHERE seq = 3"],
            "batch 3 starts at 2, below the upper 3 read before",
        ),
        (
            ["DELETE FROM persist_batches WHERE seq >= 2", "UPDATE persist_shards SET batches = 2"],
            "the store says it holds 2 batches, fewer than the 3 read before",
        ),
        (
            [
                "DELETE FROM persist_batches WHERE seq >= 3",
                "UPDATE persist_shards SET batches = 3, upper_ts = upper_ts - 3",
            ],
            "its upper 2 is below the upper 3 read before",
        ),
    ],
)
def test_damage_met_at_a_refresh_changes_nothing(
    url: str, statements: list[str], what: str
) -> None:
    store_three_batches(url)
    with durable(url) as reader, open_catalog(url) as writer:
        writer.shard("src").write(3, [(4,)])
        writer.shard("src").write(4, [(5,)])
        damage(url, *statements)
        src = reader.shard("src")
        before = (src.upper, list(src.updates))
        with pytest.raises(
            StorageCorruptError, match=rf"^shard 'src' is damaged: {re.escape(what)}$"
        ):
            reader.refresh()
        assert (src.upper, src.updates) == before


def test_a_change_onto_a_batch_count_behind_the_batches_stores_nothing(url: str) -> None:
    store_three_batches(url)
    with open_catalog(url) as catalog:
        damage(url, "UPDATE persist_shards SET batches = 2")
        src = catalog.shard("src")
        with pytest.raises(
            StorageCorruptError,
            match=r"^shard 'src' is damaged: batch 2 is stored, "
            r"beyond the 2 batches the store says it holds$",
        ):
            src.write(3, [(4,)])
        assert (src.upper, len(src.updates)) == (3, 3)
    storage = open_storage(url)
    try:
        assert storage.read("src", 0).upper == 3  # the write was rolled back
    finally:
        storage.close()


def test_follow_ends_by_name_when_a_pushed_change_is_damaged(postgres_url: str) -> None:
    store_three_batches(postgres_url)

    async def main() -> None:
        with durable(postgres_url) as reader:
            async with trio.open_nursery() as nursery:
                await nursery.start(reader.follow)
                damage(
                    postgres_url,
                    "UPDATE persist_shards SET batches = 5",
                    "SELECT pg_notify('trio_reconcile_persist', 'src')",
                )
                with trio.fail_after(TIME_LIMIT):
                    await trio.sleep_forever()

    with pytest.raises(ExceptionGroup) as caught:
        trio.run(main)
    assert caught.group_contains(
        StorageCorruptError,
        match=r"^shard 'src' is damaged: batch 3 is missing \(the store says it holds 5\)$",
    )


@pytest.mark.parametrize(
    ("state", "what"),
    [
        (
            ShardState(2, 2, (StoredBatch(0, 0, 1, b"\x90"), StoredBatch(0, 0, 1, b"\x90"))),
            "batch 0 is stored twice",
        ),
        (ShardState(2**64, 0), "its upper 18446744073709551616 is out of [0, 2**64)"),
    ],
)
def test_a_state_no_store_could_hold_is_refused_by_the_shard(state: ShardState, what: str) -> None:
    with DurableShardCatalog.load(MemoryStorage()) as catalog:
        src = catalog.shard("src")
        with pytest.raises(
            StorageCorruptError, match=rf"^shard 'src' is damaged: {re.escape(what)}$"
        ):
            src.take(state)
        assert (src.upper, src.updates) == (0, [])


SPEC = "create-instance\n----\nok\n"
DAMAGED = "shard 'src' is damaged: batch 1 is missing (the store says it holds 3)"


def test_the_cli_names_a_damaged_store_on_one_line(
    sqlite_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = tmp_path / "one.spec"
    spec.write_text(SPEC)
    store_three_batches(sqlite_url)
    damage(sqlite_url, "DELETE FROM persist_batches WHERE seq = 1")
    assert main(["run", str(spec), "--spawn", "--persist", sqlite_url]) == 2
    out = capsys.readouterr()
    assert out.err == f"trio-reconcile: error: argument --persist: {DAMAGED}\n"
    assert out.out == ""


def test_a_damaged_store_is_refused_under_python_dash_o(sqlite_url: str, tmp_path: Path) -> None:
    """With asserts off, as ``python -O`` runs them: nothing relies on one."""
    spec = tmp_path / "one.spec"
    spec.write_text(SPEC)
    store_three_batches(sqlite_url)
    damage(sqlite_url, "DELETE FROM persist_batches WHERE seq = 1")
    command = ["run", str(spec), "--spawn", "--persist", sqlite_url]
    done = subprocess.run(
        [sys.executable, "-O", "-m", "replica.driver", *command],
        capture_output=True,
        text=True,
        timeout=CHILD_TIMEOUT,
        check=False,
    )
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == f"trio-reconcile: error: argument --persist: {DAMAGED}\n"
