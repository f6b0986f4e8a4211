"""A dataflow at one worker: its operators, built from a description, and the
collections it exports (DESIGN.md §2.5).

Rendering turns each import into a source (a shard, read in turns by the
runtime's workers; or this worker's part of an imported index), each build
into operators, and each export into an arrangement (an index, partitioned
across workers by the hash of its key), a materialized-view sink or a
subscribe. An index export whose collection is an imported index's
collection, with the same key, re-exports that arrangement: it is shared,
not copied. A dataflow does nothing until it is scheduled.

The collections a worker serves reads from share one shape (:class:`Readable`):
an index export of a rendered dataflow, or (interactive runtime) a
:class:`PeerView` of the part maintenance publishes.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import attrs

from sharing import Incarnation, Peer, Publisher

from ._arrangement import Arrangement, Scan
from ._exchange import Fabric
from ._ids import GlobalId
from ._operators import (
    AggregateReduce,
    Arrange,
    ArrangementSource,
    ConstantSource,
    CountReduce,
    Errors,
    Exchanged,
    FilterOperator,
    FlatMapRows,
    JoinOperator,
    KeyedShardSource,
    MapRows,
    NegateOperator,
    Operator,
    ShardSource,
    Stream,
    ThresholdOperator,
    Times,
    TopKOperator,
    UnionOperator,
    first_error,
    router,
)
from ._plan import (
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
from ._protocol import (
    DataflowDescription,
    Frontier,
    MaterializedView,
    Row,
    SinkExport,
    Subscribe,
    SubscribeBatch,
)
from ._scalar import Scalar, evaluate, holds, same
from ._shard import ShardCatalog
from ._sinks import MaterializedViewSink, Metrics, SubscribeSink


def compaction_error(ts: int, since: int) -> str | None:
    """Why a read at ``ts`` cannot be served below compaction frontier ``since``."""
    if ts < since:
        return f"read at ts {ts} is before the compaction frontier {since}"
    return None


@attrs.define(eq=False)
class Context:
    """What a worker lends the dataflows it renders."""

    worker: int
    workers: int
    fabric: Fabric
    shards: ShardCatalog
    metrics: Metrics
    wake: Callable[[], None]
    # This worker's part of an index it may import, by index id.
    imported: Callable[[GlobalId], Callable[[], Arrangement | None]]
    emit: Callable[[SubscribeBatch], None]


class Reported:
    """A collection a worker reports: its ``frontier`` is its ``upper`` (an
    integer, ``None`` while it has none), as the protocol says it."""

    @property
    def upper(self) -> int | None:
        raise NotImplementedError

    @property
    def frontier(self) -> Frontier | None:
        upper = self.upper
        return None if upper is None else Frontier.at(upper)


@attrs.define(eq=False)
class Export(Reported):
    """One collection a rendered dataflow exports (an index or a sink)."""

    id: GlobalId
    dataflow: Dataflow
    # Invariant: since >= the dataflow's as_of when exported, and only grows.
    since: int

    @property
    def scheduled(self) -> bool:
        return self.dataflow.scheduled


@attrs.define(eq=False)
class IndexPart(Export):
    """A worker's part of an index export: its part of the arrangement
    (``provider`` returns it; for a re-export, the imported part), and where
    maintenance publishes it for the interactive runtime."""

    provider: Callable[[], Arrangement | None] = attrs.field(kw_only=True)
    publishers: dict[Incarnation, Publisher[IndexPart]] = attrs.field(factory=dict, kw_only=True)
    # Why reads fail, if they do (its dataflow could not read an import).
    error: str | None = attrs.field(default=None, kw_only=True)
    # The evaluation errors of the operators its collection comes from.
    errors: tuple[Errors, ...] = attrs.field(default=(), kw_only=True)

    @property
    def arrangement(self) -> Arrangement | None:
        return self.provider()

    @property
    def upper(self) -> int | None:
        """The part's upper, once its dataflow is scheduled and stepped;
        within the dataflow's times (a re-export shares an arrangement built
        for other times: its upper is still never before its ``as_of`` nor
        past its ``until``)."""
        part = self.provider()
        dataflow = self.dataflow  # (scheduled, inline: once per collection per report)
        if not dataflow.scheduled or part is None or part.upper is None:
            return None
        return dataflow.times.cap(part.upper)

    def read_error(self, ts: int) -> str | None:
        if self.error is not None:
            return self.error
        return compaction_error(ts, self.since) or self.evaluation_error(ts)

    def evaluation_error(self, ts: int) -> str | None:
        """Once the part is complete through ``ts``: the error its
        collection holds at ``ts`` if any (a peek of it fails with it)."""
        if not self.errors or not self.ready(ts):
            return None
        message = first_error(self.errors, ts)
        return None if message is None else f"Evaluation error: {message}"

    def ready(self, ts: int) -> bool:
        upper = self.upper
        return upper is not None and upper > ts

    def scan(self, ts: int, literals: tuple[Row, ...] | None) -> Scan:
        part = self.provider()
        assert part is not None, "a read starts once the part is ready"
        return part.scan(ts, literals)

    def close(self) -> None:
        for publisher in self.publishers.values():
            publisher.drop()


@attrs.define(eq=False)
class SinkPart(Export):
    """A sink export: its frontier is the sink operator's."""

    sink: SinkExport = attrs.field(kw_only=True)
    operator: Operator = attrs.field(kw_only=True)

    @property
    def upper(self) -> int | None:
        """A materialized view's upper once scheduled; a subscribe reports
        none (its batches say how far it got)."""
        if not self.scheduled or isinstance(self.sink.connection, Subscribe):
            return None
        return self.operator.out.frontier

    def allow_writes(self, allowed: bool = True) -> None:
        """Let a materialized view write its shard (or not: read-only)."""
        if isinstance(self.operator, MaterializedViewSink):
            self.operator.writable = allowed

    def close(self) -> None:
        pass


@attrs.define(eq=False)
class Dataflow:
    """A rendered dataflow at one worker. ``number`` is its place in the
    order this worker rendered dataflows (the same on every worker)."""

    description: DataflowDescription
    number: int
    times: Times
    operators: list[Operator] = attrs.field(factory=list)
    exports: dict[GlobalId, IndexPart | SinkPart] = attrs.field(factory=dict)
    exchanges: int = 0
    scheduled: bool = False
    closed: bool = False

    def fail_reads(self, error: str) -> None:
        """Reads of its indexes fail with ``error`` (an import was compacted
        past its as_of); it still computes, as a real dataflow's error stream
        would."""
        for export in self.exports.values():
            if isinstance(export, IndexPart):
                export.error = error

    @property
    def as_of(self) -> int:
        return self.times.as_of

    def keep(self, as_of: int) -> None:
        """A reconciliation keeps this dataflow for one built ``as_of``: from
        now on it reads as of it (its frontiers never below it)."""
        assert as_of >= self.times.as_of, "a kept dataflow's as_of only moves up"
        self.times.as_of = as_of

    def step(self) -> None:
        if self.scheduled:
            for operator in self.operators:
                operator.step()

    def close(self, fabric: Fabric, worker: int) -> None:
        """Dropped: stop every operator, leave every exchange, stop publishing."""
        if self.closed:
            return
        self.closed = True
        for operator in self.operators:
            operator.close()
        for place in range(self.exchanges):
            fabric.release(self.number, place, worker)
        for export in self.exports.values():
            export.close()


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
        provider = context.imported(index.id)
        streams[index.on] = add(ArrangementSource(provider, times, context.wake))
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
            part = Arrangement(export.key)
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


@attrs.define(eq=False)
class PeerView(Reported):
    """The interactive runtime's stand-in for a maintenance index: no
    dataflow of its own, a peer bound (through the sharing registry) to the
    part maintenance publishes, read at the peer's own compaction frontier.

    Its frontier is the bound part's upper; a peer bound to a dropped
    publisher keeps that part's last upper forever (a frozen view), and a
    parked peer reports nothing.
    """

    id: GlobalId
    description: DataflowDescription
    peer: Peer[IndexPart]
    # Invariant: since >= as_of, and since only moves forward.
    since: int
    # The part this view's worker listens to (the bound one, once bound).
    _following: Arrangement | None = None
    _stop: Callable[[], None] | None = None

    @classmethod
    def bind(
        cls, id: GlobalId, description: DataflowDescription, peer: Peer[IndexPart]
    ) -> PeerView:
        return cls(id, description, peer, since=description.as_of)

    @property
    def arrangement(self) -> Arrangement | None:
        publisher = self.peer.publisher
        return None if publisher is None else publisher.value.arrangement

    def provider(self) -> Arrangement | None:
        return self.arrangement

    @property
    def upper(self) -> int | None:
        # What it reads is maintenance's part: it moves once maintenance's
        # dataflow is scheduled, whether or not this view's Schedule came.
        part = self.arrangement
        return None if part is None else part.upper

    def read_error(self, ts: int) -> str | None:
        publisher = self.peer.publisher
        if publisher is not None and publisher.value.error is not None:
            return publisher.value.error
        error = compaction_error(ts, self.since)
        if error is None and publisher is not None:
            return publisher.value.evaluation_error(ts)
        return error

    def ready(self, ts: int) -> bool:
        part = self.arrangement
        return part is not None and part.ready(ts)

    def scan(self, ts: int, literals: tuple[Row, ...] | None) -> Scan:
        part = self.arrangement
        assert part is not None, "a parked peer is never ready"
        return part.scan(ts, literals)

    def follow(self, wake: Callable[[], None]) -> None:
        """Have ``wake`` called whenever the bound part changes."""
        part = self.arrangement
        if part is self._following:
            return
        self._unfollow()
        if part is not None:
            self._following, self._stop = part, part.listen(wake)

    def _unfollow(self) -> None:
        if self._stop is not None:
            self._stop()
        self._following = self._stop = None

    def rebind(self, peer: Peer[IndexPart]) -> Peer[IndexPart]:
        """Read through ``peer`` from now on; release the old one and return it."""
        old, self.peer = self.peer, peer
        old.release()
        return old

    def close(self) -> None:
        self._unfollow()
        self.peer.release()
