"""The body of a ``create-dataflow``, as the real driver reads it: its
``import``, ``build`` and ``export`` sub-commands, each build's plan read by
:mod:`._plan_syntax`.

The body is grouped by indentation as the real driver groups it: lines at the
body's least indentation are sub-commands, each owning the more-indented lines
after it (a build's plan).
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from replica.model import GlobalId, MaterializedView, Subscribe

from ._headers import (
    BUILD,
    EXPORTS,
    IMPORT_INDEX,
    IMPORT_SOURCE,
    Arguments,
    InputError,
    Signature,
    as_id,
    as_int,
    as_list,
    as_str,
    parse_arguments,
    tokenize,
)
from ._plan_operators import PlanNode
from ._plan_syntax import BodyLine, parse_plan


@attrs.frozen
class SourceImportLine:
    line: int
    id: GlobalId
    shard: str
    schema: str | None


@attrs.frozen
class IndexImportLine:
    line: int
    id: GlobalId


@attrs.frozen
class BuildLine:
    line: int
    id: GlobalId
    plan: PlanNode


@attrs.frozen
class IndexExportLine:
    line: int
    id: GlobalId
    on: GlobalId
    key: tuple[int, ...]
    transient: bool


@attrs.frozen
class SinkExportLine:
    line: int
    id: GlobalId
    on: GlobalId
    schema: str | None
    connection: MaterializedView | Subscribe


@attrs.frozen
class DataflowBody:
    """A ``create-dataflow`` body's sub-commands, each kind in its order."""

    imports: tuple[SourceImportLine | IndexImportLine, ...]
    builds: tuple[BuildLine, ...]
    exports: tuple[IndexExportLine | SinkExportLine, ...]


def parse_dataflow_body(lines: Sequence[BodyLine]) -> DataflowBody:
    """The sub-commands of a body; :class:`InputError` at the line at fault."""
    imports: list[SourceImportLine | IndexImportLine] = []
    builds: list[BuildLine] = []
    exports: list[IndexExportLine | SinkExportLine] = []
    for header, inner in _groups(lines):
        try:
            tokens = tokenize(header.text)
        except ValueError as error:
            raise InputError(header.number, f"create-dataflow: {error}") from None
        verb, rest = tokens[0], tokens[1:]
        if verb == "build":
            if not inner:
                raise InputError(
                    header.number, "create-dataflow: build needs a plan on the lines below it"
                )
            args = _arguments(header, "build", rest, BUILD).args
            builds.append(BuildLine(header.number, as_id(args["id"]), parse_plan(inner)))
            continue
        if inner:
            raise InputError(inner[0].number, f"create-dataflow: {verb} takes no indented lines")
        if verb == "import":
            imports.append(_import(header, rest))
        elif verb == "export":
            exports.append(_export(header, rest))
        else:
            raise InputError(
                header.number,
                f"create-dataflow: unknown sub-command {verb!r} (import, build or export)",
            )
    return DataflowBody(tuple(imports), tuple(builds), tuple(exports))


def _groups(lines: Sequence[BodyLine]) -> list[tuple[BodyLine, list[BodyLine]]]:
    if not lines:
        return []
    base = min(line.indent for line in lines)
    groups: list[tuple[BodyLine, list[BodyLine]]] = []
    for line in lines:
        if line.text[0].isspace():
            raise InputError(line.number, "create-dataflow: indent with spaces only")
        if line.indent == base:
            groups.append((line, []))
        elif not groups:
            raise InputError(
                line.number,
                "create-dataflow: this line is indented more than the sub-commands "
                "(import, build, export) after it",
            )
        else:
            groups[-1][1].append(line)
    return groups


def _arguments(header: BodyLine, verb: str, tokens: list[str], signature: Signature) -> Arguments:
    try:
        return parse_arguments(f"create-dataflow: {verb}", tokens, signature)
    except ValueError as error:
        raise InputError(header.number, str(error)) from None


def _import(header: BodyLine, tokens: list[str]) -> SourceImportLine | IndexImportLine:
    if any(token.startswith("index=") for token in tokens):
        args = _arguments(header, "import", tokens, IMPORT_INDEX).args
        return IndexImportLine(header.number, as_id(args["index"]))
    args = _arguments(header, "import", tokens, IMPORT_SOURCE).args
    schema = args.get("schema")
    return SourceImportLine(
        header.number,
        as_id(args["source"]),
        as_str(args["shard"]),
        None if schema is None else as_str(schema),
    )


def _export(header: BodyLine, tokens: list[str]) -> IndexExportLine | SinkExportLine:
    kind = next((token[5:] for token in tokens if token.startswith("kind=")), "index")
    if kind == "copy-to":
        raise InputError(header.number, "create-dataflow: copy-to export is not implemented")
    signature = EXPORTS.get(kind)
    if signature is None:
        raise InputError(
            header.number,
            f"create-dataflow: unknown export kind {kind!r} "
            "(index, materialized-view or subscribe)",
        )
    arguments = _arguments(header, "export", tokens, signature)
    args = arguments.args
    on = as_id(args["on"])
    if kind == "index":
        transient = "transient" in arguments.flags
        key = as_list(args["key"])
        return IndexExportLine(header.number, as_id(args["index"]), on, key, transient)
    schema = args.get("schema")
    connection: MaterializedView | Subscribe
    if kind == "materialized-view":
        connection = MaterializedView(as_str(args["shard"]))
    else:
        up_to = args.get("up-to")
        connection = Subscribe(None if up_to is None else as_int(up_to))
    return SinkExportLine(
        header.number,
        as_id(args["sink"]),
        on,
        None if schema is None else as_str(schema),
        connection,
    )
