"""Per-tool logistic regression on the task's whole vocabulary score vector (:class:`VectorCalibrator`).

Each tool's probability of being required reads every known tool's score in the task, not only its
own; :func:`vector_calibrate_task` is the same map for one task in plain Python.
"""

from __future__ import annotations

import math

import numpy as np

from camdf.core.calibration import EPS, logit, sigmoid
from camdf.core.score_calibration import SCORE_FEATURES, score_feature

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
        mu = sigmoid(A @ theta)
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
        self.intercept_ = np.full(n_vocab, float(logit(np.array(self.base_))))
        for t in range(n_vocab):
            at = valid & (ids == t)
            rows = np.flatnonzero(at.any(axis=1))
            if not len(rows):
                continue
            y = (at & member)[rows].any(axis=1)
            if y.all() or not y.any():
                self.intercept_[t] = float(logit(np.array(float(y.mean()))))
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
        d = np.where(known, d, float(logit(np.array(self.base_))))
        return np.where(valid, np.round(sigmoid(d), 8), 0.0)

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
