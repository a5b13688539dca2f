"""Benchmark of the scoring stage from a cold cache: four domains x five scorers.

Workload: :func:`camdf.pipeline.scores_stage.run_scores` (read ``data/<domain>``, assign
folds, score every (task, candidate), judge the ranking, write the parquet) for
retail, airline, telecom and bfcl_multi_turn with bm25, dense, supervised,
hybrid and prior, in that order, in one process, with an empty cache folder
(a fresh temporary directory: no embeddings, no scores).  Scorer and domain
settings are read from ``conf/scorer/`` and ``conf/domain/``.  ``dense`` loads
the packaged MiniLM (offline) and embeds each domain's texts once; ``hybrid``
then reuses those embeddings, exactly as the multirun of the stage does.

Target: at most 300 s end to end on the development machine (2 cores).  Every
job is also checked to score every (task, candidate) of its domain.

Needs the built domains (``make data``).  Run as ``python benchmarks/bench_rankers.py``
(``BENCH_JSON=1`` also prints the figures as JSON; ``BENCH_DOMAINS=retail_d100,...``
changes the domains).
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

T_START = time.perf_counter()
ROOT = Path(__file__).resolve().parents[1]
if __package__ in (None, ""):  # allow `python benchmarks/bench_rankers.py` from a checkout
    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(ROOT / "benchmarks"))

import pandas as pd  # noqa: E402
import yaml  # noqa: E402

from common import emit_json  # noqa: E402

from camdf.pipeline.scores_stage import load_built_domain, run_scores  # noqa: E402

DOMAINS = ["retail", "airline", "telecom", "bfcl_multi_turn"]
SCORERS = ["bm25", "dense", "supervised", "hybrid", "prior"]
FOLDS = {"protocol": "kfold", "n_folds": 5, "random_state": 0}
TARGET_S = 300.0


def _conf(group: str, name: str) -> dict:
    return yaml.safe_load((ROOT / "conf" / group / f"{name}.yaml").read_text())


def run(domains: list[str] = DOMAINS, scorers: list[str] = SCORERS, data_dir: Path = ROOT / "data") -> dict:
    """Score every domain with every scorer into an empty cache; return the timings (seconds)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-rankers-") as cache:
        t0 = time.perf_counter()
        for name in domains:
            dom_cfg = _conf("domain", name)
            domain = load_built_domain(data_dir, dom_cfg)
            n_pairs = sum(len(domain.candidates_of(t)) for t in domain.tasks)
            for scorer in scorers:
                t = time.perf_counter()
                record = run_scores(dom_cfg, _conf("scorer", scorer), FOLDS, data_dir=data_dir, cache_dir=cache)
                seconds = time.perf_counter() - t
                frame = pd.read_parquet(record["path"])
                assert not record["cached"] and len(frame) == n_pairs, (name, scorer, len(frame), n_pairs)
                rows.append({"domain": name, "scorer": scorer, "seconds": seconds, "rows": n_pairs,
                             "mrr": record["mrr"]})
        total = time.perf_counter() - t0
    jobs = pd.DataFrame(rows)
    return {
        "domains": domains,
        "scorers": scorers,
        "jobs": jobs.to_dict(orient="records"),
        "per_scorer_s": jobs.groupby("scorer", sort=False)["seconds"].sum().round(2).to_dict(),
        "per_domain_s": jobs.groupby("domain", sort=False)["seconds"].sum().round(2).to_dict(),
        "all_jobs_s": total,
        "process_s": time.perf_counter() - T_START,  # imports included
        "target_s": TARGET_S,
        "meets_target": time.perf_counter() - T_START <= TARGET_S,
        "cpu_count": os.cpu_count(),
    }


def main() -> None:
    domains = [d for d in os.environ.get("BENCH_DOMAINS", "").split(",") if d] or DOMAINS
    figures = run(domains)
    from camdf.common.markdown import markdown_table

    print("\n".join(markdown_table(["domain", "scorer", "seconds", "(task, candidate) rows"],
                                   ([j["domain"], j["scorer"], f"{j['seconds']:.2f}", j["rows"]] for j in figures["jobs"]),
                                   "llrr")))
    print(f"\nper scorer (s): {figures['per_scorer_s']}")
    print(f"per domain (s): {figures['per_domain_s']}")
    print(f"all jobs: {figures['all_jobs_s']:.1f} s; whole process (imports included): {figures['process_s']:.1f} s; "
          f"target {figures['target_s']:.0f} s: {'met' if figures['meets_target'] else 'MISSED'} "
          f"({figures['cpu_count']} cores)")
    emit_json(figures)


if __name__ == "__main__":
    main()
