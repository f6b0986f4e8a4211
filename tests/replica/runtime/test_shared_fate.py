"""Shared fate (docs/protocol.md, "Shared fate"): a dataflow built on an
import compacted past its ``as_of`` is a worker's panic, never a read error;
it ends every runtime of the worker's process, the controller sees the
process's connection fail, and the driver prints one line for the stanza
that was running and exits 1."""

from __future__ import annotations

from pathlib import Path

import attrs
import pytest
import trio

from replica import (
    AllowCompaction,
    CreateDataflow,
    DataflowClass,
    DataflowDescription,
    Frontier,
    IndexExport,
    IndexImport,
    Peek,
    ReplicaAbortedError,
    ReplicaConfig,
    Schedule,
    ShardCatalog,
    open_controller,
    open_replica,
)
from replica.driver import main

from .test_two_runtimes import OLD, hydrate

LOCAL = "Index u1001 has been allowed to compact beyond the dataflow as_of"
SHARED = LOCAL + ": since [2], as_of [0]"


def late_reader(*, one_shot: bool) -> DataflowDescription:
    """Index 2001 re-exporting index 1001 at ``as_of`` 0: built after 1001
    compacted to 2, it would read what is gone."""
    reader = DataflowDescription(
        0,
        index_imports=(IndexImport(1001, 1000, OLD.index_exports[0].key),),
        index_exports=(IndexExport(2001, 1000, OLD.index_exports[0].key),),
        name="late",
    )
    if one_shot:
        reader = attrs.evolve(reader, until=1, dataflow_class=DataflowClass.ONE_SHOT_READ)
    return reader


@pytest.mark.parametrize(
    ("interactive", "one_shot", "processes", "workers", "message"),
    [
        (False, False, 1, 1, LOCAL),
        (False, False, 2, 2, LOCAL),
        (True, False, 1, 2, LOCAL),
        (True, True, 1, 1, SHARED),
        (True, True, 2, 2, SHARED),
    ],
)
async def test_an_import_below_its_since_aborts_the_process(
    interactive: bool, one_shot: bool, processes: int, workers: int, message: str
) -> None:
    shards = ShardCatalog()
    config = ReplicaConfig(processes, workers, interactive=interactive)
    async with (
        open_replica(config, shards=shards) as replica,
        open_controller(replica) as controller,
    ):
        await hydrate(controller, shards)
        await controller.send(AllowCompaction(1001, Frontier.at(2)))
        await controller.send(CreateDataflow(late_reader(one_shot=one_shot)))
        await controller.send(Schedule(2001))
        with pytest.raises(ReplicaAbortedError) as aborted:
            await controller.peek(2001, 0)
        # The first process whose worker panicked says so (each of them does).
        said = str(aborted.value)
        assert said in {
            f"replica process {p} aborted: a worker panicked: {message}" for p in range(processes)
        }
        # Every runtime of the process ended, not only the panicking one.
        for process in replica.processes:
            assert process.panicked == message
            assert all(worker._halted for worker in process.members)
        assert len(replica.processes[0].members) == workers * (2 if interactive else 1)
        # The controller says so from then on, without waiting.
        with pytest.raises(ReplicaAbortedError):
            await controller.send(Peek(9, 1001, 2))
        with pytest.raises(ReplicaAbortedError):
            await controller.await_frontier(1001, 10)
        with pytest.raises(ReplicaAbortedError):
            await controller.connect()
        await trio.testing.wait_all_tasks_blocked()


async def test_a_read_below_the_since_is_still_a_peek_error() -> None:
    shards = ShardCatalog()
    async with (
        open_replica(ReplicaConfig(interactive=True), shards=shards) as replica,
        open_controller(replica) as controller,
    ):
        await hydrate(controller, shards)
        await controller.send(AllowCompaction(1001, Frontier.at(2)))
        with pytest.raises(Exception, match="before the compaction frontier 2"):
            await controller.peek(1001, 0)
        assert all(process.panicked is None for process in replica.processes)


SPEC = """\
create-instance
----
ok

initialization-complete
----
ok

write-rows shard=r ts=0
  1 alpha
  2 beta
----
wrote 2

define-index source=1000 index=1001 shard=r key=[0] as-of=0
----
ok

schedule id=1001
----
ok

await-frontier id=1001 ts=1
----
ok

allow-compaction id=1001 since=2
----
ok

create-dataflow name=late as-of=0 until=1
  import index=1001
  build id=2000
    Reduce aggregates=[count(*)]
      Get u1000
  export index=t2001 on=2000 key=[0]
----
ok

schedule id=t2001
----
ok

peek id=t2001 ts=0
----
2

peek id=1001 ts=3
----
1 alpha
2 beta
"""


@pytest.mark.parametrize(
    ("topology", "message"), [(["--solo"], LOCAL), (["--interactive", "--workers", "2"], SHARED)]
)
def test_the_driver_prints_one_line_for_the_stanza_and_exits_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], topology: list[str], message: str
) -> None:
    spec = tmp_path / "late.spec"
    spec.write_text(SPEC)
    assert main(["run", str(spec), *topology]) == 1
    out, err = capsys.readouterr()
    line = f"replica process 0 aborted: a worker panicked: {message}"
    assert f"    error: {line}\n" in out
    assert f"{spec}:44: peek id=t2001 ts=0\n" in out
    assert (
        f"{spec}: invariant broken: the replica aborted at line 44 ({line}); "
        "1 stanza after it did not run\n"
    ) in out
    assert "Traceback" not in out + err


def test_rewrite_leaves_a_spec_whose_replica_aborted_as_it_was(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = tmp_path / "late.spec"
    spec.write_text(SPEC)
    assert main(["run", str(spec), "--solo", "--rewrite"]) == 1
    assert spec.read_text() == SPEC
    assert f"not rewritten: {spec}: the replica aborted\n" in capsys.readouterr().out


def test_check_determinism_fails_a_spec_whose_replica_aborts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = tmp_path / "late.spec"
    spec.write_text(SPEC)
    assert main(["run", str(spec), "--solo", "--check-determinism"]) == 1
    out = capsys.readouterr().out
    assert "invariant broken: the replica aborted at line 44" in out
    assert f"deterministic {spec}:" in out  # the two runs are alike all the same
