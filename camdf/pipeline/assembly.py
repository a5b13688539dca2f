"""One experiment cell end to end: load, score, price, evaluate, summarise, plot.

:func:`run_cell` takes a plain resolved config (a dict) and explicit paths, and
returns ``(metrics, artifacts)``; the Hydra stage only wires it to the tracker.
"""

from __future__ import annotations

import io
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from camdf.common.fingerprint import code_version, hash_json, hash_paths
from camdf.evaluation.cell import evaluate_cell
from camdf.data import read_domain
from camdf.data.model import Domain
from camdf.core.folds import assign_folds
from camdf.core.instances import Instances, build_instances
from camdf.evaluation.summary import summarize_cell


LABEL_SOURCES = ("data", "annotated", "partial")


@dataclass
class Paths:
    """Where a cell reads data and keeps caches."""

    data_dir: Path
    cache_dir: Path


def cell_config(cfg: dict[str, Any]) -> dict[str, Any]:
    """The part of a resolved config that defines a cell (what the cell key hashes)."""
    keep = ("domain", "scorer", "cost", "method", "payoff", "seed", "label_noise", "folds", "stats", "label_source")
    return {k: cfg[k] for k in keep if k in cfg}


def cell_key(cfg: dict[str, Any], data_dir: Path) -> str:
    """Resolved cell config + camdf code version + fingerprint of the domain's data files."""
    name = cfg["domain"]["name"]
    folder = Path(data_dir, name)
    files = [folder / "catalog.json", folder / "tasks.jsonl"]
    return hash_json({"cell": cell_config(cfg), "code": code_version("camdf"), "data": hash_paths(files)})


def load_domain(cfg: dict[str, Any], data_dir: Path) -> Domain:
    dom = cfg["domain"]
    folder = Path(data_dir, dom["name"])
    if not (folder / "catalog.json").is_file():
        raise FileNotFoundError(
            f"domain {dom['name']!r}: {folder} is not built; run `make data` or "
            f"`python -m pipelines.data domain={dom['name']}` first"
        )
    return read_domain(folder, dom["acquirable_kinds"], dom["never_acquirable"])


def required_sets(domain: Domain, label_source: str) -> tuple[dict, dict]:
    """G_x and alternatives per task for the chosen label source.

    ``data`` uses the sets in tasks.jsonl (the execution-derived ones where the
    domain derives them); ``annotated`` uses ``meta.annotated_required`` where a
    task has it (the gold-action annotation), with no alternatives; ``partial``
    uses the ``data`` sets but trains on partial-payoff labels (see :func:`run_cell`).
    """
    if label_source not in LABEL_SOURCES:
        raise ValueError(f"label_source: expected one of {LABEL_SOURCES}, got {label_source!r}")
    req, alts = {}, {}
    for t in domain.tasks:
        if label_source == "annotated" and "annotated_required" in t.meta:
            req[t.id], alts[t.id] = list(t.meta["annotated_required"]), []
        else:
            req[t.id], alts[t.id] = list(t.required), [list(a) for a in t.alternatives]
    return req, alts


def cell_instances(cfg: dict[str, Any], paths: Paths) -> tuple[Instances, Domain, pd.Series, pd.DataFrame]:
    """Load the domain, score it, price it and pad it into :class:`Instances`."""
    from camdf.costs.model import costs as cost_model
    from camdf.rankers import score_domain

    domain = load_domain(cfg, paths.data_dir)
    seed = int(cfg["seed"])
    folds_cfg = cfg["folds"]
    folds = assign_folds(
        [t.id for t in domain.tasks], [t.split for t in domain.tasks],
        n_folds=int(folds_cfg["n_folds"]), protocol=folds_cfg["protocol"], random_state=seed,
    )
    scorer = cfg["scorer"]
    scores = score_domain(domain, scorer["name"], folds, cache_dir=paths.cache_dir, random_state=seed,
                          **dict(scorer.get("params") or {}))
    cost = cfg["cost"]
    params = dict(cost.get("params") or {})
    if cost["regime"] == "execution":
        params.setdefault("cache_dir", str(paths.cache_dir))
        params.setdefault("environment", cfg["domain"].get("environment", domain.name))
    c = cost_model(domain, cost["regime"], float(cost["d"]), random_state=int(cost.get("random_state", 0)), **params)
    req, alts = required_sets(domain, cfg.get("label_source", "data"))
    inst = build_instances(scores, req, c, alternatives=alts, texts={t.id: t.text for t in domain.tasks})
    return inst, domain, c, scores


def run_cell(cfg: dict[str, Any], paths: Paths) -> tuple[dict[str, float], dict[str, bytes]]:
    """Evaluate one cell.

    Returns
    -------
    metrics : dict
        ``method/metric -> value`` (payoff mean and CI, success, tools, cost,
        difference to CAM-DF with CI and Holm p, McNemar/TOST against full access).
    artifacts : dict
        ``relative path -> bytes``: ``outcomes.parquet`` (per task and method),
        ``summary.csv``, ``costs.csv``, ``lite_coefficients.csv``, ``tuned.csv``,
        ``figures/payoff_vs_tools.png``.
    """
    from camdf.rankers import ranking_quality

    inst, domain, costs, scores = cell_instances(cfg, paths)
    seed = int(cfg["seed"])
    result = evaluate_cell(
        inst, float(cfg["cost"]["lam"]), list(cfg["method"]["names"]), kind=cfg["payoff"],
        random_state=seed, label_noise=float(cfg.get("label_noise", 0.0)),
        train_kind="partial" if cfg.get("label_source") == "partial" else None,
        lam_grid=cfg.get("lambda_grid"),
    )
    verified = verified_curves(domain, inst)
    if verified is not None:
        result.outcomes["verified"] = verified_outcomes(result.outcomes, inst, verified, domain)
    stats = cfg["stats"]
    metrics, table = summarize_cell(result.outcomes, n_resamples=int(stats["n_resamples"]),
                                    delta=float(stats["delta"]), random_state=seed)
    metrics["cell/n_tasks"] = float(result.outcomes["task_id"].nunique())
    metrics["cell/n_candidates_mean"] = float(inst.n.mean())
    metrics["cell/cost_cv"] = float(costs.std(ddof=0) / costs.mean())
    quality = ranking_quality(scores, domain)
    # MLflow metric names may not hold "@": recall@3 is logged as ranking/recall_at_3.
    metrics.update(
        {f"ranking/{k.replace('@', '_at_')}": float(v) for k, v in quality.items() if isinstance(v, (int, float))}
    )
    artifacts = {
        "outcomes.parquet": _parquet(result.outcomes),
        "summary.csv": table.to_csv(float_format="%.6g").encode(),
        "costs.csv": costs.rename("cost").to_csv(float_format="%.6g").encode(),
        "tuned.csv": result.tuned.to_csv(index=False).encode(),
        "figures/payoff_vs_tools.png": payoff_vs_tools_png(table, f"{domain.name}: {cfg['scorer']['name']}, "
                                                                 f"lambda={cfg['cost']['lam']}, d={cfg['cost']['d']}"),
    }
    if not result.lite_coefficients.empty:
        artifacts["lite_coefficients.csv"] = result.lite_coefficients.to_csv(index=False, float_format="%.6g").encode()
    return metrics, artifacts


def verified_curves(domain: Domain, inst: Instances) -> dict | None:
    """Execution-verified sufficiency of every prefix, where the domain carries sufficiency tables.

    Returns None for domains that cannot be executed (telecom, BFCL, user domains);
    else ``{"prefix": (T, N + 1) bool, "table": (T, 2**k) bool, "bit": tool -> bit, "row": (T,) int}``.
    Tools outside the executable catalog (distractors) add nothing to a set.
    """
    from camdf.sufficiency import sufficiency_table

    if not domain.tasks or not all("sufficiency" in t.meta for t in domain.tasks):
        return None
    ids, tools, table = sufficiency_table(domain)
    bit = {name: 1 << i for i, name in enumerate(tools)}
    row_of = {tid: i for i, tid in enumerate(ids)}
    rows = np.array([row_of[t] for t in inst.task_ids])
    bits = np.array([[bit.get(name, 0) for name in line] for line in inst.tools], dtype=np.int64)
    masks = np.concatenate([np.zeros((inst.T, 1), np.int64), np.bitwise_or.accumulate(bits, axis=1)], axis=1)
    return {"prefix": table[rows[:, None], masks], "table": table, "bit": bit, "row": rows}


def verified_outcomes(outcomes: pd.DataFrame, inst: Instances, verified: dict, domain: Domain) -> np.ndarray:
    """Verified success of the set each outcome row exposed (a prefix, or G_x for ``oracle_set``)."""
    pos = {tid: i for i, tid in enumerate(inst.task_ids)}
    i = outcomes["task_id"].map(pos).to_numpy()
    depth = outcomes["depth"].to_numpy()
    out = verified["prefix"][i, np.maximum(depth, 0)]
    oracle = (outcomes["method"] == "oracle_set").to_numpy()
    if oracle.any():
        gmask = np.array([sum(verified["bit"].get(n, 0) for n in inst.tools[k][inst.member[k]]) for k in i[oracle]])
        out[oracle] = verified["table"][verified["row"][i[oracle]], gmask]
    return out.astype(bool)


def _parquet(df: pd.DataFrame) -> bytes:
    buf = io.BytesIO()
    df.to_parquet(buf, index=False)
    return buf.getvalue()


def payoff_vs_tools_png(table: pd.DataFrame, title: str) -> bytes:
    """Scatter of mean payoff (with CI) against mean tools exposed, one point per method."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.5, 4.5), dpi=110)
    for method, row in table.sort_index().iterrows():
        err = np.maximum(0.0, [[row.payoff_mean - row.payoff_ci_low], [row.payoff_ci_high - row.payoff_mean]])
        marker = "*" if method.startswith("camdf") else ("s" if method in ("oracle_set", "best_prefix") else "o")
        ax.errorbar(row.n_exposed, row.payoff_mean, yerr=err, fmt=marker, capsize=3, label=method)
    ax.set_xlabel("tools exposed (mean)")
    ax.set_ylabel("payoff (mean, 95% CI)")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=6, ncol=2, loc="best")
    ax.grid(alpha=0.3)
    buf = io.BytesIO()
    fig.tight_layout()
    fig.savefig(buf, format="png", metadata={"Software": None})
    plt.close(fig)
    return buf.getvalue()


def cell_name(cfg: dict[str, Any]) -> str:
    """Readable run name: domain/scorer/regime/lam/d (+ payoff, noise and label source when not default)."""
    c = cfg["cost"]
    parts = [cfg["domain"]["name"], cfg["scorer"].get("label", cfg["scorer"]["name"]), c["regime"], f"lam={c['lam']}", f"d={c['d']}"]
    if cfg.get("payoff", "exact") != "exact":
        parts.append(cfg["payoff"])
    if float(cfg.get("label_noise", 0)) > 0:
        parts.append(f"eps={cfg['label_noise']}")
    if cfg.get("label_source", "data") != "data":
        parts.append(f"labels={cfg['label_source']}")
    return "/".join(parts)


def run_tracked_cell(
    cfg: dict[str, Any], paths: Paths, tracker, root: Path, hydra_dir: Path | None = None
) -> tuple[str, bool]:
    """Run a cell unless its key already has a FINISHED run; log everything to one MLflow run.

    The cell is claimed first (:meth:`camdf.pipeline.tracking.Tracker.claim`), so workers that
    reach the same key at once compute it once: the others wait for that run and
    reuse it. ``tracking.claim_timeout`` in the config, when present, sets how long a
    silent claim is trusted before it is taken over.

    Returns
    -------
    run_id : str
    skipped : bool
        True when a FINISHED run with the same key was reused.
    """
    from camdf.pipeline.tracking import flatten, git_commit

    key = cell_key(cfg, paths.data_dir)
    tags = {"git_commit": git_commit(root), "domain": cfg["domain"]["name"], "scorer": cfg["scorer"]["name"]}
    claim = tracker.claim(key, cell_name(cfg), tags, timeout=(cfg.get("tracking") or {}).get("claim_timeout"))
    if not claim.won:  # the key has a FINISHED run (found at once, or after waiting for its worker)
        return claim.run.info.run_id, True
    with tracker.cell_run(key, cell_name(cfg), flatten(cfg), tags, claim=claim) as run:
        metrics, artifacts = run_cell(cfg, paths)
        rid = run.info.run_id
        tracker.log_metrics(rid, metrics)
        folders = {".hydra": str(hydra_dir)} if hydra_dir is not None else {}
        tracker.log_files(rid, artifacts, folders)
    return rid, False


def task_requests(domain: Domain, inst: Instances) -> list[dict]:
    """One run-time request per task: its ranked tools as OpenAI function tools, scores, costs, query."""
    by_name = domain.tool_by_name
    texts = {t.id: t.text for t in domain.tasks}
    out = []
    for i, tid in enumerate(inst.task_ids):
        n = inst.n[i]
        tools = [{"type": "function", "function": {"name": name, "description": by_name[name].description,
                                                   "parameters": by_name[name].parameters or {}}}
                 for name in inst.tools[i, :n]]
        out.append({"query": texts[tid], "tools": tools, "scores": inst.scores[i, :n].tolist(),
                    "costs": inst.costs[i, :n].tolist()})
    return out


def train_policy(cfg: dict[str, Any], paths: Paths, tracker, root: Path) -> tuple[str, dict]:
    """Fit the run-time stopper on every task of the cell and log it as an MLflow model.

    The run also records the policy's decision for every task (``decisions.parquet``)
    and the matching run-time requests (``requests.jsonl``), so a loaded policy can be
    checked against what the pipeline decided.

    Returns
    -------
    model_uri : str
    info : dict
        ``run_id``, ``coefficients`` (camdf_lite) and the mean depth.
    """
    import mlflow

    from camdf.runtime import StopPolicy, log_policy
    from camdf.pipeline.tracking import flatten, git_commit

    inst, domain, costs, _ = cell_instances(cfg, paths)
    pol = cfg["policy"]
    policy = StopPolicy(method=pol["method"], kind=cfg["payoff"], lam=float(cfg["cost"]["lam"]),
                        lam_grid=pol.get("lam_grid") or None, random_state=int(cfg["seed"]))
    policy.fit(inst, costs=costs.to_dict())
    depth = policy.depths(inst)
    requests = task_requests(domain, inst)
    mlflow.set_tracking_uri(tracker.uri)
    key = cell_key(cfg, paths.data_dir)
    tags = {"kind": "policy", "git_commit": git_commit(root), "cell_key": key, "policy_method": pol["method"]}
    with mlflow.start_run(experiment_id=tracker.experiment_id, run_name=f"policy/{cell_name(cfg)}", tags=tags) as run:
        mlflow.log_params(flatten(cfg))
        uri = log_policy(policy, example=requests[0], registered_model_name=pol.get("registered_name") or None)
        decisions = pd.DataFrame({"task_id": inst.task_ids, "depth": depth})
        tracker.log_files(run.info.run_id, {
            "decisions.parquet": _parquet(decisions),
            "requests.jsonl": "".join(json.dumps(r) + "\n" for r in requests),
        })
        info = {"run_id": run.info.run_id, "mean_depth": float(depth.mean())}
        rule = policy.rule_
        if hasattr(rule, "coefficients_"):
            tracker.log_files(run.info.run_id, {"lite_coefficients.csv": rule.coefficients_.to_csv()})
            mlflow.log_metrics({f"lite_coef/{k}": float(v) for k, v in rule.coefficients_.items()})
            info["coefficients"] = rule.coefficients_
        mlflow.log_metric("policy/mean_depth", info["mean_depth"])
    return uri, info
