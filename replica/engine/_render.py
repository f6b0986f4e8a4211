"""Rendering: a dataflow description made operators, at one worker.

Each import becomes a source (a shard, read in turns by the runtime's
workers; or this worker's part of an imported index), each build operators,
and each export an arrangement (an index), a materialized-view sink or a
subscribe. An index export whose collection is an imported index's
collection, with the same key, re-exports that arrangement: it is shared,
not copied. A dataflow does nothing until it is scheduled.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import attrs

from ..model._dataflow import DataflowDescription, MaterializedView, SinkExport
from ..model._frontier import Frontier
from ..model._ids import GlobalId
from ..model._metrics import Metrics
from ..model._plan import (
    COUNT_ALL,
    Aggregate,
    Constant,
    Filter,
    FlatMap,
    Get,
    Join,
    Map,
    Negate,
    Plan,
    Project,
    Reduce,
    Threshold,
    TopK,
    Union,
    arity,
    gets,
    input_of,
)
from ..model._rows import Row, Update
from ..model._scalar import Scalar, evaluate, holds, same
from ..storage._shard import ShardCatalog
from ._arrangement import Arrangement
from ._exchange import Exchanged, Fabric, router
from ._exports import Dataflow, IndexPart, SinkPart
from ._join import Arrange, JoinOperator
from ._linear import FilterOperator, FlatMapRows, MapRows
from ._reduce import AggregateReduce, CountReduce
from ._sinks import MaterializedViewSink, SubscribeSink
from ._sources import ArrangementSource, ConstantSource, KeyedShardSource, ShardSource
from ._stream import Errors, Operator, Stream, Times
from ._top_k import TopKOperator
from ._union import NegateOperator, ThresholdOperator, UnionOperator


@attrs.define(eq=False)
class Context:
    """What a worker lends the dataflows it renders."""

    worker: int
    workers: int
    fabric: Fabric
    shards: ShardCatalog
    metrics: Metrics
    wake: Callable[[], None]
    # This worker's part of an index it may import, by index id, for a
    # dataflow as of the given time.
    imported: Callable[[GlobalId, int], Callable[[], Arrangement | None]]
    # A subscribe's batch for the controller: (id, lower, upper, updates).
    emit: Callable[[GlobalId, int, Frontier, tuple[Update, ...]], None]
    # Told of an arrangement this worker builds whose compaction may be due.
    compacting: Callable[[Arrangement], None] | None = None


def render(description: DataflowDescription, number: int, context: Context) -> Dataflow:
    """Build ``description``'s operators at one worker."""
    times = Times(description.as_of, description.until)
    dataflow = Dataflow(description, number, times)
    streams: dict[GlobalId, Stream] = {}
    imported: dict[GlobalId, tuple[tuple[int, ...], Callable[[], Arrangement | None]]] = {}
    # The evaluation errors each build's collection may hold; those of the
    # build being rendered gather in `failing`.
    errors_of: dict[GlobalId, tuple[Errors, ...]] = {}
    failing: list[Errors] = []

    def fails() -> Errors:
        errors = Errors()
        failing.append(errors)
        return errors

    def add(operator: Operator) -> Stream:
        dataflow.operators.append(operator)
        return operator.out

    def exchange(input: Stream, key: tuple[int, ...]) -> Stream:
        place = dataflow.exchanges
        dataflow.exchanges += 1
        channel = context.fabric.exchange(number, place)
        channel.join(context.worker, context.wake)
        route = router(key, context.workers)
        return add(Exchanged(input, input.subscribe(), channel, context.worker, route))

    def plan(node: Plan) -> Stream:
        match node:
            case Get(id):
                failing.extend(errors_of.get(id, ()))
                return streams[id]
            case Project(columns, input):
                source = plan(input)
                return add(MapRows(source, source.subscribe(), _projection(columns)))
            case Reduce(input, aggregates, group_key):
                grouped = exchange(plan(input), group_key)
                if all(a is Aggregate.COUNT for a in aggregates):
                    return add(
                        CountReduce(grouped, grouped.subscribe(), group_key, len(aggregates))
                    )
                general = tuple(COUNT_ALL if a is Aggregate.COUNT else a for a in aggregates)
                return add(
                    AggregateReduce(
                        grouped, grouped.subscribe(), group_key, general, errors=fails()
                    )
                )
            case Join(inputs, equalities):
                return join([plan(input) for input in inputs], inputs, equalities)
            case Filter(predicates, input):
                source = plan(input)
                keep = functools.partial(holds, predicates)
                return add(FilterOperator(source, source.subscribe(), keep, errors=fails()))
            case Map(scalars, input):
                source = plan(input)
                return add(MapRows(source, source.subscribe(), _mapping(scalars), errors=fails()))
            case FlatMap(func, exprs, input):
                source = plan(input)
                return add(FlatMapRows(source, source.subscribe(), func, exprs, fails()))
            case Constant(rows, _):
                owner = router((), context.workers)(()) == context.worker
                return add(ConstantSource(rows, times, owner))
            case Union(inputs):
                sources = tuple(plan(input) for input in inputs)
                queues = tuple(source.subscribe() for source in sources)
                return add(UnionOperator(sources, queues, errors=fails()))
            case Negate(input):
                source = plan(input)
                return add(NegateOperator(source, source.subscribe()))
            case Threshold(input):
                width = arity(input, arities)
                whole = exchange(plan(input), tuple(range(width)))
                return add(ThresholdOperator(whole, whole.subscribe(), ()))
            case TopK(input, group_key, order_key, limit, offset):
                grouped = exchange(plan(input), group_key)
                return add(
                    TopKOperator(
                        grouped,
                        grouped.subscribe(),
                        group_key,
                        order_key,
                        limit,
                        offset,
                        errors=fails(),
                    )
                )

    def join(
        sides: list[Stream], inputs: tuple[Plan, ...], pairs: tuple[tuple[int, int], ...]
    ) -> Stream:
        # Left-deep: the inputs so far, joined with the next on the pairs that
        # connect them.
        widths = [arity(input, arities) for input in inputs]
        offsets = [sum(widths[:number]) for number in range(len(widths))]
        # An equality of two columns of one input filters that input first.
        for number, side in enumerate(sides):
            within = [
                (a - offsets[number], b - offsets[number])
                for a, b in pairs
                if input_of(a, widths) == input_of(b, widths) == number
            ]
            if within:
                keep = functools.partial(_equal_columns, tuple(within))
                sides[number] = add(FilterOperator(side, side.subscribe(), keep))
        left = sides[0]
        for next_, right in enumerate(sides[1:], start=1):
            offset = sum(widths[:next_])
            left_key: list[int] = []
            right_key: list[int] = []
            for a, b in pairs:
                first, second = sorted((a, b), key=lambda column: input_of(column, widths))
                if input_of(first, widths) < input_of(second, widths) == next_:
                    left_key.append(first)
                    right_key.append(second - offset)
            left_in = exchange(left, tuple(left_key))
            right_in = exchange(right, tuple(right_key))
            left = add(
                JoinOperator(
                    left_in,
                    left_in.subscribe(),
                    tuple(left_key),
                    right_in,
                    right_in.subscribe(),
                    tuple(right_key),
                    errors=fails(),
                )
            )
        return left

    arities: dict[GlobalId, int] = {}
    # A source read by one index export alone, and by no plan, is read keyed
    # by that index's key: each worker keeps its part, and no exchange is
    # needed (the common case: an index of a shard).
    keyed = _keyed_sources(description)
    for source in description.source_imports:
        shard = context.shards.shard(source.shard)
        stop = shard.listen(context.wake)
        key = keyed.get(source.id)
        operator: Operator
        if key is not None:
            parts = shard.partitioned(
                ("key", key, context.workers), context.workers, router(key, context.workers)
            )
            operator = KeyedShardSource(shard, times, context.worker, parts, stop)
        else:
            operator = ShardSource(shard, times, context.worker, context.workers, stop)
        streams[source.id] = add(operator)
        arities[source.id] = source.arity
    for index in description.index_imports:
        provider = context.imported(index.id, description.as_of)
        reader = ArrangementSource(provider, times, context.wake)
        reader.take_hold()
        streams[index.on] = add(reader)
        arities[index.on] = index.arity
        imported[index.on] = (index.key, provider)
    for build in description.objects_to_build:
        failing = []
        streams[build.id] = plan(build.plan)
        errors_of[build.id] = tuple(dict.fromkeys(failing))
        arities[build.id] = arity(build.plan, arities)
    built = {build.id for build in description.objects_to_build}
    for export in description.index_exports:
        shared = imported.get(export.on)
        if shared is not None and shared[0] == export.key and export.on not in built:
            handle = IndexPart(export.id, dataflow, description.as_of, provider=shared[1])
        else:
            part = Arrangement(export.key, since=description.as_of, on_change=context.compacting)
            handle = IndexPart(
                export.id,
                dataflow,
                description.as_of,
                provider=_constant(part),
                errors=errors_of.get(export.on, ()),
            )
            input = streams[export.on]
            if keyed.get(export.on) != export.key:
                input = exchange(input, export.key)
            add(Arrange(input, input.subscribe(), part))
        dataflow.exports[export.id] = handle
    for sink in description.sink_exports:
        dataflow.exports[sink.id] = _sink(sink, dataflow, streams, exchange, add, context)
    return dataflow


def _sink(
    sink: SinkExport,
    dataflow: Dataflow,
    streams: dict[GlobalId, Stream],
    exchange: Callable[[Stream, tuple[int, ...]], Stream],
    add: Callable[[Operator], Stream],
    context: Context,
) -> SinkPart:
    source = streams[sink.on]
    operator: Operator
    match sink.connection:
        case MaterializedView(shard_name):
            # Every update goes to the one worker that writes the shard.
            routed = exchange(source, ())
            shard = context.shards.shard(shard_name)
            operator = MaterializedViewSink(
                routed,
                routed.subscribe(),
                shard,
                dataflow.times,
                owner=router((), context.workers)(()) == context.worker,
                metrics=context.metrics,
                stop_listening=shard.listen(context.wake),
            )
        case _:
            operator = SubscribeSink(
                sink.id,
                source,
                source.subscribe(),
                dataflow.as_of,
                sink.connection.up_to,
                context.emit,
            )
    add(operator)
    return SinkPart(sink.id, dataflow, dataflow.as_of, sink=sink, operator=operator)


def _keyed_sources(description: DataflowDescription) -> dict[GlobalId, tuple[int, ...]]:
    """Each source import read only by exactly one index export (and no plan
    or sink), with that export's key."""
    readers: list[GlobalId] = []
    for build in description.objects_to_build:
        readers.extend(gets(build.plan))
    readers += [export.on for export in description.index_exports]
    readers += [sink.on for sink in description.sink_exports]
    keyed: dict[GlobalId, tuple[int, ...]] = {}
    for source in description.source_imports:
        exports = [e for e in description.index_exports if e.on == source.id]
        if len(exports) == 1 and readers.count(source.id) == 1:
            keyed[source.id] = exports[0].key
    return keyed


def _equal_columns(pairs: tuple[tuple[int, int], ...], row: Row) -> bool:
    return all(same(row[a], row[b]) for a, b in pairs)


def _mapping(scalars: tuple[Scalar, ...]) -> Callable[[Row], Row]:
    def extend(row: Row) -> Row:
        values = list(row)
        for scalar in scalars:
            values.append(evaluate(scalar, values))
        return tuple(values)

    return extend


def _projection(columns: tuple[int, ...]) -> Callable[[Row], Row]:
    return lambda row: tuple(row[column] for column in columns)


def _constant(part: Arrangement) -> Callable[[], Arrangement | None]:
    return lambda: part
