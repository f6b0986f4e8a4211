"""``explain``: a dataflow's plan lowered and printed as the real driver
prints it (Materialize's EXPLAIN text of the LIR plan), one printed form per
node kind, both forms of the directive, and its errors. Nothing is sent."""

from __future__ import annotations

import pytest

from replica.driver.lang._explain import CROSS, compact, scalar_text
from replica.driver.lang._payloads import Fail, Payload, Print
from replica.driver.lang._spec import SpecError, parse_spec
from replica.model import Call, Column, Literal, ScalarFunc
from replica.model._lowering import expected_buckets

KV = "define-schema name=kv\n  k bigint\n  v text\n----\nok\n\n"
IMPORTS = (
    "  import source=1 shard=a schema=kv upper=1\n  import source=2 shard=b schema=kv upper=1\n"
)


def payload(text: str) -> Payload:
    return parse_spec(text, "x.spec").stanzas[-1].payload


def explained(plan: str, *, header: str = "explain as-of=0 optimize", extra: str = "") -> list[str]:
    """The lines of an inline explain of one build ``u10`` of ``plan``
    (indented as a build's plan) over sources ``u1`` and ``u2``."""
    body = "".join(f"    {line}\n" for line in plan.strip("\n").split("\n"))
    text = f"{KV}{extra}{header}\n{IMPORTS}  build id=10\n{body}----\n----\n----\n----\n"
    found = payload(text)
    assert isinstance(found, Print), found
    return list(found.lines)


def plan_of(plan: str, **kwargs: str) -> list[str]:
    """The lines of build u10's paragraph, without its header."""
    lines = explained(plan, **kwargs)
    assert lines[0] == "u10:"
    return lines[1 : lines.index("")]


NEWEST_JOIN = """\
create-dataflow name=join as-of=0 optimize
  import source=1000 shard=left schema=kv upper=1
  import source=1001 shard=right schema=kv upper=1
  build id=2000
    Join on=(#0 = #2)
      Get u1000
      Get u1001
  export index=2001 on=2000 key=[0]
----
ok

"""
JOIN_LINES = [
    "u2001:",
    "  →Arrange (#0)",
    "    →Stream u2000",
    "",
    "u2000:",
    "  →Differential Join %0:u1000[#0] » %1:u1001[#0]",
    "    →Arrange (#0)",
    "      →Stream u1000",
    "    →Arrange (#0)",
    "      →Stream u1001",
    "",
    "Source u1000",
    "Source u1001",
]


def test_explain_ref_prints_a_declared_dataflow_as_the_newest_join_spec_pins() -> None:
    found = payload(f"{KV}{NEWEST_JOIN}explain ref=join\n----\n----\n----\n----\n")
    assert found == Print(tuple(JOIN_LINES))


def test_explain_ref_of_a_deferred_dataflow() -> None:
    deferred = NEWEST_JOIN.replace("optimize", "optimize defer").replace("ok\n", "deferred\n")
    found = payload(f"{KV}{deferred}explain ref=join\n----\n----\n----\n----\n")
    assert found == Print(tuple(JOIN_LINES))


def test_explain_inline_prints_the_same_as_the_declared_dataflow() -> None:
    body = NEWEST_JOIN.split("\n", 1)[1].split("----")[0]
    found = payload(f"{KV}explain as-of=0 optimize\n{body}----\n----\n----\n----\n")
    assert found == Print(tuple(JOIN_LINES))


def test_explain_registers_nothing_an_inline_export_would() -> None:
    text = (
        f"{KV}explain as-of=0\n{IMPORTS}  build id=10\n    Get u1\n"
        "  export index=11 on=10 key=[0]\n----\n----\n----\n----\n\ncount id=11 ts=0\n----\n0\n"
    )
    assert payload(text) == Fail("unknown index u11; define it with define_index first")


def test_get_of_a_source_streams_and_of_an_imported_index_is_arranged() -> None:
    assert plan_of("Get u1") == ["  →Stream u1"]
    index = "define-index source=1000 index=1001 shard=s key=[0] as-of=0 schema=kv\n----\nok\n\n"
    text = (
        f"{KV}{index}explain as-of=0\n  import index=1001\n  build id=10\n    Get u1000\n"
        "----\n----\n----\n----\n"
    )
    assert payload(text) == Print(("u10:", "  →Arranged u1000"))


def test_a_get_fuses_the_maps_filters_and_projections_above_it() -> None:
    assert plan_of("Project (#2, #0)\n  Filter (#0 > 1)\n    Map (#0 + 1)\n      Get u1") == [
        "  →Fused with Child Map/Filter/Project",
        "    Project: #2, #0",
        "    Filter: (#0 > 1)",
        "    Map: (#0 + 1)",
        "      →Read u1",
    ]


def test_an_mfp_over_another_operator_is_a_node_of_its_own() -> None:
    assert plan_of("Project (#0)\n  Negate\n    Get u1") == [
        "  →Map/Filter/Project",
        "    Project: #0",
        "      →Negate Diffs",
        "        →Stream u1",
    ]


def test_accumulable_reduce_with_its_key() -> None:
    assert plan_of("Reduce group_by=[#0] aggregates=[count(*), sum(#0)]\n  Get u1") == [
        "  →Accumulable GroupAggregate",
        "    Simple aggregates: count(*), sum(#0)",
        "    Key:",
        "      Project: #0",
        "    →Stream u1",
    ]


def test_distinct_aggregates_are_their_own_line() -> None:
    assert plan_of("Reduce aggregates=[count(distinct #0)]\n  Get u1")[:3] == [
        "  →Accumulable GroupAggregate",
        "    Distinct aggregates: count(distinct #0)",
        "    Key:",
    ]


def test_min_is_bucketed_hierarchical_and_monotonic_with_the_hint() -> None:
    buckets = " 268435456 16777216 1048576 65536 4096 256 16"
    assert plan_of("Reduce aggregates=[min(#0)]\n  Get u1")[:2] == [
        f"  →Bucketed Hierarchical GroupAggregate (buckets: {buckets})",
        "    Aggregations: min",
    ]
    assert plan_of("Reduce aggregates=[max(#0)] monotonic\n  Get u1")[:2] == [
        "  →Monotonic GroupAggregate",
        "    Aggregations: max",
    ]
    assert plan_of("Reduce aggregates=[max(#0)] exp_group_size=1000\n  Get u1")[0] == (
        "  →Bucketed Hierarchical GroupAggregate (buckets:  256 16)"
    )


def test_a_single_time_dataflow_consolidates_its_monotonic_operators() -> None:
    lines = plan_of(
        "Reduce aggregates=[max(#0)]\n  Get u1", header="explain as-of=0 until=1 optimize"
    )
    assert lines[0] == "  →Consolidating Monotonic GroupAggregate"


def test_mixed_aggregates_collate() -> None:
    assert plan_of("Reduce aggregates=[count(*), max(#0)]\n  Get u1")[:5] == [
        "  →Collated Multi-GroupAggregate",
        "    Accumulable sub-aggregation",
        "      Simple aggregates: count(*)",
        "    Hierarchical sub-aggregation",
        "      Aggregations: max",
    ]


def test_distinct_and_a_reduce_without_aggregates() -> None:
    every = ["  →Distinct GroupAggregate", "    →Stream u1"]
    assert plan_of("Distinct project=[#0, #1]\n  Get u1") == every
    # No project: the group key is empty (one row for a non-empty input).
    assert plan_of("Distinct\n  Get u1")[1:3] == ["    Key:", "      Project: ()"]
    assert plan_of("Reduce group_by=[#1] aggregates=[]\n  Get u1") == [
        "  →Distinct GroupAggregate",
        "    Key:",
        "      Project: #1",
        "    →Stream u1",
    ]


def test_differential_join_arranges_each_input_by_its_key() -> None:
    assert plan_of("Join on=(#1 = #3)\n  Get u1\n  Get u2") == [
        "  →Differential Join %0:u1[#1] » %1:u2[#1]",
        "    →Arrange (#1)",
        "      →Stream u1",
        "    →Arrange (#1)",
        "      →Stream u2",
    ]


def test_a_join_fuses_the_mfp_above_it_after_its_last_lookup() -> None:
    assert plan_of("Project (#1, #3)\n  Join on=(#0 = #2)\n    Get u1\n    Get u2")[:3] == [
        "  →Differential Join %0:u1[#0] » %1:u2[#0]",
        "    after %1:",
        "      Project: #1, #3",
    ]


def test_a_join_input_that_is_no_get_has_no_name() -> None:
    lines = plan_of("Join on=(#0 = #2)\n  Negate\n    Get u1\n  Get u2")
    assert lines[0] == "  →Differential Join %0[#0] » %1:u2[#0]"


def test_cross_join_keys_are_empty() -> None:
    assert plan_of("CrossJoin\n  Get u1\n  Get u2") == [
        f"  →Differential Join %0:u1[{CROSS}] » %1:u2[{CROSS}]",
        "    →Arrange (empty key)",
        "      →Stream u1",
        "    →Arrange (empty key)",
        "      →Stream u2",
    ]


INDEXES = "".join(
    f"define-index source={source} index={index} shard=s{source} key=[0] as-of=0 schema=kv\n"
    "----\nok\n\n"
    for source, index in ((1000, 1001), (2000, 2001), (3000, 3001))
)
THREE = "    Join on=(#0 = #2 AND #2 = #4)\n      Get u1000\n      Get u2000\n      Get u3000\n"


def three_way(imports: str) -> list[str]:
    header = f"{KV}{INDEXES}explain as-of=0 optimize\n{imports}  build id=10\n"
    text = f"{header}{THREE}----\n----\n----\n----\n"
    found = payload(text)
    assert isinstance(found, Print), found
    return list(found.lines)


def test_three_inputs_whose_lookups_existing_arrangements_cover_are_a_delta_join() -> None:
    imports = "".join(f"  import index={index}\n" for index in (1001, 2001, 3001))
    assert three_way(imports) == [
        "u10:",
        "  →Delta Join [%0:u1000[#0] » %1:u2000[#0] » %2:u3000[#0]] "
        "[%1:u2000[#0] » %0:u1000[#0] » %2:u3000[#0]] "
        "[%2:u3000[#0] » %0:u1000[#0] » %1:u2000[#0]]",
        "    →Arranged u1000",
        "    →Arranged u2000",
        "    →Arranged u3000",
    ]


def test_three_inputs_one_not_arranged_are_a_differential_join() -> None:
    imports = (
        "  import index=1001\n  import index=2001\n  import source=3000 shard=c schema=kv upper=1\n"
    )
    lines = three_way(imports)
    assert lines[1] == "  →Differential Join %0:u1000[#0] » %1:u2000[#0] » %2:u3000[#0]"
    assert lines[2:6] == [
        "    →Arranged u1000",
        "    →Arranged u2000",
        "    →Arrange (#0)",
        "      →Stream u3000",
    ]


def test_union_consolidates_when_an_input_is_negated() -> None:
    assert plan_of("Union\n  Get u1\n  Get u2") == [
        "  →Union",
        "    →Stream u1",
        "    →Stream u2",
    ]
    assert plan_of("Union\n  Get u1\n  Negate\n    Get u2")[:1] == ["  →Consolidating Union"]


def test_negate_and_threshold_which_arranges_on_all_columns() -> None:
    assert plan_of("Threshold\n  Negate\n    Get u1") == [
        "  →Threshold Diffs #0, #1",
        "    →Arrange (#0, #1)",
        "      →Negate Diffs",
        "        →Stream u1",
    ]


def test_top_k_basic_and_monotonic() -> None:
    top_k = "TopK group_by=[#0] order_by=[#1 asc nulls_last] limit=3 offset=1"
    assert plan_of(f"{top_k}\n  Get u1") == [
        "  →Non-monotonic TopK",
        "    Group By #0",
        "    Order By #1 asc nulls_last",
        "    Limit 3",
        "    Offset 1",
        "    →Stream u1",
    ]
    assert plan_of("TopK order_by=[#1] limit=1 monotonic\n  Get u1") == [
        "  →Monotonic Top1",
        "    Order By #1 desc nulls_last",
        "    →Stream u1",
    ]
    assert plan_of("TopK limit=2 monotonic\n  Get u1")[:2] == ["  →Monotonic TopK", "    Limit 2"]


def test_arrange_by_prints_each_new_key_and_fuses_the_mfp_below_it() -> None:
    assert plan_of("ArrangeBy keys=[[#1], [#0, #1]]\n  Get u1") == [
        "  →Arrange (#1) (#0, #1)",
        "    →Stream u1",
    ]
    assert plan_of("ArrangeBy keys=[[#0]]\n  Filter (#0 > 1)\n    Get u1") == [
        "  →Arrange (#0)",
        "    →Fused with Parent Map/Filter/Project",
        "      Filter: (#0 > 1)",
        "      →Stream u1",
    ]
    assert plan_of("ArrangeBy keys=[[]]\n  Get u1")[0] == "  →Arrange (empty key)"


def test_a_join_input_arranged_by_its_key_is_not_arranged_again() -> None:
    assert plan_of("Join on=(#0 = #2)\n  ArrangeBy keys=[[#0]]\n    Get u1\n  Get u2")[1:3] == [
        "    →Arrange (#0)",
        "      →Stream u1",
    ]


def test_constant_counts_its_rows() -> None:
    constant = 'Constant // { types: "(bigint)" }\n  - (1)\n  - (2)\n  - (2)'
    assert plan_of(constant) == ["  →Constant (2 rows)"]
    assert plan_of('Constant // { types: "(bigint)" }\n  - (1)') == ["  →Constant (1 row)"]
    assert plan_of('Constant <empty> // { types: "(bigint)" }') == ["  →Constant (0 rows)"]


def test_flat_map_with_and_without_a_fused_mfp() -> None:
    assert plan_of("FlatMap generate_series(1, #0)\n  Get u1") == [
        "  →Table Function generate_series(1, #0)",
        "    →Stream u1",
    ]
    assert plan_of("Filter (#2 > 1)\n  FlatMap generate_series(1, #0)\n    Get u1") == [
        "  →Fused with Child Map/Filter/Project",
        "    Filter: (#2 > 1)",
        "      →Table Function generate_series(1, #0)",
        "        →Stream u1",
    ]


def test_an_index_export_on_a_collection_already_arranged_by_its_key_passes_it_on() -> None:
    text = (
        f"{KV}explain as-of=0\n{IMPORTS}  build id=10\n    Reduce group_by=[#0] "
        "aggregates=[count(*)]\n      Get u1\n  export index=11 on=10 key=[0]\n"
        "----\n----\n----\n----\n"
    )
    found = payload(text)
    assert isinstance(found, Print)
    assert found.lines[:3] == ("u11:", "  →Arranged u10", "")
    assert found.lines[-3:] == ("", "Source u1", "Source u2")


def test_a_join_without_optimize_fails_to_lower_as_the_real_driver_says() -> None:
    join = "    Join on=(#0 = #2)\n      Get u1\n      Get u2\n"
    text = f"{KV}explain as-of=0\n{IMPORTS}  build id=10\n{join}----\nx\n"
    assert payload(text) == Fail("lowering dataflow failed: unimplemented join")


def test_explain_of_an_unknown_dataflow_is_an_error_line() -> None:
    assert payload("explain ref=nope\n----\nx\n") == Fail(
        'unknown dataflow "nope"; declare it with create-dataflow name= first'
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("explain\n----\n", "give ref=NAME, or as-of=A"),
        ("explain as-of=0\n----\n", "give ref=NAME, or as-of=A"),
        ("explain ref=a as-of=0\n----\n", "takes no 'as-of'"),
        ("explain ref=a optimize\n----\n", "takes no 'optimize'"),
        ("explain ref=a\n  build id=1\n    Get u1\n----\n", "takes no a body"),
    ],
)
def test_malformed_explain_is_bad_input(text: str, message: str) -> None:
    with pytest.raises(SpecError, match=message):
        parse_spec(text, "x.spec")


def test_scalars_and_compact_columns_print_as_mir_does() -> None:
    gt = Call(ScalarFunc.GT, (Column(0), Literal(1)))
    assert scalar_text(gt) == "(#0 > 1)"
    assert scalar_text(Call(ScalarFunc.IS_NULL, (Column(1),))) == "(#1) IS NULL"
    assert scalar_text(Call(ScalarFunc.NOT, (gt,))) == "NOT((#0 > 1))"
    assert scalar_text(Call(ScalarFunc.AND, (gt, gt))) == "((#0 > 1) AND (#0 > 1))"
    assert scalar_text(Call(ScalarFunc.GREATEST, (Column(0), Literal("a")))) == 'greatest(#0, "a")'
    assert scalar_text(Literal(None)) == "null"
    columns = [Column(c) for c in (0, 1, 2, 3, 5, 6, 8)]
    assert compact(columns) == "#0..=#3, #5, #6, #8"


def test_buckets_are_powers_of_sixteen_below_the_group_size() -> None:
    assert expected_buckets(None)[0] == 268435456
    assert expected_buckets(17) == (16,)
    assert expected_buckets(16) == ()
