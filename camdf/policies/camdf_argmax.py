"""CAM-DF-argmax: regress each depth's payoff relative to full access with LightGBM, expose the argmax depth."""

from __future__ import annotations

import numpy as np
from sklearn.utils.validation import check_is_fitted

from camdf.core.features import plugin_payoffs
from camdf.core.payoff import at_depth
from camdf.policies.base import StateBatch, rule_params
from camdf.policies.boosting import BASE_PARAMS, StateBooster, booster_numbers, booster_of, fit_booster, read_booster

# What CamDFArgmax's inner cross-validation picks from: shallow corrections of the plug-in estimate;
# ``n_estimators: 0`` is the plug-in estimate itself (no correction).
ARGMAX_GRID = (
    {"n_estimators": 0},
    {"num_leaves": 3, "n_estimators": 50, "reg_lambda": 10.0, "min_child_samples": 20},
    {"num_leaves": 3, "n_estimators": 150, "reg_lambda": 10.0, "min_child_samples": 20},
    {"num_leaves": 7, "n_estimators": 50, "reg_lambda": 10.0, "min_child_samples": 30},
)


class CamDFArgmax(StateBooster):
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
    features, tool_identity, inner_folds, random_state
        As :class:`~camdf.policies.camdf.CamDF`'s (here ``tool_identity`` is off by default).
    base_margin : bool
        Start the booster from the plug-in estimate (False: regress from zero, the ablation).
    grid : sequence of dict
        Candidates for the inner cross-validation (``n_estimators: 0``: no booster).

    Attributes
    ----------
    params_ : dict
    coverage_ : float
        The training list coverage q of the plug-in estimate.
    model_ : lightgbm.Booster or None
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
        return fit_booster(full, "regression", self._matrix(batch), y, init_score=self._margin(batch, coverage)[valid],
                           categorical_feature=cat)

    def _argmax_depths(self, model, batch: StateBatch, coverage: float) -> np.ndarray:
        inst = batch.inst
        rel = self._margin(batch, coverage)
        if model is not None:
            rel = rel.copy()
            rel[inst.valid] += booster_of(model).predict(self._matrix(batch), raw_score=True, num_threads=1)
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
                "booster": booster_numbers(self.model_)}

    @classmethod
    def from_numbers(cls, numbers: dict) -> "CamDFArgmax":
        """The fitted rule of :meth:`to_numbers`: the same decisions."""
        rule = cls(**rule_params(cls, numbers))
        rule.params_ = dict(numbers["chosen"])
        rule.coverage_ = float(numbers["coverage"])
        rule.model_ = read_booster(numbers["booster"], "rule.booster", rule.n_columns())
        return rule

    def tuned_parameters(self) -> dict[str, object]:
        check_is_fitted(self)
        return {"params": self.params_}
