"""Benchmark of the task-format validator and the data stage on a large generated user domain.

Workload: a user domain folder of 5 000 tools (each with a JSON schema, a description
and a cost) and 50 000 tasks (1-4 required tools, a fifth of them with 100 candidates,
splits, groups and meta), generated with a fixed seed into a temporary folder.
Measured as a user sees it, in processes of their own:

- ``camdf data validate <folder>`` (the CLI script's module, ``python -m camdf.cli``);
- the data stage, ``python -m pipelines.data domain=user_example`` pointed at the folder,
  writing into a temporary data and output folder (``force=true``).

Each is timed wall-clock (best of ``repeats``) with its peak resident memory
(``ru_maxrss`` of that child alone). Target: at most 5 s each (issue 20, acceptance 4).
The in-process parts (read, summary, report) are timed too, to show where the time goes.

Run as ``python benchmarks/bench_data.py`` or ``python benchmarks/run.py --only data``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

if __package__ in (None, ""):  # allow `python benchmarks/bench_data.py` from a checkout
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402

from common import ROOT, print_figures  # noqa: E402

N_TOOLS, N_TASKS = 5_000, 50_000
TARGET_S = 5.0
QUIET = ["hydra/job_logging=none", "hydra/hydra_logging=none"]


def make_domain(folder: Path, n_tools: int = N_TOOLS, n_tasks: int = N_TASKS, seed: int = 0) -> Path:
    """Write a valid user domain of ``n_tools`` tools and ``n_tasks`` tasks into ``folder``."""
    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True, exist_ok=True)
    kinds = np.array(["read", "generic", "write"])[rng.choice(3, size=n_tools, p=[0.6, 0.3, 0.1])]
    names = [f"tool_{i:05d}" for i in range(n_tools)]
    tools = [{"name": n, "description": f"Tool {i} looks up record type {i % 97} by key and returns its fields.",
              "parameters": {"type": "object", "properties": {"key": {"type": "string"}, "limit": {"type": "integer",
                             "minimum": 1, "maximum": 100}}, "required": ["key"]},
              "kind": str(kinds[i]), "cost": round(float(rng.uniform(0.5, 3.0)), 3)} for i, n in enumerate(names)]
    catalog = {"domain": folder.name, "source": "benchmarks/bench_data.py (generated)", "tools": tools}
    (folder / "catalog.json").write_text(json.dumps(catalog, indent=2) + "\n", encoding="utf-8")
    acq = np.flatnonzero(kinds != "write")
    sizes = rng.integers(1, 5, size=n_tasks)
    with (folder / "tasks.jsonl").open("w", encoding="utf-8") as fh:
        for t in range(n_tasks):
            required = [names[i] for i in rng.choice(acq, size=sizes[t], replace=False)]
            task = {"id": f"t-{t}", "text": f"Please find record {t} of user {t % 4000} and compare it with "
                                            f"the previous one ({' and '.join(required)}).",
                    "required": required, "split": "train" if t % 5 else "test", "group": f"user:{t % 4000}",
                    "meta": {"template": int(t % 13)}}
            if t % 5 == 0:
                extra = [names[i] for i in rng.choice(n_tools, size=100, replace=False)]
                task["candidates"] = list(dict.fromkeys(required + extra))
            fh.write(json.dumps(task) + "\n")
    return folder


# The child reports its own peak memory (RUSAGE_SELF at exit) on stderr, so the figure is that
# process's alone, not the maximum over every child this benchmark ran.
_CHILD = ("import atexit, resource, runpy, sys\n"
          "atexit.register(lambda: print('peak_rss_kb', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,"
          " file=sys.stderr))\n"
          "mod = sys.argv[1]; sys.argv = [mod] + sys.argv[2:]\n"
          "runpy.run_module(mod, run_name='__main__', alter_sys=True)\n")


def _child(module: str, args: list[str], env: dict[str, str], repeats: int) -> dict:
    walls, peaks, proc = [], [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        proc = subprocess.run([sys.executable, "-c", _CHILD, module, *args], cwd=ROOT, env=env, capture_output=True,
                              text=True)
        wall = time.perf_counter() - t0
        if proc.returncode != 0:
            raise RuntimeError(f"{module} {' '.join(args)} exited {proc.returncode}: {proc.stderr[-2000:]}")
        peak = [line for line in proc.stderr.splitlines() if line.startswith("peak_rss_kb ")]
        walls.append(wall)
        peaks.append(int(peak[-1].split()[1]) / 1024 if peak else float("nan"))
    return {"best_s": min(walls), "runs_s": walls, "peak_mb": max(peaks), "stdout": proc.stdout.strip()[-300:]}


def _in_process(folder: Path) -> dict:
    from camdf.data.io import read_domain
    from camdf.data.overview import render_report, summarize

    t0 = time.perf_counter()
    dom = read_domain(folder)
    t1 = time.perf_counter()
    s = summarize(dom)
    t2 = time.perf_counter()
    render_report(dom, s)
    t3 = time.perf_counter()
    return {"read_domain_s": t1 - t0, "summarize_s": t2 - t1, "render_report_s": t3 - t2}


def run(repeats: int = 2, n_tools: int = N_TOOLS, n_tasks: int = N_TASKS) -> dict:
    """Generate the domain, time validate and the data stage; return the figures."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT)}
    with tempfile.TemporaryDirectory(prefix="bench_data_") as tmp:
        tmp = Path(tmp)
        t0 = time.perf_counter()
        folder = make_domain(tmp / "big_user", n_tools, n_tasks)
        figures: dict = {"tools": n_tools, "tasks": n_tasks, "generate_s": time.perf_counter() - t0,
                         "catalog_mb": (folder / "catalog.json").stat().st_size / 2**20,
                         "tasks_mb": (folder / "tasks.jsonl").stat().st_size / 2**20}
        figures.update(_in_process(folder))
        val = _child("camdf.cli", ["data", "validate", str(folder)], env, repeats)
        stage = _child("pipelines.data", ["domain=user_example", f"domain.converter.folder={folder}",
                                          "domain.name=big_user", f"paths.data_dir={tmp / 'data'}",
                                          f"paths.output_dir={tmp / 'out'}", "force=true", *QUIET], env, repeats)
        written = sum(1 for _ in (tmp / "data" / "big_user" / "tasks.jsonl").open())
    figures.update({"validate_s": val["best_s"], "validate_runs_s": val["runs_s"], "validate_peak_mb": val["peak_mb"],
                    "validate_stdout": val["stdout"],
                    "data_stage_s": stage["best_s"], "data_stage_runs_s": stage["runs_s"],
                    "data_stage_peak_mb": stage["peak_mb"], "data_stage_stdout": stage["stdout"],
                    "data_stage_tasks_written": written, "target_s": TARGET_S,
                    "meets_target": val["best_s"] <= TARGET_S and stage["best_s"] <= TARGET_S})
    return figures


if __name__ == "__main__":
    print_figures(run())
