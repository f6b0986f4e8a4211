"""``trio-reconcile run --spawn --persist URL``: the shard host's catalog in a
durable store. A spec's shards (what the driver wrote and what the
materialized-view sink appended) are in the store when the command ends;
a store that cannot serve the run is exit 2 before any process starts, and
changes nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from replica.driver import main
from replica.storage.persist import open_catalog

# A writable materialized view of `src` into `copy`: after the run, `copy`
# holds what the sink appended across processes, `src` what the driver wrote.
SPEC = """\
create-instance
----
ok

initialization-complete
----
ok

write-rows shard=src ts=0
  1 a
  2 b
----
wrote 2

create-dataflow name=mv as-of=0
  import source=10 shard=src upper=1
  build id=20
    Project (#0, #1)
      Get u10
  export kind=materialized-view sink=21 on=20 shard=copy
----
ok

schedule id=21
----
ok

allow-writes id=21
----
ok

advance shard=src upper=3
----
ok

peek id=21 ts=2
----
1 "a"
2 "b"
"""


def _spec(folder: Path, name: str = "mv.spec") -> Path:
    path = folder / name
    path.write_text(SPEC)
    return path


def _consolidated(url: str, shard: str) -> tuple[int, dict[tuple[object, ...], int]]:
    with open_catalog(url) as catalog:
        found = catalog.shard(shard)
        counts: dict[tuple[object, ...], int] = {}
        for row, _, diff in found.updates:
            counts[row] = counts.get(row, 0) + diff
        return found.upper, {row: n for row, n in counts.items() if n}


def test_a_spawned_run_leaves_its_shards_in_the_store(
    url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = _spec(tmp_path)
    status = main(
        ["run", str(spec), "--spawn", "--processes", "2", "--workers", "1", "--persist", url]
    )
    out = capsys.readouterr()
    assert status == 0, out.out + out.err
    assert f"ok {spec}" in out.out
    upper, rows = _consolidated(url, "src")
    assert (upper, rows) == (3, {(1, "a"): 1, (2, "b"): 1})
    upper, rows = _consolidated(url, "copy")
    assert upper >= 3, "the sink wrote [0, 3) at least"
    assert rows == {(1, "a"): 1, (2, "b"): 1}


def test_a_store_that_holds_shards_is_refused_and_kept(
    sqlite_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with open_catalog(sqlite_url) as catalog:
        catalog.shard("src").write(0, [(7, "x")])
    assert main(["run", str(_spec(tmp_path)), "--spawn", "--persist", sqlite_url]) == 2
    err = capsys.readouterr().err
    assert "argument --persist" in err
    assert "the store already holds shards (src)" in err
    assert _consolidated(sqlite_url, "src") == (1, {(7, "x"): 1})


def test_one_store_serves_one_spec(
    sqlite_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    specs = [str(_spec(tmp_path, "a.spec")), str(_spec(tmp_path, "b.spec"))]
    assert main(["run", *specs, "--spawn", "--persist", sqlite_url]) == 2
    err = capsys.readouterr().err
    assert "serves one spec (2 given)" in err
    assert not Path(sqlite_url.removeprefix("sqlite:")).exists()


def test_memory_serves_every_spec_afresh(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    specs = [str(_spec(tmp_path, "a.spec")), str(_spec(tmp_path, "b.spec"))]
    # The second spec writes src at ts 0 again: only a fresh catalog accepts it.
    assert main(["run", *specs, "--spawn", "--persist", "memory:"]) == 0
    assert capsys.readouterr().out.count("ok ") == 2


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--persist", "nosuch:x"], "argument --persist: "),
        (["--persist", "sqlite:/nonexistent-folder/x.db"], "argument --persist: "),
    ],
)
def test_a_store_that_cannot_open_is_exit_2(
    arguments: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", str(_spec(tmp_path)), "--spawn", *arguments]) == 2
    assert message in capsys.readouterr().err


def test_persist_is_only_for_spawn(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", str(_spec(tmp_path)), "--persist", "memory:"]) == 2
    assert "argument --persist: only with --spawn" in capsys.readouterr().err
