"""CAM-DF: a |Delta|-weighted classifier of stop vs continue on state features.

The full model is LightGBM with the next tool's identity as a categorical feature;
CAM-DF-lite is a weighted L2 logistic regression on exactly 10 standardised
features with named coefficients. The |Delta|-weighted Bayes rule is
stop iff E[Delta | features] >= 0, which a weighted classifier's P(stop) >= 1/2
approximates. Ablations switch the weighting, feature groups or the target.
"""

from __future__ import annotations

import os

import lightgbm as lgb
import numpy as np
import pandas as pd
from scipy.special import expit
from sklearn.linear_model import LogisticRegression
from sklearn.preprocessing import StandardScaler
from sklearn.utils.validation import check_is_fitted

from camdf.core.features import (
    COST_FEATURES, FEATURES, LITE_FEATURES, MEMBERSHIP_FEATURES, TASK_FEATURES, design, plugin_payoffs,
)
from camdf.core.targets import walk
from camdf.core.payoff import at_depth
from camdf.policies.base import StateBatch, StoppingRule, check_fitted
from camdf.policies.plain import OneTask, first_stop

# Small-data hyperparameter candidates, chosen per training set by inner cross-validation on payoff:
# a very shallow, strongly regularised booster first (a main cell has ~640 training states), then the
# paper's deeper ones.
DEFAULT_GRID = (
    {"num_leaves": 3, "n_estimators": 50, "reg_lambda": 10.0, "min_child_samples": 20},
    {"num_leaves": 7, "min_child_samples": 10},
    {"num_leaves": 15, "min_child_samples": 30},
)
# What CamDFArgmax's inner cross-validation picks from: shallow corrections of the plug-in estimate;
# ``n_estimators: 0`` is the plug-in estimate itself (no correction).
ARGMAX_GRID = (
    {"n_estimators": 0},
    {"num_leaves": 3, "n_estimators": 50, "reg_lambda": 10.0, "min_child_samples": 20},
    {"num_leaves": 3, "n_estimators": 150, "reg_lambda": 10.0, "min_child_samples": 20},
    {"num_leaves": 7, "n_estimators": 50, "reg_lambda": 10.0, "min_child_samples": 30},
)
# CamDF.decide scores these first depths of every task before the rest of the walking ones.
FIRST_BLOCK = 16
# Predictions on at least this many states at once may use CamDF.predict_jobs threads. One request of a
# few thousand tools is scored in about a millisecond on one thread, less than an OpenMP hand-off costs on a
# busy machine (at 512 rows, two threads made one 1,000-tool decision 2-3x slower under load); a big
# batch still uses them. Threads change no prediction (rows are scored independently).
PARALLEL_ROWS = 16_384
BASE_PARAMS = {
    "n_estimators": 150,
    "learning_rate": 0.05,
    "reg_lambda": 1.0,
    "subsample": 1.0,
    "colsample_bytree": 1.0,
    "n_jobs": 1,
    "deterministic": True,
    "force_row_wise": True,
    "verbose": -1,
    # The tool-identity column: LightGBM's categorical smoothing (cat_smooth = cat_l2 = 10) outweighs the
    # summed |Delta|-weighted hessians of a tool's ~100 states, so the column was never split on (0 of 900
    # splits at the supervised main cell); at 1 it is (10 of 900). 20 rows per category, not 100, may form a
    # group in the smaller training sets of other domains.
    "min_data_per_group": 20,
    "cat_smooth": 1.0,
    "cat_l2": 1.0,
}


def _booster(model) -> lgb.Booster:
    """The booster of a fitted LightGBM estimator, or the booster itself (a rule read back by ``from_numbers``)."""
    return model if isinstance(model, lgb.Booster) else model.booster_


def _booster_numbers(model) -> str | None:
    """A fitted model in LightGBM's text model format (None: no booster)."""
    return None if model is None else _booster(model).model_to_string()


def _read_booster(text, field: str) -> lgb.Booster | None:
    """The booster of :func:`_booster_numbers` (LightGBM parses its text format; nothing is unpickled)."""
    if text is None:
        return None
    if not isinstance(text, str) or not text.startswith("tree\n"):
        raise ValueError(f"{field}: expected LightGBM's text model format")
    try:
        return lgb.Booster(model_str=text)
    except lgb.basic.LightGBMError as err:
        raise ValueError(f"{field}: LightGBM cannot read the model: {str(err).strip()[:200]}") from None


def _rule_params(cls, numbers: dict) -> dict:
    """``numbers["params"]`` checked against ``cls``'s parameters (ValueError naming an unknown one)."""
    params = dict(numbers["params"])
    unknown = sorted(set(params) - set(cls._get_param_names()))
    if unknown:
        raise ValueError(f"params: {unknown} are not parameters of {cls.__name__}")
    return params


class _StateBooster(StoppingRule):
    """What the LightGBM rules share: their state features, design matrix and inner cross-validation."""

    def _names(self) -> list[str]:
        return list(self.features) if self.features is not None else [f for f in FEATURES if f != "lam"]

    def feature_names(self) -> tuple[str, ...]:
        return tuple(self._names())

    @property
    def lambda_conditioned(self) -> bool:
        return "lam" in self._names()

    def _matrix(self, batch: StateBatch) -> np.ndarray:
        """The valid states' features, with the next tool's identity as the last column."""
        extra = (batch.inst.tool_ids,) if self.tool_identity else ()
        return design(batch.feats, self._names(), batch.inst.valid, extra)

    def _choose(self, batch: StateBatch, payoff) -> dict:
        """The grid candidate with the largest inner cross-validated payoff (the first with one candidate
        or too few tasks); ``payoff(train, valid, params)`` is the summed payoff on ``valid``."""
        grid = list(self.grid)
        if len(grid) == 1 or batch.inst.T < 2 * self.inner_folds:
            return grid[0]
        rng = np.random.default_rng(self.random_state)
        inner = rng.permutation(np.arange(batch.inst.T) % self.inner_folds)
        scores = np.zeros(len(grid))
        for f in range(self.inner_folds):
            tr, va = batch.subset(inner != f), batch.subset(inner == f)
            for g, params in enumerate(grid):
                scores[g] += payoff(tr, va, params)
        return grid[int(np.argmax(scores))]


class CamDF(_StateBooster):
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
    model_ : lightgbm.LGBMClassifier, lightgbm.LGBMRegressor, lightgbm.Booster or ("constant", bool)
        The fitted model (its booster when read back by :meth:`from_numbers`), or the constant
        decision when the training states have one class.
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
            y = batch.delta[valid]
            return lgb.LGBMRegressor(**full).fit(X, y, categorical_feature=cat)
        y = batch.label[valid].astype(int)
        w = batch.weight[valid] if self.weighted else np.ones(len(y))
        keep = w > 0
        if len(np.unique(y[keep])) < 2:
            return ("constant", bool(y[keep][0]) if keep.any() else True)
        return lgb.LGBMClassifier(**full).fit(X[keep], y[keep], sample_weight=w[keep], categorical_feature=cat)

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
            threads = (os.cpu_count() or 1) if self.predict_jobs == -1 else max(1, self.predict_jobs)
        return _booster(model).predict(X, raw_score=True, num_threads=threads) >= 0

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
                "booster": None if constant else _booster_numbers(self.model_)}

    @classmethod
    def from_numbers(cls, numbers: dict) -> "CamDF":
        """The fitted rule of :meth:`to_numbers`: the same decisions (the booster's own text format)."""
        rule = cls(**_rule_params(cls, numbers))
        rule.params_ = dict(numbers["chosen"])
        if numbers.get("constant") is not None:
            rule.model_ = ("constant", bool(numbers["constant"]))
        else:
            rule.model_ = _read_booster(numbers["booster"], "rule.booster")
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


class CamDFLite(StoppingRule):
    """Weighted L2 logistic regression on 10 standardised features.

    Attributes
    ----------
    coefficients_ : pandas.Series
        One coefficient per feature (standardised units), plus ``intercept``.
    scaler_ : sklearn.preprocessing.StandardScaler
    model_ : sklearn.linear_model.LogisticRegression or None
        None when the training states have one class; ``constant_`` is then the decision.
    """

    def __init__(self, features=LITE_FEATURES, C: float = 1.0, weighted: bool = True):
        self.features = features
        self.C = C
        self.weighted = weighted

    def fit(self, batch: StateBatch) -> "CamDFLite":
        valid = batch.inst.valid
        X = design(batch.feats, list(self.features), valid)
        y = batch.label[valid].astype(int)
        w = batch.weight[valid] if self.weighted else np.ones(len(y))
        keep = w > 0
        self.scaler_ = StandardScaler().fit(X[keep] if keep.any() else X)
        if len(np.unique(y[keep])) < 2:
            self.model_ = None
            self.constant_ = bool(y[keep][0]) if keep.any() else True
            coef = np.zeros(len(self.features))
            intercept = np.inf if self.constant_ else -np.inf
        else:
            self.model_ = LogisticRegression(C=self.C, max_iter=5000).fit(
                self.scaler_.transform(X[keep]), y[keep], sample_weight=w[keep] / w[keep].mean()
            )
            coef, intercept = self.model_.coef_[0], float(self.model_.intercept_[0])
        self.coefficients_ = pd.Series([*coef, intercept], index=[*self.features, "intercept"], name="coefficient")
        return self

    def feature_names(self) -> tuple[str, ...]:
        return tuple(self.features)

    def to_numbers(self) -> dict:
        """The fitted rule as plain coefficients: the scaler's means and scales, the logistic model's
        coefficients and intercept (None, with ``constant``, for a one-class fit)."""
        check_is_fitted(self)
        params = self.get_params()
        return {"params": {**params, "features": list(params["features"])},
                "mean": self.scaler_.mean_.tolist(), "scale": self.scaler_.scale_.tolist(),
                "coef": None if self.model_ is None else self.model_.coef_[0].tolist(),
                "intercept": None if self.model_ is None else float(self.model_.intercept_[0]),
                "constant": bool(self.constant_) if self.model_ is None else None}

    @classmethod
    def from_numbers(cls, numbers: dict) -> "CamDFLite":
        """The fitted rule of :meth:`to_numbers`, deciding with the same arithmetic (ValueError on a shape
        that does not match its features)."""
        params = _rule_params(cls, numbers)
        params["features"] = tuple(params.get("features", LITE_FEATURES))
        rule = cls(**params)
        k = len(rule.features)
        mean, scale = np.asarray(numbers["mean"], dtype=float), np.asarray(numbers["scale"], dtype=float)
        if mean.shape != (k,) or scale.shape != (k,):
            raise ValueError(f"rule.mean, rule.scale: expected {k} numbers each (one per feature)")
        rule.scaler_ = StandardScaler()
        rule.scaler_.mean_, rule.scaler_.scale_, rule.scaler_.var_ = mean, scale, scale ** 2
        rule.scaler_.n_features_in_ = k
        if numbers["coef"] is None:
            rule.model_ = None
            rule.constant_ = bool(numbers["constant"])
            coef, intercept = np.zeros(k), np.inf if rule.constant_ else -np.inf
        else:
            coef, intercept = np.asarray(numbers["coef"], dtype=float), float(numbers["intercept"])
            if coef.shape != (k,):
                raise ValueError(f"rule.coef: expected {k} numbers (one per feature), got shape {coef.shape}")
            rule.model_ = LogisticRegression(C=rule.C, max_iter=5000)
            rule.model_.coef_, rule.model_.intercept_ = coef[None, :], np.array([intercept])
            rule.model_.classes_, rule.model_.n_features_in_ = np.array([0, 1]), k
        rule.coefficients_ = pd.Series([*coef, intercept], index=[*rule.features, "intercept"], name="coefficient")
        return rule

    def coefficients(self) -> pd.Series:
        check_is_fitted(self)
        return self.coefficients_

    def stop_matrix(self, batch: StateBatch) -> np.ndarray:
        valid = batch.inst.valid
        stop = np.zeros(batch.inst.tools.shape, dtype=bool)
        stop[valid] = self._stop_rows(design(batch.feats, list(self.features), valid))
        return stop

    def decide_task(self, task: OneTask) -> int:
        """:meth:`decide` for one ranked task in plain Python (the run-time fast path; same arithmetic)."""
        return first_stop(self._stop_rows(np.array(task.features(self.feature_names())).T).tolist())

    def _stop_rows(self, X: np.ndarray) -> np.ndarray:
        """Stop decisions for states given as rows of the 10 feature values, (S,) bool."""
        check_fitted(self, "model_")
        if self.model_ is None:
            return np.full(len(X), self.constant_)
        # The scaler's and the logistic model's own arithmetic, without their per-call checks.
        X = (np.asarray(X, dtype=float) - self.scaler_.mean_) / self.scaler_.scale_
        logit = (X @ self.model_.coef_.T)[:, 0] + self.model_.intercept_[0]
        return expit(logit) >= 0.5


def without(groups) -> list[str]:
    drop = {f for g in groups for f in g}
    return [f for f in FEATURES if f != "lam" and f not in drop]


NO_COST = without([COST_FEATURES])
NO_MEMBERSHIP = without([MEMBERSHIP_FEATURES])
NO_TASK = without([TASK_FEATURES])


class CamDFArgmax(_StateBooster):
    """CAM-DF-argmax: regress each depth's payoff relative to full access, expose the argmax depth.

    For every state (task i, depth t < n_i) a LightGBM regressor predicts
    ``U(A_t) - U(A_n)``, the payoff of stopping at t relative to exposing the whole list
    (whose relative payoff is 0 by definition); the rule exposes the depth with the
    largest prediction (the first on ties). With ``base_margin`` the booster starts from
    the plug-in estimate of that difference (:func:`camdf.core.features.plugin_payoffs`,
    with the training list coverage, as :class:`~camdf.policies.baselines.PluginArgmax`)
    as its ``init_score``, so it learns a correction to the plug-in rule rather than the
    payoff from scratch. Hyperparameters (including "no correction": the plug-in rule
    itself) are chosen by inner cross-validation on payoff.

    Parameters
    ----------
    features : sequence of str or None
        State features (default: all of :data:`camdf.core.features.FEATURES` but ``lam``).
    tool_identity : bool
        Add the next tool's identity as a categorical feature.
    base_margin : bool
        Start the booster from the plug-in estimate (False: regress from zero, the ablation).
    grid : sequence of dict
        Candidates for the inner cross-validation (``n_estimators: 0``: no booster).
    inner_folds : int
    random_state : int

    Attributes
    ----------
    params_ : dict
    coverage_ : float
        The training list coverage q of the plug-in estimate.
    model_ : lightgbm.LGBMRegressor, lightgbm.Booster or None
        None when the chosen candidate is the plug-in estimate alone (a booster when read back by
        :meth:`from_numbers`).
    """

    def __init__(self, features=None, tool_identity: bool = False, base_margin: bool = True, grid=ARGMAX_GRID,
                 inner_folds: int = 3, random_state: int = 0):
        self.features = features
        self.tool_identity = tool_identity
        self.base_margin = base_margin
        self.grid = grid
        self.inner_folds = inner_folds
        self.random_state = random_state

    def _margin(self, batch: StateBatch, coverage: float) -> np.ndarray:
        """Plug-in estimate of U(A_t) - U(A_n) at every state, (T, N)."""
        inst = batch.inst
        if not self.base_margin:
            return np.zeros(inst.tools.shape)
        u = plugin_payoffs(inst, batch.p, batch.lam, batch.kind, coverage=coverage)
        return u[:, :-1] - at_depth(u, inst.n)[:, None]

    def _fit_one(self, batch: StateBatch, params: dict, coverage: float):
        if params.get("n_estimators", 1) == 0:
            return None
        valid = batch.inst.valid
        y = (batch.u[:, :-1] - at_depth(batch.u, batch.inst.n)[:, None])[valid]
        cat = [len(self._names())] if self.tool_identity else "auto"
        full = {**BASE_PARAMS, **params, "random_state": self.random_state}
        return lgb.LGBMRegressor(**full).fit(self._matrix(batch), y, init_score=self._margin(batch, coverage)[valid],
                                             categorical_feature=cat)

    def _argmax_depths(self, model, batch: StateBatch, coverage: float) -> np.ndarray:
        inst = batch.inst
        rel = self._margin(batch, coverage)
        if model is not None:
            rel = rel.copy()
            rel[inst.valid] += _booster(model).predict(self._matrix(batch), raw_score=True, num_threads=1)
        if not self.base_margin and model is None:
            return inst.n.copy()  # nothing learnt: every relative payoff is 0, the reference (full) wins ties
        value = np.concatenate([np.where(inst.valid, rel, -np.inf), np.full((inst.T, 1), -np.inf)], axis=1)
        value[np.arange(inst.T), inst.n] = 0.0  # the reference depth itself
        return np.argmax(value, axis=1)

    def fit(self, batch: StateBatch) -> "CamDFArgmax":
        from camdf.policies.baselines import list_coverage

        self.coverage_ = list_coverage(batch.inst, batch.kind)

        def payoff(tr: StateBatch, va: StateBatch, params: dict) -> float:
            q = list_coverage(tr.inst, tr.kind)
            return at_depth(va.u, self._argmax_depths(self._fit_one(tr, params, q), va, q)).sum()

        self.params_ = self._choose(batch, payoff)
        self.model_ = self._fit_one(batch, self.params_, self.coverage_)
        return self

    def _depths(self, batch: StateBatch) -> np.ndarray:
        check_is_fitted(self)
        return self._argmax_depths(self.model_, batch, self.coverage_)

    def to_numbers(self) -> dict:
        """The fitted rule as JSON-ready data: parameters, chosen candidate, list coverage and the booster in
        LightGBM's text model format (None: the plug-in estimate alone)."""
        check_is_fitted(self)
        return {"params": self.get_params(), "chosen": dict(self.params_), "coverage": float(self.coverage_),
                "booster": _booster_numbers(self.model_)}

    @classmethod
    def from_numbers(cls, numbers: dict) -> "CamDFArgmax":
        """The fitted rule of :meth:`to_numbers`: the same decisions."""
        rule = cls(**_rule_params(cls, numbers))
        rule.params_ = dict(numbers["chosen"])
        rule.coverage_ = float(numbers["coverage"])
        rule.model_ = _read_booster(numbers["booster"], "rule.booster")
        return rule

    def tuned_parameters(self) -> dict[str, object]:
        check_is_fitted(self)
        return {"params": self.params_}
