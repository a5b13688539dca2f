"""Table 2: the main cell, every method with payoff (CI), success, tools, cost and difference to CAM-DF."""

from __future__ import annotations

import numpy as np
import pandas as pd

from camdf.policies import is_oracle
from camdf.reporting.evidence import DEGENERATE_TEXT, Evidence, is_degenerate, main_cell, main_scorers
from camdf.reporting.report import Report
from camdf.reporting.store import methods_of, mkey
from camdf.reporting.tables.base import TableSpec
from camdf.reporting.tables.notes import (
    MDD_NOTE, NESTED_NOTE, baseline_of, diff_text, fit_columns, mdd_text, payoff_columns, protocol_note,
    vs_best_columns,
)
from camdf.reporting.verdicts import MOST_FITS, RULE_TEXT


def table2(evidence: Evidence, main: dict, scorer: str | None = None) -> Report:
    """The main retail cell: every method with payoff (CI), success, tools, cost and difference to CAM-DF.

    ``scorer`` (default: the main cell's) picks the ranking source; another one is written as
    ``table2_<scorer>``.
    """
    scorer = scorer or main["scorer"]
    run = main_cell(evidence.main, f"Table 2 ({scorer})", scorer)
    rows = []
    best = baseline_of(run)
    for m in methods_of(run):
        g = lambda k: run.get(mkey(m, k), np.nan)  # noqa: E731
        holm_p = g("p_holm_vs_ref")
        rows.append({
            "method": m,
            **payoff_columns(run, m),
            "share of headroom": g("headroom_share"),
            "success": g("success"),
            "tools exposed": g("n_exposed"),
            "% fewer than full": g("fewer_tools_vs_full_pct"),
            "cost": g("cost"),
            "method minus CAM-DF (95% CI)": diff_text(run, m),
            "Holm p": "" if pd.isna(holm_p) else f"{holm_p:.4f}",
            **fit_columns(evidence, run, m),
            **vs_best_columns(evidence, run, m, best),
        })
    frame = pd.DataFrame(rows).set_index("method")
    mdds = frame.loc[[m for m in frame.index if not is_oracle(m)], "MDD"]
    return Report(
        "table2" if scorer == main["scorer"] else f"table2_{scorer}",
        f"Table 2: {main['domain']} main cell (lambda = {main['lam']}, d = {main['d']}, scorer {scorer}, "
        f"costs {main['regime']})",
        frame, bold={"payoff": "max"}, digits=3,
        note=f"{int(run[mkey('cell', 'n_tasks')])} tasks, out-of-fold decisions: {protocol_note(run)}. CIs: paired "
             f"bootstrap over tasks ({run['p:stats.n_resamples']} resamples, one shared resample matrix). "
             "Differences are method minus reference, the reference being CAM-DF (> 0: the method beats CAM-DF). "
             "Holm p: the paired sign-flip test's p, Holm-adjusted over the baselines of the cell; the CI is not "
             "adjusted, so a CI that excludes 0 can sit beside a Holm p above 0.05 (a difference shown alone, not "
             "after the correction for comparing every baseline). Headroom best prefix - max(full, none) = "
             f"{run.get(mkey('cell', 'headroom'), np.nan):.3f}"
             f"{f' (degenerate: < {DEGENERATE_TEXT})' if is_degenerate(run) else ''}; "
             "share of headroom = (method - max(full, none)) / headroom. "
             "Fits lower / higher than CAM-DF: of the cell's (repeat, fold) fits (each fold's decisions in each "
             "repeat), how many have a mean paired payoff difference (method minus CAM-DF) below / above 0; a difference "
             f"whose CI excludes 0 but that holds in no more than {MOST_FITS:.0%} of the fits is selection noise "
             f"({RULE_TEXT}). {MDD_NOTE}; over the deployable methods here {mdd_text(mdds)}. Inner-CV choice: the "
             f"candidate each fit's inner cross-validation picked, counted over the fits. Minus best tuned baseline: each "
             f"CAM-DF-family rule (the paper's and ours) minus the cell's deployable baseline of highest payoff, the "
             f"field's peers included ({best}; picked on these tasks, which favours the baseline), paired over tasks, "
             f"with the (repeat, fold) fits carrying it and the MDD. {NESTED_NOTE}. "
             f"MLflow run {run['run_id']}.",
    )


#: One Table 2 per ranking source of the main cell (``table2``, then ``table2_<scorer>``).
TABLE = TableSpec("table2", order=10, experiments=("table2",), build=table2,
                  variants=lambda main: [{"scorer": s} for s in main_scorers(main)])

#: The tables this module declares (found by :func:`camdf.reporting.registry.tables`).
SPECS = (TABLE,)
