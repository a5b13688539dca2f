"""What the LightGBM stopping rules share: base parameters, the booster as text, state features and inner CV.

:class:`StateBooster` is the base of :class:`~camdf.policies.camdf.CamDF` and
:class:`~camdf.policies.camdf_argmax.CamDFArgmax`: their state features, design matrix and the
choice of a grid candidate by inner cross-validation on payoff. A fitted booster ships as
LightGBM's own text model format (:func:`booster_numbers`, :func:`read_booster`), never a pickle.
"""

from __future__ import annotations

import lightgbm as lgb
import numpy as np

from camdf.core.features import FEATURES, design
from camdf.policies.base import StateBatch, StoppingRule
from camdf.policies.tree_text import parse_model

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


def fit_booster(params: dict, objective: str, X: np.ndarray, y: np.ndarray, *, weight=None, init_score=None,
                categorical_feature="auto") -> lgb.Booster:
    """The booster ``lgb.LGBMClassifier(**params)`` (objective ``binary``) or ``lgb.LGBMRegressor(**params)``
    (``regression``) fits on ``X, y``: the same parameters (its scikit-learn names are LightGBM aliases; ``n_jobs``
    is ``num_threads``, ``n_estimators`` the rounds), the same model text bit for bit
    (tests/unit/policies/test_trees.py), without the estimator's round trip of the fitted model through its text
    (``keep_training_booster``), a tenth of a small fit's time and thousands of fits in a reproduce."""
    core = {k: v for k, v in params.items() if k not in ("n_estimators", "n_jobs")}
    core.update(objective=objective, metric=objective, num_threads=params.get("n_jobs", 1))
    data = lgb.Dataset(X, label=y, weight=weight, init_score=init_score, categorical_feature=categorical_feature,
                       params=core)
    return lgb.train(core, data, num_boost_round=params["n_estimators"], keep_training_booster=True)


def booster_of(model) -> lgb.Booster:
    """The booster of a fitted LightGBM estimator, or the booster itself (a rule read back by ``from_numbers``)."""
    return model if isinstance(model, lgb.Booster) else model.booster_


def booster_numbers(model) -> str | None:
    """A fitted model in LightGBM's text model format (None: no booster)."""
    return None if model is None else booster_of(model).model_to_string()


def read_booster(text, field: str, n_features: int | None = None) -> lgb.Booster | None:
    """The booster of :func:`booster_numbers` (LightGBM parses its text format; nothing is unpickled).

    The text is checked against the project's bounds first (:func:`camdf.policies.tree_text.parse_model`:
    trees, leaves, nodes, feature indices within ``n_features`` columns, binary trees, finite numbers), so
    a hostile text is refused in one line naming ``field`` before LightGBM's parser, which may abort the
    process on one, sees it."""
    if text is None:
        return None
    if not isinstance(text, str) or not text.startswith("tree\n"):
        raise ValueError(f"{field}: expected LightGBM's text model format")
    parse_model(text, field, n_features)
    try:
        return lgb.Booster(model_str=text)
    except lgb.basic.LightGBMError as err:
        raise ValueError(f"{field}: LightGBM cannot read the model: {str(err).strip()[:200]}") from None


class StateBooster(StoppingRule):
    """What the LightGBM rules share: their state features, design matrix and inner cross-validation."""

    def _names(self) -> list[str]:
        return list(self.features) if self.features is not None else [f for f in FEATURES if f != "lam"]

    def feature_names(self) -> tuple[str, ...]:
        return tuple(self._names())

    def n_columns(self) -> int:
        """The columns of the design matrix (:meth:`_matrix`): the features, then the tool identity."""
        return len(self._names()) + bool(self.tool_identity)

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
