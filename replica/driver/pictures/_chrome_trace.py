"""Traces in the Chrome trace-event format (opens in Perfetto and
chrome://tracing): a track per actor, reconcile phases as spans, barrier
arrivals and passes, command deliveries and every other event as instants, on
Trio's virtual time.

Many events happen at the same virtual instant (nothing in a reconciliation
waits on time), so each event is placed ``1 us`` after the one before it in
the trace when they would otherwise coincide: order is kept and zero-length
spans stay visible, at a cost of microseconds against virtual seconds.
"""

from __future__ import annotations

import json
from typing import IO, Any

from actors import Trace, TraceEvent

# Marks of a worker that open a phase; a phase ends where the next one starts.
PHASES = {
    "reconcile position=": "buffer",
    "drop phase": "drop",
    "fault: arrive": "late",
    "wait at barrier": "wait",
    "create phase": "create",
}


def phase_of(detail: str | None) -> str | None:
    """The reconcile phase a worker's mark opens, if it opens one."""
    if detail is None:
        return None
    for prefix, name in PHASES.items():
        if detail.startswith(prefix):
            return name
    return None


def chrome_events(trace: Trace) -> list[dict[str, Any]]:
    """The trace as a list of Chrome trace events."""
    tids: dict[str, int] = {}
    events: list[dict[str, Any]] = []
    open_spans: dict[str, str] = {}
    last = -1.0
    for event in trace:
        ts = max(event.time * 1e6, last + 1)
        last = ts
        tid = tids.setdefault(event.actor, len(tids) + 1)
        phase = phase_of(event.detail) if event.kind == "mark" else None
        if phase is not None or (event.kind == "mark" and event.detail == "reconciled"):
            _close(events, open_spans, event.actor, tid, ts)
        if phase is not None:
            open_spans[event.actor] = phase
            events.append(_event(phase, "B", ts, tid, event))
            continue
        events.append(_event(_instant_name(event), "i", ts, tid, event) | {"s": "t"})
    end = last + 1
    for actor, _ in list(open_spans.items()):
        _close(events, open_spans, actor, tids[actor], end)
    metadata = [
        {"name": "thread_name", "ph": "M", "pid": 1, "tid": tid, "args": {"name": actor}}
        for actor, tid in tids.items()
    ]
    return metadata + events


def _close(
    events: list[dict[str, Any]], open_spans: dict[str, str], actor: str, tid: int, ts: float
) -> None:
    name = open_spans.pop(actor, None)
    if name is not None:
        events.append({"name": name, "ph": "E", "ts": ts, "pid": 1, "tid": tid})


def _instant_name(event: TraceEvent) -> str:
    if event.kind == "delivered":
        return f"deliver #{event.seq}"
    if event.kind == "mark" and event.detail is not None:
        return event.detail
    return str(event.kind)


def _event(name: str, ph: str, ts: float, tid: int, event: TraceEvent) -> dict[str, Any]:
    args: dict[str, Any] = {"kind": str(event.kind), "virtual_time": event.time}
    if event.seq is not None:
        args["seq"] = event.seq
    if event.detail is not None:
        args["detail"] = event.detail
    return {"name": name, "ph": ph, "ts": ts, "pid": 1, "tid": tid, "args": args}


def write_chrome_trace(trace: Trace, file: IO[str]) -> None:
    """Write ``trace`` as a Chrome trace-event JSON document."""
    json.dump({"traceEvents": chrome_events(trace), "displayTimeUnit": "ms"}, file)
