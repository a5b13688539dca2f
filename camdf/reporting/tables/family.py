"""The family verdict: does any member of the CAM-DF family beat the best tuned baseline at each main cell?"""

from __future__ import annotations

import numpy as np
import pandas as pd

from camdf.reporting.evidence import Evidence
from camdf.reporting.report import Report
from camdf.policies import methods
from camdf.reporting.tables.base import TableSpec
from camdf.reporting.tables.notes import MDD_NOTE, baseline_of, ci_text, mdd_text
from camdf.reporting.verdicts import RULE_TEXT, direction, fits_text, wording
from camdf.reporting.store import mkey



def family_main() -> tuple[str, ...]:
    """The CAM-DF family's shippable prefix rules, in display order (a registry query)."""
    return methods(family="camdf", shippable=True, picks_prefix=True)


def family_verdict(evidence: Evidence, main: dict) -> Report:
    """Does any member of the CAM-DF family beat the best tuned baseline at each main cell? With CIs."""
    cells = [(f"{run['p:scorer.label']}, {run['p:folds.protocol']} folds", run)
             for _, run in evidence.main.iterrows() if run["p:folds.protocol"] in ("kfold", "group")]
    if not cells:
        raise LookupError("family verdict: no FINISHED main-cell run; run `experiment=table2` first")
    rows, directions = [], []
    for label, run in cells:
        b = baseline_of(run)
        if b is None:
            continue
        for m in family_main():
            if pd.isna(run.get(mkey(m, "diff_vs_best_baseline"), np.nan)):
                continue
            c = evidence.judge.compare(run, m, b)
            rows.append({"cell / method": f"{label} / {m}", "payoff": run[mkey(m, "payoff_mean")],
                         "best tuned baseline": f"{b} ({run[mkey(b, 'payoff_mean')]:.3f})",
                         "method minus baseline (95% CI)": ci_text(c.mean, c.lo, c.hi),
                         "fits lower / higher": fits_text(c), "MDD": c.mdd,
                         "verdict": wording(c, "it")})
            directions.append(direction(c))
    frame = pd.DataFrame(rows).set_index("cell / method")
    wins = [r["cell / method"] for r, d in zip(rows, directions) if d > 0]
    return Report("family", "Does the CAM-DF family beat the best tuned baseline at the main cells?", frame,
                  digits=3, note="Best tuned baseline: the deployable method that is not ours (the paper's baselines and "
                  "the field's peers, static_set included) with the highest mean payoff in the cell (chosen on the "
                  "evaluated tasks, which favours the baseline); every table uses this one definition. Differences are method minus "
                  "reference, the reference being that baseline: paired bootstrap over tasks of the per-task means "
                  f"over the repeats. Verdict: {RULE_TEXT}. Fits lower / higher: (repeat, fold) fits whose mean "
                  f"paired difference is below / above 0. {MDD_NOTE}; here {mdd_text(frame['MDD'])}. "
                  + (f"A family member beats it in: {', '.join(wins)}." if wins else
                     "No member of the family beats the best tuned baseline at any main cell."))


TABLE = TableSpec("family", order=130, experiments=("table2", "table2_group"), build=family_verdict)

#: The tables this module declares (found by :func:`camdf.reporting.registry.tables`).
SPECS = (TABLE,)
