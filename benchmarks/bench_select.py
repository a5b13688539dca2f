"""Benchmark of `camdf select` with the package's default policy: one request of 300 / 2,000 tools, start-up included.

Workload: the SaaS-style catalog of :mod:`bench_adapters` (``catalog(n)``) and its first query, no scores
(the built-in bm25 ranker scores every tool, then the default policy, camdf_transfer, decides over the
top 50), read from a file. Each call is a fresh ``camdf select`` process (the venv's console script, no
``--policy``: the default policy, read in its lean form, :mod:`camdf.runtime.lean`), timed wall-clock from
spawn to exit; the first call per size warms the file cache and is not counted. One more call per size runs
under ``python -X importtime`` and records whether scikit-learn, pandas or LightGBM was imported (it should
not be). Target: p50 < 1 s per call on an idle machine.

Run as ``python benchmarks/bench_select.py`` or ``python benchmarks/run.py --only select``.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

if __package__ in (None, ""):  # allow `python benchmarks/bench_select.py` from a checkout
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402

from bench_adapters import QUERIES, catalog  # noqa: E402
from common import print_figures  # noqa: E402

TARGET_S = 1.0
CALLS = 7
SIZES = (300, 2000)
HEAVY = ("sklearn", "pandas", "lightgbm")


def _command() -> list[str]:
    exe = Path(sys.executable).with_name("camdf")
    return [str(exe)] if exe.is_file() else [sys.executable, "-m", "camdf.cli"]


def _heavy_imports(request: Path, cwd: str) -> list[str]:
    """The heavy packages one ``camdf select`` call imports (``python -X importtime``)."""
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "camdf.cli", "select", "--input", str(request)],
                          capture_output=True, text=True, cwd=cwd)
    if proc.returncode != 0:
        raise RuntimeError(f"camdf select exited {proc.returncode}: {proc.stderr[-2000:]}")
    found = {m.group(1) for m in re.finditer(r"\|\s+([A-Za-z_0-9]+)(?:\.|$)", proc.stderr, re.M)}
    return sorted(found & set(HEAVY))


def _one(n: int, calls: int, tmp: str) -> dict:
    request = Path(tmp) / f"request_{n}.json"
    request.write_text(json.dumps({"query": QUERIES[0], "tools": catalog(n)}))
    walls, exposed = [], None
    for i in range(calls + 1):
        t0 = time.perf_counter()
        proc = subprocess.run([*_command(), "select", "--input", str(request)], capture_output=True, text=True,
                              cwd=tmp)
        wall = time.perf_counter() - t0
        if proc.returncode != 0:
            raise RuntimeError(f"camdf select exited {proc.returncode}: {proc.stderr[-2000:]}")
        exposed = len(json.loads(proc.stdout)["exposed"])
        if i:  # the first call warms the file cache
            walls.append(wall)
    w = np.array(walls)
    return {"tools": n, "exposed": exposed, "p50_s": float(np.median(w)), "best_s": float(w.min()),
            "worst_s": float(w.max()), "heavy_imports": _heavy_imports(request, tmp),
            "meets_target": bool(np.median(w) < TARGET_S)}


def run(calls: int = CALLS) -> dict:
    with tempfile.TemporaryDirectory(prefix="bench_select_") as tmp:
        rows = [_one(n, calls, tmp) for n in SIZES]
    return {"calls": calls, "command": " ".join(Path(c).name for c in _command()) + " select --input REQUEST",
            "policy": "the package's default policy (camdf_transfer, top 50)", "rows": rows, "target_s": TARGET_S,
            "load_avg": list(os.getloadavg()), "meets_target": all(r["meets_target"] for r in rows)}


if __name__ == "__main__":
    print_figures(run())
