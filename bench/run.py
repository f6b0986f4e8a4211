"""Run the ``actors`` benchmarks beside the shared baseline, in one process.

    .venv/bin/python bench/run.py [--quick] [--json OUT] [other baseline.py options]

(``./run bench`` from the project root does this in the project's venv.) Loads
``../shared/bench/baseline.py`` (or the file named by ``$TRIO_RECONCILE_BASELINE``),
writes the JSON (``bench/results/latest.json`` unless ``--json`` says where)
and, beside it, ``report.md`` and three SVG scaling curves (``bench/report.py``).
It runs the baseline's ``main`` with ``--extra`` for ``bench/actors_bench.py``,
``bench/compute_bench.py`` and ``bench/dataflow_bench.py``, so their rows are
interleaved with the baseline's, then prints bytes per idle actor, the time
per write into a large index (first and last writes), and the wall time of
the real driver's scripts on five topologies. Exits 2 if
the baseline is not found.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from pathlib import Path
from types import ModuleType

HERE = Path(__file__).resolve().parent
EXTRAS = (
    HERE / "actors_bench.py",
    HERE / "compute_bench.py",
    HERE / "dataflow_bench.py",
    HERE / "explore_bench.py",
    HERE / "holds_bench.py",
    HERE / "net_bench.py",
    HERE / "persist_bench.py",
    HERE / "procs_bench.py",
)
ENV_VAR = "TRIO_RECONCILE_BASELINE"
IDLE_ACTORS = 10_000
IDLE_ACTORS_QUICK = 1_000


def find_baseline() -> Path | None:
    override = os.environ.get(ENV_VAR)
    if override:
        path = Path(override).expanduser().resolve()
    else:
        path = HERE.parent.parent / "shared" / "bench" / "baseline.py"
    return path if path.is_file() else None


def load_baseline(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location("baseline", path)
    if spec is None or spec.loader is None:
        raise SystemExit(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    # Registered before it runs, so `from baseline import Bench` in the extra
    # module finds this copy.
    sys.modules["baseline"] = module
    spec.loader.exec_module(module)
    return module


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else list(argv)
    path = find_baseline()
    if path is None:
        where = os.environ.get(ENV_VAR) or str(HERE.parent.parent / "shared/bench/baseline.py")
        print(
            f"bench/run.py: baseline not found at {where}\n"
            f"(expected ../shared/bench/baseline.py beside the project root, "
            f"or set ${ENV_VAR} to its path)",
            file=sys.stderr,
        )
        return 2
    baseline = load_baseline(path)
    if _option(args, "--json") is None:
        args += ["--json", str(HERE / "results" / "latest.json")]
        (HERE / "results").mkdir(exist_ok=True)
    extras = [option for path in EXTRAS for option in ("--extra", str(path))]
    status = int(baseline.main([*args, *extras]))
    if status:
        return status

    from actors_bench import idle_actor_memory, idle_trio_task_memory

    quick = "--quick" in args
    n = IDLE_ACTORS_QUICK if quick else IDLE_ACTORS
    per_actor = idle_actor_memory(n)
    per_task = idle_trio_task_memory(n)
    print(f"idle actor memory: {per_actor:,.0f} bytes per actor ({n:,} actors, tracemalloc)")
    print(f"  for scale, a bare trio task on a capacity-64 memory channel: {per_task:,.0f} bytes")
    from dataflow_bench import ROWS_N, WRITE_K, scripts_wall_time, write_times
    from holds_bench import churn_memory, print_churn

    churn = churn_memory()
    print_churn(churn)

    # The whole-run figures, unless the run was narrowed to some rows.
    whole = _option(args, "--only") is None
    rows = ROWS_N // 10 if quick else ROWS_N
    times = write_times(rows) if whole else []
    first = sum(times[:10]) / 10 if times else 0.0
    last = sum(times[-10:]) / 10 if times else 0.0
    if times:
        print(
            f"index writes: {len(times)} writes of {WRITE_K:,} rows into an index of {rows:,}: "
            f"first 10 {first * 1e3:.2f} ms each, last 10 {last * 1e3:.2f} ms each "
            f"(last/first {last / first:.2f})"
        )
    scripts = scripts_wall_time() if whole else None
    if whole and scripts is None:
        print("real driver scripts: ../shared/external/driver-scripts is not here")
    elif scripts is not None:
        print(f"real driver scripts: {scripts[0]} runs (5 topologies) in {scripts[1]:.1f}s")
    json_out = _option(args, "--json")
    if json_out is not None:
        with open(json_out) as f:
            doc = json.load(f)
        doc["idle_memory"] = {
            "actors": n,
            "bytes_per_idle_actor": per_actor,
            "bytes_per_idle_trio_task": per_task,
            "method": "tracemalloc snapshot diff / n",
        }
        doc["churn_memory"] = churn
        if times:
            doc["index_writes"] = {
                "index_rows": rows,
                "rows_per_write": WRITE_K,
                "seconds_per_write": times,
                "first_10_mean": first,
                "last_10_mean": last,
            }
        if scripts is not None:
            doc["driver_scripts"] = {"runs": scripts[0], "seconds": scripts[1]}
        with open(json_out, "w") as f:
            json.dump(doc, f, indent=2)
        from report import main as write_report

        write_report([json_out, str(Path(json_out).parent)])
    return 0


def _option(args: list[str], name: str) -> str | None:
    """The value of ``name VALUE`` or ``name=VALUE`` in ``args``, if given."""
    for i, arg in enumerate(args):
        if arg == name and i + 1 < len(args):
            return args[i + 1]
        if arg.startswith(name + "="):
            return arg[len(name) + 1 :]
    return None


if __name__ == "__main__":
    sys.exit(main())
