"""Traces in the Chrome trace-event format."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from actors import EventKind, Trace, TraceEvent
from replica.driver import main
from replica.driver.pictures._chrome_trace import chrome_events

from ....paths import SPECS


def test_phases_become_spans_and_the_rest_instants_in_order() -> None:
    trace = Trace(
        [
            TraceEvent(0.0, "w", EventKind.SPAWNED),
            TraceEvent(0.0, "w", EventKind.MARK, None, "reconcile position=1"),
            TraceEvent(0.0, "w", EventKind.MARK, None, "drop phase: keep [] drop [7]"),
            TraceEvent(0.0, "w", EventKind.DELIVERED, 3, "leader"),
            TraceEvent(2.0, "w", EventKind.MARK, None, "create phase"),
        ]
    )
    events = chrome_events(trace)
    assert events[0] == {
        "name": "thread_name",
        "ph": "M",
        "pid": 1,
        "tid": 1,
        "args": {"name": "w"},
    }
    shape = [(e["name"], e["ph"], e["ts"]) for e in events[1:]]
    assert shape == [
        ("spawned", "i", 0.0),
        ("buffer", "B", 1.0),
        ("buffer", "E", 2.0),
        ("drop", "B", 2.0),
        ("deliver #3", "i", 3.0),
        ("drop", "E", 2_000_000.0),
        ("create", "B", 2_000_000.0),
        ("create", "E", 2_000_001.0),
    ]


def test_the_command_writes_a_chrome_trace(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "trace.json"
    spec = str(SPECS / "two_runtime_recreate_index.spec")
    assert main(["run", spec, "--chrome-trace", str(out)]) == 0
    capsys.readouterr()
    document = json.loads(out.read_text(encoding="utf-8"))
    events = document["traceEvents"]
    tracks = {e["args"]["name"] for e in events if e["ph"] == "M"}
    assert {"maintenance/p0/w0", "interactive/p0/w0", "barrier/p0/w0"} <= tracks
    spans = {e["name"] for e in events if e["ph"] == "B"}
    assert {"buffer", "drop", "wait", "create"} <= spans
    begins = sum(e["ph"] == "B" for e in events)
    assert begins == sum(e["ph"] == "E" for e in events)
    stamps = [e["ts"] for e in events if e["ph"] != "M"]
    assert stamps == sorted(stamps)
