"""Headroom of a cell (best prefix over the trivial rules) and the one threshold below which a cell is degenerate."""

from __future__ import annotations

import pandas as pd

__all__ = ["DEGENERATE_HEADROOM", "headroom_metrics"]

#: Headroom below which a cell is degenerate: no stopping rule can gain much over the trivial ones.
#: Every reader (the cell's ``cell/degenerate`` metric, the tables' notes, the figures) uses this constant.
DEGENERATE_HEADROOM = 0.02


def headroom_metrics(bounds: pd.DataFrame, table: pd.DataFrame) -> dict[str, float]:
    """The cell's headroom, each method's share of it and whether the cell is degenerate.

    Parameters
    ----------
    bounds : DataFrame, one row per task (and repeat)
        Columns ``none``, ``full`` and ``best``: the payoff of exposing nothing, the full
        list and the best prefix in hindsight.
    table : DataFrame indexed by method
        Column ``payoff_mean``: each method's mean payoff.

    Returns
    -------
    dict
        ``cell/payoff_none``, ``cell/payoff_full``, ``cell/payoff_best_prefix`` (means over the rows),
        ``cell/headroom`` = best - max(full, none), ``cell/degenerate`` = 1.0 when the headroom is below
        :data:`DEGENERATE_HEADROOM` (else 0.0) and, when the headroom is positive, each method's
        ``<method>/headroom_share`` = (payoff_mean - max(full, none)) / headroom.
    """
    none, full, best = (float(bounds[c].mean()) for c in ("none", "full", "best"))
    floor = max(full, none)
    headroom = best - floor
    out = {"cell/payoff_none": none, "cell/payoff_full": full, "cell/payoff_best_prefix": best,
           "cell/headroom": headroom, "cell/degenerate": float(headroom < DEGENERATE_HEADROOM)}
    if headroom > 0:
        out.update({f"{m}/headroom_share": (float(v) - floor) / headroom for m, v in table["payoff_mean"].items()})
    return out
