"""Nested (re-ranked) risk sets: conformal risk control over the prefixes of the re-ranked order.

:class:`RiskSet` does over the re-ranked order of :func:`camdf.core.sets.nested_order` what
:mod:`camdf.core.conformal` does over ranked prefixes: the shallowest nested prefix whose estimated
miss risk is at most the calibrated threshold, randomised conformal risk control at level alpha;
:func:`task_risk_set` is its one-task path in plain Python.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from camdf.core.conformal import check_alpha, miss_scores, risk_depths
from camdf.core.features import sufficiency_curve
from camdf.core.sets import nested_masks, nested_order, nested_ranks, task_order, task_tail


def nested_risk(p: np.ndarray, order: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """Estimated miss risk of each re-ranked prefix: ``r_t = 1 - prod_{j beyond t} (1 - p_j)``, (T, N + 1).

    "Beyond t" is in the re-ranked ``order`` (:func:`nested_order`, padding last); 0 at t = n.
    """
    pr = np.take_along_axis(np.where(valid, p, 0.0), order, axis=1)
    return 1.0 - sufficiency_curve(pr, np.take_along_axis(valid, order, axis=1))


def nested_success(order: np.ndarray, sets: np.ndarray, present: np.ndarray) -> np.ndarray:
    """True success of each re-ranked prefix depth, (T, N + 1) bool: ``t >= min_k cover_k``.

    ``cover_k`` = 1 + the largest re-ranked place of a member of set k (0 for an empty set,
    never for an absent one). With the identity order this is the prefix success curve
    of :func:`camdf.core.instances.curves_from_sets`.
    """
    T, N = order.shape
    rank = nested_ranks(order)
    cover = np.where(sets, rank[:, None, :] + 1, 0).max(axis=2)
    cover = np.where(present, cover, N + 1).min(axis=1)
    return np.arange(N + 1)[None, :] >= cover[:, None]


def crc_threshold_randomised(m: np.ndarray, alpha: float, u: float) -> float:
    """The randomised conformal-risk-control threshold for the 0/1 miss loss ``1{m_i < tau}``.

    With n calibration scores, ``k = floor(alpha (n + 1))`` and ``delta = alpha (n + 1) - k``,
    the rank is ``K = k + 1`` when ``u < delta`` and ``K = k`` otherwise (u ~ U(0, 1) drawn
    once, independently of the data), and tau is the K-th smallest score (-inf: expose
    everything, when K = 0; +inf when K > n). A new exchangeable task's score falls strictly
    below the K-th smallest of the calibration scores with probability at most K / (n + 1),
    so P(miss) <= E[K] / (n + 1) = alpha, with equality when the scores have no ties. The
    deterministic rule (:func:`camdf.core.conformal.crc_threshold`) is the case u = 1: it
    guarantees floor(alpha (n + 1)) / (n + 1), which can be far below alpha for small n.
    """
    n = len(m)
    k = math.floor(alpha * (n + 1) + 1e-12)
    K = k + (1 if u < alpha * (n + 1) - k else 0)
    if K < 1:
        return -math.inf
    if K > n:
        return math.inf
    return float(np.sort(m)[K - 1])


class RiskSet:
    """The cheapest re-ranked nested set whose calibrated miss risk is within ``alpha`` (conformal risk control).

    Construction. Each task's candidates are re-ranked by :func:`nested_order` (a fixed
    key of p and the costs), which makes its prefixes A'_0 c A'_1 c ... c A'_n a nested
    family; the rule exposes the shallowest A'_t whose estimated miss risk
    ``r_t = 1 - prod_{j beyond t} (1 - p_j)`` (:func:`nested_risk`) is below tau, else the
    whole list. Within the family, shallowest is cheapest (costs are >= 0). tau comes from
    calibration tasks: task i's score ``m_i = min_{t < t*_i} r_t`` (t*_i its first
    sufficient re-ranked depth, G_x or an alternative) is the smallest threshold at which
    the rule misses it (:func:`camdf.core.conformal.miss_scores`), and tau is the randomised
    CRC quantile of the scores (:func:`crc_threshold_randomised`).

    Guarantee. If the calibration tasks and a new task are exchangeable, their
    probabilities p come from one model fitted without any of them (e.g. on the other
    training tasks), and each task's G_x or one of its alternatives is on its candidate
    list, then ``P(the new task misses) <= alpha`` over the draw of the calibration tasks,
    the new task and the seeded tie-break u (``<=`` floor(alpha (n + 1)) / (n + 1) with
    ``randomised=False``). The re-ranking key is a fixed function of (p, costs), so the
    family stays nested and the miss loss monotone in tau, which is all CRC needs. A task
    whose list misses every sufficient set misses at every tau: ``list_miss_`` reports how
    often that happened among the calibration tasks (it breaks the bound by at most that
    rate). Lambda does not enter: the rule trades tools for a stated miss rate.

    Parameters
    ----------
    alpha : float in (0, 1)
        Target miss rate.
    randomised : bool
        Randomise the quantile's rank (exact level alpha) or not (conservative).
    random_state : int
        Seed of the tie-break u.

    Attributes
    ----------
    scores_ : ndarray, shape (n_calibration,)
        Sorted calibration miss scores.
    u_ : float
        The tie-break draw.
    threshold_ : float
        tau at ``alpha``.
    list_miss_ : float
        Share of calibration tasks with no sufficient set on their list.
    """

    def __init__(self, alpha: float = 0.1, randomised: bool = True, random_state: int = 0):
        self.alpha = alpha
        self.randomised = randomised
        self.random_state = random_state

    def fit(self, p: np.ndarray, costs: np.ndarray, valid: np.ndarray, sets: np.ndarray,
            present: np.ndarray) -> "RiskSet":
        """Calibrate tau on calibration tasks.

        Parameters
        ----------
        p : float, shape (T, N)
            Membership probabilities of the calibration tasks from a model that did not see them.
        costs : float, shape (T, N)
        valid : bool, shape (T, N)
        sets, present : bool, shapes (T, K, N) and (T, K)
            Their sufficient sets (:func:`sufficient_sets`).
        """
        alpha = check_alpha(self.alpha)
        if len(p) < 1:
            raise ValueError("p: RiskSet needs at least one calibration task, got 0")
        order = nested_order(p, costs, valid)
        m = miss_scores(nested_risk(p, order, valid), nested_success(order, sets, present), valid.sum(axis=1))
        self.scores_ = np.sort(m)
        self.list_miss_ = float(np.isneginf(self.scores_).mean())
        self.u_ = float(np.random.default_rng(self.random_state).random()) if self.randomised else 1.0
        self.threshold_ = crc_threshold_randomised(self.scores_, alpha, self.u_)
        return self

    def threshold(self, alpha: float | None = None) -> float:
        """tau for ``alpha`` (default: the fitted one) from the kept scores and the same u."""
        if "scores_" not in vars(self):
            raise AttributeError("RiskSet: call fit before threshold or predict")
        return self.threshold_ if alpha is None else crc_threshold_randomised(self.scores_, check_alpha(alpha), self.u_)

    def depths(self, p: np.ndarray, costs: np.ndarray, valid: np.ndarray,
               alpha: float | None = None) -> tuple[np.ndarray, np.ndarray]:
        """The re-ranked order (T, N) and the depth exposed in it (T,)."""
        order = nested_order(p, costs, valid)
        return order, risk_depths(nested_risk(p, order, valid), valid.sum(axis=1), self.threshold(alpha))

    def predict(self, p: np.ndarray, costs: np.ndarray, valid: np.ndarray, alpha: float | None = None) -> np.ndarray:
        """The exposed mask of each task, (T, N) bool."""
        order, depth = self.depths(p, costs, valid, alpha)
        return nested_masks(order, depth)


def task_risk_set(p: Sequence[float], costs: Sequence[float], tau: float) -> list[int]:
    """:meth:`RiskSet.predict` for one task in plain Python: the exposed positions, in re-ranked order.

    Same key, tie rule and risk arithmetic as :func:`nested_order` and :func:`nested_risk`
    (the tail product accumulated from the end, as :func:`camdf.core.conformal.task_risk_depth`).
    """
    order, q = task_order(p, costs)
    suff = task_tail(order, q)
    return order[:next((t for t in range(len(order) + 1) if 1.0 - suff[t] < tau), len(order))]
