"""Paired differences per task and per (repeat, fold) fit, and the spread of what inner CV chose per fit.

A cell's outcomes (``outcomes.parquet``: one row per task, method and repeat, with the
task's ``fold``) come from R x K fits: in repeat r, fold f's decisions are made by models
fitted on the other folds. A difference between two methods that is carried by a few of
these fits is model-selection noise rather than a property of the method.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from camdf.evaluation.summary import per_task_means

__all__ = ["choice_counts", "paired_differences"]

#: The columns that name one fit: the repeated cross-fit and its evaluated fold.
FIT = ["repeat", "fold"]


def _with_repeat(outcomes: pd.DataFrame) -> pd.DataFrame:
    return outcomes if "repeat" in outcomes else outcomes.assign(repeat=0)


def paired_differences(a: pd.DataFrame, method_a: str, b: pd.DataFrame, method_b: str,
                       column: str = "payoff") -> tuple[pd.Series, pd.Series]:
    """``method_a`` (outcomes ``a``) minus ``method_b`` (outcomes ``b``), per task and per fit.

    Parameters
    ----------
    a, b : DataFrame
        Outcomes with columns task_id, fold, method, ``column`` (and repeat); the same frame
        twice compares two methods of one cell, two frames compare cells over the same tasks
        and folds (e.g. one method at two noise levels).
    method_a, method_b : str
    column : str, default "payoff"

    Returns
    -------
    per_task : Series
        Each task's mean over the repeats of ``a - b``, indexed by task_id (sorted): the
        values every CI of the cell resamples.
    per_fit : Series
        The mean of ``a - b`` over the tasks of each fit, indexed by (repeat, fold).

    Raises
    ------
    LookupError
        When a method is absent or the two frames do not hold the same (task, repeat) pairs.
    """
    keys = ["task_id", *FIT]
    parts = []
    for frame, method, name in ((a, method_a, "a"), (b, method_b, "b")):
        rows = _with_repeat(frame)
        rows = rows[rows["method"] == method]
        if rows.empty:
            raise LookupError(f"paired_differences: no outcome of method {method!r}")
        parts.append(rows[keys + [column]].astype({column: float}).rename(columns={column: name}))
    pair = parts[0].merge(parts[1], on=keys, how="outer", validate="one_to_one")
    if pair[["a", "b"]].isna().any().any():
        raise LookupError(f"paired_differences: {method_a!r} and {method_b!r} do not cover the same "
                          "(task, repeat, fold) decisions")
    pair["diff"] = pair["a"] - pair["b"]
    per_task = per_task_means(pair.assign(method="diff", payoff=pair["diff"])[["task_id", "method", "repeat",
                                                                                "payoff"]])
    per_task = per_task.set_index("task_id")["payoff"].sort_index()
    per_fit = pair.groupby(FIT, sort=True)["diff"].mean()
    return per_task.rename("diff"), per_fit.rename("diff")


def choice_counts(tuned: pd.DataFrame, method: str, parameter: str = "params") -> pd.Series:
    """How many (repeat, fold) fits picked each value of ``method``'s tuned ``parameter``.

    ``tuned`` is a cell's ``tuned.csv`` (columns fold, method, parameter, value, repeat).
    The counts come most frequent first (ties: the value first picked first); empty when
    the method tunes no such parameter.
    """
    rows = tuned[(tuned["method"] == method) & (tuned["parameter"] == parameter)]
    if rows.empty:
        return pd.Series(dtype=np.int64, name="fits")
    counts = rows["value"].astype(str).value_counts(sort=False)
    first = {v: i for i, v in enumerate(dict.fromkeys(rows["value"].astype(str)))}
    order = sorted(counts.index, key=lambda v: (-counts[v], first[v]))
    return counts.loc[order].rename("fits")
