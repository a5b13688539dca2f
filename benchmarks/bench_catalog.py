"""Catalog scale (issue 39): every rule fitted on StableToolBench's 2,479 APIs at N = 20, the ranker per query, A28's cell.

The catalog is StableToolBench's solvable queries (765 queries, 2,479 APIs), converted by
:func:`camdf.integrations.stabletoolbench.convert.convert_solvable_queries` from the folder
given by the environment variable ``STABLETOOLBENCH`` or, without it, the
``stabletoolbench`` domain config's ``source`` (``../shared/data/stabletoolbench`` beside the
checkout). Without the folder a synthetic catalog of the same shape stands in
(:func:`synthetic_catalog`: 2,479 APIs of 811 tools in 47 categories, 765 queries with gold
sets of 1-6 APIs in the real proportions, descriptions and schemas of the real lengths),
so the benchmark runs anywhere; the figures name which one was used.

- fits: the cell bm25, schema-token costs, lambda 0.12, d 1, 5 folds, ``candidates.top_k``
  20 (each query's bm25 top 20 of the whole catalog; a gold API outside it is a miss).
  On the first fold's training tasks every registered rule of
  :data:`camdf.policies.METHODS` is fitted alone (``static_set`` included; membership
  probabilities computed once, as the cell does) and decides the fold's test tasks.
  Target: each fit under 60 s.
- ranker: bm25 over the whole catalog, from a cold cache: seconds per query
  (:func:`camdf.rankers.score_domain`, every query x every API).
- a28: when ``conf/experiment/a28.yaml`` exists, one of its cells at N = 1,000 run as
  ``pipelines.evaluate`` in a fresh process against a temporary store: wall time and peak
  resident memory (target under 4 GB); otherwise the slot says it is not in this checkout.
- rerank: the learned re-ranker (``conf/scorer/rerank.yaml``) scores the whole catalog with its
  nested cross-fit (5 folds), in a fresh process from a cold cache (MiniLM encodes every API,
  query and query sentence): wall time and peak resident memory (target under 4 GB).

Run: python benchmarks/bench_catalog.py (``BENCH_JSON=1`` also prints the figures as JSON).
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

if __package__ in (None, ""):  # allow `python benchmarks/bench_catalog.py` from a checkout
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from common import ROOT, cell_config, emit_json, load  # noqa: E402

TOP_K = 20
TARGET_FIT_S = 60.0
A28_N = 1000
TARGET_A28_GB = 4.0
OVERRIDES = ["domain=stabletoolbench", "scorer=bm25", "cost=schema_tokens", "cost.lam=0.12", "cost.d=1",
             "folds.n_folds=5", "folds.protocol=kfold", "seed=0"]
# The real catalog's shape (docs/ of the StableToolBench folder, SOURCE.md): gold-set sizes and counts.
GOLD_SIZES = {1: 27, 2: 525, 3: 152, 4: 42, 5: 16, 6: 3}
N_APIS, N_TOOLS, N_CATEGORIES = 2479, 811, 47


def catalog_folder() -> Path:
    """The StableToolBench folder: ``$STABLETOOLBENCH``, else the domain config's ``source``."""
    given = os.environ.get("STABLETOOLBENCH")
    return Path(given) if given else Path(cell_config(OVERRIDES)["domain"]["source"])


def synthetic_catalog(seed: int = 0):
    """A :class:`~camdf.data.model.Domain` of StableToolBench's shape, with nothing real in it.

    2,479 APIs of 811 tools in 47 categories (each tool's APIs share its category); an API's
    description is its tool, category and 8-40 words drawn from a 4,000-word vocabulary in
    which each category prefers its own 200 words; 0-6 parameters with short descriptions
    (schemas of a few hundred characters, as the real ones). 765 queries with gold sets of
    the real sizes, drawn within one tool (two thirds) or one category; a query's text is
    words of its gold APIs' descriptions and of other APIs' (bm25 finds most, not all).
    """
    from camdf.data.model import Domain, Task, Tool

    rng = np.random.default_rng(seed)
    words = np.array([f"w{i}" for i in range(4000)])
    cat_words = [rng.choice(len(words), 200, replace=False) for _ in range(N_CATEGORIES)]
    tool_cat = rng.integers(0, N_CATEGORIES, N_TOOLS)
    api_tool = np.concatenate([np.arange(N_TOOLS), rng.integers(0, N_TOOLS, N_APIS - N_TOOLS)])
    api_tool.sort()
    tools, text_of = [], []
    for a, t in enumerate(api_tool):
        c = tool_cat[t]
        k = int(rng.integers(8, 41))
        own = rng.random(k) < 0.6
        drawn = np.where(own, cat_words[c][rng.integers(0, 200, k)], rng.integers(0, len(words), k))
        text = " ".join(words[drawn])
        props = {f"p{j}": {"type": "string", "description": " ".join(words[rng.integers(0, len(words), 6)])}
                 for j in range(int(rng.integers(0, 7)))}
        tools.append(Tool(name=f"api{a}_for_tool{t}", description=f"tool{t} (category{c}): {text}",
                          parameters={"type": "object", "properties": props, "required": sorted(props)[:1]},
                          kind="read"))
        text_of.append(drawn)
    by_tool = [np.flatnonzero(api_tool == t) for t in range(N_TOOLS)]
    by_cat = [np.flatnonzero(tool_cat[api_tool] == c) for c in range(N_CATEGORIES)]
    sizes = np.concatenate([np.full(n, s) for s, n in GOLD_SIZES.items()])
    rng.shuffle(sizes)
    tasks = []
    for q, size in enumerate(sizes):
        t = int(rng.integers(0, N_TOOLS))
        pool = by_tool[t] if rng.random() < 2 / 3 and len(by_tool[t]) >= size else by_cat[tool_cat[t]]
        gold = rng.choice(pool, size, replace=False)
        own = np.concatenate([rng.choice(text_of[g], min(4, len(text_of[g])), replace=False) for g in gold])
        noise = rng.integers(0, len(words), 6)
        tasks.append(Task(id=f"q{q}", text=" ".join(words[np.concatenate([own, noise])]),
                          required=tuple(tools[g].name for g in gold), group=f"tool{t}"))
    return Domain(name="stabletoolbench", source=f"synthetic catalog of StableToolBench's shape (seed {seed})",
                  tools=tools, tasks=tasks, acquirable_kinds=("read",))


def catalog_domain():
    """``(domain, what)``: the converted folder when it is there, else :func:`synthetic_catalog`."""
    folder = catalog_folder()
    if (folder / "solvable_queries" / "test_instruction").is_dir():
        from camdf.integrations.stabletoolbench.convert import convert_solvable_queries

        return convert_solvable_queries(folder), f"StableToolBench solvable queries ({folder})"
    return synthetic_catalog(), f"synthetic catalog of the same shape (no folder at {folder})"


def bench_fits(domain=None, what: str = "", top_k: int = TOP_K) -> dict:
    """Every registered rule fitted on the first fold's training tasks of the catalog cell at N = ``top_k``."""
    from dataclasses import replace

    from camdf.core.folds import fold_ids
    from camdf.core.membership import fold_probabilities
    from camdf.pipeline.assembly import Paths, cell_instances
    from camdf.policies import METHODS, StateBatch, make_policy
    from camdf.rankers import score_domain
    from threadpoolctl import threadpool_limits

    if domain is None:
        domain, what = catalog_domain()
    cfg = cell_config([*OVERRIDES, f"candidates.top_k={top_k}"])
    lam, kind, seed = float(cfg["cost"]["lam"]), cfg["payoff"], int(cfg["seed"])
    with tempfile.TemporaryDirectory(prefix="bench-catalog-") as tmp:
        from camdf.pipeline.assembly import cell_folds

        t0 = time.perf_counter()
        score_domain(domain, "bm25", cell_folds(cfg, domain), cache_dir=Path(tmp, "ranker"), random_state=seed)
        ranker_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        inst = cell_instances(cfg, Paths(Path(tmp), Path(tmp, "cache")), domain=domain)[0]
        instances_s = time.perf_counter() - t0
    rows = []
    with threadpool_limits(1, user_api="blas"):  # as evaluate_cell runs its fits
        f = fold_ids(inst.folds)[0]
        te = inst.folds == f
        t0 = time.perf_counter()
        p_te, p_tr = fold_probabilities(inst, inst.member, [f], 5, seed)[f]
        membership_s = time.perf_counter() - t0
        tr_inst, te_inst = inst.subset(~te), inst.subset(te)
        train = StateBatch.make(tr_inst, p_tr, lam, kind, train=True)
        test = StateBatch.make(te_inst, p_te, lam, kind, train=False)
        from camdf.core.payoff import prefix_payoffs

        truth = replace(test, u=prefix_payoffs(te_inst, lam, kind))
        for name in METHODS:
            rule = make_policy(name, seed)
            batch = StateBatch.across_lambdas(tr_inst, p_tr, [lam], kind) if rule.lambda_conditioned else train
            t0 = time.perf_counter()
            rule.fit(batch)
            fit_s = time.perf_counter() - t0
            t0 = time.perf_counter()
            exposed = rule.select(truth if rule.needs_truth else test)
            rows.append({"method": name, "fit_s": fit_s, "select_s": time.perf_counter() - t0,
                         "mean_exposed": float(exposed.sum(axis=1).mean())})
    slowest = max(rows, key=lambda r: r["fit_s"])
    return {
        "catalog": what, "tasks": inst.T, "apis": len(inst.vocab), "top_k": top_k,
        "train_tasks": tr_inst.T, "train_states": int(tr_inst.n.sum()), "test_tasks": te_inst.T,
        "recall_at_k": float(inst.success[np.arange(inst.T), inst.n].mean()),  # every gold API inside the top k
        "ranker_s": ranker_s, "ranker_ms_per_query": ranker_s / inst.T * 1e3, "instances_s": instances_s,
        "membership_s": membership_s, "rows": rows, "slowest_fit": slowest["method"], "slowest_fit_s": slowest["fit_s"],
        "target_fit_s": TARGET_FIT_S, "meets_target": slowest["fit_s"] < TARGET_FIT_S, "load_avg": load(),
    }


def _a28_cell_overrides(experiment: str = "a28") -> list[str] | None:
    """One cell of ``experiment=a28``: the first value of each swept key, N (a ``top_`` key) at 1,000."""
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    import camdf.pipeline.resolvers  # noqa: F401

    if not (ROOT / "conf" / "experiment" / f"{experiment}.yaml").is_file():
        return None
    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        cfg = compose(config_name="evaluate", overrides=[f"experiment={experiment}"], return_hydra_config=True)
    params = OmegaConf.to_container(cfg.hydra.sweeper.params or {}, resolve=False)
    out = [f"experiment={experiment}"]
    for key, values in params.items():
        first = str(values).split(",")[0].strip()
        out.append(f"{key}={A28_N if 'top_' in key else first}")
    return out


def bench_a28() -> dict:
    """A28's cell at N = 1,000 in a fresh process: wall time and peak resident memory (or why it did not run)."""
    overrides = _a28_cell_overrides()
    if overrides is None:
        return {"ran": False, "reason": "conf/experiment/a28.yaml is not in this checkout"}
    folder = catalog_folder()
    if not (folder / "solvable_queries").is_dir():
        return {"ran": False, "reason": f"no StableToolBench folder at {folder} (set STABLETOOLBENCH)"}
    with tempfile.TemporaryDirectory(prefix="bench-a28-") as tmp:
        paths = [f"paths.data_dir={tmp}/data", f"paths.output_dir={tmp}/outputs", f"domain.source={folder}"]
        # The store inside paths.output_dir: the stages refuse a local store outside it (docs/reliability.md).
        env = {**os.environ, "MLFLOW_TRACKING_URI": f"sqlite:///{tmp}/outputs/mlflow.db"}
        quiet = ["hydra/job_logging=none", "hydra/hydra_logging=none"]
        data = subprocess.run([sys.executable, "-m", "pipelines.data", "domain=stabletoolbench", *paths, *quiet],
                              cwd=ROOT, env=env, capture_output=True, text=True)
        if data.returncode != 0:
            raise RuntimeError(f"pipelines.data exited {data.returncode}: {data.stderr[-2000:]}")
        before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        t0 = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "pipelines.evaluate", *overrides, *paths, *quiet],
                              cwd=ROOT, env=env, capture_output=True, text=True)
        wall = time.perf_counter() - t0
        peak_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    if proc.returncode != 0:
        raise RuntimeError(f"pipelines.evaluate {' '.join(overrides)} exited {proc.returncode}: {proc.stderr[-2000:]}")
    return {"ran": True, "overrides": overrides, "wall_s": wall, "peak_gb": peak_kb / 2**20,
            "peak_is_this_cell": peak_kb > before, "target_gb": TARGET_A28_GB,
            "meets_target": peak_kb / 2**20 < TARGET_A28_GB, "load_avg": load()}


#: The re-ranker's scoring in a fresh process: the catalog, the A28 cell's folds, ``conf/scorer/rerank.yaml``.
RERANK_CHILD = """
import sys, tempfile, time
sys.path.insert(0, {bench!r})
from bench_catalog import OVERRIDES, catalog_domain
from common import cell_config
from camdf.pipeline.assembly import cell_folds
from camdf.rankers import score_domain
import yaml
domain, what = catalog_domain()
params = yaml.safe_load(open({conf!r}))["params"]
cfg = cell_config(OVERRIDES)
with tempfile.TemporaryDirectory(prefix="bench-rerank-") as cache:
    t0 = time.perf_counter()
    frame = score_domain(domain, "rerank", cell_folds(cfg, domain), cache_dir=cache, random_state=0, **params)
    print(time.perf_counter() - t0, len(frame), what, sep="\\t")
"""


def bench_rerank() -> dict:
    """The re-ranker's nested cross-fit over the catalog, cold cache, a fresh process: wall time and peak memory."""
    code = RERANK_CHILD.format(bench=str(ROOT / "benchmarks"), conf=str(ROOT / "conf" / "scorer" / "rerank.yaml"))
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                          env={**os.environ, "HF_HUB_OFFLINE": "1"})
    wall = time.perf_counter() - t0
    peak_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    if proc.returncode != 0:
        raise RuntimeError(f"the re-ranker's scoring exited {proc.returncode}: {proc.stderr[-2000:]}")
    scoring_s, rows, what = proc.stdout.strip().splitlines()[-1].split("\t")
    return {"catalog": what, "wall_s": wall, "scoring_s": float(scoring_s), "rows": int(rows),
            "peak_gb": peak_kb / 2**20, "peak_is_this_run": peak_kb > before, "target_gb": TARGET_A28_GB,
            "meets_target": peak_kb / 2**20 < TARGET_A28_GB, "load_avg": load()}


def run() -> dict:
    """Every catalog benchmark; returns the figures (seconds)."""
    domain, what = catalog_domain()
    return {"fits": bench_fits(domain, what), "a28": bench_a28(), "rerank": bench_rerank()}


def main() -> None:
    figures = run()
    f = figures["fits"]
    print(f"{f['catalog']}: {f['tasks']} queries, {f['apis']} APIs, top {f['top_k']} (recall@{f['top_k']} "
          f"{f['recall_at_k']:.3f}); bm25 {f['ranker_ms_per_query']:.1f} ms per query; membership {f['membership_s']:.1f} s")
    for r in f["rows"]:
        print(f"  {r['method']:24s} fit {r['fit_s']:7.2f} s  select {r['select_s']:6.3f} s  exposed {r['mean_exposed']:.2f}")
    print(f"slowest fit {f['slowest_fit']} {f['slowest_fit_s']:.1f} s (target < {f['target_fit_s']:.0f} s)")
    a = figures["a28"]
    print(f"A28 cell: {a['wall_s']:.0f} s, peak {a['peak_gb']:.2f} GB" if a["ran"] else f"A28 cell: not run ({a['reason']})")
    r = figures["rerank"]
    print(f"re-ranker, nested cross-fit, cold cache: {r['wall_s']:.0f} s (scoring {r['scoring_s']:.0f} s), "
          f"peak {r['peak_gb']:.2f} GB ({r['catalog']})")
    emit_json(figures)


if __name__ == "__main__":
    main()
