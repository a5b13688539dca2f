"""A set rule that chooses its set model by inner cross-validation among a pool fixed here, before any evaluation.

The pool (:data:`POOL`) holds the plug-in set under several calibrations of the membership
probabilities, a correlation-aware multinomial over the G_x sets seen in training, and the
G_x of nearest training tasks:

- ``plugin/score``: the plug-in set (:func:`camdf.core.sets.plugin_set`) on the ranker's own
  raw score calibrated per tool (:class:`~camdf.core.score_calibration.ScoreCalibrator`, no
  shrinkage in practice); ``plugin/score-shrunk``: the same shrunk towards one global map;
  ``plugin/normalised``: per tool on the within-task normalised score;
- ``plugin/vector``: each tool's membership from the task's whole score vector
  (:class:`~camdf.core.vector_calibration.VectorCalibrator`, one logistic regression per tool; only
  for vocabularies of at most 64 tools);
- ``plugin/membership``: the membership model's cross-fitted probabilities calibrated per
  tool (:class:`~camdf.core.calibration.ToolCalibrator`, no shrinkage in practice);
  ``plugin/membership-shrunk``: shrunk as :class:`camdf.policies.sets.PluginSet` is;
- ``seen-sets/score``: :class:`camdf.core.set_models.SeenSets` on ``plugin/score``'s probabilities;
- ``neighbours/5``, ``neighbours/15``: :class:`camdf.core.set_models.NeighbourSets`.

Fitting splits the training tasks into ``inner_folds`` folds, keeping each task group whole when the
instances know the groups (:func:`camdf.core.instances.inner_folds`: a member that copies the G_x of
similar training tasks is then scored on templates it never saw, as the outer group folds score it);
each member is fitted on the other folds and decides for the held-out one, and the member of highest mean *realised*
payoff over the training tasks (alternatives count, :func:`camdf.core.sets.set_payoffs`)
is refitted on every training task (ties: the first in the pool). The training batch's
membership probabilities are already cross-fitted within the training tasks, and the
ranker's training scores come from the nested cross-fit, so no member's inner-CV score
reads a label its own fit used.

Run-time features: the ranking's scores, the tools' identities and costs, lambda, and (for
the ``membership`` members) the membership model's probabilities. The fitted rule ships as
JSON numbers (:meth:`CVSet.to_numbers`, read back without scikit-learn by
:class:`camdf.policies.plain.PortableCVSet`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import check_is_fitted

from camdf.common.fit_memo import shared_fits
from camdf.core.calibration import ToolCalibrator
from camdf.core.instances import inner_folds
from camdf.core.score_calibration import ScoreCalibrator, score_feature
from camdf.core.vector_calibration import MAX_VECTOR_VOCAB, VectorCalibrator
from camdf.core.membership import MembershipModel
from camdf.core.set_models import NeighbourSets, SeenSets, union_masks
from camdf.core.sets import plugin_set, set_payoffs
from camdf.policies.base import StateBatch, StoppingRule, check_fitted
from camdf.policies.baselines import list_coverage
from camdf.policies.plain import OneTask, cv_set_task

__all__ = ["CVSet", "POOL", "POOL_FROZEN"]

#: The day :data:`POOL` was last changed (b6dfcdd). The pool is frozen: a change to it is a new rule (a new card and
#: name), never a new version of this one, so every result that names cv_set names this pool.
POOL_FROZEN = "2026-12-05"
#: The pool, fixed before any evaluation: (name, model, settings). model: plugin, seen or neighbours;
#: source: where the per-tool probabilities come from (the ranker's score or the membership model).
POOL: tuple[tuple[str, str, dict[str, Any]], ...] = (
    ("plugin/score", "plugin", {"source": "score", "feature": "raw", "precision": 1e-2}),
    ("plugin/score-shrunk", "plugin", {"source": "score", "feature": "raw", "precision": 10.0}),
    ("plugin/normalised", "plugin", {"source": "score", "feature": "normalised", "precision": 1e-2}),
    ("plugin/vector", "plugin", {"source": "vector", "feature": "normalised", "C": 1.0}),
    ("plugin/vector-raw", "plugin", {"source": "vector", "feature": "raw", "C": 1.0}),
    ("plugin/membership", "plugin", {"source": "membership", "precision": 1e-2}),
    ("plugin/membership-shrunk", "plugin", {"source": "membership", "precision": 10.0}),
    ("seen-sets/score", "seen", {"source": "score", "feature": "raw", "precision": 1e-2}),
    ("neighbours/5", "neighbours", {"k": 5}),
    ("neighbours/15", "neighbours", {"k": 15}),
)
_BY_NAME = {name: (model, settings) for name, model, settings in POOL}


def _member_fits(batch: StateBatch) -> dict:
    """The pool members' shared fits on ``batch``, kept for the process's later cells with the same inputs
    (:func:`camdf.common.fit_memo.shared_fits`): what every member's fit reads, none of it lambda or a cost."""
    inst = batch.inst
    return shared_fits("cv_set.members", *inst.cost_free_inputs(), batch.p)


class _Member:
    """One pool member fitted on a training batch: its calibrator or set model, and its decisions."""

    def __init__(self, name: str):
        self.name = name
        self.model, self.settings = _BY_NAME[name]

    def fit(self, batch: StateBatch, shared: dict | None = None) -> "_Member":
        """Fit on ``batch``. ``shared``: fits already made on this same batch by other members, keyed by
        their settings (members that differ only in the set model or ``k`` share a calibrator or the
        training vectors; the fits are deterministic, so sharing changes no number)."""
        inst, s = batch.inst, self.settings
        shared = {} if shared is None else shared
        self.calibrator = None
        key = ("calibrator", tuple(sorted((k, v) for k, v in s.items() if k != "k")))
        if s.get("source") is not None and key in shared:
            self.calibrator = shared[key]
        elif s.get("source") == "score":
            self.calibrator = ScoreCalibrator(s["feature"], s["precision"]).fit(inst.scores, inst.member,
                                                                                 inst.tool_ids, inst.valid)
        elif s.get("source") == "vector":
            self.calibrator = VectorCalibrator(s["C"], s["feature"]).fit(inst.scores, inst.member, inst.tool_ids,
                                                                         inst.valid, len(inst.vocab))
        elif s.get("source") == "membership":
            self.calibrator = ToolCalibrator(shrinkage=s["precision"]).fit(batch.p, inst.member, inst.tool_ids,
                                                                           inst.valid)
        if self.calibrator is not None:
            shared[key] = self.calibrator
        self.sets = None
        if self.model == "seen":
            self.sets = shared.get("seen") or SeenSets().fit(inst.tool_ids, inst.member, inst.valid)
            shared["seen"] = self.sets
        elif self.model == "neighbours":
            if "neighbours" not in shared:
                z = score_feature(inst.scores, inst.valid, "normalised")
                shared["neighbours"] = NeighbourSets(s["k"]).fit(z, inst.tool_ids, inst.member, inst.valid,
                                                                 len(inst.vocab))
            self.sets = shared["neighbours"].with_k(s["k"])
        return self

    def probabilities(self, batch: StateBatch) -> np.ndarray:
        inst = batch.inst
        if isinstance(self.calibrator, ScoreCalibrator):
            return self.calibrator.predict(inst.scores, inst.tool_ids, inst.valid)
        if isinstance(self.calibrator, VectorCalibrator):
            return self.calibrator.predict(inst.scores, inst.tool_ids, inst.valid)
        return self.calibrator.predict(batch.p, inst.tool_ids, inst.valid)

    def select(self, batch: StateBatch, coverage: float) -> np.ndarray:
        inst = batch.inst
        if self.model == "plugin":
            return plugin_set(self.probabilities(batch), inst.costs, inst.valid, batch.lam, batch.kind,
                              coverage=coverage)
        if self.model == "seen":
            weights = self.sets.weights(self.probabilities(batch), inst.tool_ids, inst.valid)
        else:
            weights = self.sets.weights(score_feature(inst.scores, inst.valid, "normalised"), inst.tool_ids,
                                        inst.valid)
        return union_masks(weights, inst.costs, inst.valid, batch.lam, batch.kind, coverage)

    def numbers(self) -> dict[str, Any]:
        cal = self.calibrator
        return {"choice": self.name, "model": self.model,
                "source": self.settings.get("source"),
                "calibrator": None if cal is None else cal.to_numbers(),
                "sets": None if self.sets is None else self.sets.to_numbers()}


def _carries(rule: "CVSet") -> bool:
    return rule.carry_membership


class CVSet(StoppingRule):
    """The set model of :data:`POOL` with the highest inner cross-validated training payoff (module docstring).

    Parameters
    ----------
    pool : tuple of str
        Names of the members to choose among (default: every member of :data:`POOL`, in its order).
    inner_folds : int
    carry_membership : bool
        Fit a membership model of its own on the training tasks (the shipped rule's portable
        form needs it when a ``membership`` member is chosen); the evaluation decides with the
        batch's probabilities instead.
    random_state : int
        Seeds the inner folds.

    Attributes
    ----------
    choice_ : str
        The chosen member.
    inner_split_ : {"group", "kfold"}
        How the inner folds were drawn: task groups kept whole, or tasks at random (no groups known, or
        fewer groups than folds).
    inner_payoffs_ : dict of str to float
        Every member's mean inner-CV payoff.
    coverage_ : float
        The list coverage q (:func:`camdf.policies.baselines.list_coverage`).
    member_ : _Member
        The chosen member refitted on every training task.
    membership_ : MembershipModel or None
    """

    picks_prefix = False

    def __init__(self, pool: tuple = tuple(name for name, _, _ in POOL), inner_folds: int = 5,
                 carry_membership: bool = False, random_state: int = 0):
        self.pool = pool
        self.inner_folds = inner_folds
        self.carry_membership = carry_membership
        self.random_state = random_state

    def feature_names(self) -> tuple[str, ...]:
        return ()

    def fit(self, batch: StateBatch) -> "CVSet":
        unknown = [m for m in self.pool if m not in _BY_NAME]
        if unknown or not len(self.pool):
            raise ValueError(f"pool: expected names from {[n for n, _, _ in POOL]}, got {list(self.pool)}")
        inst = batch.inst
        # The whole-vector member is fitted only for small vocabularies (its decision costs O(n V)); fixed here.
        pool = tuple(m for m in self.pool
                     if _BY_NAME[m][1].get("source") != "vector" or len(inst.vocab) <= MAX_VECTOR_VOCAB)
        if not pool:
            raise ValueError(f"pool: no member applies to a vocabulary of {len(inst.vocab)} tools: {list(self.pool)}")
        k = max(2, min(int(self.inner_folds), inst.T))
        fold, self.inner_split_ = inner_folds(inst, k, self.random_state)  # a task group stays whole when known
        masks = {m: np.zeros(inst.tools.shape, dtype=bool) for m in pool}
        for f in range(k):
            te = fold == f
            train, test = batch.subset(~te), batch.subset(te)
            q = list_coverage(train.inst, batch.kind)
            shared = _member_fits(train)
            for m in pool:
                masks[m][te] = _Member(m).fit(train, shared).select(test, q)
        sets, present = inst.sufficient()
        self.inner_payoffs_ = {m: float(set_payoffs(masks[m], inst.costs, batch.lam, batch.kind, sets, present,
                                                    inst.member).mean()) for m in pool}
        best = pool[0]
        for m in pool[1:]:
            if self.inner_payoffs_[m] > self.inner_payoffs_[best] + 1e-12:
                best = m
        self.choice_ = best
        self.coverage_ = list_coverage(inst, batch.kind)
        self.member_ = _Member(best).fit(batch, _member_fits(batch))
        self.membership_ = MembershipModel().fit(inst, inst.member) if self.carry_membership else None
        return self

    def _subset(self, batch: StateBatch) -> np.ndarray:
        check_fitted(self, "member_")
        return self.member_.select(batch, self.coverage_)

    def decide_task(self, task: OneTask) -> list[int]:
        """:meth:`select` for one ranked task in plain Python: the exposed ranked positions, ascending."""
        check_fitted(self, "member_")
        numbers = {**self.member_.numbers(), "coverage": self.coverage_,
                   "membership": None if self.membership_ is None else self.membership_.to_numbers()}
        return cv_set_task(numbers, task, self.member_.sets)

    @available_if(_carries)
    def to_numbers(self) -> dict[str, Any]:
        """The fitted rule as JSON-ready numbers (:class:`camdf.policies.plain.PortableCVSet` reads them)."""
        check_is_fitted(self)
        params = {**self.get_params(), "pool": list(self.pool)}
        return {"params": params, **self.member_.numbers(), "coverage": float(self.coverage_),
                "membership": self.membership_.to_numbers(), "inner_payoffs": dict(self.inner_payoffs_)}

    @classmethod
    def from_numbers(cls, numbers: dict[str, Any]) -> "CVSet":
        """The fitted rule of :meth:`to_numbers` (plain numbers, nothing unpickled): the same decisions."""
        from camdf.core.score_calibration import ScoreCalibrator as SC
        from camdf.policies.sets import _params

        rule = cls(**_params(cls, numbers))
        choice = numbers.get("choice")
        if choice not in _BY_NAME:
            raise ValueError(f"rule.choice: expected one of {list(_BY_NAME)}, got {choice!r}")
        member = _Member(choice)
        source, cal = member.settings.get("source"), numbers.get("calibrator")
        readers = {"score": SC.from_numbers, "vector": VectorCalibrator.from_numbers,
                   "membership": ToolCalibrator.from_numbers}
        member.calibrator = None if cal is None else readers[source](cal)
        sets = numbers.get("sets")
        member.sets = None if sets is None else (SeenSets.from_numbers(sets) if member.model == "seen"
                                                 else NeighbourSets.from_numbers(sets))
        rule.member_, rule.choice_ = member, choice
        rule.coverage_ = float(numbers["coverage"])
        rule.membership_ = MembershipModel.from_numbers(numbers["membership"])
        rule.inner_payoffs_ = {str(k): float(v) for k, v in numbers.get("inner_payoffs", {}).items()}
        return rule

    def tuned_parameters(self) -> dict[str, object]:
        check_is_fitted(self)
        return {"params": self.choice_, "inner_payoff": self.inner_payoffs_.get(self.choice_, float("nan")),
                "coverage": self.coverage_}
