"""Per-tool calibration of membership probabilities (Platt scaling shrunk to a global fit) and reliability tables.

The set rules (:mod:`camdf.core.sets`) act on the membership probabilities themselves,
not only on their order, so their calibration matters; a feasibility study on the
project's cells found per-tool calibration the most useful ingredient. The calibrator
maps a probability p of tool t to ``sigmoid(a_t * logit(p) + b_t)``: one global pair
(a, b) fitted on every position, and one pair per tool identity, fitted by maximum a
posteriori with a Gaussian prior centred at the global pair, so a rare tool stays near
the global map and a frequent one gets its own. Tools never seen in fitting get the
global map. Fit it on cross-fitted (out-of-fold) probabilities of training tasks, so
that it corrects the probabilities a model produces for tasks it did not see.
"""

from __future__ import annotations

import math

import numpy as np

#: Probabilities are clipped to [EPS, 1 - EPS] before the logit.
EPS = 1e-6


def _logit(p: np.ndarray) -> np.ndarray:
    p = np.clip(p, EPS, 1.0 - EPS)
    return np.log(p) - np.log1p(-p)


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.tanh(0.5 * x))


def fit_platt_groups(
    z: np.ndarray, y: np.ndarray, groups: np.ndarray, n_groups: int, prior: np.ndarray, precision: float,
    max_iter: int = 100, tol: float = 1e-10,
) -> np.ndarray:
    """MAP Platt scaling per group: ``P(y = 1) = sigmoid(a_g z + b_g)`` with prior (a_g, b_g) ~ N(prior, I / precision).

    Minimises, for every group g at once by Newton steps on 2 x 2 systems,
    ``sum_{i in g} logloss(y_i, a_g z_i + b_g) + precision / 2 * ||(a_g, b_g) - prior_g||^2``.

    Parameters
    ----------
    z : float, shape (M,)
        Logits of the probabilities to calibrate.
    y : bool or float, shape (M,)
        Outcomes.
    groups : int, shape (M,)
        Group of each observation, in [0, n_groups).
    n_groups : int
    prior : float, shape (2,) or (n_groups, 2)
        Prior means (a, b).
    precision : float
        Prior precision (> 0 keeps every fit finite, also for a group with one class).

    Returns
    -------
    float, shape (n_groups, 2)
        (a_g, b_g); the prior mean for a group without observations.
    """
    if precision <= 0:
        raise ValueError(f"precision: must be > 0, got {precision}")
    prior = np.broadcast_to(np.asarray(prior, dtype=float), (n_groups, 2))
    theta = prior.copy()
    y = np.asarray(y, dtype=float)
    # Groups are independent: each one's Newton path depends on its own observations only. A group whose
    # update leaves (a_g, b_g) bit for bit unchanged is at a fixed point of the iteration (the same inputs
    # give the same step forever), so it is set aside with its last step, which still enters the stopping
    # test; the rest continue on their own observations, kept in order so every per-group sum adds the
    # same numbers in the same order. The result is bit for bit the plain loop's (tests/unit/core/reference.py),
    # at the cost of the groups still moving rather than of all of them for as many iterations as the slowest.
    z = np.asarray(z, dtype=float)
    groups = np.asarray(groups)
    moving = np.ones(n_groups, dtype=bool)
    last = np.zeros((n_groups, 2))
    for _ in range(max_iter):
        eta = theta[groups, 0] * z + theta[groups, 1]
        mu = _sigmoid(eta)
        r, w = mu - y, mu * (1.0 - mu)
        ga = np.bincount(groups, r * z, n_groups) + precision * (theta[:, 0] - prior[:, 0])
        gb = np.bincount(groups, r, n_groups) + precision * (theta[:, 1] - prior[:, 1])
        haa = np.bincount(groups, w * z * z, n_groups) + precision
        hab = np.bincount(groups, w * z, n_groups)
        hbb = np.bincount(groups, w, n_groups) + precision
        det = haa * hbb - hab * hab
        da = (hbb * ga - hab * gb) / det
        db = (haa * gb - hab * ga) / det
        step = np.stack([da, db], axis=1)
        # A capped step keeps the first iterations of a badly scaled group from overshooting.
        norm = np.sqrt((step ** 2).sum(axis=1, keepdims=True))
        step *= np.minimum(1.0, 4.0 / np.maximum(norm, 1e-300))
        step = np.where(moving[:, None], step, last)
        before = theta.copy()
        theta[moving] -= step[moving]
        if np.abs(step).max() < tol:
            break
        still = moving & (theta.view(np.int64) != before.view(np.int64)).any(axis=1)
        if (still != moving).any():
            last = step
            moving = still
            keep = moving[groups]
            z, y, groups = z[keep], y[keep], groups[keep]
    return theta


class ToolCalibrator:
    """Per-tool Platt scaling of membership probabilities, shrunk towards one global map.

    Parameters
    ----------
    shrinkage : float
        Precision of the prior on each tool's (a_t, b_t) around the global (a, b), in
        log-likelihood units. Each observation adds at most 1/4 * (1 + z^2) of curvature, so a
        tool needs roughly ``4 * shrinkage / (1 + z^2)`` observations before its own data
        outweigh the global map; 0 is not allowed (use a large value for the global map alone).
    global_precision : float
        Precision of a weak prior of the global map around the identity (a, b) = (1, 0), which
        keeps it finite when the classes separate.

    Attributes
    ----------
    global_ : ndarray, shape (2,)
        The global (a, b).
    coef_ : ndarray, shape (V, 2)
        Per tool id (a_t, b_t); V = 1 + the largest id seen in fitting.
    counts_ : ndarray of int, shape (V,)
        Observations of each tool id in fitting (0: the global map is used).
    """

    def __init__(self, shrinkage: float = 10.0, global_precision: float = 1e-3):
        self.shrinkage = shrinkage
        self.global_precision = global_precision

    def fit(self, p: np.ndarray, member: np.ndarray, tool_ids: np.ndarray, valid: np.ndarray) -> "ToolCalibrator":
        """Fit on the valid positions.

        Parameters
        ----------
        p : float, shape (T, N)
            Out-of-fold membership probabilities.
        member : bool, shape (T, N)
            Whether each position is in G_x.
        tool_ids : int, shape (T, N)
            Tool identities (-1: unknown, fitted into the global map only).
        valid : bool, shape (T, N)
        """
        if self.shrinkage <= 0:
            raise ValueError(f"shrinkage: must be > 0, got {self.shrinkage!r}")
        valid = np.asarray(valid, dtype=bool)
        z = _logit(np.asarray(p, dtype=float)[valid])
        y = np.asarray(member, dtype=bool)[valid]
        ids = np.asarray(tool_ids)[valid].astype(np.int64)
        if not len(z):
            raise ValueError("p: ToolCalibrator needs at least one valid position, got none")
        self.global_ = fit_platt_groups(z, y, np.zeros(len(z), dtype=np.int64), 1, np.array([1.0, 0.0]),
                                        float(self.global_precision))[0]
        V = int(ids.max()) + 1 if (ids >= 0).any() else 0
        known = ids >= 0
        self.counts_ = np.bincount(ids[known], minlength=V)
        self.coef_ = fit_platt_groups(z[known], y[known], ids[known], V, self.global_, float(self.shrinkage)) \
            if V else np.zeros((0, 2))
        return self

    def to_numbers(self) -> dict:
        """The fitted maps as JSON-ready numbers: ``global`` (a, b), ``coef`` per tool id, ``counts``."""
        if "coef_" not in vars(self):
            raise AttributeError("ToolCalibrator: call fit before to_numbers")
        return {"global": [float(x) for x in self.global_], "coef": [[float(a), float(b)] for a, b in self.coef_],
                "counts": [int(c) for c in self.counts_], "shrinkage": float(self.shrinkage)}

    @classmethod
    def from_numbers(cls, numbers: dict) -> "ToolCalibrator":
        """The fitted calibrator of :meth:`to_numbers` (ValueError naming the field on a wrong shape)."""
        cal = cls(shrinkage=float(numbers.get("shrinkage", 10.0)))
        cal.global_ = np.asarray(numbers["global"], dtype=float)
        cal.coef_ = np.asarray(numbers["coef"], dtype=float).reshape(-1, 2) if len(numbers["coef"]) else np.zeros((0, 2))
        cal.counts_ = np.asarray(numbers["counts"], dtype=np.int64)
        if cal.global_.shape != (2,) or cal.coef_.shape != (len(cal.counts_), 2):
            raise ValueError(f"calibrator: expected global (2,) and one (a, b) and count per tool id, got "
                             f"{cal.global_.shape}, {cal.coef_.shape}, {cal.counts_.shape}")
        return cal

    def predict(self, p: np.ndarray, tool_ids: np.ndarray, valid: np.ndarray | None = None) -> np.ndarray:
        """Calibrated probabilities, same shape as ``p``; 0 in padding when ``valid`` is given.

        Ids that are -1, beyond the fitted vocabulary, or unseen in fitting get the global map.
        """
        if "coef_" not in vars(self):
            raise AttributeError("ToolCalibrator: call fit before predict")
        ids = np.asarray(tool_ids).astype(np.int64)
        own = (ids >= 0) & (ids < len(self.coef_))
        own[own] = self.counts_[ids[own]] > 0
        safe = np.where(own, ids, 0)
        a = np.where(own, self.coef_[safe, 0] if len(self.coef_) else 0.0, self.global_[0])
        b = np.where(own, self.coef_[safe, 1] if len(self.coef_) else 0.0, self.global_[1])
        out = _sigmoid(a * _logit(np.asarray(p, dtype=float)) + b)
        return out if valid is None else np.where(valid, out, 0.0)


def cross_calibrate(
    p: np.ndarray, member: np.ndarray, tool_ids: np.ndarray, valid: np.ndarray, n_folds: int = 5,
    random_state: int = 0, shrinkage: float = 10.0,
) -> np.ndarray:
    """Out-of-fold calibrated probabilities: each task's row from a :class:`ToolCalibrator` fitted on other tasks.

    Tasks are split into ``n_folds`` folds at random (seeded); shape (T, N), 0 in padding.
    """
    T = len(p)
    k = max(2, min(n_folds, T))
    fold = np.random.default_rng(random_state).permutation(np.arange(T) % k)
    out = np.zeros(np.shape(p))
    for f in range(k):
        te = fold == f
        cal = ToolCalibrator(shrinkage=shrinkage).fit(p[~te], member[~te], tool_ids[~te], valid[~te])
        out[te] = cal.predict(p[te], tool_ids[te], valid[te])
    return out


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


# ---------------------------------------------------------------- per-tool calibration of the ranker's own score

#: The score features a :class:`ScoreCalibrator` can read: the raw score standardised by the fitting
#: batch's mean and SD, or the score min-max normalised within its task.
SCORE_FEATURES = ("raw", "normalised")


def score_feature(scores: np.ndarray, valid: np.ndarray, feature: str, centre: float = 0.0,
                  spread: float = 1.0) -> np.ndarray:
    """The calibrated feature of every ranked position, (T, N), 0 in padding.

    ``raw``: ``(score - centre) / spread``; ``normalised``: ``(score - min) / (max - min)``
    within the task's valid positions (0.5 where all are equal), as
    :func:`camdf.core.features.normalised_scores`.
    """
    scores = np.asarray(scores, dtype=float)
    valid = np.asarray(valid, dtype=bool)
    if feature == "raw":
        return np.where(valid, (np.nan_to_num(scores) - centre) / spread, 0.0)
    if feature != "normalised":
        raise ValueError(f"feature: expected one of {SCORE_FEATURES}, got {feature!r}")
    lo = np.where(valid, scores, np.inf).min(axis=1, keepdims=True)
    hi = np.where(valid, scores, -np.inf).max(axis=1, keepdims=True)
    span = hi - lo
    with np.errstate(invalid="ignore", divide="ignore"):
        z = np.where(span > 0, (scores - lo) / np.where(span > 0, span, 1.0), 0.5)
    return np.where(valid, z, 0.0)


class ScoreCalibrator:
    """Membership probabilities from the ranker's own score, calibrated per tool (Platt scaling per tool identity).

    ``P(tool t of a ranked list is in G_x) = sigmoid(a_t * x + b_t)`` with x the tool's score
    feature (:func:`score_feature`). Each tool gets its own slope and intercept, so a tool whose
    score separates its tasks well gets a steep map, one whose score says little a flat one; this
    is what the membership model (one slope for every tool) and :class:`ToolCalibrator` (slopes
    shrunk towards one global map) cannot do. ``precision`` is the prior precision of each
    tool's pair around the global pair (fitted on every position): small (the default 0.01) is
    no shrinkage in practice (it keeps a perfectly separated tool finite), large approaches the
    global map; which one a rule uses is chosen by its inner cross-validation, not here. Tools
    unseen in fitting (id -1 or beyond the fitted ids) get the global map.

    Parameters
    ----------
    feature : {"raw", "normalised"}
    precision : float > 0
    global_precision : float > 0
        Weak prior of the global pair around (0, 0).

    Attributes
    ----------
    centre_, spread_ : float
        Mean and SD of the fitting batch's valid raw scores (the standardisation of ``raw``).
    global_ : ndarray, shape (2,)
    coef_ : ndarray, shape (V, 2)
    counts_ : ndarray of int, shape (V,)
    """

    def __init__(self, feature: str = "raw", precision: float = 1e-2, global_precision: float = 1e-3):
        self.feature = feature
        self.precision = precision
        self.global_precision = global_precision

    def fit(self, scores: np.ndarray, member: np.ndarray, tool_ids: np.ndarray, valid: np.ndarray) -> "ScoreCalibrator":
        """Fit on the valid positions: ``scores``, ``member``, ``tool_ids`` and ``valid`` all (T, N)."""
        if self.feature not in SCORE_FEATURES:
            raise ValueError(f"feature: expected one of {SCORE_FEATURES}, got {self.feature!r}")
        if not self.precision > 0:
            raise ValueError(f"precision: must be > 0, got {self.precision!r}")
        valid = np.asarray(valid, dtype=bool)
        raw = np.nan_to_num(np.asarray(scores, dtype=float))[valid]
        if not len(raw):
            raise ValueError("scores: ScoreCalibrator needs at least one valid position, got none")
        self.centre_ = float(raw.mean())
        sd = float(raw.std())
        self.spread_ = sd if sd > 0 else 1.0
        x = score_feature(scores, valid, self.feature, self.centre_, self.spread_)[valid]
        y = np.asarray(member, dtype=bool)[valid]
        ids = np.asarray(tool_ids)[valid].astype(np.int64)
        self.global_ = fit_platt_groups(x, y, np.zeros(len(x), dtype=np.int64), 1, np.zeros(2),
                                        float(self.global_precision))[0]
        known = ids >= 0
        V = int(ids.max()) + 1 if known.any() else 0
        self.counts_ = np.bincount(ids[known], minlength=V)
        self.coef_ = fit_platt_groups(x[known], y[known], ids[known], V, self.global_, float(self.precision)) \
            if V else np.zeros((0, 2))
        return self

    def _maps(self, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        ids = np.asarray(ids).astype(np.int64)
        own = (ids >= 0) & (ids < len(self.coef_))
        own[own] = self.counts_[ids[own]] > 0
        safe = np.where(own, ids, 0)
        coef = self.coef_ if len(self.coef_) else np.zeros((1, 2))
        return np.where(own, coef[safe, 0], self.global_[0]), np.where(own, coef[safe, 1], self.global_[1])

    def predict(self, scores: np.ndarray, tool_ids: np.ndarray, valid: np.ndarray) -> np.ndarray:
        """Calibrated membership probabilities, (T, N), 0 in padding, rounded to 8 decimals (kernel-independent)."""
        if "coef_" not in vars(self):
            raise AttributeError("ScoreCalibrator: call fit before predict")
        a, b = self._maps(tool_ids)
        x = score_feature(scores, valid, self.feature, self.centre_, self.spread_)
        return np.where(valid, np.round(_sigmoid(a * x + b), 8), 0.0)

    def to_numbers(self) -> dict:
        """The fitted maps as JSON-ready numbers (:meth:`from_numbers` and :func:`score_calibrate_task` read them)."""
        if "coef_" not in vars(self):
            raise AttributeError("ScoreCalibrator: call fit before to_numbers")
        return {"feature": self.feature, "precision": float(self.precision), "centre": self.centre_,
                "spread": self.spread_, "global": [float(x) for x in self.global_],
                "coef": [[float(a), float(b)] for a, b in self.coef_], "counts": [int(c) for c in self.counts_]}

    @classmethod
    def from_numbers(cls, numbers: dict) -> "ScoreCalibrator":
        """The fitted calibrator of :meth:`to_numbers` (ValueError naming the field on a wrong shape or feature)."""
        if numbers.get("feature") not in SCORE_FEATURES:
            raise ValueError(f"calibrator.feature: expected one of {SCORE_FEATURES}, got {numbers.get('feature')!r}")
        cal = cls(feature=numbers["feature"], precision=float(numbers["precision"]))
        cal.centre_, cal.spread_ = float(numbers["centre"]), float(numbers["spread"])
        cal.global_ = np.asarray(numbers["global"], dtype=float)
        cal.coef_ = np.asarray(numbers["coef"], dtype=float).reshape(-1, 2) if len(numbers["coef"]) else np.zeros((0, 2))
        cal.counts_ = np.asarray(numbers["counts"], dtype=np.int64)
        if cal.global_.shape != (2,) or cal.coef_.shape != (len(cal.counts_), 2) or not cal.spread_ > 0:
            raise ValueError(f"calibrator: expected global (2,), one (a, b) and count per tool id and spread > 0, got "
                             f"{cal.global_.shape}, {cal.coef_.shape}, {cal.counts_.shape}, {cal.spread_}")
        return cal


def score_calibrate_task(numbers: dict, scores: list[float], ids: list[int]) -> list[float]:
    """:meth:`ScoreCalibrator.predict` for one ranked task in plain Python, from :meth:`ScoreCalibrator.to_numbers`.

    The same feature, clipping-free sigmoid ``0.5 * (1 + tanh(x / 2))`` and 8-decimal rounding as the array path.
    """
    (ga, gb), coef, counts = numbers["global"], numbers["coef"], numbers["counts"]
    if numbers["feature"] == "raw":
        x = [(float(s) - numbers["centre"]) / numbers["spread"] for s in scores]
    else:
        lo, hi = min(scores), max(scores)
        x = [(float(s) - lo) / (hi - lo) for s in scores] if hi > lo else [0.5] * len(scores)
    out = []
    for v, i in zip(x, ids):
        a, b = (coef[i][0], coef[i][1]) if 0 <= i < len(coef) and counts[i] > 0 else (ga, gb)
        out.append(round(0.5 * (1.0 + math.tanh(0.5 * (a * v + b))), 8))
    return out


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


# ---------------------------------------------------------------- per-tool logistic on the whole score vector

#: The largest tool vocabulary a :class:`VectorCalibrator` is fitted for (its decision costs O(n * V) per task).
MAX_VECTOR_VOCAB = 64


def vocab_matrix(z: np.ndarray, tool_ids: np.ndarray, valid: np.ndarray, n_vocab: int) -> np.ndarray:
    """Each task's vocabulary score vector, (T, V): a known tool's within-task normalised score, 0 where not listed."""
    T = len(z)
    out = np.zeros((T, n_vocab))
    ids = np.asarray(tool_ids)
    keep = np.asarray(valid, dtype=bool) & (ids >= 0) & (ids < n_vocab)
    rows = np.broadcast_to(np.arange(T)[:, None], ids.shape)[keep]
    np.maximum.at(out, (rows, ids[keep]), np.asarray(z, dtype=float)[keep])
    return out


def fit_logistic_l2(X: np.ndarray, y: np.ndarray, C: float = 1.0, max_iter: int = 50,
                    tol: float = 1e-10) -> tuple[np.ndarray, float]:
    """L2-penalised logistic regression by Newton steps: minimises ``sum logloss(y, X w + b) + ||w||^2 / (2 C)``.

    The objective of scikit-learn's ``LogisticRegression(C=C)`` (the intercept unpenalised), solved
    by damped Newton steps on the (d + 1) x (d + 1) system: for the small designs here it is ten
    times faster than the general solver, and the penalty keeps separable data finite.

    Parameters
    ----------
    X : float, shape (M, d)
    y : bool or float, shape (M,)
    C : float > 0

    Returns
    -------
    w : ndarray, shape (d,)
    b : float
    """
    X = np.asarray(X, dtype=float)
    y = np.asarray(y, dtype=float)
    M, d = X.shape
    A = np.hstack([X, np.ones((M, 1))])
    ridge = np.full(d + 1, 1.0 / float(C))
    ridge[-1] = 0.0
    mean = min(max(float(y.mean()), 1e-6), 1.0 - 1e-6)
    theta = np.zeros(d + 1)
    theta[-1] = np.log(mean) - np.log1p(-mean)
    for _ in range(max_iter):
        mu = _sigmoid(A @ theta)
        grad = A.T @ (mu - y) + ridge * theta
        hess = (A * (mu * (1.0 - mu))[:, None]).T @ A + np.diag(ridge + 1e-12)
        step = np.linalg.solve(hess, grad)
        norm = float(np.sqrt((step ** 2).sum()))
        if norm > 4.0:  # damped: the first steps on nearly separable data stay bounded
            step *= 4.0 / norm
        theta -= step
        if np.abs(step).max() < tol:
            break
    return theta[:-1], float(theta[-1])


class VectorCalibrator:
    """Membership of each tool from the task's whole score vector: one L2 logistic regression per tool identity
    (:func:`fit_logistic_l2`, scikit-learn's objective at ``C``).

    ``P(tool t in G_x) = sigmoid(w_t . s_x + b_t)`` with ``s_x`` the task's vocabulary score vector
    (:func:`vocab_matrix`: every known tool's within-task normalised score). A tool's need can then
    depend on how the ranker scores the *other* tools (e.g. a lookup tool is needed when a rival
    lookup tool scores low), which no per-position calibration sees. A tool whose fitting rows hold
    one class only, and unseen tools, get their base rate (the rate over every fitting position for
    unseen ones). Refused above :data:`MAX_VECTOR_VOCAB` tools.

    Parameters
    ----------
    C : float
        Inverse L2 strength of each tool's regression.

    Attributes
    ----------
    coef_ : ndarray, shape (V, V)
    intercept_ : ndarray, shape (V,)
        Per tool; a constant tool has zero weights and the logit of its base rate.
    base_ : float
        The base rate over every fitting position (unseen tools).
    """

    def __init__(self, C: float = 1.0, feature: str = "normalised"):
        self.C = C
        self.feature = feature

    def _z(self, scores: np.ndarray, valid: np.ndarray) -> np.ndarray:
        return score_feature(scores, valid, self.feature, self.centre_, self.spread_)

    def fit(self, scores: np.ndarray, member: np.ndarray, tool_ids: np.ndarray, valid: np.ndarray,
            n_vocab: int) -> "VectorCalibrator":
        """``scores`` the ranker's scores, (T, N); ``n_vocab`` the tool vocabulary's size V."""
        if self.feature not in SCORE_FEATURES:
            raise ValueError(f"feature: expected one of {SCORE_FEATURES}, got {self.feature!r}")
        raw = np.nan_to_num(np.asarray(scores, dtype=float))[np.asarray(valid, dtype=bool)]
        self.centre_ = float(raw.mean()) if len(raw) else 0.0
        self.spread_ = float(raw.std()) if len(raw) and raw.std() > 0 else 1.0
        z = self._z(scores, valid)

        if n_vocab > MAX_VECTOR_VOCAB:
            raise ValueError(f"n_vocab: VectorCalibrator is for vocabularies of at most {MAX_VECTOR_VOCAB} tools, "
                             f"got {n_vocab}")
        valid = np.asarray(valid, dtype=bool)
        ids, member = np.asarray(tool_ids), np.asarray(member, dtype=bool)
        S = vocab_matrix(z, ids, valid, n_vocab)
        self.base_ = float(member[valid].mean()) if valid.any() else 0.0
        self.coef_ = np.zeros((n_vocab, n_vocab))
        self.intercept_ = np.full(n_vocab, float(_logit(np.array(self.base_))))
        for t in range(n_vocab):
            at = valid & (ids == t)
            rows = np.flatnonzero(at.any(axis=1))
            if not len(rows):
                continue
            y = (at & member)[rows].any(axis=1)
            if y.all() or not y.any():
                self.intercept_[t] = float(_logit(np.array(float(y.mean()))))
                continue
            self.coef_[t], self.intercept_[t] = fit_logistic_l2(S[rows], y, float(self.C))
        return self

    def predict(self, scores: np.ndarray, tool_ids: np.ndarray, valid: np.ndarray) -> np.ndarray:
        """Membership probabilities, (T, N), 0 in padding, rounded to 8 decimals."""
        if "coef_" not in vars(self):
            raise AttributeError("VectorCalibrator: call fit before predict")
        z = self._z(scores, valid)
        V = len(self.intercept_)
        ids = np.asarray(tool_ids).astype(np.int64)
        S = vocab_matrix(z, ids, valid, V)
        known = (ids >= 0) & (ids < V)
        safe = np.where(known, ids, 0)
        # Summed term by term in tool order (no BLAS product), as the one-task path does.
        d = np.zeros(ids.shape)
        for k in range(V):
            d += S[:, k:k + 1] * self.coef_[safe, k]
        d += self.intercept_[safe]
        d = np.where(known, d, float(_logit(np.array(self.base_))))
        return np.where(valid, np.round(_sigmoid(d), 8), 0.0)

    def to_numbers(self) -> dict:
        if "coef_" not in vars(self):
            raise AttributeError("VectorCalibrator: call fit before to_numbers")
        return {"C": float(self.C), "feature": self.feature, "centre": self.centre_, "spread": self.spread_,
                "coef": self.coef_.tolist(), "intercept": self.intercept_.tolist(), "base": float(self.base_)}

    @classmethod
    def from_numbers(cls, numbers: dict) -> "VectorCalibrator":
        if numbers.get("feature") not in SCORE_FEATURES:
            raise ValueError(f"calibrator.feature: expected one of {SCORE_FEATURES}, got {numbers.get('feature')!r}")
        cal = cls(C=float(numbers["C"]), feature=numbers["feature"])
        cal.centre_, cal.spread_ = float(numbers["centre"]), float(numbers["spread"])
        cal.intercept_ = np.asarray(numbers["intercept"], dtype=float)
        V = len(cal.intercept_)
        cal.coef_ = np.asarray(numbers["coef"], dtype=float).reshape(V, V) if V else np.zeros((0, 0))
        cal.base_ = float(numbers["base"])
        if cal.intercept_.ndim != 1 or V > MAX_VECTOR_VOCAB:
            raise ValueError(f"calibrator: expected one intercept per tool (at most {MAX_VECTOR_VOCAB}), "
                             f"got shape {cal.intercept_.shape}")
        return cal


def vector_calibrate_task(numbers: dict, scores: list[float], ids: list[int]) -> list[float]:
    """:meth:`VectorCalibrator.predict` for one ranked task in plain Python (same sums, order and rounding)."""
    coef, intercept, V = numbers["coef"], numbers["intercept"], len(numbers["intercept"])
    if numbers["feature"] == "raw":
        z = [(float(x) - numbers["centre"]) / numbers["spread"] for x in scores]
    else:
        lo, hi = min(scores), max(scores)
        z = [(float(x) - lo) / (hi - lo) for x in scores] if hi > lo else [0.5] * len(scores)
    s = [0.0] * V
    for x, t in zip(z, ids):
        if 0 <= t < V:
            s[t] = max(s[t], float(x))
    p0 = min(max(float(numbers["base"]), EPS), 1.0 - EPS)
    out = []
    for t in ids:
        if 0 <= t < V:
            d = 0.0
            for k in range(V):
                d += s[k] * coef[t][k]
            d += intercept[t]
        else:
            d = math.log(p0) - math.log1p(-p0)
        out.append(round(0.5 * (1.0 + math.tanh(0.5 * d)), 8))
    return out
