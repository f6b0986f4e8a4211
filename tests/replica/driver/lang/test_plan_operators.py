"""The plan operators beyond Get, Project, Filter, Map, Reduce and Join, as a
build's plan writes them: what each resolves to, and each malformed line
refused at parse time naming its file and line."""

from __future__ import annotations

import pytest

from replica.driver.lang._payloads import Send
from replica.driver.lang._spec import SpecError, parse_spec
from replica.model import (
    Aggregate,
    Call,
    Column,
    Constant,
    FlatMap,
    Get,
    GlobalId,
    Literal,
    Map,
    Negate,
    Plan,
    Reduce,
    ScalarFunc,
    Threshold,
    TopK,
    Union,
)
from replica.protocol import CreateDataflow

SOURCE = "  import source=1000 shard=r upper=1\n"
U1000 = Get(GlobalId.parse("u1000"))


def plan_of(body: str) -> Plan:
    text = f"create-dataflow as-of=0\n{SOURCE}  build id=2\n{body}----\n"
    payload = parse_spec(text, "x.spec").stanzas[0].payload
    assert isinstance(payload, Send)
    assert isinstance(payload.command, CreateDataflow)
    return payload.command.dataflow.objects_to_build[0].plan


def test_set_operators() -> None:
    body = "    Threshold\n      Union\n        Get u1000\n        Negate\n          Get u1000\n"
    assert plan_of(body) == Threshold(Union((U1000, Negate(U1000))))


def test_top_k_keys_default_to_descending_nulls_last() -> None:
    body = (
        "    TopK group_by=[#0] order_by=[#1, #0 asc nulls_first] limit=3 offset=1 "
        "monotonic exp_group_size=8\n      Get u1000\n"
    )
    assert plan_of(body) == TopK(U1000, (0,), ((1, True, True), (0, False, False)), Literal(3), 1)


def test_arrange_by_is_its_input() -> None:
    assert plan_of("    ArrangeBy keys=[[#0], [#1, #0]]\n      Get u1000\n") == U1000


def test_constant_rows_are_typed_by_its_types() -> None:
    body = (
        '    Union\n      Get u1000\n      Constant // { types: "(bigint, text?)" }\n'
        '        - (1, "a")\n        - ((2, null) x -3)\n'
    )
    constant = Constant((((1, "a"), 1), ((2, None), -3)), 2)
    assert plan_of(body) == Union((U1000, constant))
    empty = '    Union\n      Get u1000\n      Constant <empty> // { types: "(bigint, text)" }\n'
    assert plan_of(empty) == Union((U1000, Constant((), 2)))


def test_flat_map() -> None:
    body = "    FlatMap generate_series(#0, 5)\n      Get u1000\n"
    assert plan_of(body) == FlatMap("generate_series", (Column(0), Literal(5)), U1000)


def test_a_group_key_expression_is_mapped_first() -> None:
    body = "    Reduce group_by=[#0 % 2] aggregates=[count(*)]\n      Get u1000\n"
    parity = Call(ScalarFunc.MOD, (Column(0), Literal(2)))
    assert plan_of(body) == Reduce(Map((parity,), U1000), (Aggregate.COUNT,), (2,))


def test_a_let_puts_its_ctes_in_place() -> None:
    body = (
        "    With\n      cte l0 =\n        Negate\n          Get u1000\n"
        "    Return\n      Union\n        Get l0\n        Get u1000\n"
    )
    assert plan_of(body) == Union((Negate(U1000), U1000))


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("    Union\n", "4: Union takes one input or more, not 0"),
        (
            "    Negate x\n      Get u1000\n",
            "4: Negate takes nothing after it (its inputs are below it)",
        ),
        (
            "    Union\n      Get u1000\n      Project (#0)\n        Get u1000\n",
            "4: input 2 of the Union has 1 columns, the first 2",
        ),
        (
            "    TopK order_by=[#5]\n      Get u1000\n",
            "4: column #5 out of range for a 2-column input",
        ),
        ('    TopK limit="a"\n      Get u1000\n', "4: a TopK's limit is a bigint, not text"),
        (
            "    TopK limit=#0\n      Get u1000\n",
            "4: a TopK's limit reads its group's key columns only, not #0",
        ),
        ("    TopK offset=-1\n      Get u1000\n", "4: TopK: expected an offset, found `-`"),
        (
            "    ArrangeBy keys=[[#3]]\n      Get u1000\n",
            "4: column #3 out of range for a 2-column input",
        ),
        (
            "    Constant\n      - (1)\n",
            '4: Constant: a Constant says its types: Constant // { types: "(bigint, text)" }',
        ),
        (
            '    Constant // { types: "(bigint)" }\n',
            "4: a Constant lists its rows below it (or is Constant <empty>)",
        ),
        (
            '    Constant // { types: "(bigint)" }\n      - (1, 2)\n',
            "5: Constant row: 2 values, and the Constant's types are 1",
        ),
        (
            '    Constant // { types: "(bigint)" }\n      - ("a")\n',
            "5: Constant row: column #0 is a text value, and the column is bigint",
        ),
        (
            '    Constant // { types: "(smallint)" }\n      - (40000)\n',
            "5: Constant row: column #0: 40000 is out of range for smallint",
        ),
        (
            '    Constant // { types: "(bigint)" }\n      - (null)\n',
            "5: Constant row: column #0 is null, and the type bigint is not nullable",
        ),
        (
            '    Constant // { types: "(bigint)" }\n      - ((1) x)\n',
            "5: Constant row: expected a count after `x`, found the end of the line",
        ),
        (
            '    Constant // { types: "(float)" }\n      - (1)\n',
            "4: Constant: expected a type in the types, found `float`",
        ),
        (
            '    Constant // { keys: "[]" }\n      - (1)\n',
            "4: Constant: unexpected analysis type `keys`",
        ),
        (
            '    Constant <empty> // { types: "(bigint)" }\n      - (1)\n',
            "5: a Constant <empty> has no rows",
        ),
        (
            "    FlatMap unnest_list(#0)\n      Get u1000\n",
            "4: FlatMap: unnest_list(..) is not supported here (no lists, arrays or jsonb)",
        ),
        (
            "    FlatMap explode(#0)\n      Get u1000\n",
            "4: FlatMap: unsupported function name 'explode' "
            "(generate_series, wrap1, wrap2 or wrap3)",
        ),
        (
            "    FlatMap generate_series(#1, 2)\n      Get u1000\n",
            "4: generate_series(..) counts bigints, not text",
        ),
        (
            "    FlatMap generate_series(#0)\n      Get u1000\n",
            "4: generate_series(..) takes a start, a stop and maybe a step, not 1",
        ),
        (
            "    FlatMap wrap2(#0, #1, #0)\n      Get u1000\n",
            "4: wrap2(..) cuts its values into rows of 2: 3 values do not",
        ),
        (
            "    FlatMap wrap2(#0, #1, #1, #0)\n      Get u1000\n",
            "4: wrap2(..) puts bigint and text in column 0",
        ),
        ("    Get l0\n", "4: Get l0: no cte l0 is bound here"),
        (
            "    With Mutually Recursive\n      cte l0 =\n        Get l0\n"
            "    Return\n      Get l0\n",
            "4: With Mutually Recursive (a recursive let) is not supported here",
        ),
        ("    With\n      cte l0 =\n        Get u1000\n", "6: a let plan needs its Return too"),
        (
            "    With\n      cte l1 =\n        Get l0\n      cte l0 =\n        Get u1000\n"
            "    Return\n      Get l1\n",
            "4: seen With first, but the cte ids are not in ascending order: [1, 0]",
        ),
    ],
)
def test_a_malformed_plan_is_refused_naming_file_and_line(body: str, message: str) -> None:
    """``message`` numbers lines from the header's (``create-dataflow`` is 1,
    the plan's first line 4)."""
    number, _, rest = message.partition(": ")
    with pytest.raises(SpecError) as raised:
        parse_spec(f"create-dataflow as-of=0\n{SOURCE}  build id=2\n{body}----\n", "x.spec")
    assert str(raised.value) == f"x.spec:{number}: {rest}"
