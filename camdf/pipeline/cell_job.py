"""One experiment cell end to end: assemble, evaluate, summarise, plot, and log it as one MLflow run.

:func:`run_cell` takes a plain resolved config (a dict) and explicit paths, and
returns ``(metrics, artifacts)``; :func:`run_tracked_cell` wires it to the tracker.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from camdf.common.files import parquet_bytes
from camdf.evaluation.cell import evaluate_cell
from camdf.evaluation.headroom import headroom_metrics
from camdf.evaluation.summary import summarize_cell
from camdf.evaluation.verified import verified_curves, verified_outcomes
from camdf.pipeline.assembly import Paths, cell_costs, cell_instances, load_domain
from camdf.pipeline.data_stage import read_manifest
from camdf.pipeline.identity import cell_key, cell_name
from camdf.reporting.figures import payoff_vs_tools_png


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
        ``lite_coefficients.csv``, ``tuned.csv``, ``figures/payoff_vs_tools.png``.
    """
    from camdf.rankers import ranking_quality

    seed = int(cfg["seed"])
    repeats = int(cfg["folds"].get("repeats", 1))
    domain = load_domain(cfg, paths.data_dir)
    catalog_costs = cell_costs(cfg, domain, paths)
    outcomes, bounds, tuned, coefs, quality = [], [], [], [], []
    for r in range(repeats):
        inst, domain, costs, scores = cell_instances(cfg, paths, repeat=r, domain=domain, catalog_costs=catalog_costs)
        result = evaluate_cell(
            inst, float(cfg["cost"]["lam"]), list(cfg["method"]["names"]), kind=cfg["payoff"],
            random_state=seed + r, label_noise=float(cfg.get("label_noise", 0.0)),
            train_kind="partial" if cfg.get("label_source") == "partial" else None,
            lam_grid=cfg.get("lambda_grid"), membership_cache=str(paths.cache_dir),
            alpha=cfg["method"].get("alpha"),
        )
        verified = verified_curves(domain, inst)
        if verified is not None:
            result.outcomes["verified"] = verified_outcomes(result.outcomes, inst, verified, domain, result.exposed)
        outcomes.append(result.outcomes.assign(repeat=r))
        bounds.append(result.prefix_bounds.assign(repeat=r))
        tuned.append(result.tuned.assign(repeat=r))
        if not result.lite_coefficients.empty:
            coefs.append(result.lite_coefficients.assign(repeat=r))
        quality.append(ranking_quality(scores, domain))
    outcomes = pd.concat(outcomes, ignore_index=True)
    stats = cfg["stats"]
    metrics, table = summarize_cell(outcomes, n_resamples=int(stats["n_resamples"]),
                                    delta=float(stats["delta"]), random_state=seed)
    metrics.update(headroom_metrics(pd.concat(bounds, ignore_index=True), table))
    metrics["cell/n_tasks"] = float(outcomes["task_id"].nunique())
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
    if coefs:
        artifacts["lite_coefficients.csv"] = pd.concat(coefs, ignore_index=True).to_csv(
            index=False, float_format="%.6g").encode()
    return metrics, artifacts


def cell_tags(cfg: dict[str, Any], experiment: str | None = None) -> dict[str, str]:
    """The tags a cell run is found by in the UI: experiment, domain, scorer, cost regime, lambda, d, protocol."""
    tags = {"domain": cfg["domain"]["name"], "scorer": cfg["scorer"]["name"], "regime": str(cfg["cost"]["regime"]),
            "lambda": f"{float(cfg['cost']['lam']):g}", "d": f"{float(cfg['cost']['d']):g}",
            "protocol": str(cfg["folds"]["protocol"]), "payoff": str(cfg["payoff"])}
    if experiment:
        tags["experiment"] = experiment
    return tags


#: The tag holding the one-line cause of a cell run that failed after it started.
FAILURE_TAG = "failure"


def cell_params(cfg: dict[str, Any], unresolved: Any = None) -> dict[str, str]:
    """The params of a cell run: the flat config, environment-interpolated values redacted (:mod:`.redact`).

    ``unresolved`` is the config before interpolation (Hydra's ``cfg``); without it no value is
    known to come from the environment and nothing is redacted.
    """
    from camdf.pipeline.redact import env_keys, redact
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
    from camdf.pipeline.sweep_run import parent_tags, record_job
    from camdf.pipeline.provenance import git_commit

    key = cell_key(cfg, paths.data_dir)
    tags = {"git_commit": git_commit(root), **cell_tags(cfg, experiment), **parent_tags()}
    record_job(tracker, job, f"running {cell_name(cfg)}")
    claim = tracker.claim(key, cell_name(cfg), tags, timeout=(cfg.get("tracking") or {}).get("claim_timeout"))
    if not claim.won:  # the key has a FINISHED run (found at once, or after waiting for its worker)
        record_job(tracker, job, f"reused {claim.run.info.run_id}")
        return claim.run.info.run_id, True
    started = None
    try:
        with tracker.cell_run(key, cell_name(cfg), cell_params(cfg, unresolved), tags, claim=claim) as run:
            started = rid = run.info.run_id
            metrics, artifacts = run_cell(cfg, paths)
            tracker.log_metrics(rid, metrics)
            folders = {".hydra": str(hydra_dir)} if hydra_dir is not None else {}
            tracker.log_files(rid, artifacts, folders)
    except BaseException as err:
        started = started or (claim.run.info.run_id if claim.won else None)
        if started is not None:
            end_failed(tracker, started, err)
        raise
    record_job(tracker, job, f"logged {rid}")
    return rid, False


