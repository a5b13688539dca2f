"""The best rule of a kind picked per fit out of fold, not on the tasks it is judged on.

"The best set rule minus the best prefix rule" picked on a cell's own test tasks favours
whichever kind has more (or noisier) members: the maximum of several noisy means is biased
upwards. Here, in repeat r, the rule used for fold f's tasks is the candidate of highest
mean payoff over the *other* folds' tasks of the same repeat, i.e. over fold f's training
tasks, each scored out of fold. That is a leave-one-fold-out selection: it never reads
fold f's outcomes. It is not fully nested (the outcomes it reads on fold g came from rules
whose training data included fold f's tasks); a fully nested pick would refit every rule
inside every training set, which costs the whole cell again per fold.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = ["fold_picks", "picked_outcomes"]


def fold_picks(outcomes: pd.DataFrame, candidates: list[str] | tuple[str, ...]) -> pd.Series:
    """The candidate picked for every (repeat, fold) fit: highest mean payoff on the repeat's other folds.

    Parameters
    ----------
    outcomes : DataFrame
        A cell's outcomes: task_id, fold, method, payoff (and repeat; one repeat without it).
    candidates : sequence of str
        Methods to pick among (those absent from ``outcomes`` are skipped); ties go to the first.

    Returns
    -------
    Series of str indexed by (repeat, fold)

    Raises
    ------
    LookupError
        When no candidate has outcomes, or a repeat has a single fold (nothing out of fold to pick on).
    """
    o = outcomes if "repeat" in outcomes else outcomes.assign(repeat=0)
    cands = [m for m in candidates if (o["method"] == m).any()]
    if not cands:
        raise LookupError(f"fold_picks: none of {list(candidates)} has outcomes")
    o = o[o["method"].isin(cands)]
    sums = o.groupby(["repeat", "fold", "method"])["payoff"].agg(["sum", "count"]).unstack("method")
    picks = {}
    for r in sums.index.get_level_values("repeat").unique():
        block = sums.loc[r]
        if len(block) < 2:
            raise LookupError(f"fold_picks: repeat {r} has {len(block)} fold(s); an out-of-fold pick needs two")
        for f in block.index:
            rest = block.drop(index=f)
            means = rest["sum"].sum() / rest["count"].sum().replace(0, np.nan)
            values = [means.get(m, -np.inf) for m in cands]
            values = [-np.inf if pd.isna(v) else v for v in values]
            picks[(r, f)] = cands[int(np.argmax(values))]
    return pd.Series(picks, name="pick").rename_axis(["repeat", "fold"])


def picked_outcomes(outcomes: pd.DataFrame, candidates, label: str) -> tuple[pd.DataFrame, pd.Series]:
    """The outcomes of the per-fit picks (:func:`fold_picks`) as one pseudo-method ``label``, and the picks."""
    picks = fold_picks(outcomes, candidates)
    o = outcomes if "repeat" in outcomes else outcomes.assign(repeat=0)
    chosen = picks.rename("method").reset_index()
    rows = o.merge(chosen, on=["repeat", "fold", "method"], how="inner")
    return rows.assign(method=label), picks


def pick_counts(picks: pd.Series) -> str:
    """``17/25 cv_set; 8/25 plugin_set``: how many fits picked each rule (most first, ties by name)."""
    counts = picks.value_counts()
    order = sorted(counts.index, key=lambda m: (-counts[m], m))
    return "; ".join(f"{counts[m]}/{len(picks)} {m}" for m in order)
