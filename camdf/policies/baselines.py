"""Baselines: full access, none, fixed top-k, thresholds on score, score per cost,
predicted membership and predicted sufficiency, plug-in argmax and the marginal rule.

Every threshold or k is tuned on the training batch to maximise mean training
payoff at the cell's lambda and d (ties go to the first candidate, so tuning is
deterministic). Full, none, plug-in argmax, the marginal rule and the best prefix
learn nothing and decide without fit.
"""

from __future__ import annotations

import numpy as np
from sklearn.utils.validation import check_is_fitted

from camdf.core.features import plugin_payoffs
from camdf.policies.base import StateBatch, StoppingRule, candidate_thresholds, first_crossing_depths


class Full(StoppingRule):
    """Expose every candidate."""

    requires_fit = False

    def decide(self, batch: StateBatch) -> np.ndarray:
        return batch.inst.n.copy()


class NoTools(StoppingRule):
    """Expose nothing."""

    requires_fit = False

    def decide(self, batch: StateBatch) -> np.ndarray:
        return np.zeros(batch.inst.T, dtype=np.int64)


class FixedK(StoppingRule):
    """Expose the top k (k tuned on training payoff).

    Attributes
    ----------
    k_ : int
    """

    def fit(self, batch: StateBatch) -> "FixedK":
        n = batch.inst.n
        ks = np.arange(int(n.max()) + 1)
        depth = np.minimum(ks[:, None], n[None, :])
        means = np.take_along_axis(batch.u, depth.T, axis=1).mean(axis=0)
        self.k_ = int(ks[np.argmax(means)])
        return self

    def decide(self, batch: StateBatch) -> np.ndarray:
        check_is_fitted(self)
        return np.minimum(self.k_, batch.inst.n)

    def tuned_parameters(self) -> dict[str, object]:
        check_is_fitted(self)
        return {"k": self.k_}


class ThresholdRule(StoppingRule):
    """Stop at the first state whose statistic crosses a tuned threshold.

    Parameters
    ----------
    stat : str
        Feature name (see :mod:`camdf.core.features`).
    stop_below : bool
        Stop where the statistic falls below the threshold (True) or reaches it (False).
    max_candidates : int
        Quantiles of the training statistic tried as thresholds (see :func:`candidate_thresholds`).

    Attributes
    ----------
    threshold_ : float
    """

    def __init__(self, stat: str, stop_below: bool = True, max_candidates: int = 64):
        self.stat = stat
        self.stop_below = stop_below
        self.max_candidates = max_candidates

    def fit(self, batch: StateBatch) -> "ThresholdRule":
        stat = batch.feats[self.stat]
        taus = candidate_thresholds(stat, batch.inst.valid, self.max_candidates)
        depths = first_crossing_depths(stat, taus, batch.inst.n, self.stop_below)
        means = np.take_along_axis(batch.u, depths.T, axis=1).mean(axis=0)
        self.threshold_ = float(taus[np.argmax(means)])
        return self

    def decide(self, batch: StateBatch) -> np.ndarray:
        check_is_fitted(self)
        taus = np.array([self.threshold_])
        return first_crossing_depths(batch.feats[self.stat], taus, batch.inst.n, self.stop_below)[0]

    def tuned_parameters(self) -> dict[str, object]:
        check_is_fitted(self)
        return {"threshold": self.threshold_}


def score_threshold() -> ThresholdRule:
    """Stop at the first tool whose raw ranker score is below the threshold."""
    return ThresholdRule("next_score", stop_below=True)


def score_per_cost() -> ThresholdRule:
    """Stop at the first tool whose (normalised score) / cost is below the threshold."""
    return ThresholdRule("score_per_cost", stop_below=True)


def predict_threshold() -> ThresholdRule:
    """Stop at the first tool whose predicted membership is below the threshold."""
    return ThresholdRule("p_next", stop_below=True)


def sufficiency_threshold() -> ThresholdRule:
    """Stop at the first depth whose predicted P(G_x inside A_t) reaches the threshold."""
    return ThresholdRule("p_suff", stop_below=False)


class PluginArgmax(StoppingRule):
    """Predict-then-optimise: the depth maximising estimated P(sufficient) - lambda * C(A_t)."""

    requires_fit = False

    def decide(self, batch: StateBatch) -> np.ndarray:
        return np.argmax(plugin_payoffs(batch.inst, batch.p, batch.lam, batch.kind), axis=1)


class MarginalRule(StoppingRule):
    """Continue while the estimated gain in P(sufficient) is at least lambda * cost of the next tool."""

    requires_fit = False

    def stop_matrix(self, batch: StateBatch) -> np.ndarray:
        gain = batch.feats["p_suff_next"] - batch.feats["p_suff"]
        return gain < batch.feats["lam_cost"]


class BestPrefix(StoppingRule):
    """Oracle: the best depth in hindsight (reads the true payoffs; not deployable)."""

    requires_fit = False
    needs_truth = True

    def decide(self, batch: StateBatch) -> np.ndarray:
        if batch.u is None:
            raise ValueError("batch.u: BestPrefix reads the true prefix payoffs; this batch carries none")
        return np.argmax(batch.u, axis=1)
