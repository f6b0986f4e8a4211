"""Dataflows in the driver's language: ``define-index``, ``create-dataflow``
(imports, plans, exports), ``count`` and ``defer`` resolve to the
descriptions the replica receives, from what the file declared above them;
what the real driver finds while it runs is the stanza's error output, and a
malformed plan is refused before anything runs."""

from __future__ import annotations

import pytest

from replica.driver.lang._payloads import CountRows, Fail, Payload, PeekRows, Print, Send
from replica.driver.lang._spec import SpecError, parse_spec, read_spec
from replica.model import (
    Aggregate,
    Build,
    DataflowClass,
    DataflowDescription,
    Get,
    GlobalId,
    IndexExport,
    IndexImport,
    Join,
    MaterializedView,
    Project,
    Reduce,
    SinkExport,
    SourceImport,
    Subscribe,
)
from replica.protocol import CreateDataflow, UpdateConfiguration

from ....paths import DRIVER_SCRIPTS as SCRIPTS

needs_scripts = pytest.mark.skipif(
    not SCRIPTS.is_dir(), reason="../shared/external/driver-scripts is not here"
)
U = GlobalId.user


def payloads(text: str) -> list[Payload]:
    return [stanza.payload for stanza in parse_spec(text, "x.spec").stanzas]


def last(text: str) -> Payload:
    return payloads(text)[-1]


def sent(payload: Payload) -> DataflowDescription:
    assert isinstance(payload, Send)
    assert isinstance(payload.command, CreateDataflow)
    return payload.command.dataflow


def script_payload(name: str, directive: str) -> Payload:
    """The payload of the stanza whose directive line starts ``directive``."""
    spec = read_spec(SCRIPTS / name, name)
    (stanza,) = [s for s in spec.stanzas if spec.lines[s.line - 1].startswith(directive)]
    return stanza.payload


SOURCE = "  import source=1000 shard=r upper=1\n"
KV = "define-schema name=kv\n  k bigint\n  v text nullable\n----\nok\n\n"


def test_define_index_imports_the_shard_and_exports_the_index_keyed_as_given() -> None:
    dataflow = sent(last("define-index source=1000 index=1001 shard=d key=[1] as-of=3\n----\n"))
    assert dataflow == DataflowDescription.index(U(1000), "d", U(1001), (1,), 3)


def test_define_index_takes_its_arity_from_the_schema() -> None:
    dataflow = sent(
        last(f"{KV}define-index source=t1 index=t2 shard=d key=[0] as-of=0 schema=kv\n----\n")
    )
    assert dataflow.source_imports == (SourceImport(GlobalId.transient(1), "d", 2),)


@needs_scripts
def test_a_reduce_over_an_imported_index_reads_the_indexed_collection() -> None:
    dataflow = sent(script_payload("reduce.spec", "create-dataflow"))
    assert dataflow == DataflowDescription(
        0,
        index_imports=(IndexImport(U(1001), U(1000), (0,)),),
        objects_to_build=(Build(U(2000), Reduce(Get(U(1000)))),),
        index_exports=(IndexExport(U(2001), U(2000), (0,)),),
    )
    assert dataflow.name == "count"


@needs_scripts
def test_one_dataflow_exports_an_index_and_a_materialized_view() -> None:
    dataflow = sent(script_payload("index_and_mv.spec", "create-dataflow"))
    assert dataflow.source_imports == (SourceImport(U(1000), "r"),)
    assert dataflow.objects_to_build == (Build(U(2000), Project((0, 1), Get(U(1000)))),)
    assert dataflow.index_exports == (IndexExport(U(2001), U(2000), (0,)),)
    assert dataflow.sink_exports == (SinkExport(U(2002), U(2000), MaterializedView("mv")),)


@needs_scripts
def test_a_peek_of_a_materialized_view_sink_reads_its_shard() -> None:
    assert script_payload("index_and_mv.spec", "peek id=2002") == PeekRows(U(2002), 0, shard="mv")
    assert script_payload("index_and_mv.spec", "peek id=2001") == PeekRows(U(2001), 0)


@needs_scripts
def test_a_subscribe_export_streams_up_to_its_bound() -> None:
    dataflow = sent(script_payload("subscribe.spec", "create-dataflow"))
    assert dataflow.sink_exports == (SinkExport(U(2001), U(2000), Subscribe(2)),)


@needs_scripts
def test_a_transient_export_makes_a_query_dataflow() -> None:
    dataflow = sent(script_payload("two_runtime_query_dataflow.spec", "create-dataflow name=inter"))
    assert dataflow.index_imports == (IndexImport(U(2001), U(2000), (0,)),)
    assert dataflow.index_exports == (IndexExport(GlobalId.transient(4000), U(3000), (0,)),)
    assert dataflow.is_transient


@needs_scripts
def test_a_re_export_builds_nothing_and_arranges_the_imported_collection() -> None:
    dataflow = sent(script_payload("two_runtime_reexport.spec", "create-dataflow name=reexport"))
    assert dataflow == DataflowDescription(
        0,
        index_imports=(IndexImport(U(2001), U(2000), (0,)),),
        index_exports=(IndexExport(U(2002), U(2000), (0,)),),
    )


@needs_scripts
def test_until_bounds_the_dataflow() -> None:
    dataflow = sent(
        script_payload("two_runtime_reexport_interactive.spec", "create-dataflow name=interactive")
    )
    assert (dataflow.as_of, dataflow.until) == (0, 1)


def test_the_transient_flag_marks_an_index_export_transient() -> None:
    text = f"create-dataflow as-of=0\n{SOURCE}  export index=2 on=1000 key=[0] transient\n----\n"
    assert sent(last(text)).index_exports == (IndexExport(U(2), U(1000), (0,), transient=True),)


def test_a_join_over_two_sources_with_optimize() -> None:
    text = (
        f"{KV}create-dataflow name=join as-of=0 optimize\n"
        "  import source=1000 shard=l upper=1 schema=kv\n"
        "  import source=1001 shard=r upper=1 schema=kv\n"
        "  build id=2000\n"
        "    Join on=(#0 = #2 AND #1 = #3)\n"
        "      Get u1000\n"
        "      Get u1001\n"
        "  build id=2001\n"
        "    Reduce group_by=[#1, #0] aggregates=[count(*), count(*)]\n"
        "      Get u2000\n"
        "  export index=2002 on=2001 key=[3]\n"
        "----\nok\n"
    )
    dataflow = sent(last(text))
    join = Join((Get(U(1000)), Get(U(1001))), ((0, 2), (1, 3)))
    assert dataflow.objects_to_build == (
        Build(U(2000), join),
        Build(U(2001), Reduce(Get(U(2000)), (Aggregate.COUNT, Aggregate.COUNT), (1, 0))),
    )


def test_count_builds_a_one_shot_count_dataflow_with_ids_from_half_of_u64_up() -> None:
    first, second = payloads(
        "define-index source=1 index=2 shard=d key=[0] as-of=0\n----\n\n"
        "count id=2 ts=4\n----\n\ncount id=2 ts=5\n----\n"
    )[1:]
    reduce, output = U(2**63 - 1), U(2**63)
    assert first == CountRows(
        U(2),
        4,
        DataflowDescription(
            4,
            index_imports=(IndexImport(U(2), U(1), (0,)),),
            objects_to_build=(Build(reduce, Reduce(Get(U(1)))),),
            index_exports=(IndexExport(output, reduce, (0,)),),
            until=5,
        ),
        output,
    )
    # A single-time read, as the real driver's count: a one-shot read.
    assert first.dataflow.dataflow_class is DataflowClass.ONE_SHOT_READ
    assert isinstance(second, CountRows)
    assert second.output == U(2**63 + 2)


def test_a_deferred_dataflow_is_sent_by_submit_dataflow_and_its_index_is_importable_before() -> (
    None
):
    first, importer, submit, again = payloads(
        f"create-dataflow name=m as-of=0 defer\n{SOURCE}  export index=1001 on=1000 key=[0]\n"
        "----\ndeferred\n\n"
        "create-dataflow as-of=0 until=1\n  import index=1001\n"
        "  export index=t1 on=1000 key=[0]\n----\nok\n\n"
        "submit-dataflow name=m\n----\nok\n\nsubmit-dataflow name=m\n----\n"
    )
    assert first == Print(("deferred",))
    assert sent(importer).index_imports == (IndexImport(U(1001), U(1000), (0,)),)
    assert sent(submit).index_exports == (IndexExport(U(1001), U(1000), (0,)),)
    assert again == Fail('no deferred dataflow named "m"')


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "write-single-ts shard=e schema=nope ts=0 count=1\n----\n",
            'unknown schema "nope"; declare it with define_schema first',
        ),
        ("write-rows shard=e ts=0\n  1\n----\n", "row 0 has 1 values but schema has 2 columns"),
        (
            "define-index source=2000 index=2001 shard=e key=[0,5] as-of=0 upper=1\n----\n",
            "key column 5 out of range for a 2-column schema",
        ),
        ("define-schema name=s\n  a float4\n----\n", 'unsupported column type "float4"'),
        (
            "define-schema name=s\n  a float4\n----\n\n"
            "write-rows shard=s ts=0 schema=s\n  1\n----\n",
            'unknown schema "s"; declare it with define_schema first',
        ),
        (
            "create-dataflow as-of=0\n  import index=7\n----\n",
            "unknown index u7; define it before importing it",
        ),
        (
            "create-dataflow as-of=0\n  import source=1 shard=s upper=1 schema=kv\n----\n",
            'unknown schema "kv"; declare it with define_schema first',
        ),
        (
            f"create-dataflow as-of=0\n{SOURCE}  export index=2 on=2000 key=[0]\n----\n",
            "get of unknown id u2000; import or build it first",
        ),
        (
            f"create-dataflow as-of=0\n{SOURCE}"
            "  export kind=subscribe sink=2 on=1000 schema=kv\n----\n",
            'unknown schema "kv"; declare it with define_schema first',
        ),
        ("count id=1001 ts=0\n----\n", "unknown index u1001; define it with define_index first"),
        (
            "peek id=1 ts=0 schema=kv\n----\n",
            'unknown schema "kv"; declare it with define_schema first',
        ),
        ("submit-dataflow name=x\n----\n", 'no deferred dataflow named "x"'),
        (
            "create-instance\n  a bool yes\n----\n",
            'config value "yes" is not a valid bool: provided string was not `true` or `false`',
        ),
        (
            "update-configuration\n  a usize 18446744073709551616\n----\n",
            'config value "18446744073709551616" is not a valid usize: '
            "number too large to fit in target type",
        ),
        (
            "update-configuration\n  a f64 1.5x\n----\n",
            'config value "1.5x" is not a valid f64: invalid float literal',
        ),
        (
            "update-configuration\n  a float 1\n----\n",
            'unsupported config type "float"; use bool/u32/usize/f64/duration/string',
        ),
    ],
)
def test_what_the_real_driver_finds_while_it_runs_is_the_stanzas_error(
    text: str, message: str
) -> None:
    assert last(text) == Fail(message)


def test_a_dataflow_that_fails_registers_nothing() -> None:
    text = (
        f"create-dataflow as-of=0\n{SOURCE}  export index=2 on=1000 key=[0]\n"
        "  export index=3 on=9 key=[0]\n----\n\n"
        "create-dataflow as-of=0\n  import index=2\n----\n"
    )
    assert payloads(text) == [
        Fail("get of unknown id u9; import or build it first"),
        Fail("unknown index u2; define it before importing it"),
    ]


def test_configuration_rows_and_header_keys_become_parameters_in_order() -> None:
    payload = last("update-configuration z=1 a=x\n  b u32 +7\n  c duration 5s\n----\n")
    params = (("z", "1"), ("a", "x"), ("b", "+7"), ("c", "5s"))
    assert payload == Send(UpdateConfiguration(params))


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            "  build id=2\n    Project (#2)\n      Get u1000\n",
            "3: Project: column #2 out of range for a 2-column input",
        ),
        (
            "  build id=2\n    Get u9\n",
            "3: Get u9: the dataflow imports or builds no such collection",
        ),
        (
            "  build id=2\n    Reduce group_by=[#4] aggregates=[count(*)]\n      Get u1000\n",
            "3: Reduce group key: column #4 out of range for a 2-column input",
        ),
        (
            "  build id=2\n    Join on=(#0 = #1)\n      Get u1000\n      Get u1000\n",
            "3: Join needs the optimize flag on create-dataflow "
            "(the real driver cannot lower a join the optimizer did not plan)",
        ),
        (
            "  build id=2\n    Project (#0)\n       Get u1000\n",
            "4: an input of Project (line 10) is indented 6 spaces, 2 more than it, not 7",
        ),
        (
            "  build id=2\n      Get u1000\n    Get u1000\n",
            "4: a build holds one plan, and this line is not an input of it "
            "(an input is indented 2 more than its operator)",
        ),
        ("  build id=2\n    Project (#0)\n", "3: Project takes one input, not 0"),
        ("  build id=2\n    Get u1000\n      Get u1000\n", "3: Get takes no input, not 1"),
        (
            "  build id=2\n    Filter #0\n      Get u1000\n",
            "3: a predicate is a boolean, not bigint",
        ),
        (
            "  build id=2\n    Sort limit=1\n      Get u1000\n",
            "3: unknown plan operator 'Sort' "
            "(Get, Project, Map, Filter, Reduce, Distinct, Join, CrossJoin, Union, "
            "Negate, Threshold, TopK, ArrangeBy, Constant or FlatMap)",
        ),
        (
            '  build id=2\n    Filter #0 = "a"\n      Get u1000\n',
            "3: `=` compares bigint with text",
        ),
        (
            "  build id=2\n    Map (#0 + #1)\n      Get u1000\n",
            "3: `+` takes bigints (the real parser reads it as its Int64 function), not text",
        ),
        (
            "  build id=2\n    Reduce aggregates=[count(*)] group_by=[#0]\n      Get u1000\n",
            "3: Reduce: unexpected `group_by`",
        ),
        (
            "  build id=2\n    Reduce aggregates=[median(#0)]\n      Get u1000\n",
            "3: Reduce: unsupported aggregate 'median' (count, sum, min, max, any or all)",
        ),
        (
            "  build id=2\n    Project #0\n      Get u1000\n",
            "3: Project lists its columns: Project (#0, #1)",
        ),
        (
            "  build id=2\n    Project (0)\n      Get u1000\n",
            "3: Project: a column is written #0, not '0'",
        ),
        (
            "  build id=2\n    Reduce aggregates=[sum(#1)]\n      Get u1000\n",
            "3: sum(..) takes bigint or integer or smallint values, not text",
        ),
        (
            "  build id=2\n    Reduce\n      Get u1000\n",
            "3: Reduce needs aggregates=[count(*)] (or [] for none)",
        ),
        (
            "  build id=2\n    Get x\n",
            "3: Get: not an id: 'x' (a number, optionally prefixed u, s, si or t)",
        ),
        ("  build id=2\n", "2: create-dataflow: build needs a plan on the lines below it"),
        (
            "  build id=1000\n    Get u1000\n",
            "2: create-dataflow: u1000 is imported or built twice",
        ),
        (
            "  export index=2 on=1000 key=[2]\n",
            "2: create-dataflow: key column 2 out of range for u1000's 2 columns",
        ),
        (
            "  export index=2 on=1000 key=[0]\n  export index=2 on=1000 key=[1]\n",
            "3: create-dataflow: u2 is exported twice",
        ),
        (
            "  export kind=materialized-view sink=2 on=1000 shard=o schema=kv\n",
            "2: create-dataflow: sink output schema does not match object u1000: "
            "declared (bigint, text nullable), object is (bigint, text)",
        ),
        (
            "  export kind=copy-to sink=2 on=1000\n",
            "2: create-dataflow: copy-to export is not implemented",
        ),
        (
            "  export kind=kafka sink=2 on=1000\n",
            "2: create-dataflow: unknown export kind 'kafka' "
            "(index, materialized-view or subscribe)",
        ),
        ("  export index=2 on=1000\n", "2: create-dataflow: export: missing key 'key'"),
        (
            "  export kind=subscribe sink=2 on=1000 up-to=x\n",
            "2: create-dataflow: export: bad value 'x' for 'up-to': a time is a whole number >= 0",
        ),
        ("  import source=1 shard=s\n", "2: create-dataflow: import: missing key 'upper'"),
        ("  import index=1 shard=s\n", "2: create-dataflow: import: unknown key 'shard'"),
        (
            "  import source=1 shard=s upper=1\n    Get u1\n",
            "3: create-dataflow: import takes no indented lines",
        ),
        (
            "  explain ref=x\n",
            "2: create-dataflow: unknown sub-command 'explain' (import, build or export)",
        ),
        (
            "  build id=2\n    Project (#0)\n    \tGet u1000\n",
            "4: create-dataflow: indent with spaces only",
        ),
    ],
)
def test_a_malformed_dataflow_is_refused_naming_file_and_line(body: str, message: str) -> None:
    """``message`` numbers lines from the header's (``SOURCE`` is line 1)."""
    header = KV.count("\n") + 1
    number, _, rest = message.partition(": ")
    with pytest.raises(SpecError) as raised:
        parse_spec(f"{KV}create-dataflow as-of=0\n{SOURCE}{body}----\n", "x.spec")
    assert str(raised.value) == f"x.spec:{header + int(number)}: {rest}"


def test_a_first_body_line_deeper_than_the_sub_commands_is_refused() -> None:
    text = "create-dataflow as-of=0\n    Get u1\n  import source=1 shard=s upper=1\n----\n"
    with pytest.raises(
        SpecError,
        match=r"^x\.spec:2: create-dataflow: this line is indented more than the sub-commands "
        r"\(import, build, export\) after it$",
    ):
        parse_spec(text, "x.spec")
