"""Baselines: full access, none, fixed top-k, thresholds on score, score per cost,
predicted membership and predicted sufficiency, plug-in argmax and the marginal rule.

Every threshold or k is tuned on the training batch to maximise mean training
payoff at the cell's lambda and d (ties go to the first candidate, so tuning is
deterministic). Plug-in argmax and the marginal rule learn one number, the list
coverage (:func:`list_coverage`: how often the full candidate list is sufficient on
the training tasks; below 1 when candidates are truncated and G_x falls off the
list). Full, none and the best prefix learn nothing and decide without fit.
"""

from __future__ import annotations

import numpy as np
from sklearn.utils.validation import check_is_fitted

from camdf.core.features import expected_partial_curve, plugin_payoffs
from camdf.core.instances import Instances
from camdf.core.payoff import at_depth
from camdf.policies.base import StateBatch, StoppingRule, candidate_thresholds, first_crossing_depths


class Full(StoppingRule):
    """Expose every candidate."""

    requires_fit = False

    def _depths(self, batch: StateBatch) -> np.ndarray:
        return batch.inst.n.copy()


class NoTools(StoppingRule):
    """Expose nothing."""

    requires_fit = False

    def _depths(self, batch: StateBatch) -> np.ndarray:
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

    def _depths(self, batch: StateBatch) -> np.ndarray:
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

    def _depths(self, batch: StateBatch) -> np.ndarray:
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


def list_coverage(inst: Instances, kind: str) -> float:
    """Estimated coverage q of the candidate lists, from tasks with their true curves.

    exact: the share of tasks whose full list is sufficient, mean_i success[i, n_i];
    partial: the mean listed share of G_x, mean_i partial[i, n_i]. ``Instances``
    carries only the listed required tools, so |G_x| enters through ``partial``, whose
    denominator counts required tools cut off the list (see
    :func:`camdf.core.instances.truncate`). q = 1 when every G_x is listed. The rules
    fit q on their training batch's kind (its labels, e.g. partial under
    ``label_source: partial``).
    """
    if inst.T == 0:
        raise ValueError("batch.inst: no training tasks to estimate the list coverage from")
    curve = inst.success.astype(float) if kind == "exact" else inst.partial
    return float(at_depth(curve, inst.n).mean())


class PluginArgmax(StoppingRule):
    """Predict-then-optimise: the depth maximising q * P_hat(sufficient at t) - lambda * C(A_t).

    P_hat is the plug-in sufficiency (or expected partial value) of the listed tools,
    which assumes all of G_x is listed; q (``coverage_``, :func:`list_coverage`) scales
    it by how often the full list is sufficient on the training tasks, so that under
    candidate truncation the rule does not pay for tools that cannot complete G_x.

    Attributes
    ----------
    coverage_ : float
        q in [0, 1], fitted on the training batch (1 when no G_x lies outside its list).
    """

    def fit(self, batch: StateBatch) -> "PluginArgmax":
        self.coverage_ = list_coverage(batch.inst, batch.kind)
        return self

    def _depths(self, batch: StateBatch) -> np.ndarray:
        check_is_fitted(self)
        u = plugin_payoffs(batch.inst, batch.p, batch.lam, batch.kind, coverage=self.coverage_)
        return np.argmax(u, axis=1)

    def tuned_parameters(self) -> dict[str, object]:
        check_is_fitted(self)
        return {"coverage": self.coverage_}


class MarginalRule(StoppingRule):
    """Continue while the estimated gain in P(sufficient) from the next tool is at least lambda * its cost.

    The gain of the tool at position t is measured against the complete list: the
    loss in estimated P(sufficient) if t alone were dropped from it. Under the
    independent memberships of the plug-in, P_hat(suff | A) = prod_{j not in A} (1 - p_j),
    so with every other tool included that loss is ``p_t``, scaled by the coverage q:

        gain_t = q * p_t  (exact),    gain_t = q * p_t / sum_j p_j  (partial)

    (the partial value is additive, so there its gain is the same from any prefix).
    The rule stops at the first t with ``gain_t < lambda * c_t`` and exposes the
    prefix before it. The gain of the next tool from the current prefix,
    P_hat(suff | A_{t+1}) - P_hat(suff | A_t), is not used: for a G_x of several tools
    it is near 0 until the prefix nearly covers G_x, so that rule stopped at depth 0
    everywhere.

    First failure rather than the last passing position: the rule is the myopic
    "continue while" rule of its definition, one decision per depth, never paying for
    a tool whose own gain is below its cost in the hope of a better one after it (that
    look-ahead is what :class:`PluginArgmax` does over the whole curve).

    Attributes
    ----------
    coverage_ : float
        q in [0, 1] (:func:`list_coverage`).
    """

    def fit(self, batch: StateBatch) -> "MarginalRule":
        self.coverage_ = list_coverage(batch.inst, batch.kind)
        return self

    def stop_matrix(self, batch: StateBatch) -> np.ndarray:
        check_is_fitted(self)
        valid = batch.inst.valid
        if batch.kind == "exact":
            gain = np.where(valid, np.clip(batch.p, 0.0, 1.0), 0.0)
        else:
            gain = np.diff(expected_partial_curve(batch.p, valid), axis=1)
        return self.coverage_ * gain < batch.lam * batch.inst.costs

    def tuned_parameters(self) -> dict[str, object]:
        check_is_fitted(self)
        return {"coverage": self.coverage_}


class BestPrefix(StoppingRule):
    """Oracle: the best depth in hindsight (reads the true payoffs; not deployable)."""

    requires_fit = False
    needs_truth = True

    def _depths(self, batch: StateBatch) -> np.ndarray:
        if batch.u is None:
            raise ValueError("batch.u: BestPrefix reads the true prefix payoffs; this batch carries none")
        return np.argmax(batch.u, axis=1)


class OracleSet(StoppingRule):
    """Oracle: expose exactly the listed G_x (A = G_x, not a prefix; reads the true membership, not deployable).

    A set rule: :meth:`select` gives each task's required tools; the evaluator scores the
    set as sufficient (success 1), at the cost of its tools.
    """

    requires_fit = False
    needs_truth = True
    picks_prefix = False

    def _subset(self, batch: StateBatch) -> np.ndarray:
        return batch.inst.member.copy()
