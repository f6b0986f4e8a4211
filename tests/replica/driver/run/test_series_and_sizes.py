"""A hostile script's sizes: a series as long as the bigints, and the like.
Each case failed before its fix."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import pytest

from replica.driver import main
from replica.driver.lang._spec import parse_spec
from replica.model import MAX_SERIES, _rows, table_rows
from replica.model._scalar import INT64_MAX, INT64_MIN, EvalError

from ..scripts import TOPOLOGIES, assert_passes

SERIES_ERROR = (
    "error: peek error: Evaluation error: "
    "generate_series of more than 1000000 rows (this replica's limit)"
)

SPANS = f"""\
create-instance
----
ok

initialization-complete
----
ok

define-schema name=span
  lo bigint
  hi bigint
  step bigint
----
ok

write-rows shard=spans schema=span ts=0
  -9223372036854775808 9223372036854775807 1
  9223372036854775807 -9223372036854775808 -1
  -9223372036854775808 9223372036854775807 9223372036854775807
  9223372036854775807 -9223372036854775808 1
----
wrote 4

create-dataflow name=series as-of=0
  import source=100 shard=spans schema=span upper=1
  build id=110
    Project (#0, #3)
      FlatMap generate_series(#0, #1, #2)
        Filter #2 = 1
          Get u100
  export index=111 on=110 key=[0]
----
ok

schedule id=111
----
ok

peek id=111 ts=0
----
{SERIES_ERROR}

create-dataflow name=few as-of=0
  import source=200 shard=spans schema=span upper=1
  build id=210
    Project (#0, #3)
      FlatMap generate_series(#0, #1, #2)
        Filter #2 > 1
          Get u200
  export index=211 on=210 key=[0]
----
ok

schedule id=211
----
ok

peek id=211 ts=0
----
-9223372036854775808 -1
-9223372036854775808 -9223372036854775808
-9223372036854775808 9223372036854775806
"""


@pytest.mark.parametrize(
    ("start", "stop", "step"),
    [
        (INT64_MIN, INT64_MAX, 1),
        (INT64_MAX, INT64_MIN, -1),
        (INT64_MIN, INT64_MAX, 2),
        (0, INT64_MAX, 1),
    ],
)
def test_a_series_longer_than_a_machine_word_is_the_named_error(
    start: int, stop: int, step: int
) -> None:
    # len() of such a range raised OverflowError, which ended the worker.
    with pytest.raises(EvalError, match=f"more than {MAX_SERIES} rows"):
        table_rows("generate_series", [start, stop, step])


def test_a_series_at_the_ends_of_the_bigints_counts_exactly() -> None:
    assert table_rows("generate_series", [INT64_MIN, INT64_MAX, INT64_MAX]) == [
        (INT64_MIN,),
        (-1,),
        (INT64_MAX - 1,),
    ]
    assert table_rows("generate_series", [INT64_MAX, INT64_MIN, 1]) == []
    assert len(table_rows("generate_series", [1, MAX_SERIES, 1])) == MAX_SERIES


@pytest.mark.parametrize("topology", sorted(TOPOLOGIES))
def test_a_row_whose_series_spans_the_bigints_is_an_error_of_its_collection(
    topology: str,
) -> None:
    assert_passes(parse_spec(SPANS, "hostile.spec"), topology)


MANY = """\
create-instance
----
ok

initialization-complete
----
ok

define-schema name=kv
  k bigint
  v bigint
----
ok

create-dataflow name=many as-of=0
  build id=210
    Constant // { types: "(bigint, bigint)" }
      - ((1, 2) x 9223372036854775807)
      - ((1, 3) x -5)
      - (2, 4)
  export index=211 on=210 key=[0]
  export kind=materialized-view sink=212 on=210 shard=out schema=kv
----
ok

schedule id=211
----
ok

allow-writes id=212
----
ok

peek id=211 ts=0 schema=kv
----
error: peek error: result exceeds max size of 4000000 rows

peek-count id=211 ts=0 literals=[2]
----
1

peek id=212 ts=0 schema=kv
----
error: peek error: result exceeds max size of 4000000 rows
"""


@pytest.mark.parametrize("topology", sorted(TOPOLOGIES))
def test_a_read_of_more_rows_than_the_limit_is_an_error_not_a_hang(topology: str) -> None:
    # A row counted 2**63 - 1 times was expanded row by row: the replica
    # hung, its memory growing, on the peek.
    assert_passes(parse_spec(MANY, "hostile.spec"), topology)


JOIN_ERROR = (
    "error: peek error: Evaluation error: "
    "join produced more than 4000000 rows at one worker (this replica's limit)"
)

# Two writes of 6,000 rows joined on a constant: 6,000 rows at time 0, then
# 36 million at time 1.
PAIRS = f"""\
create-instance
----
ok

initialization-complete
----
ok

write-single-ts shard=a ts=0 count=6000 row-bytes=8
----
wrote 6000

write-single-ts shard=b ts=0 count=1 row-bytes=8
----
wrote 1

create-dataflow name=pairs as-of=0 optimize
  import source=100 shard=a upper=1
  import source=200 shard=b upper=1
  build id=110
    Map (1)
      Get u100
  build id=210
    Map (1)
      Get u200
  build id=300
    Join on=(#2 = #5)
      Get u110
      Get u210
  export index=301 on=300 key=[0]
----
ok

schedule id=301
----
ok

peek-count id=301 ts=0 literals=[7]
----
1

write-single-ts shard=a ts=1 count=1 start=6000 row-bytes=8
----
wrote 1

write-single-ts shard=b ts=1 count=5999 start=1 row-bytes=8
----
wrote 5999

await-frontier id=301 ts=2
----
ok

peek-count id=301 ts=1 literals=[7]
----
{JOIN_ERROR}

peek id=301 ts=1
----
{JOIN_ERROR}

peek-count id=301 ts=0 literals=[7]
----
1
"""


@pytest.mark.parametrize("topology", sorted(TOPOLOGIES))
def test_a_join_past_the_row_limit_is_an_error_of_its_collection_not_out_of_memory(
    topology: str,
) -> None:
    # The join built its 36 million rows (some 6 GB) and the process died
    # with MemoryError and TrioInternalError tracebacks: now it counts them
    # first, and the run stays far below what the limit's rows would take.
    tracemalloc.start()
    try:
        assert_passes(parse_spec(PAIRS, "hostile.spec"), topology)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 100 * 2**20


@pytest.mark.parametrize(
    ("count", "message"),
    [
        ("9223372036854775808", "number too large to fit in target type"),
        ("-9223372036854775809", "number too small to fit in target type"),
    ],
)
def test_a_constant_count_past_an_i64_is_bad_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], count: str, message: str
) -> None:
    spec = tmp_path / "many.spec"
    spec.write_text(MANY.replace("x 9223372036854775807", f"x {count}"), encoding="utf-8")
    assert main(["run", str(spec)]) == 2
    assert capsys.readouterr() == ("", f"{spec}:18: Constant row: {message}: {count}\n")


def test_a_result_at_the_limit_is_read_and_one_past_it_is_not(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_rows, "MAX_RESULT_ROWS", 3)
    assert _rows.rows_of_counts({(1,): 2, (2,): 1, (3,): -4}) == [(1,), (1,), (2,)]
    with pytest.raises(_rows.ResultTooLargeError):
        _rows.rows_of_counts({(1,): 2, (2,): 2})


HUGE = "1" * 5000
SHOWN = "1" * 40 + "... (5000 characters)"


@pytest.mark.parametrize(
    ("plan", "shown"),
    [
        (f"Filter #0 = {HUGE}", SHOWN),
        (f"Filter #0 = -{HUGE}", SHOWN),
        (f"Filter #0 = 0x{HUGE}", "0x" + "1" * 38 + "... (5002 characters)"),
        (f"Project (#{HUGE})", SHOWN),
        (f"TopK order_by=[#0] offset={HUGE}", SHOWN),
    ],
)
def test_an_integer_literal_of_thousands_of_digits_is_bad_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], plan: str, shown: str
) -> None:
    # Python refuses to convert more than 4,300 digits: a ValueError of its
    # own, which ended the command with a traceback instead of exit 2.
    spec = tmp_path / "huge.spec"
    spec.write_text(
        f"""\
create-dataflow name=m as-of=0
  import source=100 shard=r upper=1
  build id=110
    {plan}
      Get u100
  export index=111 on=110 key=[0]
----
ok
""",
        encoding="utf-8",
    )
    assert main(["run", str(spec)]) == 2
    operator = plan.split(" ", 1)[0]
    message = f"number too large to fit in target type: `{shown}`"
    assert capsys.readouterr() == ("", f"{spec}:4: {operator}: {message}\n")
