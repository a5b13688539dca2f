"""Per-cell statistics: every method's means with CIs and its paired comparison to CAM-DF.

All intervals of a cell come from one shared (B, n) bootstrap index matrix, so the
comparisons are paired over the same resamples. Metric names are ``/``-namespaced
per method (``camdf/payoff_mean``, ``fixed_k/diff_vs_ref_ci_low``, ...).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from camdf.policies import CARDS, FULL_ACCESS, REFERENCE, best_tuned_baseline, in_camdf_family, is_oracle
from camdf.evaluation.bootstrap import bootstrap_indices, bootstrap_mean_ci, paired_bootstrap
from camdf.evaluation.classical import holm, mcnemar_exact, tost_paired
from camdf.evaluation.permutation import sign_flip_test


#: Outcome columns averaged over the repeats of a cell (the per-task means every statistic reads).
MEAN_COLUMNS = ("payoff", "success", "success_partial", "n_exposed", "cost", "covers_g", "verified")


def wide(outcomes: pd.DataFrame, column: str) -> pd.DataFrame:
    """(task x method) table of one outcome column, tasks sorted by id."""
    return outcomes.pivot(index="task_id", columns="method", values=column).sort_index()


def per_task_means(outcomes: pd.DataFrame) -> pd.DataFrame:
    """Each method's per-task mean over the repeats (``repeat`` column) of a cell.

    With one repeat (or no ``repeat`` column) the outcomes come back unchanged, binary
    success columns stay boolean; with R > 1 success becomes the share of repeats in
    which the task succeeded.
    """
    if "repeat" not in outcomes or outcomes["repeat"].nunique() <= 1:
        return outcomes.drop(columns=["repeat"], errors="ignore")
    cols = [c for c in MEAN_COLUMNS if c in outcomes]
    frame = outcomes[["task_id", "method", *cols]].astype({c: float for c in cols})
    return frame.groupby(["task_id", "method"], sort=True, as_index=False)[cols].mean()


def repeat_spread(outcomes: pd.DataFrame) -> dict[str, float]:
    """``method/payoff_repeat_min|max``: the range of each method's mean payoff over the repeats."""
    if "repeat" not in outcomes:
        return {}
    means = outcomes.groupby(["method", "repeat"])["payoff"].mean().unstack("repeat")
    out = {}
    for m, row in means.iterrows():
        out[f"{m}/payoff_repeat_min"] = float(row.min())
        out[f"{m}/payoff_repeat_max"] = float(row.max())
    out["cell/n_repeats"] = float(outcomes["repeat"].nunique())
    return out


def paired_success_p(a: np.ndarray, b: np.ndarray, n_resamples: int, random_state: int) -> float:
    """p of a paired test of success: exact McNemar on binary outcomes, the sign-flip test on
    per-task success shares (the per-task means over repeats), where McNemar does not apply."""
    binary = np.isin(a, (0.0, 1.0)).all() and np.isin(b, (0.0, 1.0)).all()
    if binary:
        return mcnemar_exact(a, b).pvalue
    return sign_flip_test(a, b, n_resamples=n_resamples, random_state=random_state).pvalue


def _family(method: str) -> str | None:
    return CARDS[method].family if method in CARDS else None


def _beyond_paper(method: str) -> bool:
    """A method the paper did not compare: a set rule or one of the field's peers (read off its card)."""
    return method in CARDS and (not CARDS[method].picks_prefix or CARDS[method].family == "peer")


def _prefix_vs_set(payoff: pd.DataFrame, rows: dict, idx: np.ndarray, n_resamples: int) -> dict[str, float]:
    """A27: the best deployable set rule minus the best deployable prefix rule, paired over tasks.

    Each best is picked by mean payoff on these tasks (as the best baseline is; ties: the first in the
    cell's order) among the non-oracle methods of its kind (the card's ``picks_prefix``); the rows of
    the two get ``is_best_prefix_rule`` / ``is_best_set_rule`` = 1. Empty without both kinds.
    """
    deployable = [m for m in payoff.columns if m in CARDS and not is_oracle(m)]
    prefix = [m for m in deployable if CARDS[m].picks_prefix]
    sets = [m for m in deployable if not CARDS[m].picks_prefix]
    if not prefix or not sets:
        return {}
    best_prefix = max(prefix, key=lambda m: (rows[m]["payoff_mean"], -prefix.index(m)))
    best_set = max(sets, key=lambda m: (rows[m]["payoff_mean"], -sets.index(m)))
    rows[best_prefix]["is_best_prefix_rule"] = 1.0
    rows[best_set]["is_best_set_rule"] = 1.0
    d = paired_bootstrap({m: payoff[m].to_numpy() for m in (best_prefix, best_set)}, reference=best_prefix,
                         n_resamples=n_resamples, indices=idx).set_index("method").loc[best_set]
    return {"cell/set_minus_prefix": float(d["diff"]), "cell/set_minus_prefix_ci_low": float(d["ci_low"]),
            "cell/set_minus_prefix_ci_high": float(d["ci_high"])}


def deployable_kinds(methods) -> tuple[list[str], list[str]]:
    """The deployable (non-oracle) prefix rules and set rules among ``methods``, in their order."""
    deployable = [m for m in methods if m in CARDS and not is_oracle(m)]
    return [m for m in deployable if CARDS[m].picks_prefix], [m for m in deployable if not CARDS[m].picks_prefix]


def _prefix_vs_set_cv(raw: pd.DataFrame, task_ids: pd.Index, idx: np.ndarray,
                      n_resamples: int) -> dict[str, float]:
    """A27 and claim (h): the set rule minus the prefix rule, each picked per fit out of fold
    (:func:`camdf.evaluation.picks.fold_picks`), paired over tasks; empty without both kinds or folds."""
    from camdf.evaluation.picks import picked_outcomes

    prefix, sets = deployable_kinds(dict.fromkeys(raw["method"]))
    if not prefix or not sets or "fold" not in raw:
        return {}
    try:
        a, _ = picked_outcomes(raw, sets, "set")
        b, _ = picked_outcomes(raw, prefix, "prefix")
    except LookupError:  # a single fold: nothing out of fold to pick on
        return {}
    both = per_task_means(pd.concat([a, b], ignore_index=True))
    diff = (wide(both, "payoff")["set"] - wide(both, "payoff")["prefix"]).reindex(task_ids)
    if diff.isna().any():
        return {}
    ci = bootstrap_mean_ci(diff.to_numpy(), n_resamples=n_resamples, indices=idx)
    return {"cell/set_minus_prefix_cv": float(ci.mean), "cell/set_minus_prefix_cv_ci_low": float(ci.ci_low),
            "cell/set_minus_prefix_cv_ci_high": float(ci.ci_high)}


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
        One row per (task, method), as returned by :func:`camdf.evaluation.cell.evaluate_cell`,
        or per (task, method, repeat) with a ``repeat`` column: every statistic then reads the
        per-task means over the repeats (:func:`per_task_means`), so the bootstrap resamples
        tasks, and ``method/payoff_repeat_min|max`` give the spread of the repeat means.
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
    spread = repeat_spread(outcomes)
    raw, outcomes = outcomes, per_task_means(outcomes)
    payoff, success = wide(outcomes, "payoff"), wide(outcomes, "success").astype(float)
    n_exposed, cost = wide(outcomes, "n_exposed"), wide(outcomes, "cost")
    partial = wide(outcomes, "success_partial")
    methods = list(payoff.columns)
    n = len(payoff)
    idx = bootstrap_indices(n, n_resamples, random_state)
    rows = {}
    full_tools = n_exposed[FULL_ACCESS].mean() if FULL_ACCESS in methods else np.nan
    for m in methods:
        ci = bootstrap_mean_ci(payoff[m].to_numpy(), n_resamples=n_resamples, indices=idx)
        rows[m] = {
            "payoff_mean": ci.mean,
            "payoff_ci_low": ci.ci_low,
            "payoff_ci_high": ci.ci_high,
            "success": success[m].mean(),
            # Miss: the exposed set is not sufficient (1 - success), with its standard error over tasks.
            "miss_rate": 1.0 - success[m].mean(),
            "miss_rate_se": float(success[m].std(ddof=1) / np.sqrt(n)) if n > 1 else np.nan,
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
        # Holm within two families of hypotheses: the paper's comparisons, and those beyond it (the set rules and
        # the field's peers), so that adding the latter to a cell leaves the paper's adjusted p-values as they were.
        baselines = [m for m in others if not is_oracle(m) and not _beyond_paper(m)]
        adjusted = dict(zip(baselines, holm([pvals[m] for m in baselines]))) if baselines else {}
        beyond = [m for m in others if not is_oracle(m) and _beyond_paper(m)]
        adjusted.update(dict(zip(beyond, holm([pvals[m] for m in beyond]))) if beyond else {})
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
    # The best tuned baseline of the cell (camdf.policies.best_tuned_baseline, the one definition: the paper's
    # baselines and the field's peers, by mean payoff on these tasks, a choice that favours it), and every CAM-DF
    # family member's paired difference to it.
    best = best_tuned_baseline({m: rows[m]["payoff_mean"] for m in methods})
    family = [m for m in methods if in_camdf_family(m)]
    if best is not None and family:
        rows[best]["is_best_baseline"] = 1.0
        vs_best = paired_bootstrap({m: payoff[m].to_numpy() for m in [best, *family]}, reference=best,
                                   n_resamples=n_resamples, indices=idx).set_index("method")
        for m in family:
            rows[m].update({"diff_vs_best_baseline": float(vs_best.loc[m, "diff"]),
                            "diff_vs_best_baseline_ci_low": float(vs_best.loc[m, "ci_low"]),
                            "diff_vs_best_baseline_ci_high": float(vs_best.loc[m, "ci_high"])})
    metrics_kinds = _prefix_vs_set(payoff, rows, idx, n_resamples)
    metrics_kinds.update(_prefix_vs_set_cv(raw, payoff.index, idx, n_resamples))
    if FULL_ACCESS in methods:
        for m in methods:
            if m == FULL_ACCESS:
                continue
            p = paired_success_p(success[m].to_numpy(), success[FULL_ACCESS].to_numpy(), n_resamples, random_state)
            tost = tost_paired(success[m].to_numpy(), success[FULL_ACCESS].to_numpy(), delta=delta)
            rows[m].update(
                {
                    "success_p_vs_full": p,
                    "tost_p_vs_full": tost.p_lower,
                    "noninferior_vs_full": float(tost.noninferior),
                }
            )
    if "verified" in outcomes:
        verified = wide(outcomes, "verified").astype(float)
        for m in methods:
            rows[m]["verified_success"] = verified[m].mean()
            if FULL_ACCESS in methods and m != FULL_ACCESS:
                p = paired_success_p(verified[m].to_numpy(), verified[FULL_ACCESS].to_numpy(), n_resamples,
                                     random_state)
                tost = tost_paired(verified[m].to_numpy(), verified[FULL_ACCESS].to_numpy(), delta=delta)
                rows[m].update({"verified_success_p_vs_full": p, "verified_tost_p_vs_full": tost.p_lower,
                                "verified_noninferior_vs_full": float(tost.noninferior),
                                "verified_diff_vs_full": float(tost.diff)})
    table = pd.DataFrame.from_dict(rows, orient="index")
    table.index.name = "method"
    metrics = {f"{m}/{k}": float(v) for m, r in rows.items() for k, v in r.items() if pd.notna(v)} | spread
    metrics.update(metrics_kinds)
    if "verified" in outcomes:
        # Agreement of the G_x proxy with verified sufficiency over every set any method exposed.
        # Counted over every (task, method, repeat) decision.
        # The paper's decisions only: the methods beyond it (set rules, peers) are left out, so adding them keeps
        # the counts.
        paper = ~raw["method"].map(_beyond_paper).to_numpy(dtype=bool)
        proxy, ver = raw["success"].astype(bool)[paper], raw["verified"].astype(bool)[paper]
        metrics.update({"agreement/both": float((proxy & ver).sum()), "agreement/proxy_only": float((proxy & ~ver).sum()),
                        "agreement/verified_only": float((~proxy & ver).sum()),
                        "agreement/neither": float((~proxy & ~ver).sum())})
    return metrics, table
