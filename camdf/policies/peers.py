"""The field's own baselines: always-loaded tools (a static set), a fixed top five, and the Bits-over-Random depth.

Each wraps an estimator of :mod:`camdf.core.set_baselines` (or nothing, for the top five)
on the rule interface, tuned on the training batch like the other baselines.
"""

from __future__ import annotations

import numpy as np
from sklearn.utils.validation import check_is_fitted

from camdf.core.features import sufficiency_curve
from camdf.core.set_baselines import BoRDepth, StaticSet
from camdf.policies.base import StateBatch, StoppingRule

__all__ = ["BoRDepthRule", "StaticSetRule", "TopK", "bor_features"]


class StaticSetRule(StoppingRule):
    """One subset of the tool vocabulary exposed to every task ("always-loaded tools"), a set rule.

    Fitting chooses the set of highest mean true training payoff (alternatives count as
    success) at the batch's lambda (:class:`camdf.core.set_baselines.StaticSet`: exact up to
    ``max_exact`` tools, a forward path with single flips beyond); a task exposes the chosen
    tools among its candidates, whatever their rank.

    Attributes
    ----------
    static_ : StaticSet
    """

    picks_prefix = False

    def __init__(self, max_exact: int = 12):
        self.max_exact = max_exact

    def feature_names(self) -> tuple[str, ...]:
        return ()

    def fit(self, batch: StateBatch) -> "StaticSetRule":
        inst = batch.inst
        sets, present = inst.sufficient()
        self.static_ = StaticSet(self.max_exact).fit(inst.tool_ids, inst.valid, inst.costs, batch.lam, sets, present,
                                                     batch.kind, inst.member)
        return self

    def _subset(self, batch: StateBatch) -> np.ndarray:
        check_is_fitted(self)
        return self.static_.predict(batch.inst.tool_ids, batch.inst.valid)

    def tuned_parameters(self) -> dict[str, object]:
        check_is_fitted(self)
        return {"n_tools": len(self.static_.tools_), "exact": self.static_.exact_}


class TopK(StoppingRule):
    """Expose the top k of the ranking, k fixed and untuned (the product default of five tools)."""

    requires_fit = False

    def __init__(self, k: int = 5):
        self.k = k

    def feature_names(self) -> tuple[str, ...]:
        return ()

    def _depths(self, batch: StateBatch) -> np.ndarray:
        return np.minimum(int(self.k), batch.inst.n)


def bor_features(batch: StateBatch) -> np.ndarray:
    """The task-level state a :class:`BoRDepthRule` reads, (T, 6): only what a request carries.

    Columns: the sum of the membership probabilities (the expected |G_x|), the largest
    one, the plug-in chance that the top 3 and the top 5 cover G_x, log(1 + n), and the
    gap between the top two normalised scores.
    """
    inst, p = batch.inst, np.where(batch.inst.valid, batch.p, 0.0)
    suff = sufficiency_curve(p, inst.valid)
    n = inst.n
    at = lambda t: suff[np.arange(inst.T), np.minimum(t, n)]  # noqa: E731
    s = np.where(inst.valid, inst.scores, np.nan)
    spread = np.nanmax(s, axis=1) - np.nanmin(s, axis=1) if inst.N else np.zeros(inst.T)
    top2 = np.where(n >= 2, (s[:, 0] - (s[:, 1] if inst.N > 1 else s[:, 0])) / np.where(spread > 0, spread, 1.0), 0.0)
    return np.column_stack([p.sum(axis=1), p.max(axis=1, initial=0.0), at(3), at(5), np.log1p(n),
                            np.nan_to_num(top2)])


class BoRDepthRule(StoppingRule):
    """The chance-corrected depth policy of arXiv 2605.24660 (Bits-over-Random), a prefix rule.

    :class:`camdf.core.set_baselines.BoRDepth` on the task state :func:`bor_features`: one
    ridge model per depth of the Bits-over-Random reward ``1{success at K} * log2(1 / chance(K))``
    (chance: the hypergeometric chance that a random K-subset covers G_x), the depth of highest
    predicted reward per task. What was assumed is stated there (offline full-feedback
    training instead of the paper's reinforcement learning; a missed depth earns 0; chance
    uses the smallest sufficient set); costs and lambda do not enter, as in the peer's reward.

    Parameters
    ----------
    ridge : float
        Ridge penalty.

    Attributes
    ----------
    model_ : BoRDepth
    """

    def __init__(self, ridge: float = 1.0):
        self.ridge = ridge

    def feature_names(self) -> tuple[str, ...]:
        return ()

    def fit(self, batch: StateBatch) -> "BoRDepthRule":
        inst = batch.inst
        sets, present = inst.sufficient()
        size = np.where(present, sets.sum(axis=2), np.iinfo(np.int64).max).min(axis=1)
        g = np.where(present.any(axis=1), size, inst.member.sum(axis=1))
        self.model_ = BoRDepth(alpha=self.ridge).fit(bor_features(batch), inst.success, inst.n, np.minimum(g, inst.n))
        return self

    def _depths(self, batch: StateBatch) -> np.ndarray:
        check_is_fitted(self)
        return np.minimum(self.model_.predict(bor_features(batch), batch.inst.n), batch.inst.n)
