"""How rows are printed (SPEC_FORMAT.md, Rows)."""

from __future__ import annotations

import json
from collections.abc import Iterable

from actors.compute import Row, row_order


def format_field(value: int | str) -> str:
    """Integers bare; strings double-quoted with JSON escaping (only ``"``,
    ``\\`` and control characters escaped; everything else as it is)."""
    if isinstance(value, int):
        return str(value)
    return json.dumps(value, ensure_ascii=False)


def format_rows(rows: Iterable[Row]) -> list[str]:
    """One line a row, sorted; a row with multiplicity k appears k times."""
    return [" ".join(format_field(value) for value in row) for row in sorted(rows, key=row_order)]
