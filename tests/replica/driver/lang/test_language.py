"""The driver's language (DRIVER_COMPAT.md): the real driver's scripts parse
unchanged, every construct reads as it should, bad input is refused with
FILE:LINE before anything runs, and a rewrite replaces only expected blocks."""

from __future__ import annotations

from pathlib import Path

import pytest

from replica.driver.lang._data import SAMPLE_SCHEMA, Synthetic
from replica.driver.lang._payloads import (
    Advance,
    AwaitFrontier,
    AwaitSubscribe,
    Fail,
    Hold,
    Metrics,
    Payload,
    PeekCount,
    PeekRows,
    Reconnect,
    Release,
    Send,
    Settle,
    Timeout,
    Write,
)
from replica.driver.lang._spec import Spec, SpecError, Stanza, parse_spec, read_spec, rewrite
from replica.model import Frontier, GlobalId
from replica.protocol import AllowCompaction, CreateInstance, InstanceConfig, UpdateConfiguration

from ....paths import ROOT

SCRIPTS = ROOT.parent / "shared" / "external" / "driver-scripts"
REAL = sorted(SCRIPTS.glob("*.spec")) if SCRIPTS.is_dir() else []
needs_scripts = pytest.mark.skipif(
    not SCRIPTS.is_dir(), reason="../shared/external/driver-scripts is not here"
)


def stanzas(text: str) -> tuple[Stanza, ...]:
    return parse_spec(text, "x.spec").stanzas


def only(text: str) -> Stanza:
    (stanza,) = stanzas(text)
    return stanza


def script(name: str) -> Spec:
    return read_spec(SCRIPTS / name, name)


def stanza_at(spec: Spec, line: int) -> Stanza:
    return next(stanza for stanza in spec.stanzas if stanza.line == line)


@needs_scripts
@pytest.mark.parametrize("path", REAL, ids=lambda path: path.name)
def test_every_real_script_parses_unchanged(path: Path) -> None:
    spec = read_spec(path)
    assert spec.stanzas
    assert rewrite(spec, [stanza.expected for stanza in spec.stanzas]) == path.read_text()


@needs_scripts
@pytest.mark.parametrize("path", REAL, ids=lambda path: path.name)
def test_a_real_scripts_run_time_errors_are_the_ones_it_expects(path: Path) -> None:
    for stanza in read_spec(path).stanzas:
        if isinstance(stanza.payload, Fail):
            assert stanza.expected == (f"error: {stanza.payload.message}",)


@needs_scripts
def test_error_behavior_fails_its_first_four_commands_before_any_replica_answers() -> None:
    failed = [s.line for s in script("error_behavior.spec").stanzas if isinstance(s.payload, Fail)]
    assert failed == [28, 33, 39, 45]


@needs_scripts
def test_an_unindented_create_instance_body_is_initial_configuration() -> None:
    stanza = stanza_at(script("create_time_config.spec"), 19)
    config = InstanceConfig((("enable_column_paged_batcher", "true"),))
    assert stanza.body == ("enable_column_paged_batcher bool true",)
    assert stanza.payload == Send(CreateInstance(config))


@needs_scripts
def test_an_update_configuration_body_row_is_a_parameter() -> None:
    stanza = stanza_at(script("peek_yielding.spec"), 37)
    assert stanza.payload == Send(UpdateConfiguration((("peek_yielding", "work:1,time:60000"),)))


@needs_scripts
def test_allow_timeout_is_a_flag_of_await_frontier() -> None:
    stanza = stanza_at(script("multi_dataflow.spec"), 51)
    assert stanza.flags == ("allow-timeout",)
    assert stanza.payload == AwaitFrontier(GlobalId.user(1001), 1, Timeout("30"), True)


@needs_scripts
def test_peek_count_literals_are_one_column_bigint_keys_unsorted_as_written() -> None:
    spec = script("peek_yielding.spec")
    assert stanza_at(spec, 63).payload == PeekCount(GlobalId.user(1001), 0)
    assert stanza_at(spec, 83).payload == PeekCount(GlobalId.user(1001), 0, ((1999,), (5,), (500,)))
    assert stanza_at(spec, 105).payload == PeekCount(GlobalId.user(1001), 0, ())


@needs_scripts
def test_metrics_names_its_metric_first_and_takes_minus_max_and_a_timeout() -> None:
    stanza = stanza_at(script("clu_131.spec"), 71)
    assert stanza.payload == Metrics(
        "mz_persist_sink_correction_insertions_total",
        15000,
        "mz_persist_sink_correction_deletions_total",
        Timeout("120"),
    )


@needs_scripts
def test_write_spread_puts_row_j_at_time_j_mod_n_in_one_append_from_0() -> None:
    payload = stanza_at(script("clu_131.spec"), 42).payload
    assert payload == Write("mv", 0, Synthetic(SAMPLE_SCHEMA, 0, 100000), 10)
    assert (payload.lower, payload.upper, payload.count) == (0, 10, 100000)


def test_write_spread_times_count_from_the_batch_not_from_start() -> None:
    payload = only("write-spread shard=s count=4 n-ts=3 start=7 row-bytes=1\n----\nwrote 4\n")
    assert isinstance(payload.payload, Write)
    assert list(payload.payload.updates()) == [
        ((7, "7"), 0),
        ((8, "8"), 1),
        ((9, "9"), 2),
        ((10, "10"), 0),
    ]


def test_write_single_ts_writes_rows_start_to_start_plus_count_at_ts() -> None:
    payload = only("write-single-ts shard=d ts=3 start=5 count=2\n----\nwrote 2\n").payload
    assert isinstance(payload, Write)
    assert list(payload.updates()) == [((5, "5".rjust(64, "0")), 3), ((6, "6".rjust(64, "0")), 3)]
    assert (payload.lower, payload.upper) == (3, 4)


def test_a_blank_line_inside_a_stanza_is_skipped() -> None:
    stanza = only("write-rows shard=s ts=0\n  1 a\n\n  2 b\n----\nwrote 2\n")
    assert stanza.body == ("1 a", "2 b")


def test_the_doubled_divider_block_holds_blank_lines_up_to_a_closing_pair() -> None:
    first, second = stanzas("settle\n----\n----\na\n\n\nb\n----\n----\nsettle\n----\nok\n")
    assert (first.expected, first.doubled, first.divider_line, first.end_line) == (
        ("a", "", "", "b"),
        True,
        3,
        8,
    )
    assert (second.line, second.expected, second.doubled) == (10, ("ok",), False)


def test_an_empty_doubled_block_is_allowed() -> None:
    assert only("settle\n----\n----\n----\n----\n").expected == ()


def test_quoted_strings_and_lists_with_spaces_are_one_header_token() -> None:
    stanza = only(
        'create-dataflow name="my flow" as-of=0 defer\n'
        "  import source=1 shard=s upper=1\n"
        "  export index=2 on=1 key=[0, 1]\n"
        "----\ndeferred\n"
    )
    assert stanza.args["name"] == "my flow"
    assert stanza.flags == ("defer",)


def test_ids_take_the_u_s_si_and_t_prefixes() -> None:
    ids = [
        only(f"schedule id={text}\n----\nok\n").args["id"]
        for text in ("7", "u7", "s7", "si7", "t7")
    ]
    assert ids == [
        GlobalId("u", 7),
        GlobalId("u", 7),
        GlobalId("s", 7),
        GlobalId("si", 7),
        GlobalId("t", 7),
    ]


def test_since_is_another_name_for_frontier() -> None:
    expected = Send(AllowCompaction(GlobalId.user(1), Frontier.at(3)))
    assert only("allow-compaction id=1 since=3\n----\nok\n").payload == expected
    assert only("allow-compaction id=1 frontier=3\n----\nok\n").payload == expected


def test_drop_is_compaction_to_the_empty_frontier() -> None:
    payload = only("drop id=t4\n----\nok\n").payload
    assert payload == Send(AllowCompaction(GlobalId.transient(4), Frontier.empty()))


@pytest.mark.parametrize(
    ("directive", "payload"),
    [
        ("reconnect", Reconnect()),
        ("settle", Settle()),
        ("hold runtime=maintenance", Hold("maintenance")),
        ("release runtime=interactive", Release("interactive")),
        ("advance shard=s upper=4", Advance("s", 4)),
        ("peek id=1 ts=2 timeout-secs=1.5", PeekRows(GlobalId.user(1), 2, Timeout("1.5"))),
        ("await-subscribe id=s2 up-to=3", AwaitSubscribe(GlobalId("s", 2), 3)),
    ],
)
def test_this_projects_own_directives_keep_their_meaning(directive: str, payload: Payload) -> None:
    assert only(f"{directive}\n----\nok\n").payload == payload


def test_reads_wait_600_seconds_by_default() -> None:
    assert Timeout().seconds == 600
    assert only("await-frontier id=1 ts=1\n----\nok\n").payload == AwaitFrontier(
        GlobalId.user(1), 1, Timeout("600")
    )


def test_comments_inside_a_stanza_are_comments_and_stay_in_the_file() -> None:
    text = "# head\nsettle\n# inside\n----\nok\n\n# tail\n"
    spec = parse_spec(text, "x.spec")
    assert spec.stanzas[0].payload == Settle()
    assert rewrite(spec, [["ok"]]) == text


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("bogus\n----\n", "1: unknown directive 'bogus'"),
        ("settle\n", "1: missing ---- after directive 'settle'"),
        (
            "settle\n----\n----\nok\n",
            "1: the ---- ---- block after line 2 is never closed (by a ---- line and another)",
        ),
        ("settle\n\n\nschedule id=1\n----\n", "1: missing ---- after directive 'settle'"),
        (" settle\n----\n", "1: a directive starts in the first column"),
        ("\tsettle\n----\n", "1: a directive starts in the first column"),
        (
            'create-dataflow name="x as-of=0\n----\n',
            '1: create-dataflow: unterminated string (a " without its closing ")',
        ),
        (
            "define-index source=1 index=2 shard=s key=[0 as-of=0\n----\n",
            "1: define-index: unterminated list (a [ without its closing ])",
        ),
        ("schedule id=1 id=2\n----\n", "1: schedule: key 'id' given twice"),
        ("schedule id\n----\n", "1: schedule: malformed argument 'id' (want key=value)"),
        ("schedule id=\n----\n", "1: schedule: malformed argument 'id=' (want key=value)"),
        (
            "schedule id=q7\n----\n",
            "1: schedule: bad value 'q7' for 'id': "
            "an id is a whole number >= 0, optionally prefixed u, s, si or t",
        ),
        (
            "schedule id=t18446744073709551616\n----\n",
            "1: schedule: bad value 't18446744073709551616' for 'id': "
            "an id is at most 18446744073709551615 (a u64)",
        ),
        (
            "await-frontier id=1 ts=1 allow_timeout\n----\n",
            "1: await-frontier: unknown flag 'allow_timeout' (it takes allow-timeout)",
        ),
        (
            "await-frontier id=1 ts=1 allow-timeout allow-timeout\n----\n",
            "1: await-frontier: flag 'allow-timeout' given twice",
        ),
        ("allow-compaction id=1\n----\n", "1: allow-compaction: missing key 'frontier'"),
        (
            "allow-compaction id=1 since=1 frontier=1\n----\n",
            "1: allow-compaction: give 'frontier' or 'since' (another name for it), not both",
        ),
        (
            "write-spread shard=s count=1 n-ts=0\n----\n",
            "1: write-spread: bad value '0' for 'n-ts': "
            "n-ts is at least 1 (the rows go to times 0 .. n-ts - 1)",
        ),
        (
            "write-single-ts shard=s ts=0 count=1 row-bytes=1048577\n----\n",
            "1: write-single-ts: bad value '1048577' for 'row-bytes': "
            "row-bytes is at most 1048576 (1 MiB)",
        ),
        (
            "write-single-ts shard=s ts=0 count=1000000 row-bytes=300\n----\n",
            "1: write-single-ts: "
            "count x row-bytes is 300000000 bytes, more than the 268435456 a write may hold",
        ),
        (
            "write-single-ts shard=s ts=0 start=9223372036854775807 count=2\n----\n",
            "1: write-single-ts: "
            "rows 9223372036854775807 .. 9223372036854775808 "
            "pass 9223372036854775807, the largest bigint",
        ),
        (
            'write-rows shard=s ts=0\n  1 "a\n----\n',
            '2: write-rows: unterminated string (a " without its closing ")',
        ),
        (
            'advance shard="" upper=1\n----\n',
            "1: advance: bad value '\"\"' for 'shard': a name is not empty",
        ),
        (
            "peek-count id=1 ts=0 literals=[1,x]\n----\n",
            "1: peek-count: bad value '[1,x]' for 'literals': literal 'x' is not a bigint: "
            "invalid digit found in string",
        ),
        (
            "peek-count id=1 ts=0 literals=1\n----\n",
            "1: peek-count: bad value '1' for 'literals': "
            "a list is written [], [5] or [1999,5,500]",
        ),
        ("metrics max=1\n----\n", "1: metrics: missing the metric's name (metrics NAME ...)"),
        (
            "metrics 9x max=1\n----\n",
            "1: metrics: bad metric name '9x': a metric's name is letters, digits, _ and : "
            "(not first a digit)",
        ),
        ("metrics a b max=1\n----\n", "1: metrics: malformed argument 'b' (want key=value)"),
        (
            "define-schema name=s\n  a\n----\n",
            "2: define-schema: a column is `name type [nullable]`, not 'a'",
        ),
        (
            "define-schema name=s\n  a bigint null\n----\n",
            "2: define-schema: a column is `name type [nullable]`, not 'a bigint null'",
        ),
        (
            "create-instance\n  enable_x bool\n----\n",
            "2: a configuration row is `name type value`, not 'enable_x bool'",
        ),
        (
            'update-configuration\nx bool "true\n----\n',
            '2: configuration: unterminated string (a " without its closing ")',
        ),
        ("submit-dataflow\n----\n", "1: submit-dataflow: missing key 'name'"),
        (
            "create-dataflow as-of=0 defer\n----\n",
            "1: create-dataflow: defer needs name= (submit-dataflow names it)",
        ),
        ("settle\n  x\n----\n", "2: directive 'settle' takes no body"),
    ],
)
def test_bad_input_is_refused_naming_file_and_line(text: str, message: str) -> None:
    with pytest.raises(SpecError) as raised:
        parse_spec(text, "x.spec")
    assert str(raised.value) == f"x.spec:{message}"


def test_rewriting_with_the_expected_outputs_gives_the_file_back() -> None:
    text = (
        "# c\nsettle\n----\nok\n\n\nsettle\n----\n----\na\n\nb\n----\n----\n# end\nsettle\n----\n"
    )
    spec = parse_spec(text, "x.spec")
    assert rewrite(spec, [s.expected for s in spec.stanzas]) == text


def test_rewrite_replaces_only_the_expected_blocks() -> None:
    text = "# c\nsettle\n----\nwrong\nlines\n\n# between\n\nsettle\n----\n----\nold\n----\n----\n"
    spec = parse_spec(text, "x.spec")
    assert rewrite(spec, [["ok"], ["new", "", "blank"]]) == (
        "# c\nsettle\n----\nok\n\n# between\n\nsettle\n----\n----\nnew\n\nblank\n----\n----\n"
    )


def test_rewrite_writes_an_output_with_blank_lines_in_the_doubled_form() -> None:
    spec = parse_spec("settle\n----\nok\n\nsettle\n----\nok", "x.spec")
    text = rewrite(spec, [["a", "", "b"], ["", "c"]])
    assert text == "settle\n----\n----\na\n\nb\n----\n----\n\nsettle\n----\n----\n\nc\n----\n----"
    assert [s.expected for s in parse_spec(text, "x.spec").stanzas] == [("a", "", "b"), ("", "c")]


def test_rewrite_writes_an_output_starting_with_a_divider_in_the_doubled_form() -> None:
    spec = parse_spec("settle\n----\nok\n", "x.spec")
    text = rewrite(spec, [["----", "x"]])
    assert parse_spec(text, "x.spec").stanzas[0].expected == ("----", "x")


def test_rewrite_keeps_an_empty_block_empty() -> None:
    spec = parse_spec("settle\n----\nold\n\nsettle\n----\n", "x.spec")
    assert rewrite(spec, [[], []]) == "settle\n----\n\nsettle\n----\n"
