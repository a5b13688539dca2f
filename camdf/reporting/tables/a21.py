"""A21: the ranking sources at the main cell: ranking quality beside the stoppers' payoffs."""

from __future__ import annotations

import numpy as np
import pandas as pd

from camdf.policies import REFERENCE
from camdf.reporting.evidence import Evidence
from camdf.reporting.report import Report
from camdf.reporting.tables.base import TableSpec
from camdf.reporting.tables.notes import protocol_note
from camdf.reporting.store import mkey


def a21(evidence: Evidence, main: dict) -> Report:
    """recall@3 and nDCG@10 of G_x and the payoffs of CAM-DF and the tuned baselines, per ranking source."""
    sel = evidence.rankers
    if sel.empty:
        raise LookupError("A21: no FINISHED scorer runs in the store; run `experiment=a21` first")
    needed = [mkey(m, "payoff_mean")
              for m in (REFERENCE, "predict_threshold", "score_per_cost", "fixed_k", "best_prefix")]
    lacking = [c[2:].split("/")[0] for c in needed if c not in sel or sel[c].isna().any()]
    if lacking:
        raise LookupError(f"A21: the scorer runs at the main cell lack {', '.join(lacking)}; run `experiment=a21` first")
    rows = []
    for _, r in sel.iterrows():
        rows.append({
            "scorer": r["p:scorer.label"],
            "recall@3": r.get(mkey("ranking", "recall_at_3"), np.nan),
            "nDCG@10": r.get(mkey("ranking", "ndcg_at_10"), np.nan),
            "CAM-DF payoff": r[mkey("camdf", "payoff_mean")],
            "predict-threshold payoff": r[mkey("predict_threshold", "payoff_mean")],
            "score-per-cost payoff": r[mkey("score_per_cost", "payoff_mean")],
            "fixed-k payoff": r[mkey("fixed_k", "payoff_mean")],
            "best prefix": r[mkey("best_prefix", "payoff_mean")],
            "CAM-DF repeat range": f"{r.get(mkey('camdf', 'payoff_repeat_min'), np.nan):.3f}-"
                                   f"{r.get(mkey('camdf', 'payoff_repeat_max'), np.nan):.3f}",
            "headroom": r.get(mkey("cell", "headroom"), np.nan),
        })
    frame = pd.DataFrame(rows).set_index("scorer").sort_index()
    return Report("a21", "A21: ranking sources at the main cell", frame,
                  note="recall@3 and nDCG@10 of G_x from the same runs (metrics ranking/*, averaged over the "
                       f"repeats). Decisions: {protocol_note(sel.iloc[-1])}.")


TABLE = TableSpec("a21", order=60, experiments=("a21", "a21_oracle"), build=a21)

#: The tables this module declares (found by :func:`camdf.reporting.registry.tables`).
SPECS = (TABLE,)
