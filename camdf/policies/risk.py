"""CAM-DF-risk: the shallowest prefix whose miss risk is controlled at alpha by conformal risk control.

The guarantee. Let a task *miss* when the exposed prefix does not contain G_x (or an
alternative sufficient set). The training tasks are split at random into a *fit* part,
on which a membership model is fitted, and a *calibration* part of n tasks. The rule
exposes the shallowest depth t whose estimated miss risk ``r_t = 1 - P_hat(G_x inside
A_t)`` (the plug-in sufficiency of the fitted membership model) is below a threshold
tau, chosen on the calibration tasks. If the calibration tasks and a new task are
exchangeable (e.g. drawn i.i.d. from one task distribution; the fit part is held
fixed), then for every alpha

    P(the new task misses) <= floor(alpha * (n + 1)) / (n + 1) <= alpha,

over the draw of the calibration tasks and the new task: conformal risk control
(Angelopoulos et al., 2022) with the 0/1 miss loss, which is monotone in tau. Per
calibration task i, the loss at threshold tau is ``1{m_i < tau}`` with ``m_i =
min_{t < t*_i} r_t`` and t*_i its first sufficient depth; tau is the k-th smallest m_i
with k = floor(alpha (n + 1)) (every tau at or below it is conservative), and with
k = 0 the rule exposes everything. The bound assumes every G_x is on its candidate list
(a list that misses G_x misses at every depth); the rule's ``list_miss_`` reports how
often that failed on the calibration tasks.

Lambda and the costs do not enter: the rule trades tools for a stated miss rate, not for
payoff. Alpha can be changed after fitting (:meth:`CamDFRisk.threshold`): the calibration
scores are kept, and the guarantee holds for any alpha fixed before seeing the new task.
"""

from __future__ import annotations

import math
import reprlib

import numpy as np
from sklearn.utils.validation import check_is_fitted

from camdf.core.features import sufficiency_curve
from camdf.core.instances import Instances
from camdf.core.membership import MembershipModel
from camdf.policies.base import StateBatch, StoppingRule, check_fitted


def check_alpha(value, field: str = "alpha") -> float:
    """``value`` as a float in (0, 1), else ValueError naming ``field``."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < 1:
        raise ValueError(f"{field}: must be a number in (0, 1), got {reprlib.repr(value)}")
    return float(value)


def miss_scores(risk: np.ndarray, success: np.ndarray, n: np.ndarray) -> np.ndarray:
    """Per task, the smallest threshold at which the rule misses: ``m_i = min_{t < t*_i} risk[i, t]``.

    ``risk`` (T, N + 1) is the estimated miss risk at each depth, ``success`` (T, N + 1)
    whether A_t is sufficient. +inf when A_0 is already sufficient (no threshold misses);
    -inf when no prefix of the list is (every threshold misses).
    """
    T, width = success.shape
    depth = np.arange(width)[None, :]
    sufficient = success & (depth <= n[:, None])
    first = np.where(sufficient.any(axis=1), np.argmax(sufficient, axis=1), -1)
    before = depth < first[:, None]
    m = np.where(before, risk, np.inf).min(axis=1)
    return np.where(first < 0, -np.inf, m)


def crc_threshold(m: np.ndarray, alpha: float) -> float:
    """The conformal-risk-control threshold for the 0/1 miss loss ``1{m_i < tau}``.

    tau = the k-th smallest calibration score, k = floor(alpha (n + 1)); -inf (expose
    everything) when k = 0. At most k - 1 calibration tasks lie strictly below it, and a
    new exchangeable task falls strictly below it with probability <= k / (n + 1) <= alpha.
    """
    n = len(m)
    k = math.floor(alpha * (n + 1) + 1e-12)
    if k < 1 or n == 0:
        return -math.inf
    return float(np.sort(m)[min(k, n) - 1])


def risk_depths(risk: np.ndarray, n: np.ndarray, tau: float) -> np.ndarray:
    """The shallowest depth t <= n_i with ``risk[i, t] < tau``, else n_i (expose everything)."""
    width = risk.shape[1]
    below = (risk < tau) & (np.arange(width)[None, :] <= n[:, None])
    return np.where(below.any(axis=1), np.argmax(below, axis=1), n)


class CamDFRisk(StoppingRule):
    """Expose the shallowest prefix whose calibrated miss risk is within ``alpha`` (see the module).

    Parameters
    ----------
    alpha : float in (0, 1)
        Target miss rate.
    calibration : float in (0, 1)
        Share of the training tasks held out to calibrate the threshold (the rest fit
        the membership model).
    split : bool
        False (the ablation): calibrate on every training task with the batch's own
        cross-fitted membership probabilities and decide with the batch's; more
        calibration tasks, but the scores are not exchangeable with the test tasks'
        (those come from a model fitted on all the training tasks), so no guarantee.
    random_state : int

    Attributes
    ----------
    membership_ : MembershipModel or None
        Fitted on the fit part only (the rule scores every batch with it, not with ``batch.p``);
        None without ``split``.
    scores_ : ndarray
        The calibration tasks' miss scores m_i, sorted (:func:`miss_scores`).
    threshold_ : float
        tau at ``alpha``.
    list_miss_ : float
        Share of calibration tasks whose whole list is not sufficient.
    """

    def __init__(self, alpha: float = 0.05, calibration: float = 0.5, split: bool = True, random_state: int = 0):
        self.alpha = alpha
        self.calibration = calibration
        self.split = split
        self.random_state = random_state

    def feature_names(self) -> tuple[str, ...]:
        return ()

    def _risk(self, inst: Instances, p: np.ndarray) -> np.ndarray:
        if self.membership_ is not None:
            p = self.membership_.predict_proba(inst)
        return 1.0 - sufficiency_curve(p, inst.valid)

    def fit(self, batch: StateBatch) -> "CamDFRisk":
        check_alpha(self.alpha)
        if not 0 < self.calibration < 1:
            raise ValueError(f"calibration: must be in (0, 1), got {self.calibration!r}")
        inst = batch.inst
        if inst.T < 2:
            raise ValueError(f"batch.inst: CamDFRisk needs at least 2 training tasks, got {inst.T}")
        if self.split:
            rng = np.random.default_rng(self.random_state)
            n_cal = min(inst.T - 1, max(1, round(self.calibration * inst.T)))
            cal = np.zeros(inst.T, dtype=bool)
            cal[rng.permutation(inst.T)[:n_cal]] = True
            self.membership_ = MembershipModel().fit(inst.subset(~cal), inst.member[~cal])
        else:
            cal = np.ones(inst.T, dtype=bool)
            self.membership_ = None
        held = inst.subset(cal)
        self.scores_ = np.sort(miss_scores(self._risk(held, batch.p[cal]), held.success, held.n))
        self.list_miss_ = float(np.isneginf(self.scores_).mean())
        self.threshold_ = crc_threshold(self.scores_, float(self.alpha))
        return self

    def threshold(self, alpha: float | None = None) -> float:
        """tau for ``alpha`` (default: the fitted one) from the kept calibration scores."""
        check_fitted(self, "scores_")
        return self.threshold_ if alpha is None else crc_threshold(self.scores_, check_alpha(alpha))

    def decide_task(self, z: list[float], scores: list[float], ids: list[int], alpha: float | None = None) -> int:
        """:meth:`decide` for one ranked task in plain Python (the run-time fast path; same arithmetic).

        ``z`` are the task's normalised scores, ``scores`` its ranked scores, ``ids`` the tools'
        vocabulary ids (-1: unseen).
        """
        tau = self.threshold(alpha)
        p = self.membership_.predict_task(z, scores, ids)
        n = len(p)
        suff, tail = [1.0] * (n + 1), 1.0
        for j in range(n - 1, -1, -1):  # prod_{j >= t} (1 - p_j), multiplied from the end as sufficiency_curve
            tail *= 1.0 - min(max(p[j], 0.0), 1.0)
            suff[j] = tail
        return next((t for t in range(n + 1) if 1.0 - suff[t] < tau), n)

    def decide(self, batch: StateBatch, alpha: float | None = None) -> np.ndarray:
        check_is_fitted(self)
        return risk_depths(self._risk(batch.inst, batch.p), batch.inst.n, self.threshold(alpha))

    def tuned_parameters(self) -> dict[str, object]:
        check_is_fitted(self)
        return {"threshold": self.threshold_, "n_calibration": len(self.scores_)}
