"""Shards in PostgreSQL: another writer's changes pushed by NOTIFY, appends
racing on two connections at once, and databases that are not shard stores.
The async parts run their own ``trio.run`` on the real clock (a real server
is involved), each wait bounded by ``trio.fail_after``."""

from __future__ import annotations

import random
import string

import attrs
import psycopg
import pytest
import trio

from replica import UpperMismatchError
from replica.storage.persist import (
    SCHEMA_VERSION,
    DurableShardCatalog,
    SchemaVersionError,
    StorageCorruptError,
    StorageOpenError,
    StorageUnavailableError,
    UnstorableError,
    _postgres,
    open_storage,
)

from .children import check_what_the_killed_process_stored, race_two_processes, write_and_kill_9

TIME_LIMIT = 20  # real seconds; a notification takes milliseconds


def durable(url: str) -> DurableShardCatalog:
    return DurableShardCatalog.load(open_storage(url))


@attrs.define(eq=False)
class Steps(trio.abc.Instrument):
    """Counts the steps of the tasks whose name ends with ``suffix``."""

    suffix: str
    count: int = 0

    def before_task_step(self, task: trio.lowlevel.Task) -> None:
        if task.name.endswith(self.suffix):
            self.count += 1


def test_a_notification_wakes_a_listener_of_another_catalog(postgres_url: str) -> None:
    writes = 3
    follower = Steps(".follow")

    async def main() -> list[tuple[int, list[object]]]:
        seen: list[tuple[int, list[object]]] = []
        with durable(postgres_url) as reader, durable(postgres_url) as writer:
            async with trio.open_nursery() as nursery:
                await nursery.start(reader.follow)
                data = reader.shard("data")
                for ts in range(writes):
                    changed = trio.Event()
                    stop = data.listen(changed.set)
                    writer.shard("data").write(ts, [(ts,)])
                    with trio.fail_after(TIME_LIMIT):
                        await changed.wait()  # parked until the notification
                    stop()
                    seen.append((data.upper, list(data.updates)))
                nursery.cancel_scope.cancel()
        return seen

    assert trio.run(main, instruments=[follower]) == [
        (1, [((0,), 0, 1)]),
        (2, [((0,), 0, 1), ((1,), 1, 1)]),
        (3, [((0,), 0, 1), ((1,), 1, 1), ((2,), 2, 1)]),
    ]
    # Pushed, not polled: the follow task ran a few steps to start (a connect
    # in a thread), about one per notification (7 in all, here), and one to be
    # cancelled; a poll would run it at every tick of the wait.
    assert follower.count <= 4 + 2 * writes, follower.count


def test_follow_takes_in_what_was_stored_before_it_started(postgres_url: str) -> None:
    async def main() -> tuple[int, int]:
        with durable(postgres_url) as reader, durable(postgres_url) as writer:
            writer.shard("data").advance(4)
            writer.shard("new").advance(2)
            async with trio.open_nursery() as nursery:
                await nursery.start(reader.follow)
                nursery.cancel_scope.cancel()
            return reader.shard("data").upper, reader.shard("new").upper

    assert trio.run(main) == (4, 2)


def test_appends_racing_on_two_connections_store_exactly_one_per_lower(
    postgres_url: str,
) -> None:
    rounds = 30

    async def main() -> list[str]:
        winners: list[str] = []
        with durable(postgres_url) as a, durable(postgres_url) as b:

            def race(catalog: DurableShardCatalog, name: str) -> None:
                shard = catalog.shard("data")
                for lower in range(rounds):
                    try:
                        shard.append([((name, lower), lower, 1)], lower, lower + 1)
                    except UpperMismatchError:
                        continue
                    winners.append(name)

            with trio.fail_after(TIME_LIMIT):
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(trio.to_thread.run_sync, race, a, "a")
                    nursery.start_soon(trio.to_thread.run_sync, race, b, "b")
        return winners

    winners = trio.run(main)
    with durable(postgres_url) as catalog:
        data = catalog.shard("data")
        assert data.upper == rounds
        assert [row[1] for row, _, _ in data.updates] == list(range(rounds))
        assert sorted(str(row[0]) for row, _, _ in data.updates) == sorted(winners)


def test_a_database_of_another_schema_version_is_refused(postgres_url: str) -> None:
    open_storage(postgres_url).close()
    with psycopg.connect(postgres_url, autocommit=True) as db:
        db.execute("UPDATE persist_meta SET value = '99'")
    with pytest.raises(
        SchemaVersionError,
        match=rf"^postgresql '.*' has shard schema version 99, this is version {SCHEMA_VERSION}$",
    ):
        open_storage(postgres_url)


def test_a_database_with_part_of_the_tables_is_not_a_shard_store(postgres_url: str) -> None:
    with psycopg.connect(postgres_url, autocommit=True) as db:
        db.execute("CREATE TABLE persist_shards (name TEXT)")
    with pytest.raises(
        StorageCorruptError,
        match=r"^postgresql '.*' is not a shard store: it holds only persist_shards of the "
        r"tables persist_meta, persist_shards, persist_batches$",
    ):
        open_storage(postgres_url)


def test_a_server_that_cannot_be_reached_is_named_without_the_password(
    tmp_path: object,
) -> None:
    url = f"postgresql://someone:secret@/db?host={tmp_path}&connect_timeout=5"
    with pytest.raises(StorageOpenError, match=r"^postgresql '.*' cannot be opened: ") as error:
        open_storage(url)
    assert "secret" not in str(error.value)


def terminate_backends(url: str, query: str) -> int:
    """Terminate the server sessions whose last statement is like ``query``."""
    with psycopg.connect(url, autocommit=True) as admin:
        found = admin.execute(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid() AND query LIKE %s",
            (query,),
        ).fetchone()
    assert found is not None
    return int(found[0])


def test_a_lost_connection_fails_a_change_by_name_and_stores_nothing(postgres_url: str) -> None:
    with durable(postgres_url) as catalog:
        data = catalog.shard("data")
        data.write(0, [(1,)])
        assert terminate_backends(postgres_url, "%persist%") == 1
        with pytest.raises(StorageUnavailableError, match=r"^postgresql '.*': "):
            data.write(1, [(2,)])
        assert (data.upper, data.updates) == (1, [((1,), 0, 1)])
    with durable(postgres_url) as reopened:
        assert reopened.shard("data").upper == 1


def test_follow_fails_by_name_when_its_connection_is_lost(postgres_url: str) -> None:
    async def main() -> None:
        with durable(postgres_url) as reader:
            async with trio.open_nursery() as nursery:
                await nursery.start(reader.follow)
                assert terminate_backends(postgres_url, "LISTEN%") == 1
                with trio.fail_after(TIME_LIMIT):
                    await trio.sleep_forever()

    with pytest.raises(ExceptionGroup) as caught:
        trio.run(main)
    assert caught.group_contains(StorageUnavailableError, match=r"^postgresql '.*': ")


def test_of_two_processes_appending_at_the_same_lower_exactly_one_wins(
    postgres_url: str,
) -> None:
    open_storage(postgres_url).close()  # the schema, before either starts
    winner = race_two_processes(postgres_url)
    with durable(postgres_url) as catalog:
        assert catalog.shard("data").updates == [((winner,), 0, 1)]


def test_what_was_stored_survives_a_kill_9(postgres_url: str) -> None:
    write_and_kill_9(postgres_url)
    with durable(postgres_url) as catalog:
        check_what_the_killed_process_stored(catalog)


def test_the_password_is_in_no_repr(postgres_url: str) -> None:
    url = postgres_url.replace("postgresql://postgres@", "postgresql://postgres:secret@")
    with durable(url) as catalog:
        assert "secret" not in repr(catalog.storage)
        assert "secret" not in repr(catalog)
        assert "secret" not in catalog.storage.url


@pytest.mark.parametrize(
    "url",
    [
        "postgresql://someone:s%zzecret@/db",
        "postgresql://someone:se cret@/db",
        "postgres://someone:secret@[::1:5432/db",
        "postgresql://someone@/db?password=secret&bogus=1",
    ],
)
def test_an_unparsable_url_is_named_without_the_password(url: str) -> None:
    with pytest.raises(StorageOpenError, match=r"^postgresql .* cannot be opened: ") as error:
        open_storage(url)
    assert "cret" not in str(error.value)


def test_a_shard_name_too_long_for_the_database_is_unstorable(postgres_url: str) -> None:
    rng = random.Random(1)  # letters that do not compress: an index entry holds them all
    name = "".join(rng.choice(string.ascii_letters) for _ in range(4_000))
    with durable(postgres_url) as catalog:
        with pytest.raises(UnstorableError, match=r"^postgresql '.*': index row size "):
            catalog.shard(name).write(0, [(1,)])
        catalog.shard("data").write(0, [(1,)])


def test_after_a_lost_connection_the_next_change_connects_again(postgres_url: str) -> None:
    with durable(postgres_url) as catalog:
        data = catalog.shard("data")
        data.write(0, [(1,)])
        assert terminate_backends(postgres_url, "%persist%") == 1
        with pytest.raises(StorageUnavailableError):
            data.write(1, [(2,)])
        data.write(1, [(2,)])
        assert catalog.refresh() == []
    with durable(postgres_url) as reopened:
        assert reopened.shard("data").updates == [((1,), 0, 1), ((2,), 1, 1)]


def test_follow_parks_between_notifications_and_ends_by_name_when_the_server_stops(
    postgres_url: str,
) -> None:
    """Every session of the database is ended, as a server stopping ends
    them: ``follow`` ends with the named error, not a hang nor a busy loop."""

    async def main() -> None:
        with durable(postgres_url) as reader:
            async with trio.open_nursery() as nursery:
                await nursery.start(reader.follow)
                await trio.to_thread.run_sync(terminate_backends, postgres_url, "%")
                with trio.fail_after(TIME_LIMIT):
                    await trio.sleep_forever()

    with pytest.raises(ExceptionGroup) as caught:
        trio.run(main)
    assert caught.group_contains(StorageUnavailableError)


def test_the_url_of_a_storage_opens_the_same_database(postgres_url: str) -> None:
    with durable(postgres_url) as catalog:
        catalog.shard("data").write(0, [(1,)])
        assert catalog.storage.url.startswith("postgresql://postgres@/trio_reconcile_")
        with durable(catalog.storage.url) as again:
            assert again.shard("data").updates == [((1,), 0, 1)]


def test_a_change_waits_for_a_locked_shard_a_bounded_time(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_postgres, "LOCK_TIMEOUT", 0.2)
    with durable(postgres_url) as catalog:
        data = catalog.shard("data")
        data.write(0, [(1,)])
        with psycopg.connect(postgres_url) as other:  # a transaction holding the shard's row
            # Ended by the server after TIME_LIMIT, should the change wait on.
            other.execute(f"SET idle_in_transaction_session_timeout = '{TIME_LIMIT}s'")
            other.execute("SELECT * FROM persist_shards WHERE name = 'data' FOR UPDATE")
            with pytest.raises(StorageUnavailableError, match=r"lock timeout"):
                data.write(1, [(2,)])
            other.rollback()
        data.write(1, [(2,)])
        assert data.updates == [((1,), 0, 1), ((2,), 1, 1)]
