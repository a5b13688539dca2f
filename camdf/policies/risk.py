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
with k = floor(alpha (n + 1)), ties broken at random with the rule's seed (the
randomised threshold of :func:`~camdf.core.conformal.crc_threshold`, which makes the
miss rate k / (n + 1) rather than far below it when many m_i are tied), and with
k = 0 the rule exposes everything. The bound assumes every G_x is on its candidate list
(a list that misses G_x misses at every depth); the rule's ``list_miss_`` reports how
often that failed on the calibration tasks.

Lambda and the costs do not enter: the rule trades tools for a stated miss rate, not for
payoff. Alpha can be changed after fitting (:meth:`CamDFRisk.threshold`): the calibration
scores are kept, and the guarantee holds for any alpha fixed before seeing the new task.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import check_is_fitted

from camdf.core.conformal import (ALPHA, check_alpha, crc_threshold, miss_scores, portable_scores, read_scores,
                                  risk_depths, task_risk_depth)
from camdf.core.features import sufficiency_curve
from camdf.core.instances import Instances
from camdf.core.membership import MembershipModel
from camdf.policies.base import StateBatch, StoppingRule, check_fitted
from camdf.policies.plain import OneTask, risk_task_depth

__all__ = ["CamDFRisk", "check_alpha", "crc_threshold", "miss_scores", "risk_depths"]


def _split(rule: "CamDFRisk") -> bool:
    # Without the split the rule decides with the batch's own probabilities: no model of its own to carry.
    return rule.split


def calibration_split(T: int, alpha: float, calibration: float, random_state: int, rule: str) -> np.ndarray:
    """The calibration part of ``T`` training tasks, (T,) bool: ``round(calibration * T)`` of them (at least 1, at
    most T - 1) drawn at random with ``random_state``; the rest fit the model. Checks the rule's alpha and share."""
    check_alpha(alpha)
    if not 0 < calibration < 1:
        raise ValueError(f"calibration: must be in (0, 1), got {calibration!r}")
    if T < 2:
        raise ValueError(f"batch.inst: {rule} needs at least 2 training tasks, got {T}")
    n_cal = min(T - 1, max(1, round(calibration * T)))
    cal = np.zeros(T, dtype=bool)
    cal[np.random.default_rng(random_state).permutation(T)[:n_cal]] = True
    return cal


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
        Seeds the calibration split and the threshold's tie-breaking.

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

    dials = (ALPHA,)

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
        inst = batch.inst
        cal = calibration_split(inst.T, self.alpha, self.calibration, self.random_state, type(self).__name__)
        if self.split:
            self.membership_ = MembershipModel().fit(inst.subset(~cal), inst.member[~cal])
        else:
            cal = np.ones(inst.T, dtype=bool)
            self.membership_ = None
        held = inst.subset(cal)
        self.scores_ = np.sort(miss_scores(self._risk(held, batch.p[cal]), held.success, held.n))
        self.list_miss_ = float(np.isneginf(self.scores_).mean())
        self.threshold_ = crc_threshold(self.scores_, float(self.alpha), self.random_state)
        return self

    def threshold(self, alpha: float | None = None) -> float:
        """tau for ``alpha`` (default: the fitted one) from the kept calibration scores."""
        check_fitted(self, "scores_")
        return self.threshold_ if alpha is None else crc_threshold(self.scores_, check_alpha(alpha), self.random_state)

    @available_if(_split)
    def decide_task(self, task: OneTask, alpha: float | None = None) -> int:
        """:meth:`decide` for one ranked task in plain Python (the run-time fast path; same arithmetic)."""
        check_fitted(self, "scores_")
        return risk_task_depth(self.membership_.numbers(), self.threshold(alpha), task)

    @available_if(_split)
    def to_numbers(self) -> dict[str, Any]:
        """The fitted rule as JSON-ready numbers (:class:`camdf.policies.plain.PortableRisk` reads them back)."""
        check_is_fitted(self)
        return {"params": self.get_params(), "membership": self.membership_.to_numbers(),
                # +-inf (tasks whose tools fell outside the list, or that need none) as JSON-safe sentinels
                "threshold": portable_scores([self.threshold_])[0], "calibration_scores": portable_scores(self.scores_),
                "list_miss": float(self.list_miss_), "tie_seed": int(self.random_state)}

    @classmethod
    def from_numbers(cls, numbers: dict[str, Any]) -> "CamDFRisk":
        """The fitted rule of :meth:`to_numbers` (its membership model's plain coefficients): the same decisions."""
        params = dict(numbers["params"])
        unknown = sorted(set(params) - set(cls._get_param_names()))
        if unknown or not params.get("split", True):
            raise ValueError(f"rule.params: expected the parameters of a split CamDFRisk, got {sorted(params)}")
        rule = cls(**params)
        rule.membership_ = MembershipModel.from_numbers(numbers["membership"])
        rule.scores_ = np.sort(read_scores(numbers["calibration_scores"]))
        if rule.scores_.ndim != 1:
            raise ValueError("rule.calibration_scores: expected a list of numbers")
        rule.threshold_ = float(read_scores(float(numbers["threshold"])))
        rule.list_miss_ = float(numbers.get("list_miss", np.isneginf(rule.scores_).mean()))
        return rule

    def _depths(self, batch: StateBatch, alpha: float | None = None) -> np.ndarray:
        check_is_fitted(self)
        return risk_depths(self._risk(batch.inst, batch.p), batch.inst.n, self.threshold(alpha))

    def tuned_parameters(self) -> dict[str, object]:
        check_is_fitted(self)
        return {"threshold": self.threshold_, "n_calibration": len(self.scores_)}
