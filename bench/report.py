"""Write the report of a benchmark run: a markdown table and scaling curves.

    .venv/bin/python bench/report.py RESULTS.json OUT_DIR

Reads what ``bench/run.py --json`` wrote and writes ``OUT_DIR/report.md`` (the
machine, every row with its ``vs ref`` ratio, the goal ratios) and three SVG
line charts: reconcile time per dataflow against N, command-channel
deliveries/s against workers W (beside ``trio fan-out K=W``), and against
processes P.
"""

from __future__ import annotations

import json
import statistics
import sys
from html import escape
from pathlib import Path
from typing import Any

Series = list[tuple[float, float]]


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: bench/report.py RESULTS.json OUT_DIR", file=sys.stderr)
        return 2
    doc: dict[str, Any] = json.loads(Path(argv[0]).read_text(encoding="utf-8"))
    out = Path(argv[1])
    out.mkdir(parents=True, exist_ok=True)
    rows = {r["name"]: r for r in doc["results"]}
    (out / "report.md").write_text(markdown(doc), encoding="utf-8")
    per_dataflow: dict[str, Series] = {
        kind: [
            (float(n), 1e6 / rows[f"compute reconcile {kind} N={n}"]["median_ops_per_s"])
            for n in (100, 1_000, 10_000)
            if f"compute reconcile {kind} N={n}" in rows
        ]
        for kind in ("kept", "dropped")
    }
    (out / "reconcile.svg").write_text(
        chart("reconcile time per dataflow (us) against N", "N", per_dataflow, log_x=True),
        encoding="utf-8",
    )
    workers = {
        "compute command channel": _series(rows, "compute command channel W={}", (1, 2, 4, 8, 16)),
        "trio fan-out K=W": _series(rows, "trio fan-out K={}", (1, 2, 4, 8, 16)),
    }
    (out / "workers.svg").write_text(
        chart("deliveries/s against workers W", "W", workers, log_x=True), encoding="utf-8"
    )
    processes = {
        "command channel, W=2 each": _series(rows, "compute command channel P={} W=2", (1, 2, 4))
    }
    (out / "processes.svg").write_text(
        chart("deliveries/s against processes P", "P", processes, log_x=True), encoding="utf-8"
    )
    print(f"wrote {out / 'report.md'} and 3 charts")
    return 0


def _series(rows: dict[str, Any], pattern: str, xs: tuple[int, ...]) -> Series:
    return [
        (x, rows[pattern.format(x)]["median_ops_per_s"]) for x in xs if pattern.format(x) in rows
    ]


def markdown(doc: dict[str, Any]) -> str:
    meta = doc["meta"]
    versions = ", ".join(f"{k} {v}" for k, v in meta["versions"].items())
    lines = [
        "# Benchmark report",
        "",
        f"Machine: {meta['platform']}, {meta['cpus']} CPUs; {versions}.",
        f"Run {meta['time']}, {meta['repeats']} interleaved repeats"
        f"{' (quick sizes)' if meta['quick'] else ''}, reference row `{meta['reference']}`.",
        "",
        "| row | unit | median ops/s | min ops/s | us/op | vs ref |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for r in doc["results"]:
        ratio = r["ratio_vs_ref_median"]
        lines.append(
            f"| {r['name']} | {r['unit']} | {r['median_ops_per_s']:,.0f}"
            f" | {r['min_ops_per_s']:,.0f}"
            f" | {r['us_per_op_median']:.2f} | {'' if ratio is None else f'{ratio:.2f}'} |"
        )
    memory = doc.get("idle_memory")
    if memory:
        lines += [
            "",
            f"Bytes per idle actor ({memory['actors']:,} actors): "
            f"{memory['bytes_per_idle_actor']:,.0f}.",
        ]
    rates = {r["name"]: r["ops_per_s"] for r in doc["results"]}
    lines += ["", "| goal | ratio (median per repeat) |", "|---|---:|"]
    for a, b, goal in GOALS:
        if a in rates and b in rates:
            ratio = statistics.median(x / y for x, y in zip(rates[a], rates[b], strict=True))
            lines.append(f"| {a} / {b} ({goal}) | {ratio:.2f}x |")
    return "\n".join(lines) + "\n"


GOALS = [
    ("actors sequencer K=8", "trio fan-out K=8", ">= 5x"),
    ("actors ask", "trio ping-pong", ">= 0.8x"),
    ("actors ask", "pykka ThreadingActor ask", "> 1x"),
    (
        "compute reconcile kept N=100",
        "compute reconcile kept N=10000",
        "time per dataflow within 2x",
    ),
    ("compute reconcile dropped N=100", "compute reconcile dropped N=10000", "within 2x"),
    ("barrier rounds", "trio rendezvous (Event)", ">= 0.5x"),
    ("compute frontier advances one waiting", "compute frontier advances none waiting", ">= 0.8x"),
]

COLOURS = ("#08519c", "#cb181d", "#238b45", "#6a51a3")


def chart(title: str, x_label: str, series: dict[str, Series], *, log_x: bool) -> str:
    """A small SVG line chart (log x axis when asked); one line per series."""
    import math

    width, height, pad = 520, 300, 60
    points = [p for s in series.values() for p in s]
    if not points:
        return (
            f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="40">'
            f'<text y="20">{escape(title)}: no data</text></svg>\n'
        )

    def fx(v: float) -> float:
        return math.log10(v) if log_x else v

    xs = [fx(x) for x, _ in points]
    x0, x1 = min(xs), max(xs) if max(xs) > min(xs) else min(xs) + 1
    y1 = max(y for _, y in points) * 1.1

    def sx(v: float) -> float:
        return pad + (fx(v) - x0) / (x1 - x0) * (width - 2 * pad)

    def sy(v: float) -> float:
        return height - pad - v / y1 * (height - 2 * pad)

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        'font-family="sans-serif" font-size="11"><rect width="100%" height="100%" fill="white"/>',
        f'<text x="{pad}" y="20" font-size="13" font-weight="bold">{escape(title)}</text>',
        f'<line x1="{pad}" y1="{height - pad}" x2="{width - pad}" y2="{height - pad}" '
        'stroke="#333"/>',
        f'<line x1="{pad}" y1="{pad}" x2="{pad}" y2="{height - pad}" stroke="#333"/>',
        f'<text x="{width / 2}" y="{height - 20}">{escape(x_label)}</text>',
        f'<text x="5" y="{pad - 8}">{y1:,.0f}</text>',
    ]
    for x in sorted({x for x, _ in points}):
        out.append(f'<text x="{sx(x) - 8:.0f}" y="{height - pad + 15}">{x:g}</text>')
    for i, (name, s) in enumerate(series.items()):
        colour = COLOURS[i % len(COLOURS)]
        path = " ".join(f"{sx(x):.1f},{sy(y):.1f}" for x, y in s)
        out.append(f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="2"/>')
        for x, y in s:
            out.append(
                f'<circle cx="{sx(x):.1f}" cy="{sy(y):.1f}" r="3" fill="{colour}">'
                f"<title>{y:,.1f}</title></circle>"
            )
        out.append(
            f'<text x="{width - pad - 150}" y="{pad + 14 * i}" fill="{colour}">'
            f"{escape(name)}</text>"
        )
    out.append("</svg>\n")
    return "".join(out)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
