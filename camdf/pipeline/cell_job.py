"""One experiment cell end to end: assemble, evaluate, summarise, plot, and log it as one MLflow run.

:func:`run_cell` takes a plain resolved config (a dict) and explicit paths, and
returns ``(metrics, artifacts)``; :func:`run_tracked_cell` wires it to the tracker.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from camdf.common.files import parquet_bytes
from camdf.evaluation.cell import evaluate_cell
from camdf.evaluation.summary import summarize_cell
from camdf.evaluation.verified import verified_curves, verified_outcomes
from camdf.pipeline.assembly import Paths, cell_instances
from camdf.pipeline.identity import cell_key, cell_name
from camdf.reporting.figures import payoff_vs_tools_png


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
        "outcomes.parquet": parquet_bytes(result.outcomes),
        "summary.csv": table.to_csv(float_format="%.6g").encode(),
        "costs.csv": costs.rename("cost").to_csv(float_format="%.6g").encode(),
        "tuned.csv": result.tuned.to_csv(index=False).encode(),
        "figures/payoff_vs_tools.png": payoff_vs_tools_png(table, f"{domain.name}: {cfg['scorer']['name']}, "
                                                                 f"lambda={cfg['cost']['lam']}, d={cfg['cost']['d']}"),
    }
    if not result.lite_coefficients.empty:
        artifacts["lite_coefficients.csv"] = result.lite_coefficients.to_csv(index=False, float_format="%.6g").encode()
    return metrics, artifacts


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


