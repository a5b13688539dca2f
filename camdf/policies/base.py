"""What every stopping rule sees: a batch of states, and the estimator interface.

A rule is fitted on a training :class:`StateBatch` (which carries the true payoffs
and the Delta labels) and then decides a depth for each task of a test batch (which
carries neither: only scores, costs and out-of-fold membership estimates). Rules are
scikit-learn estimators: ``get_params``, ``set_params``, ``clone`` and ``repr`` work,
fitted attributes end in ``_``, and using a rule that must learn before fit raises
:class:`sklearn.exceptions.NotFittedError`.
"""

from __future__ import annotations

from dataclasses import dataclass

from typing import Any

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import check_is_fitted

from camdf.common.dials import Dial, dial_names
from camdf.core.features import FEATURES, state_features
from camdf.core.instances import Instances, truncate
from camdf.core.targets import deltas, stop_labels, walk
from camdf.core.payoff import prefix_payoffs
from camdf.core.recovery import Search, recovery_prefix_payoffs


@dataclass
class StateBatch:
    """Instances with their membership estimates and state features at one lambda.

    ``u``, ``delta``, ``label`` and ``weight`` are set only for training batches
    (``u``, the true prefix payoffs, also on the test batch an oracle decides on).
    ``search`` is the fallback of the recovery payoff (:mod:`camdf.core.recovery`), None without one:
    with it the labels are CAM-DF's Delta under the recovery payoff (``kind`` then names the value
    the features estimate, exact).
    """

    inst: Instances
    p: np.ndarray
    lam: float
    kind: str
    feats: dict
    u: np.ndarray | None = None
    delta: np.ndarray | None = None
    label: np.ndarray | None = None
    weight: np.ndarray | None = None
    search: Search | None = None

    @classmethod
    def make(cls, inst: Instances, p: np.ndarray, lam: float, kind: str, train: bool,
             search: Search | None = None) -> "StateBatch":
        feats = state_features(inst, p, lam, kind)
        if not train:
            return cls(inst, p, lam, kind, feats, search=search)
        u = prefix_payoffs(inst, lam, kind) if search is None else recovery_prefix_payoffs(inst, lam, search)
        delta = deltas(u)
        label, weight = stop_labels(delta)
        return cls(inst, p, lam, kind, feats, u, delta, label, weight, search)

    @classmethod
    def across_lambdas(cls, inst: Instances, p: np.ndarray, lams, kind: str,
                       search: Search | None = None) -> "StateBatch":
        """One training batch of the same tasks at every lambda of ``lams``, stacked (lambda is a
        feature, so a rule fitted on it is lambda-conditioned)."""
        return concat_batches([cls.make(inst, p, float(lam), kind, train=True, search=search) for lam in lams])

    def head(self, depth: int | None) -> "StateBatch":
        """The batch's first ``depth`` states per task (None, or at least the batch's width: itself).

        Features, payoffs and Delta labels were computed on the whole lists, so each kept state is
        unchanged (its label still compares against every deeper prefix of the whole list); only the
        lists end at ``depth`` (:func:`camdf.core.instances.truncate`), where a rule fitted on the batch
        stops walking. Used to bound what the rules learn from at catalog scale (``candidates.fit_depth``).
        """
        if depth is None or depth >= self.inst.N:
            return self
        k = int(depth)
        cut = (lambda a: None if a is None else a[:, :k])
        return StateBatch(
            truncate(self.inst, k), self.p[:, :k], self.lam, self.kind, {n: v[:, :k] for n, v in self.feats.items()},
            None if self.u is None else self.u[:, : k + 1], cut(self.delta), cut(self.label), cut(self.weight),
            self.search,
        )

    def subset(self, rows: np.ndarray) -> "StateBatch":
        pick = (lambda a: None if a is None else a[rows])
        return StateBatch(
            self.inst.subset(rows), self.p[rows], self.lam, self.kind,
            {k: v[rows] for k, v in self.feats.items()},
            pick(self.u), pick(self.delta), pick(self.label), pick(self.weight), self.search,
        )


def concat_batches(batches: list[StateBatch]) -> StateBatch:
    """Stack training batches (e.g. the same tasks at several lambdas) into one."""
    if len(batches) == 1:
        return batches[0]
    first = batches[0]
    cat = lambda get: np.concatenate([get(b) for b in batches], axis=0)  # noqa: E731
    inst = Instances(
        task_ids=cat(lambda b: b.inst.task_ids), tools=cat(lambda b: b.inst.tools),
        scores=cat(lambda b: b.inst.scores), costs=cat(lambda b: b.inst.costs),
        member=cat(lambda b: b.inst.member), success=cat(lambda b: b.inst.success),
        partial=cat(lambda b: b.inst.partial), n=cat(lambda b: b.inst.n), folds=cat(lambda b: b.inst.folds),
        text_len=cat(lambda b: b.inst.text_len), tool_ids=cat(lambda b: b.inst.tool_ids), vocab=first.inst.vocab,
    )
    if all(b.inst.sets is not None for b in batches):
        # Tasks may hold different numbers of sufficient sets: pad each batch's to the largest K (not present).
        K = max(b.inst.sets.shape[1] for b in batches)
        pad = lambda a, value: np.pad(a, [(0, 0), (0, K - a.shape[1])] + [(0, 0)] * (a.ndim - 2),  # noqa: E731
                                      constant_values=value)
        inst.sets = np.concatenate([pad(b.inst.sets, False) for b in batches], axis=0)
        inst.present = np.concatenate([pad(b.inst.present, False) for b in batches], axis=0)
    return StateBatch(
        inst, cat(lambda b: b.p), first.lam, first.kind, {k: cat(lambda b: b.feats[k]) for k in first.feats},
        cat(lambda b: b.u), cat(lambda b: b.delta), cat(lambda b: b.label), cat(lambda b: b.weight), first.search,
    )


def prefix_mask(depth: np.ndarray, N: int) -> np.ndarray:
    """The ranked positions a prefix of each depth exposes: (T, N) bool, True at positions < depth."""
    return np.arange(N)[None, :] < np.asarray(depth)[:, None]


def _picks_prefix(rule: "StoppingRule") -> bool:
    return rule.picks_prefix


class StoppingRule(BaseEstimator):
    """Base class: ``fit(batch) -> self``; ``select(batch, **dials) -> (T, N) bool``; prefix rules also
    ``decide(batch, **dials) -> depth (T,)``.

    A *prefix rule* (``picks_prefix = True``) chooses a depth on the ranking: subclasses give
    a stop matrix (:meth:`stop_matrix`, walked to the first stop) or implement
    :meth:`_depths`; its :meth:`select` is the prefix of that depth. A *set rule*
    (``picks_prefix = False``) chooses any subset of the ranked candidates: it implements
    :meth:`_subset` and has no :meth:`decide`. ``__init__`` only stores its arguments;
    everything learnt is set by ``fit`` under a name ending in ``_``.

    Run-time dials (:attr:`dials`) are settings a fitted rule takes per call without
    refitting (lambda is the batch's, not a dial); an unknown one is a ValueError naming it
    and the rule. Capabilities exist only where the rule has them (scikit-learn's
    ``available_if``): :meth:`decide_task`, the one-task plain-Python fast path, and
    :meth:`to_numbers`, the portable form the lean loader reads.

    A rule that learns (a tuned k or threshold, a model) must be fitted before it
    decides, else :class:`sklearn.exceptions.NotFittedError`. A rule with nothing to
    learn (``requires_fit = False``: full, none, the oracles) decides without fit, and
    its ``fit`` does nothing; this is scikit-learn's ``requires_fit`` tag, so
    ``check_is_fitted`` accepts it unfitted.
    """

    #: Whether the rule must be fitted before it decides.
    requires_fit = True
    #: Whether the rule reads the true payoffs (``batch.u``) of the batch it decides on: an oracle.
    needs_truth = False
    #: Whether the rule exposes a prefix of the ranking (a depth) rather than any subset of it.
    picks_prefix = True
    #: Whether what the rule does not expose stays reachable through a search over the deferred tools.
    defers = False
    #: The run-time dials :meth:`decide` and :meth:`select` take by keyword (:class:`~camdf.common.dials.Dial`:
    #: name, range, default); the registry, configs, stages, the shipped policy and the CLI read them here.
    dials: tuple[Dial, ...] = ()

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.requires_fit = self.requires_fit
        return tags

    @property
    def lambda_conditioned(self) -> bool:
        """Whether lambda is one of the rule's features, so that it is trained across a lambda grid."""
        return False

    def fit(self, batch: StateBatch) -> "StoppingRule":
        return self

    def check_dials(self, dials: dict[str, Any]) -> dict[str, Any]:
        """``dials`` without the absent (None) ones; ValueError naming a dial the rule does not have."""
        names = dial_names(self.dials)
        for name in dials:
            if name not in names:
                have = ", ".join(names) or "none"
                raise ValueError(f"{name}: not a dial of {type(self).__name__} (its dials: {have})")
        return {k: v for k, v in dials.items() if v is not None}

    def stop_matrix(self, batch: StateBatch) -> np.ndarray:
        raise NotImplementedError

    def feature_names(self) -> tuple[str, ...]:
        """The state features the rule reads (the run-time stopper computes only these)."""
        return FEATURES

    @available_if(_picks_prefix)
    def decide(self, batch: StateBatch, **dials: Any) -> np.ndarray:
        """The depth to expose for every task of ``batch``, (T,) int (prefix rules only)."""
        return self._depths(batch, **self.check_dials(dials))

    def select(self, batch: StateBatch, **dials: Any) -> np.ndarray:
        """The ranked positions to expose for every task of ``batch``, (T, N) bool (a prefix for prefix rules)."""
        if self.picks_prefix:
            return prefix_mask(self.decide(batch, **dials), batch.inst.N)
        return self._subset(batch, **self.check_dials(dials))

    def _depths(self, batch: StateBatch, **dials: Any) -> np.ndarray:
        return walk(self.stop_matrix(batch), batch.inst.n)

    def _subset(self, batch: StateBatch, **dials: Any) -> np.ndarray:
        raise NotImplementedError

    def tuned_parameters(self) -> dict[str, object]:
        """What fitting chose, by name (e.g. ``{"k": 2}``); empty when the rule tunes nothing."""
        check_is_fitted(self)
        return {}

    def coefficients(self) -> pd.Series | None:
        """The fitted model's named coefficients where it has them (CAM-DF-lite), else None."""
        check_is_fitted(self)
        return None


def check_fitted(estimator: BaseEstimator, attribute: str) -> None:
    """:func:`sklearn.utils.validation.check_is_fitted`, skipped when ``attribute`` (set by fit) is there.

    For the run-time stopper's per-request path, where scikit-learn's check alone
    takes about 5 µs (an eighth of a short request); unfitted, the error is sklearn's.
    """
    if attribute not in vars(estimator):
        check_is_fitted(estimator)


def rule_params(cls, numbers: dict) -> dict:
    """``numbers["params"]`` checked against ``cls``'s parameters (ValueError naming an unknown one)."""
    params = dict(numbers["params"])
    unknown = sorted(set(params) - set(cls._get_param_names()))
    if unknown:
        raise ValueError(f"params: {unknown} are not parameters of {cls.__name__}")
    return params


def first_crossing_depths(stat: np.ndarray, thresholds: np.ndarray, n: np.ndarray, stop_below: bool) -> np.ndarray:
    """Depths for many thresholds at once: stop at the first t where stat crosses the threshold.

    Parameters
    ----------
    stat : (T, N) float
    thresholds : (G,) float
    n : (T,) int
    stop_below : bool
        Stop where ``stat < tau`` (True) or where ``stat >= tau`` (False).

    Returns
    -------
    (G, T) int
    """
    N = stat.shape[1]
    valid = np.arange(N)[None, :] < n[:, None]
    cmp = stat[None, :, :] < thresholds[:, None, None] if stop_below else stat[None] >= thresholds[:, None, None]
    cmp &= valid[None]
    first = np.argmax(cmp, axis=2)
    return np.where(cmp.any(axis=2), first, n[None, :])


def candidate_thresholds(stat: np.ndarray, valid: np.ndarray, max_candidates: int = 64) -> np.ndarray:
    """Thresholds to tune over: quantiles of the statistic on valid training states, plus both extremes."""
    values = stat[valid]
    if len(values) == 0:
        return np.array([np.inf])
    qs = np.unique(np.quantile(values, np.linspace(0, 1, max_candidates)))
    mids = (qs[1:] + qs[:-1]) / 2 if len(qs) > 1 else qs
    return np.unique(np.concatenate([[-np.inf], qs, mids, [np.inf]]))
