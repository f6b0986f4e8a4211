"""The file's static knowledge, and the payload of each stanza built from it.

The real driver keeps, across the whole script (reconnects included), the
schemas ``define-schema`` declared, the indexes ``define-index`` and index
exports registered (each index's collection, key and column types), the
materialized-view sinks and their shards, and a counter for the ids ``count``
allocates. None of it depends on what the replica answers, so the parser
keeps the same, stanza by stanza, and resolves every name a stanza uses
before anything runs.

Errors, and when they are found:

- bad input (:class:`InputError`, exit 2 before anything runs): what the real
  driver's parser refuses (a malformed header or body line, an export kind it
  does not know, a ``build`` without a plan), and what only our plan language
  checks: a plan that reads a collection its dataflow neither imports nor
  builds, a column out of range, a ``Join`` without ``optimize``, an index
  export keyed past its collection's columns, a sink whose schema is not its
  collection's. The real driver finds those while it runs, in
  ``mz-expr-parser``, the MIR type checker or the lowering, with messages a
  model cannot reproduce.
- a stanza's output (:class:`Fail`, ``error: <message>`` when it runs): what
  the real driver reports while it runs, in its words: an unknown schema or
  index, a column type it does not support, a row that does not fit its
  schema, a key column past the schema, an export of an id its dataflow
  neither imports nor builds, a configuration value of the wrong type.

A stanza stops at its first run-time error, as the real driver's command
does: a ``create-dataflow`` whose import fails checks no plan after it (the
body's syntax is checked all the same).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import attrs

from replica.model import (
    Build,
    DataflowClass,
    DataflowDescription,
    Frontier,
    Get,
    IndexExport,
    IndexImport,
    MaterializedView,
    Reduce,
    SinkExport,
    SourceImport,
)
from replica.model._ids import U64_MAX, GlobalId
from replica.model._lir import LoweringError, NodeHint, Path
from replica.model._lowering import lower_dataflow
from replica.model._scalar import INT64_MAX
from replica.protocol import (
    AllowCompaction,
    AllowWrites,
    CreateDataflow,
    CreateInstance,
    InitializationComplete,
    InstanceConfig,
    Schedule,
    UpdateConfiguration,
)

from ._data import (
    DEFAULT_ROW_BYTES,
    SAMPLE_SCHEMA,
    Column,
    ColumnType,
    DataError,
    Schema,
    Synthetic,
    parse_rows,
    rust_debug,
    scalar_type,
    split_values,
)
from ._dataflow_body import IndexExportLine, SinkExportLine, SourceImportLine, parse_dataflow_body
from ._explain import explain_lines
from ._headers import InputError, Value, as_id, as_int, as_list, as_str, tokenize
from ._payloads import (
    Advance,
    AwaitFrontier,
    AwaitSubscribe,
    CountRows,
    Fail,
    Hold,
    Metrics,
    Payload,
    PeekCount,
    PeekRows,
    Print,
    Reconnect,
    Release,
    Send,
    Settle,
    Timeout,
    Write,
)
from ._plan_resolution import RelationType, resolve
from ._plan_syntax import BodyLine
from ._settings import settings as _settings

MAX_SYNTHETIC_BYTES = 1 << 28
MAX_SPEC_SYNTHETIC_BYTES = 1 << 30
DEFAULT_DATAFLOW_NAME = "headless-create-dataflow"


@attrs.frozen
class Directive:
    """A stanza's parsed header and its body lines."""

    line: int
    name: str
    args: dict[str, Value]
    flags: tuple[str, ...]
    body: tuple[BodyLine, ...]


@attrs.frozen
class _Index:
    on: GlobalId
    key: tuple[int, ...]
    type: RelationType


@attrs.frozen
class _Declared:
    """A dataflow a ``create-dataflow name=`` declared (or an inline
    ``explain`` describes): what ``explain`` lowers, and the indexes and
    materialized-view sinks its exports register."""

    dataflow: DataflowDescription
    hints: dict[GlobalId, dict[Path, NodeHint]]
    optimized: bool
    indexes: dict[GlobalId, _Index] = attrs.field(factory=dict)
    sinks: dict[GlobalId, str] = attrs.field(factory=dict)


@attrs.define(eq=False)
class Catalog:
    """What the script declared above the stanza being read."""

    schemas: dict[str, Schema] = attrs.field(factory=dict)
    indexes: dict[GlobalId, _Index] = attrs.field(factory=dict)
    # Materialized-view sinks: a peek of one reads its shard.
    sinks: dict[GlobalId, str] = attrs.field(factory=dict)
    deferred: dict[str, DataflowDescription] = attrs.field(factory=dict)
    # Every dataflow a `create-dataflow name=` declared (sent or deferred),
    # by name: what `explain ref=` prints.
    declared: dict[str, _Declared] = attrs.field(factory=dict)
    # Invariant: ids from here up were never allocated by a `count`.
    next_internal: int = U64_MAX // 2
    # How many bytes of synthetic rows the script writes so far (bounded).
    synthetic_bytes: int = 0

    def payload(self, directive: Directive) -> Payload:
        """The stanza's payload; :class:`InputError` for bad input."""
        try:
            return _BUILDERS[directive.name](self, directive)
        except DataError as error:
            return Fail(str(error))

    def _schema(self, name: Value | None) -> Schema:
        if name is None:
            return SAMPLE_SCHEMA
        found = self.schemas.get(as_str(name))
        if found is None:
            raise DataError(
                f"unknown schema {rust_debug(as_str(name))}; declare it with define_schema first"
            )
        return found

    def _define_schema(self, directive: Directive) -> Payload:
        columns = [_column(line) for line in directive.body]
        self.schemas[as_str(directive.args["name"])] = Schema(tuple(columns))
        return Print(("ok",))

    def _write_rows(self, directive: Directive) -> Payload:
        args = directive.args
        values = [_values(line) for line in directive.body]
        rows = parse_rows(self._schema(args.get("schema")), values)
        return Write(as_str(args["shard"]), as_int(args["ts"]), rows)

    def _write_synthetic(self, directive: Directive) -> Payload:
        args, name = directive.args, directive.name
        start, count = as_int(args.get("start", 0)), as_int(args["count"])
        width = as_int(args.get("row-bytes", DEFAULT_ROW_BYTES))
        if start + count - 1 > INT64_MAX:
            raise InputError(
                directive.line,
                f"{name}: rows {start} .. {start + count - 1} pass {INT64_MAX}, the largest bigint",
            )
        if count * width > MAX_SYNTHETIC_BYTES:
            raise InputError(
                directive.line,
                f"{name}: count x row-bytes is {count * width} bytes, more than the "
                f"{MAX_SYNTHETIC_BYTES} a write may hold",
            )
        self.synthetic_bytes += count * width
        if self.synthetic_bytes > MAX_SPEC_SYNTHETIC_BYTES:
            raise InputError(
                directive.line,
                f"{name}: the spec's synthetic rows pass {MAX_SPEC_SYNTHETIC_BYTES} bytes in all",
            )
        rows = Synthetic(self._schema(args.get("schema")), start, count, width)
        if name == "write-spread":
            return Write(as_str(args["shard"]), 0, rows, as_int(args["n-ts"]))
        return Write(as_str(args["shard"]), as_int(args["ts"]), rows)

    def _define_index(self, directive: Directive) -> Payload:
        args = directive.args
        schema = self._schema(args.get("schema"))
        key = as_list(args["key"])
        for column in key:
            if column >= schema.arity:
                raise DataError(
                    f"key column {column} out of range for a {schema.arity}-column schema"
                )
        source, index = as_id(args["source"]), as_id(args["index"])
        self.indexes[index] = _Index(source, key, schema.types)
        dataflow = DataflowDescription.index(
            source, as_str(args["shard"]), index, key, as_int(args["as-of"]), arity=schema.arity
        )
        return Send(CreateDataflow(dataflow))

    def _describe(self, directive: Directive, as_of: int, optimize: bool) -> _Declared:
        """The dataflow a ``create-dataflow`` (or an inline ``explain``)
        body describes, and what its exports would register."""
        args = directive.args
        name = args.get("name")
        body = parse_dataflow_body(directive.body)
        types: dict[GlobalId, RelationType] = {}
        sources: list[SourceImport] = []
        indexes: list[IndexImport] = []
        for line in body.imports:
            if isinstance(line, SourceImportLine):
                schema = self._schema(line.schema)
                _bind(types, line.id, schema.types, line.line)
                sources.append(SourceImport(line.id, line.shard, schema.arity))
                continue
            index = self.indexes.get(line.id)
            if index is None:
                raise DataError(f"unknown index {line.id}; define it before importing it")
            _bind(types, index.on, index.type, line.line)
            indexes.append(IndexImport(line.id, index.on, index.key, len(index.type)))
        builds = []
        hints: dict[GlobalId, dict[Path, NodeHint]] = {}
        for build in body.builds:
            hints[build.id] = {}
            plan, relation = resolve(build.plan, types, optimize, hints[build.id])
            _bind(types, build.id, relation, build.line)
            builds.append(Build(build.id, plan))
        as_of = as_int(args["as-of"])
        until = None if "until" not in args else as_int(args["until"])
        dataflow = DataflowDescription(
            as_of,
            tuple(sources),
            tuple(indexes),
            tuple(builds),
            until=until,
            name=DEFAULT_DATAFLOW_NAME if name is None else as_str(name),
            # As the real driver marks it: a one-shot read exactly when it
            # reads a single time, whatever it exports (docs/protocol.md, placement).
            dataflow_class=(
                DataflowClass.ONE_SHOT_READ if until == as_of + 1 else DataflowClass.MAINTAINED
            ),
        )
        declared = _Declared(dataflow, hints, "optimize" in directive.flags)
        return self._exports(declared, body.exports, types)

    def _create_dataflow(self, directive: Directive) -> Payload:
        args, flags = directive.args, directive.flags
        if "defer" in flags and "name" not in args:
            raise InputError(
                directive.line, "create-dataflow: defer needs name= (submit-dataflow names it)"
            )
        declared = self._describe(directive, as_int(args["as-of"]), "optimize" in flags)
        self.indexes.update(declared.indexes)
        self.sinks.update(declared.sinks)
        dataflow = declared.dataflow
        if "name" in args:
            self.declared[dataflow.name] = declared
        if "defer" in flags:
            self.deferred[dataflow.name] = dataflow
            return Print(("deferred",))
        return Send(CreateDataflow(dataflow))

    def _explain(self, directive: Directive) -> Payload:
        """``explain ref=NAME`` or ``explain as-of=A [until=T] [optimize]``
        with a body: the lowered plan's lines (:mod:`._explain`), sending
        nothing."""
        args = directive.args
        if "ref" in args:
            given: list[str] = [key for key in ("as-of", "until") if key in args]
            given += directive.flags
            if given or directive.body:
                what = f"{given[0]!r}" if given else "a body"
                raise InputError(
                    directive.line, f"explain: ref= names a declared dataflow, and takes no {what}"
                )
            name = as_str(args["ref"])
            declared = self.declared.get(name)
            if declared is None:
                raise DataError(
                    f"unknown dataflow {rust_debug(name)}; declare it with "
                    "create-dataflow name= first"
                )
        elif "as-of" in args and directive.body:
            # The optimizer is not asked here: an unplanned join fails to lower.
            declared = self._describe(directive, as_int(args["as-of"]), True)
        else:
            raise InputError(
                directive.line,
                "explain: give ref=NAME, or as-of=A with a create-dataflow body",
            )
        try:
            lowered = lower_dataflow(
                declared.dataflow, declared.hints, optimized=declared.optimized
            )
        except LoweringError as error:
            return Fail(f"lowering dataflow failed: {error}")
        return Print(tuple(explain_lines(lowered)))

    def _exports(
        self,
        declared: _Declared,
        exports: Sequence[IndexExportLine | SinkExportLine],
        types: dict[GlobalId, RelationType],
    ) -> _Declared:
        index_exports, sink_exports = [], []
        new_indexes, new_sinks = {}, {}
        seen: set[GlobalId] = set()
        for export in exports:
            if export.id in seen:
                raise InputError(export.line, f"create-dataflow: {export.id} is exported twice")
            seen.add(export.id)
            relation = types.get(export.on)
            if relation is None:
                raise DataError(f"get of unknown id {export.on}; import or build it first")
            if isinstance(export, IndexExportLine):
                for column in export.key:
                    if column >= len(relation):
                        raise InputError(
                            export.line,
                            f"create-dataflow: key column {column} out of range for "
                            f"{export.on}'s {len(relation)} columns",
                        )
                index_exports.append(
                    IndexExport(export.id, export.on, export.key, export.transient)
                )
                new_indexes[export.id] = _Index(export.on, export.key, relation)
                continue
            declared_type = self._schema(export.schema).types
            if declared_type != relation:
                raise InputError(
                    export.line,
                    f"create-dataflow: sink output schema does not match object {export.on}: "
                    f"declared {_shown_type(declared_type)}, object is {_shown_type(relation)}",
                )
            sink_exports.append(SinkExport(export.id, export.on, export.connection))
            if isinstance(export.connection, MaterializedView):
                new_sinks[export.id] = export.connection.shard
        dataflow = attrs.evolve(
            declared.dataflow, index_exports=tuple(index_exports), sink_exports=tuple(sink_exports)
        )
        return attrs.evolve(declared, dataflow=dataflow, indexes=new_indexes, sinks=new_sinks)

    def _submit_dataflow(self, directive: Directive) -> Payload:
        name = as_str(directive.args["name"])
        dataflow = self.deferred.pop(name, None)
        if dataflow is None:
            raise DataError(f"no deferred dataflow named {rust_debug(name)}")
        return Send(CreateDataflow(dataflow))

    def _count(self, directive: Directive) -> Payload:
        id, ts = as_id(directive.args["id"]), as_int(directive.args["ts"])
        index = self.indexes.get(id)
        if index is None:
            raise DataError(f"unknown index {id}; define it with define_index first")
        reduce, output = GlobalId.user(self.next_internal), GlobalId.user(self.next_internal + 1)
        self.next_internal += 2
        dataflow = DataflowDescription(
            ts,
            index_imports=(IndexImport(id, index.on, index.key, len(index.type)),),
            objects_to_build=(Build(reduce, Reduce(Get(index.on))),),
            index_exports=(IndexExport(output, reduce, (0,)),),
            until=ts + 1,
            name="headless-count",
            # The real driver's count is a single-time read, rendered where
            # peeks are served.
            dataflow_class=DataflowClass.ONE_SHOT_READ,
        )
        return CountRows(id, ts, dataflow, output, _timeout(directive))

    def _peek(self, directive: Directive) -> Payload:
        args = directive.args
        self._schema(args.get("schema"))
        id = as_id(args["id"])
        return PeekRows(id, as_int(args["ts"]), _timeout(directive), self.sinks.get(id))


def _create_instance(_: Catalog, directive: Directive) -> Payload:
    settings = _settings(directive.body)
    return Send(CreateInstance(InstanceConfig(settings)))


def _update_configuration(_: Catalog, directive: Directive) -> Payload:
    given = tuple((key, as_str(value)) for key, value in directive.args.items())
    return Send(UpdateConfiguration(given + _settings(directive.body)))


def _allow_compaction(_: Catalog, directive: Directive) -> Payload:
    args = directive.args
    if "frontier" in args and "since" in args:
        raise InputError(
            directive.line,
            "allow-compaction: give 'frontier' or 'since' (another name for it), not both",
        )
    if "frontier" not in args and "since" not in args:
        raise InputError(directive.line, "allow-compaction: missing key 'frontier'")
    frontier = as_int(args["frontier"] if "frontier" in args else args["since"])
    return Send(AllowCompaction(as_id(args["id"]), Frontier.at(frontier)))


def _peek_count(_: Catalog, directive: Directive) -> Payload:
    args = directive.args
    literals = args.get("literals")
    rows = None if literals is None else tuple((value,) for value in as_list(literals))
    return PeekCount(as_id(args["id"]), as_int(args["ts"]), rows, _timeout(directive))


def _metrics(_: Catalog, directive: Directive) -> Payload:
    args = directive.args
    minus = args.get("minus")
    return Metrics(
        as_str(args["metric"]),
        as_int(args["max"]),
        None if minus is None else as_str(minus),
        _timeout(directive),
    )


def _id_command(make: Callable[[GlobalId], Send]) -> Callable[[Catalog, Directive], Payload]:
    return lambda _, directive: make(as_id(directive.args["id"]))


_BUILDERS: dict[str, Callable[[Catalog, Directive], Payload]] = {
    "create-instance": _create_instance,
    "update-configuration": _update_configuration,
    "initialization-complete": lambda _, __: Send(InitializationComplete()),
    "reconnect": lambda _, __: Reconnect(),
    "define-schema": Catalog._define_schema,
    "write-rows": Catalog._write_rows,
    "write-single-ts": Catalog._write_synthetic,
    "write-spread": Catalog._write_synthetic,
    "advance": lambda _, d: Advance(as_str(d.args["shard"]), as_int(d.args["upper"])),
    "define-index": Catalog._define_index,
    "create-dataflow": Catalog._create_dataflow,
    "submit-dataflow": Catalog._submit_dataflow,
    "explain": Catalog._explain,
    "schedule": _id_command(lambda id: Send(Schedule(id))),
    "allow-writes": _id_command(lambda id: Send(AllowWrites(id))),
    "allow-compaction": _allow_compaction,
    "drop": _id_command(lambda id: Send(AllowCompaction(id, Frontier.empty()))),
    "await-frontier": lambda _, d: AwaitFrontier(
        as_id(d.args["id"]), as_int(d.args["ts"]), _timeout(d), "allow-timeout" in d.flags
    ),
    "peek": Catalog._peek,
    "peek-count": _peek_count,
    "count": Catalog._count,
    "await-subscribe": lambda _, d: AwaitSubscribe(
        as_id(d.args["id"]), as_int(d.args["up-to"]), _timeout(d)
    ),
    "metrics": _metrics,
    "hold": lambda _, d: Hold(as_str(d.args["runtime"])),
    "release": lambda _, d: Release(as_str(d.args["runtime"])),
    "settle": lambda _, __: Settle(),
}


# Body lines.


def _values(line: BodyLine) -> list[str]:
    try:
        return split_values(line.text)
    except ValueError as error:
        raise InputError(line.number, f"write-rows: {error}") from None


def _column(line: BodyLine) -> Column:
    """``name type``, ``name type nullable`` or ``name type not null``."""
    tokens = _tokens(line, "define-schema")
    nullable = tokens[2:] == ["nullable"]
    if len(tokens) < 2 or not (nullable or tokens[2:] in ([], ["not", "null"])):
        raise InputError(
            line.number,
            f"define-schema: a column is `name type [nullable]`, not {line.text!r}",
        )
    return Column(tokens[0], ColumnType(scalar_type(tokens[1]), nullable))


def _tokens(line: BodyLine, what: str) -> list[str]:
    try:
        return tokenize(line.text)
    except ValueError as error:
        raise InputError(line.number, f"{what}: {error}") from None


def _bind(
    types: dict[GlobalId, RelationType], id: GlobalId, relation: RelationType, line: int
) -> None:
    if id in types:
        raise InputError(line, f"create-dataflow: {id} is imported or built twice")
    types[id] = relation


def _shown_type(relation: RelationType) -> str:
    return "(" + ", ".join(str(column) for column in relation) + ")"


def _timeout(directive: Directive) -> Timeout:
    given = directive.args.get("timeout-secs")
    return Timeout() if given is None else Timeout(as_str(given))
