"""Reliability of membership probabilities: reliability tables, expected calibration error, and the
calibrations a cell measures out of fold (:func:`fold_calibrations`, :func:`calibration_rows`)."""

from __future__ import annotations

import numpy as np

from camdf.core.calibration import ToolCalibrator
from camdf.core.score_calibration import ScoreCalibrator


def reliability_table(p: np.ndarray, y: np.ndarray, n_bins: int = 10, strategy: str = "uniform"):
    """The binned reliability curve and the expected calibration error.

    Parameters
    ----------
    p : float, shape (M,)
        Predicted probabilities (pass ``p[valid]``).
    y : bool, shape (M,)
        Outcomes.
    n_bins : int
    strategy : {"uniform", "quantile"}
        Equal-width bins on [0, 1], or bins holding equal numbers of predictions.

    Returns
    -------
    table : pandas.DataFrame
        One row per non-empty bin: ``lo, hi, count, mean_p, freq, gap`` (freq - mean_p).
    ece : float
        ``sum_b count_b / M * |freq_b - mean_p_b|`` (NaN without predictions).
    """
    import pandas as pd  # the table is for reports; the numbers below need numpy only

    p = np.asarray(p, dtype=float).ravel()
    y = np.asarray(y, dtype=float).ravel()
    if len(p) != len(y):
        raise ValueError(f"p, y: expected the same length, got {len(p)} and {len(y)}")
    if strategy == "uniform":
        edges = np.linspace(0.0, 1.0, n_bins + 1)
    elif strategy == "quantile":
        edges = np.quantile(p, np.linspace(0.0, 1.0, n_bins + 1)) if len(p) else np.linspace(0.0, 1.0, n_bins + 1)
    else:
        raise ValueError(f"strategy: expected 'uniform' or 'quantile', got {strategy!r}")
    b = np.clip(np.searchsorted(edges, p, side="right") - 1, 0, n_bins - 1)
    count = np.bincount(b, minlength=n_bins)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_p = np.bincount(b, p, n_bins) / count
        freq = np.bincount(b, y, n_bins) / count
    keep = count > 0
    table = pd.DataFrame({"lo": edges[:-1][keep], "hi": edges[1:][keep], "count": count[keep],
                          "mean_p": mean_p[keep], "freq": freq[keep], "gap": (freq - mean_p)[keep]})
    ece = float((count[keep] / len(p) * np.abs(freq - mean_p)[keep]).sum()) if len(p) else float("nan")
    return table, ece


def ece_by_group(p: np.ndarray, y: np.ndarray, groups: np.ndarray, n_bins: int = 5) -> float:
    """Calibration within groups (e.g. per tool): ``sum_g M_g / M * ECE_g`` with :func:`reliability_table`'s ECE.

    A map can be calibrated on average (low ECE) while it over-states some tools and
    under-states others; this weighs each group's own miscalibration. Shapes (M,).
    """
    p, y, groups = (np.asarray(a).ravel() for a in (p, y, groups))
    if not len(p):
        return float("nan")
    total = 0.0
    for g in np.unique(groups):
        sel = groups == g
        total += sel.sum() / len(p) * reliability_table(p[sel], y[sel], n_bins)[1]
    return float(total)


def calibration_rows(p: np.ndarray, member: np.ndarray, tool_ids: np.ndarray, valid: np.ndarray,
                     names: list[str] | None = None, n_bins: int = 5) -> "pd.DataFrame":
    """Per tool: positions, base rate, mean probability, ECE, the worst bin's gap and the reliability text.

    Rows per tool id present in ``tool_ids[valid]`` plus one ``all`` row (ECE over every position) and
    one ``per-tool mean`` row (:func:`ece_by_group`). Shapes (T, N). ``names[id]`` names a tool. Equal-width
    bins as :func:`reliability_table`; every tool's bins are counted at once (``bincount`` over tool x bin),
    so a catalog of thousands of tools costs one pass.
    """
    import pandas as pd

    valid = np.asarray(valid, dtype=bool)
    pv, yv = np.asarray(p, dtype=float)[valid], np.asarray(member, dtype=bool)[valid].astype(float)
    ids = np.asarray(tool_ids)[valid]
    tools, g = np.unique(ids, return_inverse=True)
    edges = np.linspace(0.0, 1.0, n_bins + 1)
    b = np.clip(np.searchsorted(edges, pv, side="right") - 1, 0, n_bins - 1)
    cell = g * n_bins + b
    size = len(tools) * n_bins
    count = np.bincount(cell, minlength=size).reshape(-1, n_bins)
    sum_p = np.bincount(cell, pv, size).reshape(-1, n_bins)
    sum_y = np.bincount(cell, yv, size).reshape(-1, n_bins)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_p, freq = sum_p / count, sum_y / count
    gap = np.where(count > 0, np.abs(freq - mean_p), 0.0)
    n_tool = count.sum(axis=1)
    ece = (count * gap).sum(axis=1) / np.maximum(n_tool, 1)
    rows = []
    for k, t in enumerate(tools):
        keep = count[k] > 0
        text = "; ".join(f"{a:.2f}->{f:.2f} ({int(c)})" for a, f, c in zip(mean_p[k][keep], freq[k][keep],
                                                                           count[k][keep]))
        rows.append({"tool": names[t] if names is not None and 0 <= t < len(names) else str(int(t)),
                     "positions": int(n_tool[k]), "base rate": float(sum_y[k].sum() / n_tool[k]),
                     "mean p": float(sum_p[k].sum() / n_tool[k]), "ECE": float(ece[k]),
                     "worst bin gap": float(gap[k][keep].max()), "reliability": text})
    table, ece_all = reliability_table(pv, yv, n_bins)
    rows.append({"tool": "all", "positions": int(len(pv)), "base rate": float(yv.mean()) if len(yv) else np.nan,
                 "mean p": float(pv.mean()) if len(pv) else np.nan, "ECE": ece_all,
                 "worst bin gap": float(table["gap"].abs().max()) if len(table) else np.nan,
                 "reliability": reliability_text(table)})
    per_tool = float((n_tool * ece).sum() / len(pv)) if len(pv) else np.nan
    rows.append({"tool": "per-tool mean", "positions": int(len(pv)), "base rate": np.nan, "mean p": np.nan,
                 "ECE": per_tool, "worst bin gap": np.nan, "reliability": ""})
    return pd.DataFrame(rows)


def reliability_text(table) -> str:
    """A reliability table (:func:`reliability_table`) as ``mean p -> frequency (count)`` per bin, ``; ``-joined."""
    return "; ".join(f"{p:.2f}->{f:.2f} ({int(c)})" for p, f, c in zip(table["mean_p"], table["freq"], table["count"]))


#: The calibrations the cells measure out of fold (the Results' calibration table), by label.
CALIBRATION_SOURCES = (
    "membership model",
    "membership + per-tool Platt, shrunk (plugin_set)",
    "membership + per-tool Platt",
    "ranker score + per-tool Platt (cv_set's plugin/score)",
)


def fold_calibrations(train, p_train: np.ndarray, test, p_test: np.ndarray) -> dict[str, np.ndarray]:
    """Every :data:`CALIBRATION_SOURCES` probability of one fold's test tasks, each fitted on its training tasks only.

    ``train`` and ``test`` are :class:`~camdf.core.instances.Instances` (scores, member, tool_ids, valid);
    ``p_train`` the training tasks' cross-fitted membership probabilities, ``p_test`` the test tasks'.
    """
    out = {CALIBRATION_SOURCES[0]: np.where(test.valid, p_test, 0.0)}
    for label, shrink in zip(CALIBRATION_SOURCES[1:3], (10.0, 1e-2)):
        cal = ToolCalibrator(shrinkage=shrink).fit(p_train, train.member, train.tool_ids, train.valid)
        out[label] = cal.predict(p_test, test.tool_ids, test.valid)
    score = ScoreCalibrator("raw", 1e-2).fit(train.scores, train.member, train.tool_ids, train.valid)
    out[CALIBRATION_SOURCES[3]] = score.predict(test.scores, test.tool_ids, test.valid)
    return out
