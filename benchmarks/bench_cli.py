"""Benchmark of `camdf select` as a harness calls it from the shell: one request, one process.

Workload: one retail-sized request (7 tools with descriptions, a query for the built-in
bm25 ranker, no scores) read from a file; the policy is the shipped champion
(``models:/camdf-stopper@champion`` in ``outputs/mlflow.db``, logged by ``make reproduce``
or ``python -m pipelines.train``; a camdf_risk champion is decided by the lean loader,
:mod:`camdf.runtime.lean`, without importing scikit-learn). Each call is a fresh ``camdf select`` process (the
console script of the venv), timed wall-clock from spawn to exit; the first call warms
the file cache and is not counted. Target: p50 <= 2 s (issue 20, acceptance 6).

Run as ``python benchmarks/bench_cli.py`` or ``python benchmarks/run.py --only cli``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

if __package__ in (None, ""):  # allow `python benchmarks/bench_cli.py` from a checkout
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402

from common import ROOT, print_figures  # noqa: E402

TARGET_S = 2.0
CALLS = 15
REQUEST = {
    "query": "I want to cancel my pending order #W2378156 and get a refund to my gift card",
    "tools": [{"name": n, "description": d} for n, d in [
        ("find_user_id_by_email", "Find user id by email."),
        ("find_user_id_by_name_zip", "Find user id by first name, last name, and zip code."),
        ("get_order_details", "Get the status and details of an order."),
        ("get_product_details", "Get the inventory details of a product."),
        ("get_user_details", "Get the details of a user, including their orders."),
        ("list_all_product_types", "List the name and product id of all product types."),
        ("calculate", "Calculate the result of a mathematical expression."),
    ]],
}


def run(calls: int = CALLS) -> dict:
    store = Path(os.environ.get("CAMDF_ROOT") or ROOT) / "outputs" / "mlflow.db"  # where camdf select looks
    if not store.is_file():
        raise RuntimeError(f"{store} does not exist: run `make reproduce` (or python -m pipelines.train) first")
    exe = Path(sys.executable).with_name("camdf")
    cmd = [str(exe) if exe.is_file() else sys.executable, *([] if exe.is_file() else ["-m", "camdf.cli"]), "select"]
    env = {k: v for k, v in os.environ.items() if k != "MLFLOW_TRACKING_URI"}  # the checkout's store
    walls, depth = [], None
    with tempfile.TemporaryDirectory(prefix="bench_cli_") as tmp:
        req = Path(tmp) / "request.json"
        req.write_text(json.dumps(REQUEST))
        for i in range(calls + 1):
            t0 = time.perf_counter()
            proc = subprocess.run([*cmd, "--input", str(req)], capture_output=True, text=True, env=env, cwd=tmp)
            wall = time.perf_counter() - t0
            if proc.returncode != 0:
                raise RuntimeError(f"camdf select exited {proc.returncode}: {proc.stderr[-2000:]}")
            depth = json.loads(proc.stdout)["depth"]
            if i:  # the first call warms the file cache
                walls.append(wall)
    w = np.array(walls)
    return {"calls": calls, "tools": len(REQUEST["tools"]), "depth": depth, "command": " ".join(Path(c).name for c in cmd),
            "p50_s": float(np.median(w)), "p90_s": float(np.quantile(w, 0.9)), "best_s": float(w.min()),
            "worst_s": float(w.max()), "target_s": TARGET_S, "meets_target": bool(np.median(w) <= TARGET_S)}


if __name__ == "__main__":
    print_figures(run())
