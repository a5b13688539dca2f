"""A26: the risk-controlled stopper at each target miss rate alpha: miss rate (CI), tools, payoff, TOST."""

from __future__ import annotations

import numpy as np
import pandas as pd

from camdf.evaluation.power import clustered_miss_test, miss_rate_test
from camdf.reporting.evidence import DIALS, Evidence
from camdf.reporting.report import Report
from camdf.reporting.tables.base import TableSpec
from camdf.reporting.tables.notes import ci_text, protocol_note
from camdf.reporting.store import mkey


#: Level of the one-sided binomial test at which a cell's miss rate counts as shown above alpha.
MISS_LEVEL = 0.05


def binomial_columns(run: pd.Series, miss: float, alpha: float) -> dict[str, object]:
    """``misses / decisions``, the binomial p and its verdict for one cell (:func:`~camdf.evaluation.power.miss_rate_test`).

    The misses are counted back from the logged miss rate (mean over tasks of each task's miss share
    over the repeats): every task has one decision per repeat, so misses = rate x tasks x repeats.
    """
    n = int(float(run[mkey("cell", "n_tasks")])) * int(float(run.get(mkey("cell", "n_repeats"), 1) or 1))
    if pd.isna(miss) or n < 1:
        return {"misses / decisions": "", "binomial p (miss > alpha)": "", "miss rate above alpha": ""}
    test = miss_rate_test(int(round(miss * n)), n, alpha)
    return {"misses / decisions": f"{test.misses} / {test.n}", "binomial p (miss > alpha)": f"{test.pvalue:.4f}",
            "miss rate above alpha": "yes" if test.pvalue < MISS_LEVEL else "no"}


def clustered_columns(evidence: Evidence, run: pd.Series, alpha: float, method: str = "camdf_risk") -> dict[str, object]:
    """The clustered miss-rate test over tasks (:func:`~camdf.evaluation.power.clustered_miss_test`) and the
    rule's conservatism ``(alpha - miss) / alpha``; empty cells where the run's outcomes are not read."""
    out = {"tasks with a miss": "", "clustered p (miss > alpha)": "", "miss rate above alpha": "",
           "conservatism": np.nan}
    outcomes = evidence.artifacts.outcomes(run["run_id"]) if evidence.artifacts is not None else None
    if outcomes is None or not (outcomes["method"] == method).any():
        return out
    rows = outcomes[outcomes["method"] == method]
    miss = 1.0 - rows.groupby("task_id")["success"].mean().astype(float)
    test = clustered_miss_test(miss.to_numpy(), alpha)
    return {"tasks with a miss": f"{int((miss > 0).sum())} / {len(miss)}",
            "clustered p (miss > alpha)": f"{test.pvalue:.4f}",
            "miss rate above alpha": "yes" if test.pvalue < MISS_LEVEL else "no",
            "conservatism": (alpha - test.rate) / alpha}


def within_one_of_full(exposed: float, full: float) -> bool:
    """Whether the rule's mean exposure is within one tool of full access's (it could hardly have exposed less, so
    its miss rate says nothing of its risk control); False when either is unknown."""
    return bool(np.isfinite(exposed) and np.isfinite(full) and exposed >= full - 1.0)


def a26(evidence: Evidence, main: dict) -> Report:
    """A26: the risk-controlled stopper at each alpha: miss rate (CI), tools, payoff, verified success, TOST."""
    sel = evidence.risk
    if sel.empty:
        raise LookupError("A26: no FINISHED risk run in the store; run `experiment=a26` and `a26_supervised` first")
    rows = []
    for _, r in sel.iterrows():
        g = lambda k: r.get(mkey("camdf_risk", k), np.nan)  # noqa: E731
        miss, se, alpha = g("miss_rate"), g("miss_rate_se"), r[DIALS + "alpha"]
        tost = g("verified_tost_p_vs_full") if pd.notna(g("verified_tost_p_vs_full")) else g("tost_p_vs_full")
        rows.append({
            "domain / scorer / alpha": f"{r['p:domain.name']} / {r['p:scorer.label']} / {alpha:g}",
            "miss rate (95% CI)": ci_text(miss, max(0.0, miss - 1.96 * se), miss + 1.96 * se),
            **{f"{k} (unclustered)" if k != "misses / decisions" else k: v
               for k, v in binomial_columns(r, miss, alpha).items()},
            **clustered_columns(evidence, r, alpha),
            "full-list miss rate": r.get(mkey("full", "miss_rate"), np.nan),
            "tools exposed": g("n_exposed"),
            "% fewer than full": g("fewer_tools_vs_full_pct"),
            "could expose less": "no" if within_one_of_full(g("n_exposed"), r.get(mkey("full", "n_exposed"), np.nan))
                                 else "yes",
            "payoff": g("payoff_mean"),
            "full payoff": r.get(mkey("full", "payoff_mean"), np.nan),
            "verified success": g("verified_success"),
            "TOST p vs full": tost,
            "non-inferior (delta)": "yes" if (g("verified_noninferior_vs_full") if pd.notna(
                g("verified_noninferior_vs_full")) else g("noninferior_vs_full")) == 1.0 else "no",
        })
    frame = pd.DataFrame(rows).set_index("domain / scorer / alpha")
    bad = [i for i, row in frame.iterrows() if row["miss rate above alpha"] == "yes"]
    live = frame[frame["could expose less"] == "yes"]
    return Report(
        "a26", "A26: the risk-controlled stopper (camdf_risk) at target miss rates alpha", frame, digits=3,
        note="Miss: the exposed prefix does not contain G_x (or an alternative). Miss rate: mean over tasks of each "
             "task's miss share over the repeats; CI mean +- 1.96 SE over tasks. The guarantee P(miss) <= alpha "
             "assumes exchangeable tasks and every G_x on its list (full-list miss rate 0). TOST: success against "
             "full access at margin delta = 0.05 (verified success where the domain executes, else the G_x proxy). "
             f"Costs scaled so every mean candidate list costs {sel['p:list_cost'].iloc[0]}. "
             f"Decisions: {protocol_note(sel.iloc[-1])}. "
             + f"Clustered p: the one-sided t-test over tasks of H0 P(miss) <= alpha, each task one cluster (its "
               "share of missed decisions over the repeats; camdf.evaluation.power.clustered_miss_test); miss rate "
               f"above alpha: clustered p < {MISS_LEVEL:g}. Misses cluster by task (tasks with a miss: how many "
               "carry them), so the exact binomial test over the tasks x repeats decisions (unclustered; "
               "scipy.stats.binomtest, alternative 'greater') is anti-conservative and shown for reference only. "
               "Conservatism: (alpha - miss rate) / alpha, how far below its bound the rule runs. The calibration "
               "tasks are scored by membership models fitted on the fit part of the training tasks (1 - the "
               "calibration share of them) while the test tasks are scored by the same models, so both see models "
               "of one strength; with a learned ranker, though, the training tasks' rankings come from the nested "
               "cross-fit (rankers fitted on 3 of 5 folds) and the test tasks' from rankers fitted on 4 of 5: the "
               "calibration tasks look harder than the test tasks, which makes the rule conservative there "
               "(conservatism > 0 at the supervised ranker, measured here rather than corrected). "
             + "Could expose less: the rule exposed fewer than full access's tools minus one on average (a cell where "
               "it exposes every tool or all but one tests no risk control and is counted apart). "
             + ("No cell's miss rate is shown above alpha" if not bad else
                f"Miss rate shown above alpha: {', '.join(bad)}") + f" ({len(live)} of {len(frame)} cells could "
               "expose less).")


TABLE = TableSpec("a26", order=110, experiments=("a26", "a26_supervised"), build=a26)

#: The tables this module declares (found by :func:`camdf.reporting.registry.tables`).
SPECS = (TABLE,)
