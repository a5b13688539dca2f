"""A20: the CAM-DF family and its ablations at the main cell, and the lambda dial over the A18 grid."""

from __future__ import annotations

import numpy as np
import pandas as pd

from camdf.reporting.evidence import Evidence, main_scorers
from camdf.reporting.report import Report
from camdf.reporting.store import methods_of, mkey
from camdf.reporting.tables.base import TableSpec
from camdf.reporting.tables.notes import (MDD_NOTE, ci_text, diff_text, fit_columns, needed_at_scorer, payoff_columns,
                                          protocol_note)

ABLATION_NOTES = (
    "unweighted: labels without |Delta| weights; no_cost / no_membership / no_task: feature groups removed "
    "(no_task: the task-constant n_candidates, text_len, score_entropy); no_identity: without the next tool's "
    "identity; regression: LightGBM regression on Delta, stop iff prediction >= 0; lite: 10-feature weighted "
    "logistic model; argmax: regress each depth's payoff relative to full access and expose the argmax, starting "
    "from the plug-in estimate (argmax_no_margin: from zero; argmax_untuned: one shallow booster, no inner CV; "
    "argmax_identity: with tool identity); plugin_argmax: the plug-in estimate alone; risk: the shallowest prefix "
    "whose calibrated miss risk is within alpha (risk_no_split: calibrated on the training tasks' cross-fitted "
    "probabilities instead of a held-out half, no guarantee)."
)


def a20(evidence: Evidence, main: dict, scorer: str | None = None) -> Report:
    """A20: the family and its ablations at the main cell, for ``scorer`` (default: the main one)."""
    scorer = scorer or main["scorer"]
    hit = needed_at_scorer(evidence.ablations, scorer, "A20", "ablation run at the main cell", "a20")
    run = hit.iloc[-1]
    rows = []
    for m in methods_of(run):
        g = lambda k: run.get(mkey(m, k), np.nan)  # noqa: E731
        rows.append({
            "method": m,
            **payoff_columns(run, m),
            "tools exposed": g("n_exposed"),
            "success": g("success"),
            "method minus CAM-DF (95% CI)": diff_text(run, m),
            **fit_columns(evidence, run, m),
        })
    name = "a20" if scorer == main["scorer"] else f"a20_{scorer}"
    return Report(name, f"A20: the CAM-DF family and its ablations at the main cell (scorer {scorer})",
                  pd.DataFrame(rows).set_index("method"), bold={"payoff": "max"},
                  note=f"{ABLATION_NOTES} Differences are method minus reference, the reference being CAM-DF "
                       f"(> 0: the method beats CAM-DF). Fits lower / higher than CAM-DF: how many (repeat, fold) "
                       f"fits have a mean paired payoff difference below / above 0; inner-CV choice: the candidate "
                       f"each fit's inner cross-validation picked. {MDD_NOTE}. Decisions: {protocol_note(run)}. "
                       f"MLflow run {run['run_id']}.")


def a20_lambda(evidence: Evidence, main: dict) -> Report:
    """A20 (lambda dial): one lambda-conditioned model against per-cell models over the A18 grid."""
    sel = evidence.grid
    if sel.empty or mkey("camdf_lambda", "payoff_mean") not in sel:
        raise LookupError("A20 (lambda): no FINISHED grid run with camdf_lambda; run `experiment=a18` first")
    cond = sel[mkey("camdf_lambda", "payoff_mean")]
    low, high = sel[mkey("camdf", "payoff_ci_low")], sel[mkey("camdf", "payoff_ci_high")]
    inside = (cond >= low - 1e-12) & (cond <= high + 1e-12)
    long = pd.DataFrame({"lam": sel["lam"], "d": sel["d"], "inside": inside,
                         "cell": [f"{c:.3f} vs {m:.3f} [{lo:.3f}, {hi:.3f}]" for c, m, lo, hi in zip(
                             cond, sel[mkey("camdf", "payoff_mean")], sel[mkey("camdf", "payoff_ci_low")],
                             sel[mkey("camdf", "payoff_ci_high")])]})
    frame = long.pivot(index="lam", columns="d", values="cell").sort_index()
    marks = ~long.pivot(index="lam", columns="d", values="inside").sort_index().astype(bool)
    frame.index = [f"{v:g}" for v in frame.index]
    frame.columns = [f"d={v:g}" for v in frame.columns]
    marks.index, marks.columns = frame.index, frame.columns
    frame.index.name = "lambda"
    share = float(inside.mean())
    return Report("a20_lambda", "A20 (lambda dial): one lambda-conditioned CAM-DF against per-cell CAM-DF models",
                  frame, marks=marks,
                  note=f"Each cell: lambda-conditioned payoff vs per-cell payoff [95% CI]; † marks cells outside the "
                       f"CI. Inside the CI in {int(inside.sum())} of {len(long)} cells ({100 * share:.0f}%).")


#: One A20 per ranking source of the main cell (``a20``, then ``a20_<scorer>``).
TABLE = TableSpec("a20", order=40, experiments=("a20",), build=a20, variants=lambda main: [{"scorer": s} for s in main_scorers(main)])
LAMBDA = TableSpec("a20_lambda", order=50, experiments=("a18",), build=a20_lambda)

#: The tables this module declares (found by :func:`camdf.reporting.registry.tables`).
SPECS = (TABLE, LAMBDA)
