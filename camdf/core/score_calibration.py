"""Per-tool calibration of the ranker's own score: Platt scaling of a score feature, one pair per tool.

:class:`ScoreCalibrator` maps a tool's score (standardised, or min-max normalised within its task) to
the probability that the tool is required, with the per-tool MAP fit of
:func:`camdf.core.calibration.fit_platt_groups`; :func:`score_calibrate_task` is the same map for one
task in plain Python (what the lean loader runs).
"""

from __future__ import annotations

import math

import numpy as np

from camdf.core.calibration import fit_platt_groups, sigmoid

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
        return np.where(valid, np.round(sigmoid(a * x + b), 8), 0.0)

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
