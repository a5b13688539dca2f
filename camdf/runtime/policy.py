"""The runtime stopper: given any ranking of tools, their costs and lambda, how many to expose.

A :class:`StopPolicy` is fitted by the pipeline (``pipelines/train.py``), saved as an
MLflow pyfunc model and loaded back by URI (``runs:/...``, ``models:/name/version``)
or from a folder. Harnesses call :meth:`StopPolicy.select` with the tool list they
already have (OpenAI function tools or MCP tool descriptions), optional scores
(a built-in bm25 ranker scores the tools against ``query`` otherwise), optional
costs (the fitted catalog's costs, else 1) and lambda.

Costs are in the units the policy was trained with: the catalog's mean cost is 1.
"""

from __future__ import annotations

from itertools import chain
from typing import Any, Sequence

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted

from camdf.core.features import state_features
from camdf.core.instances import Instances
from camdf.core.membership import MembershipModel, cross_fit
from camdf.common.dials import dial_names
from camdf.policies import StateBatch, card, make_policy, methods, own_dials, policy_methods  # noqa: F401 (re-exported)
from camdf.policies.base import check_fitted
from camdf.policies.plain import task_positions
from camdf.runtime import tracing
from camdf.runtime.door import FrontDoor
from camdf.runtime.requests import Request, Selection


class StopPolicy(BaseEstimator):
    """The CAM-DF stopper for run-time use: fit it (or load a fitted one), then :meth:`select`.

    A scikit-learn estimator: ``__init__`` only stores the parameters below (``fit``
    checks them), and deciding before ``fit`` raises
    :class:`sklearn.exceptions.NotFittedError`.

    Parameters
    ----------
    method : str
        The stopping rule: a shippable card of the registry (:func:`policy_methods`;
        ``camdf_lite``, ``camdf``, ``camdf_argmax``, ``camdf_risk``).
    kind : {"exact", "partial"}
    lam : float
        Default lambda (the one it was trained at).
    lam_grid : sequence of float or None
        Train the method's lambda-conditioned form (its card's ``across_lambdas``: ``camdf`` ->
        ``camdf_lambda``) across these lambdas (lambda is a feature), so lambda is a run-time
        dial without retraining.
    random_state : int
    n_jobs : int
        Threads for the full model's predictions on long rankings (-1: every CPU).
    dials : dict or None
        Default values of the rule's run-time dials by name (its class's ``dials``; fitted as its
        parameters of those names, each checked against its dial's range; a dial the rule does not
        have is ignored). None: every dial at the rule's own default.
    top_n : int or None
        Fit on each task's ``top_n`` best-ranked tools (:func:`camdf.core.instances.truncate`) and decide a
        longer request over its top ``top_n`` the same way, so a catalog of thousands is ranked and decided as
        the tasks it was fitted on. None: every ranked tool.
    portable : bool
        A policy for catalogs it was never fitted on (the default policy, A30): fitted on portable
        instances (:func:`camdf.core.portable.portable`: no tool identities, scores min-max normalised
        per task, after the ``top_n`` cut), it normalises each request's scores the same way before deciding.
    fit_depth : int or None
        Learn from each training task's first ``fit_depth`` states only (catalog scale; features and
        labels are computed on the whole lists first); None: every state.

    Attributes
    ----------
    rule_ : StoppingRule
        The fitted stopping rule.
    membership_ : MembershipModel
    vocab_ : list of str
        The training tools (the tool-identity feature's categories).
    costs_ : dict
        Default cost of each tool by name.
    fit_range_ : dict
        The range of what it was fitted on (:func:`camdf.runtime.fit_range.fit_range`): a request outside it
        gets warnings on its selection.
    cost_unit_ : str or None
        ``"tokens"`` when its costs are schema tokens (``camdf fit``; an export's manifest records it), so that
        a request without costs is priced by :func:`camdf.costs.units.schema_tokens`; set by the fitter.
    """

    def __init__(self, method: str = "camdf_lite", kind: str = "exact", lam: float = 0.12,
                 lam_grid: Sequence[float] | None = None, random_state: int = 0, n_jobs: int = -1,
                 dials: dict | None = None, top_n: int | None = None, portable: bool = False,
                 fit_depth: int | None = None):
        self.method = method
        self.kind = kind
        self.lam = lam
        self.lam_grid = lam_grid
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.dials = dials
        self.top_n = top_n
        self.portable = portable
        self.fit_depth = fit_depth

    def _rule(self):
        shippable = policy_methods()
        if self.method not in shippable:
            raise ValueError(f"method: expected one of {', '.join(shippable)}, got {self.method!r}")
        name = self.method
        if self.lam_grid:
            name = card(self.method).across_lambdas
            if name is None:
                have = [m for m in shippable if card(m).across_lambdas]
                raise ValueError(f"method: the lambda-conditioned policy is the full {' / '.join(have)} model, "
                                 f"not {self.method}")
        # A set rule carries a membership model of its own, which its portable form (to_numbers) ships.
        return make_policy(name, self.random_state, predict_jobs=self.n_jobs, carry_membership=True,
                           **own_dials(name, self.dials))

    def fit(self, inst: Instances, costs: dict[str, float] | None = None) -> "StopPolicy":
        """Fit on every task of ``inst`` (rankings, costs, true G_x); a ``portable`` policy on its portable form."""
        from threadpoolctl import threadpool_limits

        from camdf.core.instances import truncate
        from camdf.runtime.fit_range import fit_range

        inst = truncate(inst, self.top_n)
        if self.portable:  # after the cut, as a request is cut then normalised (FrontDoor.parse)
            from camdf.core.portable import portable

            inst = portable(inst)
        self.vocab_ = list(inst.vocab)
        self.costs_ = dict(costs or {})
        # Small models: BLAS threads only spin (as in the cell evaluator); the fits are the same.
        with threadpool_limits(1, user_api="blas"):
            p = cross_fit(inst, inst.member, random_state=self.random_state, fit_depth=self.fit_depth)
            lams = list(self.lam_grid) if self.lam_grid else [self.lam]
            self.rule_ = self._rule().fit(StateBatch.across_lambdas(inst, p, lams, self.kind).head(self.fit_depth))
            self.membership_ = MembershipModel().fit(inst, inst.member)
        self.fit_range_ = fit_range(inst, lams)
        return self

    def coefficients(self) -> pd.Series | None:
        """The fitted rule's named coefficients (camdf_lite), else None."""
        check_is_fitted(self)
        return self.rule_.coefficients()

    # -- deciding ---------------------------------------------------------------------------------
    @property
    def door(self) -> FrontDoor:
        """The front door of the fitted policy (:class:`camdf.runtime.door.FrontDoor`)."""
        check_fitted(self, "rule_")
        door = self.__dict__.get("_door")
        if door is None:
            door = self._door = FrontDoor(self.method, dial_names(self.rule_.dials), self.vocab_, self.costs_,
                                          card(self.method).defers, self.rule_.picks_prefix,
                                          getattr(self, "fit_range_", None), self.top_n,
                                          getattr(self, "cost_unit_", None), portable=bool(self.portable))
        return door

    def __getstate__(self):
        state = super().__getstate__()
        state.pop("_door", None)  # rebuilt on use, with the loading process's registry
        return state

    @property
    def picks_prefix(self) -> bool:
        """Whether the shipped rule exposes a prefix of the ranking (a depth) rather than any subset of it."""
        check_fitted(self, "rule_")
        return self.rule_.picks_prefix

    def _batch(self, inst: Instances, lam: float | None) -> StateBatch:
        lam = self.lam if lam is None else lam
        p = self.membership_.predict_proba(inst)
        feats = state_features(inst, p, lam, self.kind, names=self.rule_.feature_names())
        return StateBatch(inst, p, lam, self.kind, feats)

    def depths(self, inst: Instances, lam: float | None = None, **dials: Any) -> np.ndarray:
        """Depth for every task of ``inst`` (its ranking and costs; labels are not read): the length of the
        prefix :meth:`exposed` gives; a prefix rule only."""
        check_is_fitted(self)
        if not self.rule_.picks_prefix:
            raise ValueError(f"method: {self.method} is a set rule (no depth); use exposed()")
        return self.exposed(inst, lam, **dials).sum(axis=1).astype(np.int64)

    def exposed(self, inst: Instances, lam: float | None = None, **dials: Any) -> np.ndarray:
        """The exposed ranked positions of every task of ``inst``, (T, N) bool (a prefix for a prefix rule)."""
        check_is_fitted(self)
        return self.rule_.select(self._batch(inst, lam), **dials)

    def dial_defaults(self) -> dict[str, Any]:
        """The fitted rule's default value of each of its dials, by name."""
        check_fitted(self, "rule_")
        params = self.rule_.get_params()
        return {d: params.get(d) for d in dial_names(self.rule_.dials)}

    def instances(self, requests: list[dict]) -> tuple[Instances, np.ndarray, list[Request]]:
        """Validate requests and pad them into :class:`Instances`, ranked by score.

        Returns the instances, each row's ranking as indices into its request's tool
        list, shape (T, N) (ties keep the caller's order), and the parsed requests.
        """
        check_is_fitted(self)
        parsed = self.door.parse(requests)
        return (*self._pad(parsed), parsed)

    def _pad(self, parsed: list[Request]) -> tuple[Instances, np.ndarray]:
        if len(parsed) == 1:  # one long ranking: nothing to pad
            return self._one_row(parsed[0])
        T = len(parsed)
        n = np.array([len(r.names) for r in parsed], dtype=np.int64)
        N = int(n.max(initial=0))
        scores = np.full((T, N), -np.inf)
        costs = np.zeros((T, N))
        ids = np.full((T, N), -1, dtype=np.int64)
        names = np.full((T, N), "", dtype=object)
        valid = np.arange(N)[None, :] < n[:, None]
        flat = lambda lists: list(chain.from_iterable(lists))  # noqa: E731  row-major, as `valid`
        scores[valid] = flat([r.scores for r in parsed])
        costs[valid] = flat([r.costs for r in parsed])
        ids[valid] = flat([r.ids for r in parsed])
        names[valid] = np.array(flat([r.names for r in parsed]), dtype=object)
        order = np.argsort(-scores, axis=1, kind="stable")  # padding (-inf) sorts last
        take = lambda a: np.take_along_axis(a, order, axis=1)  # noqa: E731
        return self._unlabelled(parsed, take(names), np.where(valid, take(scores), np.nan), take(costs),
                                take(ids), n), order

    def _one_row(self, r: Request) -> tuple[Instances, np.ndarray]:
        """:meth:`_pad` for a single request."""
        scores = np.array(r.scores)
        order = np.argsort(-scores, kind="stable")
        ranked = lambda values, dtype=None: np.array(values, dtype=dtype)[order][None, :]  # noqa: E731
        return self._unlabelled([r], ranked(r.names, object), scores[order][None, :], ranked(r.costs),
                                ranked(r.ids, np.int64), np.array([len(order)], dtype=np.int64)), order[None, :]

    def _unlabelled(self, parsed: list[Request], tools, scores, costs, tool_ids, n) -> Instances:
        """Run-time :class:`Instances`: ranked (T, N) arrays, no G_x (membership and curves are empty)."""
        T, N = tools.shape
        return Instances(
            task_ids=np.array([str(i) for i in range(T)], dtype=object), tools=tools, scores=scores, costs=costs,
            member=np.zeros((T, N), bool), success=np.zeros((T, N + 1), bool), partial=np.zeros((T, N + 1)),
            n=n, folds=np.zeros(T, np.int64), text_len=np.array([float(len(r.query)) for r in parsed]),
            tool_ids=tool_ids, vocab=self.vocab_,
        )

    def select(self, tools: list, scores=None, costs=None, lam: float | None = None, query: str | None = None,
               **dials: Any) -> Selection:
        """The tools to expose for one task (``dials``: the rule's run-time dials by name): a prefix of the
        ranking and its depth for a prefix rule, any subset of it (in ranked order, depth None) for a set rule."""
        request = {"tools": tools, "scores": scores, "costs": costs, "query": query}
        if tracing.ON and not tracing.inside():  # off: this read is all a decision pays (make bench: runtime)
            return tracing.traced(self, lambda: self.select_batch([request], lam=lam, **dials)[0], query=query,
                                  candidates=tracing.names(tools), costs=costs,
                                  lam=lam, dials=dials)
        return self.select_batch([request], lam=lam, **dials)[0]

    def select_batch(self, requests: list[dict], lam: float | None = None, **dials: Any) -> list[Selection]:
        """:meth:`select` for many tasks at once (one vectorised pass); a request's own ``lam`` and dials win."""
        door = self.door
        lam, dials = door.call_dials(lam, dials)
        default = self.lam if lam is None else lam
        parsed = door.parse(requests)
        if door.is_short(parsed) and hasattr(self.rule_, "decide_task"):
            # One request over a short ranking, in plain Python and one model call: it decides exactly as
            # the vectorised path (tests compare them), where numpy's per-call overhead would cost more.
            r = parsed[0]
            lv, dv = door.settings(r, default, dials)
            order, task = door.one_task(r, lv, self.kind, self.membership_.predict_task)
            return [door.selection(r, order, task_positions(self.rule_, task, **dv), lv)]
        inst, order = self._pad(parsed)
        # Requests are decided in groups sharing one setting of lambda and the dials.
        settings = [door.settings(r, default, dials) for r in parsed]
        groups: dict[tuple, list[int]] = {}
        for i, (lv, dv) in enumerate(settings):
            groups.setdefault((lv, tuple(sorted(dv.items()))), []).append(i)
        # Every rule decides a mask over the ranked positions (a prefix rule's is its first depth positions).
        if len(groups) == 1:
            masks = self.exposed(inst, settings[0][0], **settings[0][1])
        else:
            masks = np.zeros(inst.tools.shape, dtype=bool)
            for (lv, dv), rows in groups.items():
                masks[rows] = self.exposed(inst.subset(np.array(rows)), lv, **dict(dv))
        return [door.selection(r, row[: len(r.names)], np.flatnonzero(mask).tolist(), lv)
                for r, row, mask, (lv, _) in zip(parsed, order.tolist(), masks, settings)]
