"""Plans a hostile script writes: literals that Python holds equal but SQL
does not, expressions and plans nested past any real plan's depth, floats
that compare as SQL compares them. Each case failed before its fix."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from replica.driver import main
from replica.driver.lang._data import ColumnType, ScalarType
from replica.driver.lang._expressions import Apply, Const, Ref, parse_expr
from replica.driver.lang._spec import parse_spec
from replica.driver.lang._tokens import Cursor, MirError, lex
from replica.driver.oracle._model import ReferenceModel
from replica.model import Literal, ScalarFunc

from ..scripts import TOPOLOGIES, assert_passes

KV = """\
create-instance
----
ok

define-schema name=kv
  k bigint
  v bigint nullable
----
ok

initialization-complete
----
ok

write-rows shard=t ts=0 schema=kv
  1 1
  2 null
----
wrote 2

"""


def dataflow(line: str) -> str:
    return f"""\
create-dataflow name=d as-of=0 optimize
  import source=1000 shard=t upper=1 schema=kv
  build id=2000
    {line}
      Get u1000
  export index=2001 on=2000 key=[0]
----
ok

schedule id=2001
----
ok

"""


RECONNECT_MAP = (
    KV
    + dataflow("Map (1)")
    + """\
peek id=2001 ts=0
----
1 1 1
2 null 1

reconnect
----
ok

create-instance
----
ok

"""
    + dataflow("Map (true)")
    + """\
initialization-complete
----
ok

peek id=2001 ts=0
----
1 1 true
2 null true
"""
)


def assert_runs(text: str, topology: str) -> None:
    assert_passes(parse_spec(text, "hostile.spec"), topology)


def test_literals_of_different_types_are_different_literals() -> None:
    assert Literal(1) != Literal(True)
    assert Literal(0) != Literal(False)
    assert Literal(1) == Literal(1)


@pytest.mark.parametrize("topology", sorted(TOPOLOGIES))
def test_a_reconnect_rebuilds_a_map_of_1_replayed_as_a_map_of_true(topology: str) -> None:
    assert_runs(RECONNECT_MAP, topology)


def nested_plan(depth: int, line: str) -> str:
    """A dataflow whose build is ``depth`` operators: ``line`` over ``line``
    .. over a Get."""
    plan = "".join(f"    {'  ' * level}{line}\n" for level in range(depth - 1))
    plan += f"    {'  ' * (depth - 1)}Get u1000\n"
    return f"""\
create-dataflow name=d as-of=0 optimize
  import source=1000 shard=t upper=1 schema=kv
  build id=2000
{plan}  export index=2001 on=2000 key=[0]
----
ok

schedule id=2001
----
ok

"""


# Line 24 is the build's first plan line; the dataflow starts at line 21.
@pytest.mark.parametrize(
    ("plan", "line", "message"),
    [
        (
            dataflow("Filter " + "(" * 2000 + "#1 IS NULL" + ")" * 2000),
            24,
            "Filter: brackets nest more than 64 deep",
        ),
        (
            dataflow("Filter " + "NOT(" * 2000 + "#1 IS NULL" + ")" * 2000),
            24,
            "Filter: brackets nest more than 64 deep",
        ),
        (dataflow("Filter #1" + " IS NULL" * 2000), 24, "an expression nests more than 64 deep"),
        (
            dataflow("Map (" + " = ".join(["(#1 = 1)"] * 2000) + ")"),
            24,
            "an expression nests more than 64 deep",
        ),
        (
            dataflow("Reduce aggregates=[count(" + "(" * 2000 + "#1" + ")" * 2000 + ")]"),
            24,
            "Reduce: brackets nest more than 64 deep",
        ),
        (
            nested_plan(2000, "Filter #1 IS NULL"),
            24 + 64,
            "a plan nests more than 64 operators deep",
        ),
    ],
)
def test_a_plan_nested_past_the_limit_is_bad_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], plan: str, line: int, message: str
) -> None:
    spec = tmp_path / "deep.spec"
    spec.write_text(KV + plan, encoding="utf-8")
    assert main(["run", str(spec)]) == 2
    assert capsys.readouterr() == ("", f"{spec}:{line}: {message}\n")


DEEPEST = (
    KV
    + nested_plan(64, "Filter " + "NOT(" * 63 + "#1 IS NULL" + ")" * 63)
    + """\
peek id=2001 ts=0
----
1 1
"""
)


@pytest.mark.parametrize("topology", sorted(TOPOLOGIES))
def test_a_plan_at_both_limits_runs(topology: str) -> None:
    assert_runs(DEEPEST, topology)


FLOATS = """\
create-instance
----
ok

define-schema name=ff
  x double
  y double
----
ok

initialization-complete
----
ok

write-rows shard=t ts=0 schema=ff
  NaN NaN
  NaN 1
  1 NaN
  -0 0
----
wrote 4

create-dataflow name=d as-of=0 optimize
  import source=1000 shard=t upper=1 schema=ff
  build id=2000
    Map (#0 = #1, #0 < #1, #0 > #1, #0 != #1, #0 <= #1, #0 >= #1)
      Get u1000
  export index=2001 on=2000 key=[0]
----
ok

schedule id=2001
----
ok

# As in Materialize (and PostgreSQL): NaN equals NaN and is above every
# other number; -0 equals 0.
peek id=2001 ts=0
----
0 0 true false false false true true
1 NaN false true false true true false
NaN 1 false false true true false true
NaN NaN true false false false true true
"""


@pytest.mark.parametrize("topology", ["solo-w1", "two-w2p2"])
def test_nan_compares_equal_to_itself_and_above_every_number(topology: str) -> None:
    assert_runs(FLOATS, topology)


NAN_JOIN = """\
create-instance
----
ok

define-schema name=ff
  x double
  y double
----
ok

define-schema name=f
  z double
----
ok

initialization-complete
----
ok

write-rows shard=t ts=0 schema=ff
  NaN NaN
  NaN 1
----
wrote 2

write-rows shard=u ts=0 schema=f
  NaN
----
wrote 1

# A join's equalities hold NaN equal to NaN, within one input as across two.
create-dataflow name=d as-of=0 optimize
  import source=1000 shard=t upper=1 schema=ff
  import source=1001 shard=u upper=1 schema=f
  build id=2000
    Join on=(#0 = #1 AND #1 = #2)
      Get u1000
      Get u1001
  export index=2001 on=2000 key=[0]
----
ok

schedule id=2001
----
ok

peek id=2001 ts=0
----
NaN NaN NaN
"""


@pytest.mark.parametrize("topology", ["solo-w1", "two-w2p2"])
def test_a_join_holds_nan_equal_to_nan(topology: str) -> None:
    assert_runs(NAN_JOIN, topology)


DISTINCT_COUNTS = (
    KV
    + """\
# The distinct counts of each key: a count moves from one value to another
# as rows arrive, so a Distinct's group grows, shrinks and empties.
create-dataflow name=d as-of=0 optimize
  import source=1000 shard=t upper=1 schema=kv
  build id=2000
    Distinct project=[#1]
      Reduce group_by=[#0] aggregates=[count(*)]
        Get u1000
  export index=2001 on=2000 key=[0]
----
ok

schedule id=2001
----
ok

peek id=2001 ts=0
----
1

write-rows shard=t ts=1 schema=kv
  1 null
----
wrote 1

peek id=2001 ts=1
----
1
2

write-rows shard=t ts=2 schema=kv
  2 null
----
wrote 1

peek id=2001 ts=2
----
2
"""
)


@pytest.mark.parametrize("topology", sorted(TOPOLOGIES))
def test_a_distinct_group_that_grew_then_emptied_retracts_its_row(topology: str) -> None:
    assert_runs(DISTINCT_COUNTS, topology)


@pytest.mark.parametrize(
    ("written", "value"),
    [
        (r'"\u{41}\u{1F600}"', "A\U0001f600"),
        (r'"\u{0_041}"', "A"),
        (r'"\x41\x7f"', "A\x7f"),
        (r'"tab\there \"q\" \\ \0 \'"', 'tab\there "q" \\ \0 \''),
        ('"é ü 😀"', "é ü 😀"),
    ],
)
def test_a_string_literal_reads_its_escapes_as_rust_does(written: str, value: str) -> None:
    assert parse_expr(Cursor(lex(written))) == Const(value, ColumnType(ScalarType.TEXT))


@pytest.mark.parametrize(
    ("written", "message"),
    [
        (r'"\q"', r"unknown character escape `\q` in a string literal"),
        (r'"\x80"', r"out of range hex escape `\x80` (at most \x7f) in a string literal"),
        (r'"\x4"', r"unknown character escape `\x` in a string literal"),
        (r'"\u{D800}"', r"invalid unicode character escape `\u{D800}` in a string literal"),
        (r'"\u{110000}"', r"invalid unicode character escape `\u{110000}` in a string literal"),
        (r'"\u41"', r"unknown character escape `\u` in a string literal"),
    ],
)
def test_a_string_literal_with_an_escape_rust_refuses_is_refused(
    written: str, message: str
) -> None:
    with pytest.raises(MirError, match=f"^{re.escape(message)}$"):
        parse_expr(Cursor(lex(written)))


def bigint(value: int) -> Const:
    return Const(value, ColumnType(ScalarType.BIGINT))


@pytest.mark.parametrize(
    ("written", "value"),
    [
        ("-1", -1),
        ("- 7", -7),
        ("-9223372036854775808", -(2**63)),
        ("9223372036854775807", 2**63 - 1),
        ("0x10", 16),
        ("0o17", 15),
        ("0b101", 5),
        ("1_000", 1000),
        ("1i64", 1),
        ("-0x_ff_u32", -255),
    ],
)
def test_an_integer_literal_reads_as_syn_reads_it(written: str, value: int) -> None:
    assert parse_expr(Cursor(lex(written))) == bigint(value)


def test_a_negative_literal_compares_in_a_filter() -> None:
    expr = parse_expr(Cursor(lex("#1 > -1")))
    assert expr == Apply(ScalarFunc.GT, (Ref(1), bigint(-1)))


@pytest.mark.parametrize(
    ("written", "message"),
    [
        ("9223372036854775808", "number too large to fit in target type: 9223372036854775808"),
        ("-9223372036854775809", "number too small to fit in target type: -9223372036854775809"),
        ("0x", "expected a number literal, found `0x`"),
        ("1q", "expected a number literal, found `1q`"),
        ("- x", "expected a number literal after `-`, found `x`"),
    ],
)
def test_an_integer_literal_out_of_range_or_malformed_is_refused(
    written: str, message: str
) -> None:
    with pytest.raises(MirError, match=f"^{re.escape(message)}$"):
        parse_expr(Cursor(lex(written)))


# A Map or Project past the limit, and a line long enough that reading it
# in quadratic time (as the lexer once did) would not finish.
@pytest.mark.parametrize(
    ("line", "columns"),
    [
        ("Map (" + ", ".join(["#0"] * 5000) + ")", 5002),
        ("Project (" + ", ".join(["#0"] * 300_000) + ")", 300_000),
    ],
)
def test_a_plan_with_too_many_columns_is_bad_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], line: str, columns: int
) -> None:
    spec = tmp_path / "wide.spec"
    spec.write_text(KV + dataflow(line), encoding="utf-8")
    assert main(["run", str(spec)]) == 2
    message = f"a plan's rows have at most 4096 columns (these have {columns})"
    assert capsys.readouterr() == ("", f"{spec}:24: {message}\n")


BOOL_JOIN = """\
create-instance
----
ok

define-schema name=kb
  k bigint
  b boolean
----
ok

initialization-complete
----
ok

create-dataflow name=d as-of=0 optimize
  import source=1000 shard=t upper=1 schema=kb
  build id=2000
    Join on=(#0 = #2 AND #1 = #2)
      Get u1000
      Get u1000
  export index=2001 on=2000 key=[]
----
ok
"""


def test_a_join_equality_of_two_types_is_bad_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Python holds True == 1: joined, a true would have met a 1.
    spec = tmp_path / "join.spec"
    spec.write_text(BOOL_JOIN, encoding="utf-8")
    assert main(["run", str(spec)]) == 2
    message = "a join equality (#1 = #2) compares boolean with bigint"
    assert capsys.readouterr() == ("", f"{spec}:18: {message}\n")


BOOL_KEY = (
    KV
    + """\
create-dataflow name=d as-of=0 optimize
  import source=1000 shard=t upper=1 schema=kv
  build id=2000
    Map (#1 IS NULL)
      Get u1000
  export index=2001 on=2000 key=[2]
----
ok

schedule id=2001
----
ok

# The literals are bigints: no boolean key equals one (Python holds
# True == 1 and False == 0).
peek-count id=2001 ts=0 literals=[1]
----
0

peek-count id=2001 ts=0 literals=[0, 1]
----
0

peek-count id=2001 ts=0
----
2
"""
)


@pytest.mark.parametrize("topology", sorted(TOPOLOGIES))
def test_a_bigint_literal_counts_no_boolean_key(topology: str) -> None:
    assert_runs(BOOL_KEY, topology)


def test_the_model_counts_no_boolean_key_for_a_bigint_literal() -> None:
    model = ReferenceModel()
    outputs = [model.expect(stanza) for stanza in parse_spec(BOOL_KEY, "m.spec").stanzas]
    assert outputs[-3:] == [["0"], ["0"], ["2"]]
