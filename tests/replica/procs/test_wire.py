"""The replica's values on the wire (the codec of ``actors.net`` with the
replica's classes registered): every protocol value comes back equal, and
what is not one, malformed or nested too deeply is a named ``WireError``."""

from __future__ import annotations

import sys
from typing import Any

import pytest

from actors.net._values import MAX_DEPTH
from replica import (
    AllowCompaction,
    CommandRejected,
    CreateDataflow,
    DataflowDescription,
    Frontier,
    Frontiers,
    GlobalId,
    Peek,
    PeekResponse,
    Rows,
    SequencedCommand,
    SubscribeBatch,
)
from replica.engine._exchange import CLOSED
from replica.model import (
    Aggregate,
    AggregateExpr,
    AggregateFunc,
    Build,
    Call,
    Column,
    Constant,
    Filter,
    FlatMap,
    Get,
    IndexExport,
    IndexImport,
    Join,
    Literal,
    Map,
    Negate,
    Project,
    Reduce,
    ScalarFunc,
    Threshold,
    TopK,
    Union,
    _plan,
)
from replica.procs import WireError, _wire
from replica.procs._items import (
    ExchangeFrontier,
)


@pytest.mark.parametrize(
    "value",
    [
        CreateDataflow(DataflowDescription.index(1, "s", 2, (0, 1), 3)),
        CreateDataflow(
            DataflowDescription(
                as_of=4,
                index_imports=(IndexImport(5, 6, (0,), 3),),
                objects_to_build=(
                    Build(
                        7, Reduce(Project((0,), Join((Get(6), Get(6)), ((0, 3),))), group_key=(0,))
                    ),
                ),
                index_exports=(IndexExport(GlobalId("t", 8), 7, (0,), transient=True),),
                until=9,
                name="a dataflow",
            )
        ),
        Build(
            7,
            Reduce(
                Map(
                    (Call(ScalarFunc.IS_NULL, (Column(0),)), Literal(None)),
                    Filter((Call(ScalarFunc.GT, (Column(1), Literal(2))),), Get(6)),
                ),
                (Aggregate.COUNT, AggregateExpr(AggregateFunc.MIN, Column(1), distinct=True)),
                (2,),
            ),
        ),
        Build(
            8,
            TopK(
                Threshold(
                    Union(
                        (
                            Negate(Constant((((1, "a"), 2), ((2.5, None), -1)), 2)),
                            FlatMap("generate_series", (Literal(1), Column(0)), Get(6)),
                        )
                    )
                ),
                group_key=(0,),
                order_key=((1, True, False),),
                limit=Literal(3),
                offset=1,
            ),
        ),
        AllowCompaction(3, Frontier.empty()),
        Peek(1, GlobalId("si", 2), 2**64 - 1, ((None, True, 1.5, "x", -(2**63)),)),
        PeekResponse(3, Rows(((1, "a"), (1, "a")))),
        SubscribeBatch(4, 0, Frontier.at(5), (((1, "b"), 2, -1),)),
        CommandRejected(AllowCompaction(3, Frontier.at(1)), "why"),
        SequencedCommand(2**63, 4, Frontiers(1, Frontier.at(2))),  # type: ignore[arg-type]
        [ExchangeFrontier(0, "maintenance", 1, 0, 3, CLOSED), {"a": [1, 2]}],
        ("xf", GlobalId("u", 1), [2**70]),
    ],
)
def test_every_protocol_value_comes_back_equal(value: object) -> None:
    back = _wire.decode(_wire.encode(value))
    assert back == value
    assert type(back) is type(value)


def test_every_kind_of_plan_travels() -> None:
    """A plan operator added to the planner and not to the wire would stop
    a spec that uses it under ``--spawn`` only: the wire knows every kind."""
    assert set(_plan.PLAN_CLASSES) <= set(_wire.CLASSES)


def test_a_description_keeps_its_name_which_equality_ignores() -> None:
    description = DataflowDescription.index(1, "s", 2, (0,), 0)
    assert _wire.decode(_wire.encode(description)).name == description.name


@pytest.mark.parametrize(
    ("value", "message"),
    [(object(), "cannot travel"), ({1, 2}, "cannot travel")],
)
def test_what_is_not_the_protocol_does_not_travel(value: object, message: str) -> None:
    with pytest.raises(WireError, match=message):
        _wire.encode(value)


@pytest.mark.parametrize(
    "builtins",
    [[], [99], [4, "Nope"], [4, "Hello"], [4, "Hello", 1, 2], [2, "x", 1], [3, "Aggregate", "x"]],
)
def test_malformed_values_are_a_wire_error(builtins: Any) -> None:
    with pytest.raises(WireError):
        _wire.from_builtins(builtins)
    with pytest.raises(WireError):
        _wire.decode(b"\xc1")


@pytest.mark.parametrize("count", [0, 1, 15, 16, 2**16 - 1, 2**16])
def test_a_run_of_encoded_values_splits_back_into_the_values_in_order(count: int) -> None:
    values = [Peek(n, GlobalId("u", n), n) if n % 2 else n for n in range(count)]
    assert _wire.split(_wire.join([_wire.encode(v) for v in values])) == values


def _nested(depth: int) -> bytes:
    """MessagePack bytes of ``depth`` tuples, each inside the next (as a peer
    could send them): a handful of bytes per level."""
    return b"\x92\x00" * depth + b"\x00"


def test_a_value_nested_too_deeply_is_a_wire_error() -> None:
    with pytest.raises(WireError, match=r"^a value nested too deeply on the wire$"):
        _wire.decode(_nested(700))
    with pytest.raises(WireError, match=r"^a value nested too deeply on the wire$"):
        _wire.split(_wire.join([_wire.encode(1), _nested(700)]))


def test_the_wire_refuses_depth_by_its_own_limit_not_the_interpreters() -> None:
    """However high the recursion limit (a test or a library may raise it),
    a value nested past ``MAX_DEPTH`` is refused, and one within decodes."""
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(100_000)
    try:
        with pytest.raises(WireError, match=r"^a value nested too deeply on the wire$"):
            _wire.decode(_nested(MAX_DEPTH + 2))
    finally:
        sys.setrecursionlimit(limit)
    value = _wire.decode(_nested(200))
    for _ in range(199):
        (value,) = value
    assert value == (0,)


def test_a_run_that_is_not_an_array_is_a_wire_error() -> None:
    with pytest.raises(WireError, match=r"^a run of values is an array \(not int\)$"):
        _wire.split(_wire.encode(3))
