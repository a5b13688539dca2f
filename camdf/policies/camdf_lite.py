"""CAM-DF-lite: a |Delta|-weighted L2 logistic regression of stop vs continue on 10 standardised state features.

The coefficients are named (:meth:`CamDFLite.coefficients`), so the rule reads as a formula; it is the
small, inspectable sibling of :class:`~camdf.policies.camdf.CamDF`.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.special import expit
from sklearn.linear_model import LogisticRegression
from sklearn.preprocessing import StandardScaler
from sklearn.utils.validation import check_is_fitted

from camdf.core.features import LITE_FEATURES, design
from camdf.policies.base import StateBatch, StoppingRule, check_fitted, rule_params
from camdf.policies.plain import OneTask, first_stop


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
        params = rule_params(cls, numbers)
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
