"""CAM-DF: a |Delta|-weighted classifier of stop vs continue on state features.

The full model is LightGBM with the next tool's identity as a categorical feature
(CAM-DF-lite, the 10-feature logistic form, is :mod:`camdf.policies.camdf_lite`; CAM-DF-argmax
:mod:`camdf.policies.camdf_argmax`). The |Delta|-weighted Bayes rule is
stop iff E[Delta | features] >= 0, which a weighted classifier's P(stop) >= 1/2
approximates. Ablations switch the weighting, feature groups (:data:`NO_COST`, ...) or the target.
"""

from __future__ import annotations

import numpy as np
from sklearn.utils.validation import check_is_fitted

from camdf.common.waits import cores
from camdf.core.features import COST_FEATURES, FEATURES, MEMBERSHIP_FEATURES, TASK_FEATURES
from camdf.core.targets import walk
from camdf.core.payoff import at_depth
from camdf.policies.base import StateBatch, check_fitted, rule_params
from camdf.policies.boosting import BASE_PARAMS, StateBooster, booster_numbers, booster_of, fit_booster, read_booster
from camdf.policies.plain import OneTask, first_stop

# Small-data hyperparameter candidates, chosen per training set by inner cross-validation on payoff:
# a very shallow, strongly regularised booster first (a main cell has ~640 training states), then the
# paper's deeper ones.
DEFAULT_GRID = (
    {"num_leaves": 3, "n_estimators": 50, "reg_lambda": 10.0, "min_child_samples": 20},
    {"num_leaves": 7, "min_child_samples": 10},
    {"num_leaves": 15, "min_child_samples": 30},
)
# The transferred policy's booster (camdf_transfer: A30, the runtime's default policy): one candidate sized for
# the pooled states of every domain across the lambda grid (~10^5-10^6 rows), where the small-data grid above
# underfits (its first candidate has 3 leaves); one candidate, so no inner cross-validation multiplies its cost.
TRANSFER_GRID = ({"num_leaves": 31, "min_child_samples": 100, "n_estimators": 200, "learning_rate": 0.1},)
# CamDF.decide scores these first depths of every task before the rest of the walking ones.
FIRST_BLOCK = 16
# Predictions on at least this many states at once may use CamDF.predict_jobs threads. One request of a
# few thousand tools is scored in about a millisecond on one thread, less than an OpenMP hand-off costs on a
# busy machine (at 512 rows, two threads made one 1,000-tool decision 2-3x slower under load); a big
# batch still uses them. Threads change no prediction (rows are scored independently).
PARALLEL_ROWS = 16_384


class CamDF(StateBooster):
    """Regret-weighted LightGBM stopper.

    Parameters
    ----------
    features : sequence of str or None
        State features (default: all of :data:`camdf.core.features.FEATURES` but ``lam``).
    tool_identity : bool
        Add the next tool's identity as a categorical feature.
    weighted : bool
        Weight each state by |Delta| (False: the unweighted ablation).
    target : {"classify", "regress"}
        Classify stop vs continue, or regress Delta and stop iff the prediction >= 0.
    grid : sequence of dict
        LightGBM hyperparameter candidates; chosen by inner cross-validation when > 1.
    inner_folds : int
    random_state : int
    predict_jobs : int
        Threads for predicting :data:`PARALLEL_ROWS` or more states at once (-1: every
        CPU); the run-time stopper's long rankings use them. Training uses one thread.

    Attributes
    ----------
    params_ : dict
        The grid candidate the model was fitted with.
    model_ : lightgbm.Booster or ("constant", bool)
        The fitted booster (:func:`~camdf.policies.boosting.fit_booster`: LightGBM's scikit-learn estimator's,
        read back by :meth:`from_numbers`), or the constant decision when the training states have one class.
    """

    def __init__(
        self,
        features=None,
        tool_identity: bool = True,
        weighted: bool = True,
        target: str = "classify",
        grid=DEFAULT_GRID,
        inner_folds: int = 3,
        random_state: int = 0,
        predict_jobs: int = 1,
    ):
        self.features = features
        self.tool_identity = tool_identity
        self.weighted = weighted
        self.target = target
        self.grid = grid
        self.inner_folds = inner_folds
        self.random_state = random_state
        self.predict_jobs = predict_jobs

    def _fit_one(self, batch: StateBatch, params: dict):
        valid = batch.inst.valid
        X = self._matrix(batch)
        cat = [X.shape[1] - 1] if self.tool_identity else "auto"
        full = {**BASE_PARAMS, **params, "random_state": self.random_state}
        if self.target == "regress":
            return fit_booster(full, "regression", X, batch.delta[valid], categorical_feature=cat)
        y = batch.label[valid].astype(int)
        w = batch.weight[valid] if self.weighted else np.ones(len(y))
        keep = w > 0
        if len(np.unique(y[keep])) < 2:
            return ("constant", bool(y[keep][0]) if keep.any() else True)
        return fit_booster(full, "binary", X[keep], y[keep], weight=w[keep], categorical_feature=cat)

    def _stop(self, model, batch: StateBatch) -> np.ndarray:
        stop = np.zeros(batch.inst.tools.shape, dtype=bool)
        stop[batch.inst.valid] = self._predict(model, self._matrix(batch))
        return stop

    def _predict(self, model, X: np.ndarray) -> np.ndarray:
        """Stop decisions for the rows of a :meth:`_matrix`, (S,) bool."""
        if isinstance(model, tuple):
            return np.full(len(X), model[1])
        # The booster's raw output: the regressed Delta, or the logit of P(stop), and
        # P(stop) >= 1/2 iff logit >= 0. Calling the booster skips the wrapper's per-call
        # parameter handling, which dominates on the run-time stopper's small inputs.
        threads = 1
        if len(X) >= PARALLEL_ROWS:
            threads = cores() if self.predict_jobs == -1 else max(1, self.predict_jobs)
        return booster_of(model).predict(X, raw_score=True, num_threads=threads) >= 0

    def decide_task(self, task: OneTask) -> int:
        """:meth:`decide` for one ranked task in plain Python and one model call (the run-time fast path)."""
        check_fitted(self, "model_")
        X = np.array(task.features(self.feature_names())).T
        if self.tool_identity:
            X = np.column_stack([X, np.array(task.ids).astype(float)])
        return first_stop(self._predict(self.model_, X).tolist())

    def fit(self, batch: StateBatch) -> "CamDF":
        # Only the walk's depth of each inner-validation task enters its payoff, so only the states a walk
        # reaches are scored (:meth:`_walk`; the same depths as walking the whole stop matrix).
        self.params_ = self._choose(batch, lambda tr, va, params: at_depth(
            va.u, self._walk(self._fit_one(tr, params), va)).sum())
        self.model_ = self._fit_one(batch, self.params_)
        return self

    def tuned_parameters(self) -> dict[str, object]:
        check_is_fitted(self)
        return {"params": self.params_}

    def to_numbers(self) -> dict:
        """The fitted rule as JSON-ready data: its parameters, the chosen grid candidate and the booster in
        LightGBM's text model format (or the constant decision); :meth:`from_numbers` reads it back."""
        check_is_fitted(self)
        constant = isinstance(self.model_, tuple)
        return {"params": self.get_params(), "chosen": dict(self.params_),
                "constant": bool(self.model_[1]) if constant else None,
                "booster": None if constant else booster_numbers(self.model_)}

    @classmethod
    def from_numbers(cls, numbers: dict) -> "CamDF":
        """The fitted rule of :meth:`to_numbers`: the same decisions (the booster's own text format)."""
        rule = cls(**rule_params(cls, numbers))
        rule.params_ = dict(numbers["chosen"])
        if numbers.get("constant") is not None:
            rule.model_ = ("constant", bool(numbers["constant"]))
        else:
            rule.model_ = read_booster(numbers["booster"], "rule.booster", rule.n_columns())
            if rule.model_ is None:
                raise ValueError("rule.booster: a CamDF rule needs a booster or a constant decision")
        return rule

    def stop_matrix(self, batch: StateBatch) -> np.ndarray:
        check_is_fitted(self)
        return self._stop(self.model_, batch)

    def _depths(self, batch: StateBatch) -> np.ndarray:
        """The walk of :meth:`stop_matrix`, predicting only the depths a walk can reach (:meth:`_walk`)."""
        check_is_fitted(self)
        return self._walk(self.model_, batch)

    def _walk(self, model, batch: StateBatch) -> np.ndarray:
        """``walk(self._stop(model, batch), n)``, predicting only the depths a walk can reach.

        The first :data:`FIRST_BLOCK` depths are predicted for every task, the rest only
        for tasks that did not stop among them. The booster scores rows independently,
        so the depths equal walking the whole stop matrix; on a long ranking (a catalog
        of 1,000 tools) that stops early, most states are never scored.
        """
        inst = batch.inst
        valid = inst.valid
        X = self._matrix(batch)
        if inst.T == 1:  # one ranking: its states are rows 0..n-1, so blocks are slices
            stop = self._predict(model, X[:FIRST_BLOCK])
            if not stop.any() and len(X) > FIRST_BLOCK:
                stop = np.concatenate([stop, self._predict(model, X[FIRST_BLOCK:])])
            return np.array([int(np.argmax(stop)) if stop.any() else int(inst.n[0])])
        row = np.cumsum(valid, axis=1) - 1 + np.concatenate([[0], np.cumsum(inst.n)[:-1]])[:, None]
        early = np.arange(inst.N)[None, :] < FIRST_BLOCK
        stop = np.zeros(valid.shape, dtype=bool)
        for block in (valid & early, None):
            if block is None:  # second pass: the later depths of tasks still walking
                block = valid & ~early & ~stop.any(axis=1)[:, None]
            if block.any():
                stop[block] = self._predict(model, X[row[block]])
        return walk(stop, inst.n)


def without(groups) -> list[str]:
    drop = {f for g in groups for f in g}
    return [f for f in FEATURES if f != "lam" and f not in drop]


NO_COST = without([COST_FEATURES])
NO_MEMBERSHIP = without([MEMBERSHIP_FEATURES])
NO_TASK = without([TASK_FEATURES])
