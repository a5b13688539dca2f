"""Run-time stopper latency: per-decision p50/p99 and batch throughput (issue 9, point 4).

Policies are fitted on the retail main cell (bm25, schema-token costs, lambda 0.12, d 1).
Requests are real retail tasks (7 tools) and, for the large catalog, the retail tools
plus 993 renamed copies as distractors (1,000 candidate tools). Latency is measured per
`select_batch([request])` call (scores and costs given, so no ranker runs; validation,
ranking, membership, features and the model all included), on one core, after warm-up.
A single request of up to 64 tools takes the plain-Python path; the 1,000-tool requests
take the vectorised one, and the policy never stops on them (it exposes all 1,000), so
every state is scored: the worst case. Batch throughput is one `select_batch` call over
2,280 requests (the 114 retail tasks, 20 times).
Run: python benchmarks/bench_runtime.py
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import CELL_OVERRIDES  # noqa: E402

TARGETS = {"camdf_lite_7_p50_us": 100.0, "camdf_7_p50_us": 1000.0, "camdf_1000_p50_us": 5000.0,
           "camdf_lite_batch_per_s": 50_000.0}


def _policies():
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    import camdf.config  # noqa: F401
    from camdf.experiment import Paths, cell_instances, task_requests
    from camdf.runtime import StopPolicy

    root = Path(__file__).resolve().parents[1]
    with initialize_config_dir(config_dir=str(root / "conf"), version_base="1.3"):
        cfg = OmegaConf.to_container(compose(config_name="evaluate", overrides=CELL_OVERRIDES), resolve=True)
    inst, domain, costs, _ = cell_instances(cfg, Paths(root / "data", root / "outputs" / "cache"))
    pols = {m: StopPolicy(method=m, lam=0.12).fit(inst, costs=costs.to_dict()) for m in ("camdf_lite", "camdf")}
    return pols, task_requests(domain, inst)


def _latency(policy, requests, repeats: int) -> dict:
    for r in requests[:20]:
        policy.select_batch([r])  # warm-up
    times = []
    for i in range(repeats):
        r = requests[i % len(requests)]
        t0 = time.perf_counter()
        policy.select_batch([r])
        times.append(time.perf_counter() - t0)
    us = np.array(times) * 1e6
    return {"p50_us": float(np.percentile(us, 50)), "p99_us": float(np.percentile(us, 99)), "n": repeats}


def _big(request: dict, n: int, rng) -> dict:
    tools = list(request["tools"])
    extra = n - len(tools)
    for k in range(extra):
        src = tools[k % len(request["tools"])]["function"]
        tools.append({"type": "function", "function": {**src, "name": f"distractor_{k}"}})
    scores = list(request["scores"]) + list(rng.normal(0, 1, extra))
    costs = list(request["costs"]) + list(rng.uniform(0.5, 1.5, extra))
    return {"tools": tools, "scores": scores, "costs": costs}


def run() -> dict:
    from threadpoolctl import threadpool_limits

    rng = np.random.default_rng(0)
    with threadpool_limits(1):
        pols, requests = _policies()
        out = {}
        for method, pol in pols.items():
            lat = _latency(pol, requests, 2000)
            out[f"{method}_7_p50_us"], out[f"{method}_7_p99_us"] = lat["p50_us"], lat["p99_us"]
        big = [_big(requests[i], 1000, rng) for i in range(5)]
        lat = _latency(pols["camdf"], big, 200)
        out["camdf_1000_p50_us"], out["camdf_1000_p99_us"] = lat["p50_us"], lat["p99_us"]
        out["camdf_1000_mean_depth"] = float(np.mean([pols["camdf"].select_batch([b])[0].depth for b in big]))
        batch = requests * 20
        for method, pol in pols.items():
            pol.select_batch(batch[:100])
            t0 = time.perf_counter()
            pol.select_batch(batch)
            dt = time.perf_counter() - t0
            out[f"{method}_batch_per_s"] = len(batch) / dt
    out["targets"] = TARGETS
    out["met"] = {k: (out[k] <= v if k.endswith("_us") else out[k] >= v) for k, v in TARGETS.items()}
    return out


if __name__ == "__main__":
    print(json.dumps(run(), indent=2))
