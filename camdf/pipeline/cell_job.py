"""One experiment cell end to end: assemble, evaluate, summarise, plot, and log it as one MLflow run.

:func:`run_cell` takes a plain resolved config (a dict) and explicit paths, and
returns ``(metrics, artifacts)``; :func:`run_tracked_cell` wires it to the tracker. The
run logs the few metrics a person compares across cells (:func:`compared_metrics`) and
keeps every metric in one table artifact (:func:`metrics_table`), which the tables read;
it names its data as a dataset input (:func:`log_cell_dataset`) and describes itself in
one paragraph (:func:`cell_description`).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from camdf.common.markdown import signed
from camdf.core.payoff import has_fallback
from camdf.core.recovery import Search
from camdf.common.files import parquet_bytes
from camdf.common.fingerprint import package_versions
from camdf.evaluation.cell import evaluate_cell
from camdf.evaluation.headroom import headroom_metrics
from camdf.evaluation.summary import summarize_cell
from camdf.evaluation.verified import verified_curves, verified_outcomes
from camdf.pipeline.assembly import Paths, cell_costs, cell_instances, load_domain
from camdf.pipeline.data_stage import read_manifest
from camdf.pipeline.identity import cell_key, cell_name, code_stamp, data_fingerprint
from camdf.pipeline.transfer import leaves_out, transfer_instances
from camdf.policies import FULL_ACCESS, REFERENCE, is_oracle
from camdf.reporting.figures import payoff_vs_tools_png
from camdf.tracking.client import HEADLINE, METRICS_TABLE

#: The depths k of the logged coverage curve ``ranking/coverage_at_depth_<k>`` (BoR's coverage@k, A28).
COVERAGE_DEPTHS = tuple(range(1, 11))


def _cell_facts(cfg: dict[str, Any], paths: Paths, inst, costs: pd.Series, quality: list[dict],
                cover: list[list[float]]) -> dict[str, float]:
    """The cell's ``cell/...`` facts (tasks filtered out, candidates, cost spread) and ``ranking/...`` quality,
    averaged over the repeats (``quality``, ``cover``: one entry per repeat; ``inst``: the last repeat's)."""
    metrics: dict[str, float] = {}
    manifest = read_manifest(Path(paths.data_dir, cfg["domain"]["name"]))
    removed = ((manifest or {}).get("summary") or {}).get("filter")
    if removed:  # the data stage's task filter (domain.where): how many converted tasks it removed
        metrics["cell/n_tasks_filtered_out"] = float(removed["removed"])
    metrics["cell/n_candidates_mean"] = float(inst.n.mean())
    metrics["cell/cost_cv"] = float(costs.std(ddof=0) / costs.mean())
    metrics["cell/list_cost_mean"] = float(inst.costs.sum(axis=1).mean())
    # Ranking quality averaged over the repeats (the supervised ranker is refitted per repeat's folds).
    # MLflow metric names may not hold "@": recall@3 is logged as ranking/recall_at_3.
    keys = [k for k, v in quality[0].items() if isinstance(v, (int, float))]
    metrics.update({f"ranking/{k.replace('@', '_at_')}": float(np.mean([q[k] for q in quality])) for k in keys})
    metrics.update({f"ranking/coverage_at_depth_{k}": float(v) for k, v in zip(COVERAGE_DEPTHS, np.mean(cover, axis=0))})
    return metrics


def run_cell(cfg: dict[str, Any], paths: Paths) -> tuple[dict[str, float], dict[str, bytes]]:
    """Evaluate one cell over its ``folds.repeats`` repeated cross-fits.

    Repeat r assigns folds (and seeds the rankers and models) with ``seed + r``, so every
    task gets one out-of-fold decision per repeat; the statistics read each method's per-task
    mean over the repeats (:func:`camdf.evaluation.summary.summarize_cell`).

    Returns
    -------
    metrics : dict
        ``method/metric -> value`` (payoff mean and CI, spread over the repeats, success,
        tools, cost, difference to CAM-DF with CI and Holm p, paired test/TOST against full
        access, share of the headroom) and ``cell/...`` (tasks, repeats, headroom, degenerate:
        :func:`camdf.evaluation.headroom.headroom_metrics`).
    artifacts : dict
        ``relative path -> bytes``: ``outcomes.parquet`` (per task, method and repeat),
        ``repeats.csv`` (each method's mean per repeat), ``summary.csv``, ``costs.csv``,
        ``lite_coefficients.csv``, ``tuned.csv``, ``calibration.csv`` (per repeat, calibration source and
        tool: the out-of-fold ECE and reliability of the membership probabilities; with ``stats.calibration``),
        ``figures/payoff_vs_tools.png``.
    """
    from camdf.rankers import ranking_quality

    seed = int(cfg["seed"])
    repeats = int(cfg["folds"].get("repeats", 1))
    domain = load_domain(cfg, paths.data_dir)
    catalog_costs = cell_costs(cfg, domain, paths)
    outcomes, bounds, tuned, coefs, quality, cover, calibration = [], [], [], [], [], [], []
    transfer = leaves_out(cfg)
    for r in range(repeats):
        # A30's transfer cell: the rules learn on the other domains (training-only rows) and decide on this one.
        inst, domain, costs, scores = transfer_instances(cfg, paths, repeat=r) if transfer else \
            cell_instances(cfg, paths, repeat=r, domain=domain, catalog_costs=catalog_costs)
        result = evaluate_cell(
            inst, float(cfg["cost"]["lam"]), list(cfg["method"]["names"]), kind=cfg["payoff"],
            random_state=seed + r, label_noise=float(cfg.get("label_noise", 0.0)),
            train_kind=train_kind(cfg), search=cell_search(cfg, seed + r),
            lam_grid=cfg.get("lambda_grid"), membership_cache=str(paths.cache_dir),
            fit_depth=(cfg.get("candidates") or {}).get("fit_depth"),
            dials=cfg["method"].get("dials"), calibration=bool(cfg["stats"].get("calibration", True)),
        )
        verified = verified_curves(domain, inst) if not has_fallback(cfg["payoff"]) and not transfer else None
        if verified is not None:
            result.outcomes["verified"] = verified_outcomes(result.outcomes, inst, verified, domain, result.exposed)
        outcomes.append(result.outcomes.assign(repeat=r))
        bounds.append(result.prefix_bounds.assign(repeat=r))
        tuned.append(result.tuned.assign(repeat=r))
        calibration.append(result.calibration.assign(repeat=r))
        if not result.lite_coefficients.empty:
            coefs.append(result.lite_coefficients.assign(repeat=r))
        quality.append(ranking_quality(scores, domain))
        # BoR's coverage@k of the list the rules decide on: tasks whose G_x (or an alternative) is in its top k.
        inst = inst.subset(inst.folds >= 0) if transfer else inst  # the cell's own tasks (a transfer cell's fold 0)
        cover.append([float(inst.success[:, min(k, inst.N)].mean()) for k in COVERAGE_DEPTHS])
    outcomes = pd.concat(outcomes, ignore_index=True)
    stats = cfg["stats"]
    metrics, table = summarize_cell(outcomes, n_resamples=int(stats["n_resamples"]),
                                    delta=float(stats["delta"]), random_state=seed)
    metrics.update(headroom_metrics(pd.concat(bounds, ignore_index=True), table))
    metrics["cell/n_tasks"] = float(outcomes["task_id"].nunique())
    metrics.update(_cell_facts(cfg, paths, inst, costs, quality, cover))
    per_repeat = outcomes.groupby(["repeat", "method"])[["payoff", "success", "n_exposed", "cost"]].mean()
    artifacts = {
        "outcomes.parquet": parquet_bytes(outcomes),
        "repeats.csv": per_repeat.to_csv(float_format="%.6g").encode(),
        "summary.csv": table.to_csv(float_format="%.6g").encode(),
        "costs.csv": costs.rename("cost").to_csv(float_format="%.6g").encode(),
        "tuned.csv": pd.concat(tuned, ignore_index=True).to_csv(index=False).encode(),
        "figures/payoff_vs_tools.png": payoff_vs_tools_png(table, f"{domain.name}: {cfg['scorer']['name']}, "
                                                                 f"lambda={cfg['cost']['lam']}, d={cfg['cost']['d']}, "
                                                                 f"R={repeats}"),
    }
    if any(len(c) for c in calibration):
        artifacts["calibration.csv"] = pd.concat(calibration, ignore_index=True).to_csv(
            index=False, float_format="%.6g").encode()
    if coefs:
        artifacts["lite_coefficients.csv"] = pd.concat(coefs, ignore_index=True).to_csv(
            index=False, float_format="%.6g").encode()
    return metrics, artifacts


def train_kind(cfg: dict[str, Any]) -> str | None:
    """The payoff behind the training labels when it is not the evaluated one: partial labels
    (``label_source: partial``), or the exact payoff for rules unaware of the fallback (``search.aware: false``)."""
    if cfg.get("label_source") == "partial":
        return "partial"
    if has_fallback(cfg["payoff"]) and not (cfg.get("search") or {}).get("aware", True):
        return "exact"
    return None


def cell_search(cfg: dict[str, Any], random_state: int) -> Search | None:
    """The cell's search fallback (``search``) for payoff recovery, None otherwise; its noise seeded per repeat."""
    if not has_fallback(cfg["payoff"]):
        return None
    s = cfg.get("search") or {}
    cost = math.inf if s.get("cost") is None else float(s["cost"])
    return Search(cost=cost, k=int(s.get("k", 5)), noise=float(s.get("noise", 0.0)), random_state=random_state,
                  rounds=int(s.get("rounds", 1)))


def cell_tags(cfg: dict[str, Any], experiment: str | None = None) -> dict[str, str]:
    """The tags a cell run is found by in the UI: experiment, domain, scorer, cost regime, lambda, d, protocol."""
    tags = {"domain": cfg["domain"]["name"], "scorer": cfg["scorer"]["name"], "regime": str(cfg["cost"]["regime"]),
            "lambda": f"{float(cfg['cost']['lam']):g}", "d": f"{float(cfg['cost']['d']):g}",
            "protocol": str(cfg["folds"]["protocol"]), "payoff": str(cfg["payoff"])}
    if experiment:
        tags["experiment"] = experiment
    return tags


#: The per-method metrics a cell run logs (the chart and compare views): the rest is in its metrics table.
METHOD_METRICS = ("payoff_mean", "success", "n_exposed", "diff_vs_ref")
#: The cell-level metrics a cell run logs (those it has), at most ten.
CELL_METRICS = ("cell/n_tasks", "cell/n_repeats", "cell/headroom", "cell/degenerate", "cell/payoff_none",
                "cell/payoff_full", "cell/payoff_best_prefix", "cell/n_tasks_filtered_out", "cell/cost_cv",
                "ranking/recall_at_3")
#: Metric prefixes that are not methods.
NOT_METHODS = ("cell", "ranking", "agreement")


def compared_metrics(metrics: dict[str, float]) -> dict[str, float]:
    """The metrics a cell run logs: :data:`METHOD_METRICS` of each method and :data:`CELL_METRICS`.

    Everything else (CIs, p-values, repeat ranges, verified and partial variants, ...) stays in
    :func:`metrics_table` only, so the UI's chart view opens on a few comparable charts.
    """
    return {k: v for k, v in metrics.items()
            if k in CELL_METRICS or (k.split("/", 1)[0] not in NOT_METHODS and k.split("/", 1)[1] in METHOD_METRICS)}


def headline_metrics(metrics: dict[str, float]) -> dict[str, float]:
    """A cell's headline as metrics the UI charts and compares (``Headline/...``, :data:`camdf.tracking.client.HEADLINE`): for CAM-DF, the cell's
    best baseline and its best deployable rule, the mean payoff with its 95% CI and the tools exposed, and
    CAM-DF minus the best baseline with its CI (everything else: :func:`metrics_table`)."""
    baseline = next((k.split("/")[0] for k, v in metrics.items() if k.endswith("/is_best_baseline") and v == 1.0),
                    None)
    rules = {k.split("/")[0]: v for k, v in metrics.items()
             if k.endswith("/payoff_mean") and not is_oracle(k.split("/")[0]) and k.split("/")[0] not in NOT_METHODS}
    best = max(rules, key=lambda m: (rules[m], m)) if rules else None
    out: dict[str, float] = {}
    for role, method in (("camdf", REFERENCE), ("best_baseline", baseline), ("best_rule", best)):
        for what, key in (("payoff", "payoff_mean"), ("payoff_ci_low", "payoff_ci_low"),
                          ("payoff_ci_high", "payoff_ci_high"), ("tools", "n_exposed")):
            if method is not None and f"{method}/{key}" in metrics:
                out[f"{HEADLINE}{role}_{what}"] = metrics[f"{method}/{key}"]
    diff = f"{REFERENCE}/diff_vs_best_baseline"
    for suffix in ("", "_ci_low", "_ci_high"):
        if diff + suffix in metrics:
            out[f"{HEADLINE}camdf_minus_best_baseline{suffix}"] = metrics[diff + suffix]
    return out


def metrics_table(metrics: dict[str, float]) -> bytes:
    """Every metric of a cell as a parquet table (``metric``, ``value``; float64, so exact), sorted by name."""
    keys = sorted(metrics)
    return parquet_bytes(pd.DataFrame({"metric": keys, "value": np.array([metrics[k] for k in keys], dtype=float)}))


def log_cell_dataset(tracker, run_id: str, cfg: dict[str, Any], paths: Paths, n_tasks: float | None = None) -> None:
    """Log the cell's domain as the run's dataset input: named by the domain, its digest the data
    fingerprint (the one in the cell key), its source the package that provides it (with its version)
    or the folder it was read from."""
    domain = cfg["domain"]
    folder = Path(paths.data_dir, domain["name"])
    fingerprint = data_fingerprint(paths.data_dir, domain["name"])
    packages = package_versions(domain.get("packages") or [])
    inputs = [str(i) for i in domain.get("inputs") or []]
    if packages:
        source = {"package": ", ".join(f"{k}=={v}" for k, v in packages.items())}
    else:
        source = {"uri": inputs[0] if len(inputs) == 1 else str(folder)}
    profile = {"fingerprint": fingerprint, "folder": str(folder)}
    if n_tasks is not None:
        profile["n_tasks"] = int(n_tasks)
    tracker.log_dataset(run_id, domain["name"], fingerprint, source, profile)


def _ci(metrics: dict[str, float], key: str) -> str:
    """``+0.012 [-0.003, +0.027]`` of a difference metric and its CI."""
    return f"{signed(metrics[key])} [{signed(metrics[key + '_ci_low'])}, {signed(metrics[key + '_ci_high'])}]"


def cell_description(cfg: dict[str, Any], metrics: dict[str, float]) -> str:
    """A cell run's description: what the cell is, its best method, CAM-DF against the best baseline
    (mean payoff difference with its paired-bootstrap 95% CI) and the tools each exposes."""
    c = cfg["cost"]
    text = (f"{cfg['domain']['name']} tasks ranked by {cfg['scorer'].get('label', cfg['scorer']['name'])}, "
            f"{c['regime']} costs at lambda={float(c['lam']):g}, d={float(c['d']):g}, {cfg['folds']['protocol']} "
            f"folds, {cfg['payoff']} payoff ({metrics.get('cell/n_tasks', float('nan')):.0f} tasks).")
    payoffs = {k.split("/")[0]: v for k, v in metrics.items() if k.endswith("/payoff_mean")}
    real = {m: v for m, v in payoffs.items() if not is_oracle(m)}
    if real:
        best = max(real, key=real.get)
        text += f" Best method: {best} (mean payoff {real[best]:.3f})."
    baseline = next((k.split("/")[0] for k, v in metrics.items() if k.endswith("/is_best_baseline") and v == 1.0),
                    None)
    if REFERENCE in payoffs and baseline and f"{REFERENCE}/diff_vs_best_baseline" in metrics:
        text += (f" CAM-DF ({payoffs[REFERENCE]:.3f}) minus the best baseline, {baseline} ({payoffs[baseline]:.3f}): "
                 f"{_ci(metrics, f'{REFERENCE}/diff_vs_best_baseline')} (95% CI).")
    tools = [f"{m} {metrics[f'{m}/n_exposed']:.2f}" for m in dict.fromkeys([REFERENCE, baseline, FULL_ACCESS])
             if m and f"{m}/n_exposed" in metrics]
    if tools:
        text += f" Tools exposed per task: {', '.join(tools)}."
    if metrics.get("cell/degenerate") == 1.0:
        text += f" Degenerate cell (headroom {metrics['cell/headroom']:.3f}): no stopper can gain much here."
    return text


#: The tag holding the one-line cause of a cell run that failed after it started.
FAILURE_TAG = "failure"


def cell_params(cfg: dict[str, Any], unresolved: Any = None) -> dict[str, str]:
    """The params of a cell run: the flat config, environment-interpolated values redacted (:mod:`.checks.redact`).

    ``unresolved`` is the config before interpolation (Hydra's ``cfg``); without it no value is
    known to come from the environment and nothing is redacted.
    """
    from camdf.pipeline.checks.redact import env_keys, redact
    from camdf.pipeline.provenance import flatten

    params = flatten(cfg)
    return redact(params, env_keys(unresolved)) if unresolved is not None else params


def end_failed(tracker, run_id: str, err: BaseException) -> None:
    """Tag a started run that failed with its one-line cause (:data:`FAILURE_TAG`); Ctrl-C ends it KILLED.

    :meth:`~camdf.tracking.client.Tracker.cell_run` has ended it FAILED already; an
    interrupted cell is not a failed one, so it is set KILLED (it is recomputed by the next run,
    like a FAILED one). A store that cannot take the tag is left as it is: the stage's own error
    line says why.
    """
    from camdf.pipeline.boundary import explain

    line, _ = explain(err, tracker.uri)
    try:
        tracker.client.set_tag(run_id, FAILURE_TAG, line[:5000])
        if isinstance(err, KeyboardInterrupt):
            tracker.client.set_terminated(run_id, status="KILLED")
    except Exception:  # noqa: BLE001  the store failed too; the error line is printed anyway
        pass


def run_tracked_cell(
    cfg: dict[str, Any], paths: Paths, tracker, root: Path, hydra_dir: Path | None = None,
    experiment: str | None = None, job: int | None = None, unresolved: Any = None,
) -> tuple[str, bool]:
    """Run a cell unless its key already has a FINISHED run; log everything to one MLflow run.

    The cell is claimed first (:meth:`camdf.tracking.client.Tracker.claim`), so workers that
    reach the same key at once compute it once: the others wait for that run and
    reuse it. ``tracking.claim_timeout`` in the config, when present, sets how long a
    silent claim is trusted before it is taken over. A run that fails after it started ends
    FAILED (KILLED on Ctrl-C) with its one-line cause in the ``failure`` tag (:func:`end_failed`).
    ``unresolved`` (the config before interpolation) lets the params redact values taken
    from the environment (:func:`cell_params`).

    Returns
    -------
    run_id : str
    skipped : bool
        True when a FINISHED run with the same key was reused.
    """
    from camdf.pipeline.sweep_run import parent_tags, record_job, sweep_run_name
    from camdf.pipeline.provenance import git_commit

    key = cell_key(cfg, paths.data_dir)
    name = sweep_run_name(cfg) or cell_name(cfg)  # in a sweep, the values that vary come first
    tags = {"git_commit": git_commit(root), "code_version": code_stamp(), **cell_tags(cfg, experiment), **parent_tags()}
    record_job(tracker, job, f"running {cell_name(cfg)}")
    claim = tracker.claim(key, name, tags, timeout=(cfg.get("tracking") or {}).get("claim_timeout"))
    if not claim.won:  # the key has a FINISHED run (found at once, or after waiting for its worker)
        record_job(tracker, job, f"reused {claim.run.info.run_id}")
        return claim.run.info.run_id, True
    started = None
    try:
        with tracker.cell_run(key, name, cell_params(cfg, unresolved), tags, claim=claim) as run:
            started = rid = run.info.run_id
            metrics, artifacts = run_cell(cfg, paths)
            tracker.log_metrics(rid, {**compared_metrics(metrics), **headline_metrics(metrics)})
            folders = {".hydra": str(hydra_dir)} if hydra_dir is not None else {}
            tracker.log_files(rid, {**artifacts, METRICS_TABLE: metrics_table(metrics)}, folders)
            log_cell_dataset(tracker, rid, cfg, paths, metrics.get("cell/n_tasks"))
            tracker.describe(rid, cell_description(cfg, metrics))
    except BaseException as err:
        started = started or (claim.run.info.run_id if claim.won else None)
        if started is not None:
            end_failed(tracker, started, err)
        raise
    record_job(tracker, job, f"logged {rid}")
    return rid, False


