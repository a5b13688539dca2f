"""Per-tool calibration of membership probabilities: Platt scaling shrunk to a global fit.

The set rules (:mod:`camdf.core.sets`) act on the membership probabilities themselves,
not only on their order, so their calibration matters; a feasibility study on the
project's cells found per-tool calibration the most useful ingredient. The calibrator
maps a probability p of tool t to ``sigmoid(a_t * logit(p) + b_t)``: one global pair
(a, b) fitted on every position, and one pair per tool identity, fitted by maximum a
posteriori with a Gaussian prior centred at the global pair, so a rare tool stays near
the global map and a frequent one gets its own. Tools never seen in fitting get the
global map. Fit it on cross-fitted (out-of-fold) probabilities of training tasks, so
that it corrects the probabilities a model produces for tasks it did not see. The calibrators of the
ranker's own score are :mod:`camdf.core.score_calibration` and :mod:`camdf.core.vector_calibration`;
the reliability tables :mod:`camdf.core.reliability`.
"""

from __future__ import annotations

import numpy as np

#: Probabilities are clipped to [EPS, 1 - EPS] before the logit.
EPS = 1e-6


def logit(p: np.ndarray) -> np.ndarray:
    p = np.clip(p, EPS, 1.0 - EPS)
    return np.log(p) - np.log1p(-p)


def sigmoid(x: np.ndarray) -> np.ndarray:
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
    # The catalog cells' hot loop: the plain loop's operations on the same numbers in fewer passes (one group's (a, b)
    # as scalars, several gathered from contiguous columns, the sigmoid in place, w * z once: (w * z) * z is w * z * z).
    for _ in range(max_iter):
        if n_groups == 1:
            eta = theta[0, 0] * z + theta[0, 1]
        else:
            eta = theta[:, 0].take(groups) * z + theta[:, 1].take(groups)
        mu = np.tanh(np.multiply(eta, 0.5, out=eta), out=eta)  # sigmoid(eta) = 0.5 * (1 + tanh(0.5 * eta))
        mu += 1.0
        mu *= 0.5
        r, w = mu - y, mu * (1.0 - mu)
        wz = w * z
        ga = np.bincount(groups, r * z, n_groups) + precision * (theta[:, 0] - prior[:, 0])
        gb = np.bincount(groups, r, n_groups) + precision * (theta[:, 1] - prior[:, 1])
        haa = np.bincount(groups, wz * z, n_groups) + precision
        hab = np.bincount(groups, wz, n_groups)
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
        z = logit(np.asarray(p, dtype=float)[valid])
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
        out = sigmoid(a * logit(np.asarray(p, dtype=float)) + b)
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
