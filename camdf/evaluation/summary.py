"""Per-cell statistics: every method's means with CIs and its paired comparison to CAM-DF.

All intervals of a cell come from one shared (B, n) bootstrap index matrix, so the
comparisons are paired over the same resamples. Metric names are ``/``-namespaced
per method (``camdf/payoff_mean``, ``fixed_k/diff_vs_ref_ci_low``, ...).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from camdf.policies import ORACLES
from camdf.evaluation.stats import (
    bootstrap_indices,
    bootstrap_mean_ci,
    holm,
    mcnemar_exact,
    paired_bootstrap,
    sign_flip_test,
    tost_paired,
)

REFERENCE = "camdf"


def wide(outcomes: pd.DataFrame, column: str) -> pd.DataFrame:
    """(task x method) table of one outcome column, tasks sorted by id."""
    return outcomes.pivot(index="task_id", columns="method", values=column).sort_index()


def summarize_cell(
    outcomes: pd.DataFrame,
    reference: str = REFERENCE,
    n_resamples: int = 2000,
    delta: float = 0.05,
    random_state: int = 0,
) -> tuple[dict[str, float], pd.DataFrame]:
    """Metrics of every method of a cell.

    Parameters
    ----------
    outcomes : DataFrame
        One row per (task, method), as returned by :func:`camdf.evaluation.cell.evaluate_cell`.
    reference : str
        The method others are compared to (CAM-DF); skipped if absent.
    n_resamples : int
        Bootstrap resamples B (shared by every interval of the cell).
    delta : float
        Non-inferiority margin for TOST of success against full access.
    random_state : int

    Returns
    -------
    metrics : dict
        Flat ``method/name -> value`` for MLflow.
    table : DataFrame
        One row per method with the same figures.
    """
    payoff, success = wide(outcomes, "payoff"), wide(outcomes, "success").astype(float)
    n_exposed, cost = wide(outcomes, "n_exposed"), wide(outcomes, "cost")
    partial = wide(outcomes, "success_partial")
    methods = list(payoff.columns)
    n = len(payoff)
    idx = bootstrap_indices(n, n_resamples, random_state)
    rows = {}
    full_tools = n_exposed["full"].mean() if "full" in methods else np.nan
    for m in methods:
        ci = bootstrap_mean_ci(payoff[m].to_numpy(), n_resamples=n_resamples, indices=idx)
        rows[m] = {
            "payoff_mean": ci.mean,
            "payoff_ci_low": ci.ci_low,
            "payoff_ci_high": ci.ci_high,
            "success": success[m].mean(),
            "success_partial": partial[m].mean(),
            "n_exposed": n_exposed[m].mean(),
            "cost": cost[m].mean(),
            "fewer_tools_vs_full_pct": 100.0 * (1 - n_exposed[m].mean() / full_tools) if full_tools > 0 else np.nan,
            "n_tasks": n,
        }
    if reference in methods:
        diffs = paired_bootstrap(
            {m: payoff[m].to_numpy() for m in methods}, reference=reference, n_resamples=n_resamples, indices=idx
        ).set_index("method")
        others = [m for m in methods if m != reference]
        pvals = {m: sign_flip_test(payoff[m].to_numpy(), payoff[reference].to_numpy(),
                                   n_resamples=n_resamples, random_state=random_state).pvalue for m in others}
        baselines = [m for m in others if m not in ORACLES]
        adjusted = dict(zip(baselines, holm([pvals[m] for m in baselines]))) if baselines else {}
        for m in others:
            rows[m].update(
                {
                    "diff_vs_ref": float(diffs.loc[m, "diff"]),
                    "diff_vs_ref_ci_low": float(diffs.loc[m, "ci_low"]),
                    "diff_vs_ref_ci_high": float(diffs.loc[m, "ci_high"]),
                    "p_vs_ref": float(pvals[m]),
                    "p_holm_vs_ref": float(adjusted.get(m, np.nan)),
                }
            )
    if "full" in methods:
        for m in methods:
            if m == "full":
                continue
            mc = mcnemar_exact(success[m].to_numpy(), success["full"].to_numpy())
            tost = tost_paired(success[m].to_numpy(), success["full"].to_numpy(), delta=delta)
            rows[m].update(
                {
                    "mcnemar_p_vs_full": mc.pvalue,
                    "tost_p_vs_full": tost.p_lower,
                    "noninferior_vs_full": float(tost.noninferior),
                }
            )
    if "verified" in outcomes:
        verified = wide(outcomes, "verified").astype(float)
        for m in methods:
            rows[m]["verified_success"] = verified[m].mean()
            if "full" in methods and m != "full":
                mc = mcnemar_exact(verified[m].to_numpy(), verified["full"].to_numpy())
                tost = tost_paired(verified[m].to_numpy(), verified["full"].to_numpy(), delta=delta)
                rows[m].update({"verified_mcnemar_p_vs_full": mc.pvalue, "verified_tost_p_vs_full": tost.p_lower,
                                "verified_noninferior_vs_full": float(tost.noninferior),
                                "verified_diff_vs_full": float(tost.diff)})
    table = pd.DataFrame.from_dict(rows, orient="index")
    table.index.name = "method"
    metrics = {f"{m}/{k}": float(v) for m, r in rows.items() for k, v in r.items() if pd.notna(v)}
    if "verified" in outcomes:
        # Agreement of the G_x proxy with verified sufficiency over every set any method exposed.
        proxy, ver = outcomes["success"].astype(bool), outcomes["verified"].astype(bool)
        metrics.update({"agreement/both": float((proxy & ver).sum()), "agreement/proxy_only": float((proxy & ~ver).sum()),
                        "agreement/verified_only": float((~proxy & ver).sum()),
                        "agreement/neither": float((~proxy & ~ver).sum())})
    return metrics, table
