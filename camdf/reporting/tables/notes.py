"""Text shared by the tables: an estimate with its interval, and how a cell's decisions were made."""

from __future__ import annotations

import numpy as np
import pandas as pd


def ci_text(mean: float, lo: float, hi: float, digits: int = 3) -> str:
    """``mean [lo, hi]`` with ``digits`` decimals."""
    return f"{mean:.{digits}f} [{lo:.{digits}f}, {hi:.{digits}f}]"


def protocol_note(run: pd.Series) -> str:
    """How a cell's decisions and intervals were made: R repeats, K folds, the fold protocol."""
    repeats = run.get("p:folds.repeats", np.nan)
    repeats = 1 if pd.isna(repeats) else int(float(repeats))
    text = (f"{repeats} repeated cross-fit{'s' if repeats > 1 else ''} of {run['p:folds.n_folds']} folds "
            f"(protocol {run['p:folds.protocol']}; repeat r seeds folds, rankers and models with seed + r)")
    if repeats > 1:
        text += ("; every figure is the mean over tasks of each task's mean over the repeats, CIs are the paired "
                 "bootstrap over tasks applied to those per-task means, and the spread is the min-max of the "
                 "repeat means")
    return text
