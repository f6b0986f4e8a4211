"""A timeline picture of a run, as SVG: a lane per worker, its reconcile
phases (buffer, drop, late, wait, create) as coloured bars, and what it
bound or published as labelled marks, on virtual time.

Nothing in a reconciliation waits on time, so many events share a virtual
instant: the horizontal axis is virtual time stretched so that consecutive
events stay one step apart; tick labels give the virtual time.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

import attrs

from actors import Trace

from ._chrome_trace import phase_of

COLOURS = {
    "buffer": "#c6dbef",
    "drop": "#fc9272",
    "late": "#fdd0a2",
    "wait": "#fdae6b",
    "create": "#a1d99b",
}
STEP = 26  # pixels between consecutive events
SECOND = 6  # extra pixels per virtual second
LANE = 50
LABEL = 170


@attrs.frozen
class _Bar:
    lane: str
    phase: str
    start: float
    end: float


@attrs.frozen
class _Mark:
    lane: str
    x: float
    text: str
    alarm: bool


@attrs.frozen
class Panel:
    """One run's timeline: a title, its worker lanes, bars, marks and ticks."""

    title: str
    lanes: tuple[str, ...]
    bars: tuple[_Bar, ...]
    marks: tuple[_Mark, ...]
    ticks: tuple[tuple[float, float], ...]
    width: float

    @classmethod
    def from_trace(
        cls, title: str, trace: Trace, note: str | None = None, start: str | None = None
    ) -> Panel:
        """The panel of ``trace``; with ``start``, from the first mark that says it."""
        lanes: list[str] = []
        bars: list[_Bar] = []
        marks: list[_Mark] = []
        ticks: list[tuple[float, float]] = []
        open_bars: dict[str, tuple[str, float]] = {}
        x, last_time = 0.0, 0.0
        started = start is None
        for event in trace:
            if event.kind != "mark" or event.detail is None or "/p" not in event.actor:
                continue
            if event.actor.startswith(("barrier", "registry")):
                continue
            started = started or event.detail == start
            if not started:
                continue
            x = max(x + STEP, event.time * SECOND + x - last_time * SECOND)
            if not ticks or event.time != ticks[-1][1]:
                ticks.append((x, event.time))
            last_time = event.time
            if event.actor not in lanes:
                lanes.append(event.actor)
            phase = phase_of(event.detail)
            if phase is not None:
                previous = open_bars.pop(event.actor, None)
                if previous is not None:
                    bars.append(_Bar(event.actor, previous[0], previous[1], x))
                open_bars[event.actor] = (phase, x)
            elif event.detail.startswith(("peer ", "publish ")):
                marks.append(_Mark(event.actor, x, _short(event.detail), "frozen" in event.detail))
        end = x + STEP
        for lane, (phase, opened) in open_bars.items():
            bars.append(_Bar(lane, phase, opened, end))
        if note is not None and lanes:
            readers = [lane for lane in lanes if lane.startswith("interactive")] or lanes
            marks.append(_Mark(readers[0], end, note, "error" in note))
        return cls(title, tuple(lanes), tuple(bars), tuple(marks), tuple(ticks), end + 260)


def _short(detail: str) -> str:
    """``publish 1001@0 as #2`` -> ``publish #2``; ``peer ... bound to publisher #1``
    -> ``bind #1`` (``frozen #1`` once its publisher was dropped); parked -> ``parked``."""
    serial = detail[detail.rfind("#") :].split(",")[0] if "#" in detail else ""
    if detail.startswith("publish "):
        return f"publish {serial}"
    if "parked" in detail:
        return "parked"
    return f"{'frozen' if 'frozen' in detail else 'bind'} {serial}"


def render(panels: Sequence[Panel]) -> str:
    """Panels side by side, as one SVG document."""
    height = max((len(panel.lanes) for panel in panels), default=1) * LANE + 90
    parts: list[str] = []
    offset = 0.0
    for panel in panels:
        parts.append(_panel(panel, offset))
        offset += LABEL + panel.width + 20
    legend = [
        f'<rect x="{10 + i * 90}" y="{height - 22}" width="12" height="12" fill="{colour}"/>'
        f'<text x="{26 + i * 90}" y="{height - 12}">{phase}</text>'
        for i, (phase, colour) in enumerate(COLOURS.items())
    ]
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{offset:.0f}" height="{height}" '
        'font-family="sans-serif" font-size="11">'
        '<rect width="100%" height="100%" fill="white"/>'
        + "".join(parts)
        + "".join(legend)
        + "</svg>\n"
    )


def _panel(panel: Panel, offset: float) -> str:
    top = 40
    left = offset + LABEL
    title = escape(panel.title)
    out = [f'<text x="{offset + 10}" y="20" font-size="13" font-weight="bold">{title}</text>']
    for row, lane in enumerate(panel.lanes):
        y = top + row * LANE
        out.append(f'<text x="{offset + 10}" y="{y + 18}">{escape(lane)}</text>')
        right = left + panel.width
        out.append(f'<line x1="{left}" y1="{y + 26}" x2="{right}" y2="{y + 26}" stroke="#ddd"/>')
    rows = {lane: row for row, lane in enumerate(panel.lanes)}
    for bar in panel.bars:
        y = top + rows[bar.lane] * LANE + 6
        width = max(bar.end - bar.start, 2)
        out.append(
            f'<rect x="{left + bar.start:.1f}" y="{y}" width="{width:.1f}" height="18" '
            f'fill="{COLOURS[bar.phase]}"><title>{bar.phase}</title></rect>'
        )
    seen: dict[str, int] = {}
    for mark in panel.marks:
        if mark.lane not in rows:
            continue
        y = top + rows[mark.lane] * LANE
        colour = "#cb181d" if mark.alarm else "#08519c"
        nth = seen[mark.lane] = seen.get(mark.lane, -1) + 1
        label_y = y + 2 if nth % 2 == 0 else y + 38  # above, then below the bar
        out.append(
            f'<circle cx="{left + mark.x:.1f}" cy="{y + 15}" r="4" fill="{colour}"/>'
            f'<text x="{left + mark.x - 4:.1f}" y="{label_y}" fill="{colour}">'
            f"{escape(mark.text)}</text>"
        )
    axis = top + len(panel.lanes) * LANE + 4
    for x, time in panel.ticks:
        out.append(
            f'<text x="{left + x:.1f}" y="{axis + 12}" fill="#666" font-size="9">{time:g}s</text>'
        )
    return "".join(out)
