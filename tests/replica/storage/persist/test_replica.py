"""A replica on durable shards: a materialized view's shard outlives the
replica and the catalog, and a new replica on the reopened catalog takes up
where the old one stopped, writing nothing twice."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import trio

from replica import (
    AllowWrites,
    Build,
    CreateDataflow,
    CreateInstance,
    DataflowDescription,
    Get,
    InitializationComplete,
    MaterializedView,
    ReplicaConfig,
    Row,
    Schedule,
    ShardCatalog,
    SinkExport,
    SourceImport,
    open_controller,
    open_replica,
)

VIEW = DataflowDescription(
    as_of=0,
    source_imports=(SourceImport(1, "src"),),
    objects_to_build=(Build(10, Get(1)),),
    sink_exports=(SinkExport(11, 10, MaterializedView("mv")),),
)


async def run_view(shards: ShardCatalog, until: int) -> None:
    """A replica of two workers keeps shard ``mv`` equal to shard ``src``
    until the view's frontier reaches ``until``."""
    async with (
        open_replica(ReplicaConfig(processes=1, workers=2), shards=shards) as replica,
        open_controller(replica) as controller,
    ):
        await controller.send(CreateInstance())
        await controller.send(CreateDataflow(VIEW))
        await controller.send(Schedule(11))
        await controller.send(AllowWrites(11))
        await controller.send(InitializationComplete())
        with trio.fail_after(60):
            await controller.await_frontier(11, until)


def contents(shards: ShardCatalog, name: str, ts: int) -> Counter[Row]:
    return Counter(shards.shard(name).read_at(ts))


async def test_a_materialized_view_survives_a_restart_and_is_not_written_twice(
    tmp_path: Path,
) -> None:
    url = f"sqlite:{tmp_path / 'shards.db'}"
    with ShardCatalog.open(url) as shards:
        shards.shard("src").write(0, [(1, "a"), (2, "b")])
        await run_view(shards, 1)
    with ShardCatalog.open(url) as shards:
        assert shards.shard("mv").upper == 1
        assert contents(shards, "mv", 0) == Counter([(1, "a"), (2, "b")])
        written = len(shards.shard("mv").updates)
        shards.shard("src").write(1, [(3, "c")])
        await run_view(shards, 2)
        assert contents(shards, "mv", 1) == contents(shards, "src", 1)
        # The restarted view appended only the new row.
        assert len(shards.shard("mv").updates) == written + 1
