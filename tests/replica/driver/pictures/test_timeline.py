"""The SVG timeline of a run."""

from __future__ import annotations

import xml.dom.minidom
from pathlib import Path

import pytest

from actors import EventKind, Trace, TraceEvent
from replica.driver import main
from replica.driver.pictures._timeline import Panel, render

from ....paths import SPECS


def test_a_panel_has_a_lane_per_worker_and_a_bar_per_phase() -> None:
    trace = Trace(
        [
            TraceEvent(0.0, "maintenance/p0/w0", EventKind.MARK, None, "reconcile position=1"),
            TraceEvent(0.0, "maintenance/p0/w0", EventKind.MARK, None, "drop phase: drop [7]"),
            TraceEvent(
                0.0, "interactive/p0/w0", EventKind.MARK, None, "wait at barrier position=1"
            ),
            TraceEvent(0.0, "barrier/p0/w0", EventKind.MARK, None, "maintenance arrived at 1"),
            TraceEvent(1.0, "interactive/p0/w0", EventKind.MARK, None, "create phase"),
            TraceEvent(
                1.0, "interactive/p0/w0", EventKind.MARK, None, "peer 7@0 bound to publisher #2"
            ),
        ]
    )
    panel = Panel.from_trace("run", trace, note="read: error: timed out after 5s")
    assert panel.lanes == ("maintenance/p0/w0", "interactive/p0/w0")
    assert [(bar.lane, bar.phase) for bar in panel.bars] == [
        ("maintenance/p0/w0", "buffer"),
        ("interactive/p0/w0", "wait"),
        ("maintenance/p0/w0", "drop"),
        ("interactive/p0/w0", "create"),
    ]
    assert [(m.text, m.alarm) for m in panel.marks] == [
        ("bind #2", False),
        ("read: error: timed out after 5s", True),
    ]
    assert [time for _, time in panel.ticks] == [0.0, 1.0]
    xml.dom.minidom.parseString(render([panel, panel]))


def test_the_demo_and_run_draw_timelines(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    demo_svg, run_svg = tmp_path / "demo.svg", tmp_path / "run.svg"
    assert main(["demo", "--timeline", str(demo_svg)]) == 0
    spec = str(SPECS / "reconnects.spec")
    assert main(["run", spec, "--workers", "2", "--timeline", str(run_svg)]) == 0
    capsys.readouterr()
    demo = demo_svg.read_text(encoding="utf-8")
    assert "barrier OFF" in demo
    assert "barrier ON" in demo
    assert "frozen #1" in demo
    assert "bind #2" in demo
    drawn = xml.dom.minidom.parse(str(run_svg))
    texts = drawn.getElementsByTagName("text")
    lanes = {t.firstChild.nodeValue for t in texts if t.firstChild is not None}
    assert {"maintenance/p0/w1", "interactive/p0/w1"} <= lanes
