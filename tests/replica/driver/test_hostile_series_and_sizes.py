"""A hostile script's sizes: a series as long as the bigints, and the like.
Each case failed before its fix."""

from __future__ import annotations

import pytest

from replica._operators import MAX_SERIES, table_rows
from replica._scalar import INT64_MAX, INT64_MIN, EvalError
from replica.driver._spec import parse_spec

from .scripts import TOPOLOGIES, assert_passes

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
