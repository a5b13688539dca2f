"""Set rules: expose any subset of the ranked candidates, not a prefix (plug-in, learned and risk-controlled sets).

All three act on membership probabilities calibrated per tool (:class:`~camdf.core.calibration.ToolCalibrator`
fitted on the training batch's cross-fitted probabilities) and cut the candidates re-ranked by
membership evidence per cost (:func:`camdf.core.sets.nested_order`). For the plug-in objective
that re-ranking is not a design choice but the optimum over all subsets (proof in
:func:`camdf.core.sets.plugin_set`), so "re-rank, then cut" and "choose a subset" are the same
rule here; the risk rule cuts the same nested family where conformal risk control needs one.

Run-time features. Each rule reads only what a request carries: the ranking's scores and
the tools' identities (through the membership model), the tools' costs and lambda. The
training labels (G_x and its alternatives) enter only through fitting.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import check_is_fitted

from camdf.common.fit_memo import shared_fits
from camdf.core.conformal import ALPHA, portable_scores, read_scores
from camdf.core.calibration import ToolCalibrator, cross_calibrate
from camdf.core.membership import MembershipModel, cross_fit
from camdf.core.risk_sets import RiskSet
from camdf.core.sets import plugin_set, set_payoffs
from camdf.policies.base import StateBatch, StoppingRule, check_fitted
from camdf.policies.baselines import list_coverage
from camdf.policies.plain import OneTask, calibrate_task, plugin_task_set, risk_task_set
from camdf.policies.risk import calibration_split

__all__ = ["LearnedSet", "PluginSet", "RiskSetRule"]


def _calibrator_numbers(cal: ToolCalibrator) -> dict[str, Any]:
    """A fitted calibrator as JSON-ready numbers (:func:`camdf.policies.plain.calibrate_task` reads them)."""
    return cal.to_numbers()


def _params(cls, numbers: dict[str, Any]) -> dict[str, Any]:
    """The rule's parameters from its numbers, refused (ValueError naming the field) when they are not its own."""
    params = dict(numbers.get("params", {}))
    unknown = sorted(set(params) - set(cls._get_param_names()))
    if unknown:
        raise ValueError(f"rule.params: not parameters of {cls.__name__}: {unknown}")
    for key, value in params.items():  # JSON turns tuples into lists
        if isinstance(value, list):
            params[key] = tuple(value)
    return params


def _carries(rule: "PluginSet") -> bool:
    return rule.carry_membership


class PluginSet(StoppingRule):
    """Expose the subset of highest plug-in payoff under per-tool calibrated membership probabilities.

    Fitting calibrates the training batch's cross-fitted probabilities per tool
    (:class:`ToolCalibrator`, shrunk to a global Platt map) and estimates the list
    coverage q (:func:`camdf.policies.baselines.list_coverage`); a test task's probabilities
    are calibrated with the same map and the rule exposes :func:`camdf.core.sets.plugin_set`
    (exact over all subsets, O(n log n)): ``argmax_A q * prod_{j not in A} (1 - p_j) - lam * C(A)``
    (exact payoff), or ``{j : q * w_j > lam * c_j}`` (partial). Alternatives are not modelled
    (a request does not know them); the evaluation counts them as success.

    Parameters
    ----------
    shrinkage : float
        The calibrator's prior precision around the global map (see :class:`ToolCalibrator`).
    scale : float
        Multiplies the coverage q (1: the plug-in itself; :class:`LearnedSet` tunes it).
    carry_membership : bool
        Fit a membership model of its own on the training tasks (what the shipped rule's
        portable form carries); the evaluation decides with the batch's probabilities instead.
    random_state : int
        Unused (the rule is deterministic); kept for the estimator interface.

    Attributes
    ----------
    calibrator_ : ToolCalibrator
    coverage_ : float
        q * scale.
    membership_ : MembershipModel or None
    """

    picks_prefix = False

    def __init__(self, shrinkage: float = 10.0, scale: float = 1.0, carry_membership: bool = False,
                 random_state: int = 0):
        self.shrinkage = shrinkage
        self.scale = scale
        self.carry_membership = carry_membership
        self.random_state = random_state

    def feature_names(self) -> tuple[str, ...]:
        return ()

    def _fit_calibration(self, batch: StateBatch, shrinkage: float, scale: float) -> None:
        inst = batch.inst
        self.calibrator_ = ToolCalibrator(shrinkage=shrinkage).fit(batch.p, inst.member, inst.tool_ids, inst.valid)
        self.coverage_ = float(scale) * list_coverage(inst, batch.kind)
        self.membership_ = MembershipModel().fit(inst, inst.member) if self.carry_membership else None

    def fit(self, batch: StateBatch) -> "PluginSet":
        self._fit_calibration(batch, float(self.shrinkage), float(self.scale))
        return self

    def calibrated(self, batch: StateBatch) -> np.ndarray:
        """The batch's membership probabilities after the fitted per-tool calibration, (T, N), 0 in padding."""
        check_fitted(self, "calibrator_")
        return self.calibrator_.predict(batch.p, batch.inst.tool_ids, batch.inst.valid)

    def _subset(self, batch: StateBatch) -> np.ndarray:
        inst = batch.inst
        return plugin_set(self.calibrated(batch), inst.costs, inst.valid, batch.lam, batch.kind,
                          coverage=self.coverage_)

    def _task_p(self, task: OneTask) -> list[float]:
        raw = task.p if self.membership_ is None else self.membership_.predict_task(task.z, task.scores, task.ids)
        return calibrate_task(_calibrator_numbers(self.calibrator_), raw, task.ids)

    def decide_task(self, task: OneTask) -> list[int]:
        """:meth:`select` for one ranked task in plain Python: the exposed ranked positions, ascending."""
        check_fitted(self, "calibrator_")
        return plugin_task_set(self._task_p(task), task.costs, task.lam, task.kind, self.coverage_)

    @available_if(_carries)
    def to_numbers(self) -> dict[str, Any]:
        """The fitted rule as JSON-ready numbers (:class:`camdf.policies.plain.PortablePluginSet` reads them)."""
        check_is_fitted(self)
        fitted = {k: float(v) for k, v in vars(self).items() if k in ("shrinkage_", "scale_", "inner_payoff_")}
        return {"params": self.get_params(), "membership": self.membership_.to_numbers(),
                "calibrator": _calibrator_numbers(self.calibrator_), "coverage": float(self.coverage_), **fitted}

    @classmethod
    def from_numbers(cls, numbers: dict[str, Any]) -> "PluginSet":
        """The fitted rule of :meth:`to_numbers` (plain numbers, nothing unpickled): the same decisions."""
        rule = cls(**_params(cls, numbers))
        rule.membership_ = MembershipModel.from_numbers(numbers["membership"])
        rule.calibrator_ = ToolCalibrator.from_numbers(numbers["calibrator"])
        rule.coverage_ = float(numbers["coverage"])
        for key in ("shrinkage_", "scale_", "inner_payoff_"):
            if key in numbers:
                setattr(rule, key, float(numbers[key]))
        return rule

    def tuned_parameters(self) -> dict[str, object]:
        check_is_fitted(self)
        return {"coverage": self.coverage_, "shrinkage": self.shrinkage, "scale": self.scale}


#: The calibration strengths and coverage scales :class:`LearnedSet` chooses among (the plug-in's own first).
LEARNED_SHRINKAGE = (10.0, 3.0, 30.0)
LEARNED_SCALE = (1.0, 0.6, 0.8, 1.2, 1.5)


class LearnedSet(PluginSet):
    """The plug-in set with its calibration strength and coverage term tuned by inner cross-validation.

    For each calibration strength s of ``shrinkages`` the training tasks' probabilities are
    calibrated out of fold (:func:`~camdf.core.calibration.cross_calibrate`: each task by a
    calibrator fitted on the other training tasks), and for each scale k of ``scales`` the
    plug-in set with coverage ``k * q`` is scored by its *realised* training payoff (its true
    payoff with alternatives counted, :func:`camdf.core.sets.set_payoffs`). The pair of
    highest mean payoff (the first on ties: the plain plug-in is first) is refitted on every
    training task. What it learns is how far to trust the probabilities: a scale below 1
    exposes fewer tools than the plug-in, above 1 more. Run-time features are the plug-in's.

    Parameters
    ----------
    shrinkages, scales : tuple of float
    inner_folds : int
        Folds of the out-of-fold calibration.
    carry_membership, random_state
        As :class:`PluginSet` (``random_state`` seeds the inner folds).

    Attributes
    ----------
    shrinkage_, scale_ : float
        The chosen pair.
    """

    def __init__(self, shrinkages: tuple = LEARNED_SHRINKAGE, scales: tuple = LEARNED_SCALE, inner_folds: int = 5,
                 carry_membership: bool = False, random_state: int = 0):
        self.shrinkages = shrinkages
        self.scales = scales
        self.inner_folds = inner_folds
        self.carry_membership = carry_membership
        self.random_state = random_state

    def fit(self, batch: StateBatch) -> "LearnedSet":
        inst = batch.inst
        valid = inst.valid
        sets, present = inst.sufficient()
        q = list_coverage(inst, batch.kind)
        best, best_value = None, -np.inf
        for s in self.shrinkages:
            p = cross_calibrate(batch.p, inst.member, inst.tool_ids, valid, self.inner_folds, self.random_state,
                                float(s))
            for k in self.scales:
                mask = plugin_set(p, inst.costs, valid, batch.lam, batch.kind, coverage=float(k) * q)
                value = set_payoffs(mask, inst.costs, batch.lam, batch.kind, sets, present, inst.member).mean()
                if value > best_value + 1e-12:
                    best, best_value = (float(s), float(k)), float(value)
        self.shrinkage_, self.scale_ = best
        self.inner_payoff_ = best_value
        self._fit_calibration(batch, self.shrinkage_, self.scale_)
        return self

    def tuned_parameters(self) -> dict[str, object]:
        check_is_fitted(self)
        return {"coverage": self.coverage_, "shrinkage": self.shrinkage_, "scale": self.scale_,
                "inner_payoff": self.inner_payoff_}


def _split(rule: "RiskSetRule") -> bool:
    return True


class RiskSetRule(StoppingRule):
    """The cheapest re-ranked nested set whose calibrated miss risk is within ``alpha`` (conformal risk control).

    The training tasks are split at random into a *fit* part and a *calibration* part of n
    tasks, as :class:`camdf.policies.risk.CamDFRisk` splits them. On the fit part only: a
    membership model, and a per-tool calibrator fitted on the fit part's own out-of-fold
    probabilities (:func:`camdf.core.membership.cross_fit`). Every task's probabilities then
    come from that model and map; the candidates are re-ranked by
    :func:`camdf.core.sets.nested_order` and the rule exposes the shallowest re-ranked prefix
    whose estimated miss risk is below tau, calibrated on the calibration part by
    :class:`camdf.core.risk_sets.RiskSet` (randomised conformal risk control; a task counts as
    covered when G_x or any alternative lies inside the exposed set).

    Guarantee. If the calibration tasks and a new task are exchangeable (the fit part is held
    fixed: neither the model nor the calibrator saw a calibration task), and each task's G_x
    or an alternative is on its candidate list, then for every alpha fixed before seeing the
    new task

        P(the new task misses) <= alpha,

    over the draw of the calibration tasks, the new task and the rule's seeded tie-break
    (exactly alpha when the calibration scores have no ties). ``list_miss_`` reports how often
    a calibration task's list held no sufficient set (the bound is off by at most that rate).
    Lambda and the costs enter only the re-ranking (cheaper tools of equal evidence first),
    not the guarantee. Alpha is a run-time dial (the calibration scores are kept).

    Parameters
    ----------
    alpha : float in (0, 1)
    calibration : float in (0, 1)
        Share of the training tasks held out for calibration.
    calibrate : bool
        Calibrate the probabilities per tool (on the fit part) before re-ranking.
    random_state : int
        Seeds the split, the inner folds and the tie-break.

    Attributes
    ----------
    membership_ : MembershipModel
    calibrator_ : ToolCalibrator or None
    risk_ : RiskSet
    list_miss_ : float
    """

    picks_prefix = False
    dials = (ALPHA,)

    def __init__(self, alpha: float = 0.05, calibration: float = 0.5, calibrate: bool = True, random_state: int = 0):
        self.alpha = alpha
        self.calibration = calibration
        self.calibrate = calibrate
        self.random_state = random_state

    def feature_names(self) -> tuple[str, ...]:
        return ()

    def _p(self, inst) -> np.ndarray:
        p = self.membership_.predict_proba(inst)
        return p if self.calibrator_ is None else self.calibrator_.predict(p, inst.tool_ids, inst.valid)

    def fit(self, batch: StateBatch) -> "RiskSetRule":
        inst = batch.inst
        cal = calibration_split(inst.T, self.alpha, self.calibration, self.random_state, type(self).__name__)
        part = inst.subset(~cal)
        # The membership model and its calibrator read the fit part's rankings and labels, no cost and no lambda:
        # the cells of a lambda x d grid share them (kept for the process, camdf.common.fit_memo.shared_fits).
        kept = shared_fits("risk_set.membership", *part.cost_free_inputs(), bool(self.calibrate), self.random_state)
        if "fit" not in kept:
            membership, calibrator = MembershipModel().fit(part, part.member), None
            if self.calibrate and part.T >= 2:
                oof = cross_fit(part, part.member, n_folds=3, random_state=self.random_state)
                calibrator = ToolCalibrator().fit(oof, part.member, part.tool_ids, part.valid)
            kept["fit"] = (membership, calibrator)
        self.membership_, self.calibrator_ = kept["fit"]
        held = inst.subset(cal)
        sets, present = held.sufficient()
        self.risk_ = RiskSet(float(self.alpha), randomised=True, random_state=self.random_state).fit(
            self._p(held), held.costs, held.valid, sets, present)
        self.list_miss_ = self.risk_.list_miss_
        return self

    def threshold(self, alpha: float | None = None) -> float:
        """tau for ``alpha`` (default: the fitted one)."""
        check_fitted(self, "risk_")
        return self.risk_.threshold(alpha)

    def _subset(self, batch: StateBatch, alpha: float | None = None) -> np.ndarray:
        check_fitted(self, "risk_")
        inst = batch.inst
        return self.risk_.predict(self._p(inst), inst.costs, inst.valid, alpha)

    @available_if(_split)
    def decide_task(self, task: OneTask, alpha: float | None = None) -> list[int]:
        """:meth:`select` for one ranked task in plain Python: the exposed ranked positions, ascending."""
        check_fitted(self, "risk_")
        numbers = self.to_numbers()
        return risk_task_set(numbers["membership"], numbers["calibrator"], self.threshold(alpha), task)

    def to_numbers(self) -> dict[str, Any]:
        """The fitted rule as JSON-ready numbers (:class:`camdf.policies.plain.PortableRiskSet` reads them)."""
        check_fitted(self, "risk_")
        return {"params": self.get_params(), "membership": self.membership_.to_numbers(),
                "calibrator": None if self.calibrator_ is None else _calibrator_numbers(self.calibrator_),
                "threshold": portable_scores([self.risk_.threshold_])[0],
                "calibration_scores": portable_scores(self.risk_.scores_),
                "u": float(self.risk_.u_), "list_miss": float(self.list_miss_)}

    @classmethod
    def from_numbers(cls, numbers: dict[str, Any]) -> "RiskSetRule":
        """The fitted rule of :meth:`to_numbers` (plain numbers, nothing unpickled): the same decisions."""
        rule = cls(**_params(cls, numbers))
        rule.membership_ = MembershipModel.from_numbers(numbers["membership"])
        rule.calibrator_ = None if numbers["calibrator"] is None else ToolCalibrator.from_numbers(numbers["calibrator"])
        risk = RiskSet(float(rule.alpha), randomised=True, random_state=rule.random_state)
        risk.scores_ = np.sort(read_scores(numbers["calibration_scores"]))
        if risk.scores_.ndim != 1:
            raise ValueError("rule.calibration_scores: expected a list of numbers")
        risk.u_ = float(numbers["u"])
        risk.threshold_ = float(read_scores(float(numbers["threshold"])))
        risk.list_miss_ = rule.list_miss_ = float(numbers.get("list_miss", np.isneginf(risk.scores_).mean()))
        rule.risk_ = risk
        return rule

    def tuned_parameters(self) -> dict[str, object]:
        check_is_fitted(self)
        return {"threshold": self.risk_.threshold_, "n_calibration": len(self.risk_.scores_),
                "list_miss": self.list_miss_}
