"""Operators row by row: ``Map``/``Project`` (:class:`MapRows`), ``Filter``,
and ``FlatMap`` (a table function's rows after each row)."""

from __future__ import annotations

from collections.abc import Callable

import attrs

from ..model._relational import table_rows
from ..model._rows import Row, Update
from ..model._scalar import EvalError, Scalar, evaluate
from ._stream import Errors, Operator, Queue, RowLimit, Stream


@attrs.define(eq=False)
class MapRows(Operator):
    """Rewrites each row (``Project``, ``Map``)."""

    input: Stream
    queue: Queue
    function: Callable[[Row], Row]
    out: Stream = attrs.field(factory=Stream)
    # Where a row the function fails on goes (None: it cannot fail).
    errors: Errors | None = None

    def step(self) -> None:
        function = self.function
        updates = self.queue.take()
        try:
            output = [(function(row), time, diff) for row, time, diff in updates]
        except EvalError:
            assert self.errors is not None, "only a Map's expressions fail"
            output = []
            for row, time, diff in updates:
                try:
                    output.append((function(row), time, diff))
                except EvalError as error:
                    self.errors.add(str(error), time, diff)
        self.out.push(output)
        self.out.frontier = self.input.frontier


@attrs.define(eq=False)
class FilterOperator(Operator):
    """Passes on the updates whose row ``keep`` holds for (``Filter``, and a
    join's equality of two columns of one input)."""

    input: Stream
    queue: Queue
    keep: Callable[[Row], bool]
    out: Stream = attrs.field(factory=Stream)
    # Where a row a predicate fails on goes (None: none can fail).
    errors: Errors | None = None

    def step(self) -> None:
        keep = self.keep
        updates = self.queue.take()
        try:
            output = [update for update in updates if keep(update[0])]
        except EvalError:
            assert self.errors is not None, "only a Filter's predicates fail"
            output = []
            for update in updates:
                try:
                    if keep(update[0]):
                        output.append(update)
                except EvalError as error:
                    self.errors.add(str(error), update[1], update[2])
        self.out.push(output)
        self.out.frontier = self.input.frontier


@attrs.define(eq=False)
class FlatMapRows(Operator):
    """``FlatMap``: each update's row, followed by each row the table
    function gives for it, with the update's time and diff. A row whose rows
    pass :data:`MAX_OPERATOR_ROWS` is left out, the FlatMap then over
    (:class:`RowLimit`)."""

    input: Stream
    queue: Queue
    func: str
    exprs: tuple[Scalar, ...]
    errors: Errors
    out: Stream = attrs.field(factory=Stream)
    limit: RowLimit = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        self.limit = RowLimit("flat map", self.errors)

    def step(self) -> None:
        output: list[Update] = []
        limit = self.limit
        for row, time, diff in self.queue.take():
            try:
                values = [evaluate(expr, row) for expr in self.exprs]
                produced = table_rows(self.func, values)
            except EvalError as error:
                self.errors.add(str(error), time, diff)
                continue
            if limit.fits(len(produced)):
                output.extend(((*row, *extra), time, diff) for extra in produced)
            else:
                limit.leave_out(time)
        self.out.push(output)
        self.out.frontier = self.input.frontier
