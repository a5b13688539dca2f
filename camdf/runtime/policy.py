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

from functools import cached_property
from itertools import chain
from typing import Any, Sequence

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted

from camdf.core.features import FEATURES, state_features, task_features, task_normalised_scores
from camdf.core.instances import Instances
from camdf.core.membership import MembershipModel, cross_fit
from camdf.policies import StateBatch
from camdf.policies.base import check_fitted
from camdf.policies.camdf import CamDF, CamDFArgmax, CamDFLite
from camdf.policies.risk import CamDFRisk, check_alpha
from camdf.runtime.lean import risk_selection
from camdf.runtime.requests import SHORT_RANKING, Request, Selection, check_lam, parse_all, parse_request

#: The rules a StopPolicy can be: the train stage fits each and ships the best out of fold.
POLICY_METHODS = ("camdf_lite", "camdf", "camdf_argmax", "camdf_risk")


class StopPolicy(BaseEstimator):
    """The CAM-DF stopper for run-time use: fit it (or load a fitted one), then :meth:`select`.

    A scikit-learn estimator: ``__init__`` only stores the parameters below (``fit``
    checks them), and deciding before ``fit`` raises
    :class:`sklearn.exceptions.NotFittedError`.

    Parameters
    ----------
    method : {"camdf_lite", "camdf", "camdf_argmax", "camdf_risk"}
        The stopping rule (:data:`POLICY_METHODS`).
    kind : {"exact", "partial"}
    lam : float
        Default lambda (the one it was trained at).
    alpha : float
        Default target miss rate of ``camdf_risk`` (a run-time dial like lambda; the other
        rules have none).
    lam_grid : sequence of float or None
        Train one lambda-conditioned model across these lambdas (lambda is a
        feature), so lambda is a run-time dial without retraining.
    random_state : int
    n_jobs : int
        Threads for the full model's predictions on long rankings (-1: every CPU).

    Attributes
    ----------
    rule_ : CamDFLite, CamDF, CamDFArgmax or CamDFRisk
        The fitted stopping rule.
    membership_ : MembershipModel
    vocab_ : list of str
        The training tools (the tool-identity feature's categories).
    costs_ : dict
        Default cost of each tool by name.
    """

    def __init__(self, method: str = "camdf_lite", kind: str = "exact", lam: float = 0.12,
                 lam_grid: Sequence[float] | None = None, random_state: int = 0, n_jobs: int = -1,
                 alpha: float = 0.05):
        self.method = method
        self.kind = kind
        self.lam = lam
        self.alpha = alpha
        self.lam_grid = lam_grid
        self.random_state = random_state
        self.n_jobs = n_jobs

    def _rule(self):
        if self.method == "camdf_lite":
            if self.lam_grid:
                raise ValueError("method: the lambda-conditioned policy is the full camdf model, not camdf_lite")
            return CamDFLite()
        if self.method == "camdf":
            features = list(FEATURES) if self.lam_grid else None  # FEATURES includes "lam"
            return CamDF(features=features, random_state=self.random_state, predict_jobs=self.n_jobs)
        if self.method in ("camdf_argmax", "camdf_risk") and self.lam_grid:
            raise ValueError(f"method: the lambda-conditioned policy is the full camdf model, not {self.method}")
        if self.method == "camdf_argmax":
            return CamDFArgmax(random_state=self.random_state)
        if self.method == "camdf_risk":
            return CamDFRisk(alpha=check_alpha(self.alpha), random_state=self.random_state)
        raise ValueError(f"method: expected one of {', '.join(POLICY_METHODS)}, got {self.method!r}")

    def fit(self, inst: Instances, costs: dict[str, float] | None = None) -> "StopPolicy":
        """Fit on every task of ``inst`` (rankings, costs, true G_x)."""
        from threadpoolctl import threadpool_limits

        self.vocab_ = list(inst.vocab)
        self.costs_ = dict(costs or {})
        # Small models: BLAS threads only spin (as in the cell evaluator); the fits are the same.
        with threadpool_limits(1, user_api="blas"):
            p = cross_fit(inst, inst.member, random_state=self.random_state)
            lams = list(self.lam_grid) if self.lam_grid else [self.lam]
            self.rule_ = self._rule().fit(StateBatch.across_lambdas(inst, p, lams, self.kind))
            self.membership_ = MembershipModel().fit(inst, inst.member)
        return self

    def coefficients(self) -> pd.Series | None:
        """The fitted rule's named coefficients (camdf_lite), else None."""
        check_is_fitted(self)
        return self.rule_.coefficients()

    # -- deciding ---------------------------------------------------------------------------------
    def depths(self, inst: Instances, lam: float | None = None, alpha: float | None = None) -> np.ndarray:
        """Depth for every task of ``inst`` (its ranking and costs; labels are not read)."""
        check_is_fitted(self)
        lam = self.lam if lam is None else lam
        p = self.membership_.predict_proba(inst)
        feats = state_features(inst, p, lam, self.kind, names=self.rule_.feature_names())
        batch = StateBatch(inst, p, lam, self.kind, feats)
        if isinstance(self.rule_, CamDFRisk):
            return self.rule_.decide(batch, alpha=alpha)
        return self.rule_.decide(batch)

    def _check_alpha(self, alpha: Any, field: str) -> float | None:
        if alpha is None:
            return None
        if self.method != "camdf_risk":
            raise ValueError(f"{field}: only the camdf_risk policy has a target miss rate; this one is {self.method}")
        return check_alpha(alpha, field)

    def instances(self, requests: list[dict]) -> tuple[Instances, np.ndarray, list[Request]]:
        """Validate requests and pad them into :class:`Instances`, ranked by score.

        Returns the instances, each row's ranking as indices into its request's tool
        list, shape (T, N) (ties keep the caller's order), and the parsed requests.
        """
        check_is_fitted(self)
        parsed = self._parse_all(requests)
        return (*self._pad(parsed), parsed)

    def _parse_all(self, requests: list[dict]) -> list[Request]:
        return parse_all(requests, self._parse)

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

    def _parse(self, request: Any, where: str, numbers: bool = True) -> Request:
        """One request, validated (:func:`camdf.runtime.requests.parse_request`)."""
        return parse_request(request, where, self.index_, self.costs_, self._check_alpha, numbers)

    @cached_property
    def index_(self) -> dict[str, int]:
        """Position of each training tool name in the vocabulary (the tool-identity feature)."""
        return {name: i for i, name in enumerate(self.vocab_)}

    def select(self, tools: list, scores=None, costs=None, lam: float | None = None, query: str | None = None,
               alpha: float | None = None) -> Selection:
        """The prefix of the ranking to expose for one task (``alpha``: camdf_risk's target miss rate)."""
        request = {"tools": tools, "scores": scores, "costs": costs, "query": query}
        return self.select_batch([request], lam=lam, alpha=alpha)[0]

    def select_batch(self, requests: list[dict], lam: float | None = None, alpha: float | None = None
                     ) -> list[Selection]:
        """:meth:`select` for many tasks at once (one vectorised pass); a request's own ``lam`` and
        ``alpha`` win."""
        check_fitted(self, "rule_")
        default = self.lam if lam is None else check_lam(lam, "lam")
        alpha = self._check_alpha(alpha, "alpha")
        parsed = self._parse_all(requests)
        if len(parsed) == 1 and len(parsed[0].names) <= SHORT_RANKING and not isinstance(self.rule_, CamDFArgmax):
            r = parsed[0]
            return [self._select_one(r, default if r.lam is None else r.lam, alpha if r.alpha is None else r.alpha)]
        inst, order = self._pad(parsed)
        # Requests are decided in groups sharing one (lambda, alpha) dial setting.
        dials = [(default if r.lam is None else r.lam, alpha if r.alpha is None else r.alpha) for r in parsed]
        groups: dict[tuple, list[int]] = {}
        for i, dial in enumerate(dials):
            groups.setdefault(dial, []).append(i)
        if len(groups) == 1:
            depth = self.depths(inst, *dials[0])
        else:
            depth = np.zeros(inst.T, dtype=np.int64)
            for (lv, av), rows in groups.items():
                depth[rows] = self.depths(inst.subset(np.array(rows)), lv, av)
        out = []
        for r, row, d in zip(parsed, order.tolist(), depth.tolist()):
            ranked = row[: len(r.names)]
            out.append(Selection([r.tools[j] for j in ranked[:d]], d, [r.names[j] for j in ranked]))
        return out

    def _select_one(self, r: Request, lam: float, alpha: float | None = None) -> Selection:
        """One request over a short ranking, in plain Python and one model call.

        Decides exactly as the vectorised path (tests compare them on every retail task
        and on random requests); numpy's per-call overhead on a handful of tools would
        otherwise cost more than the arithmetic.
        """
        scores, costs = r.scores, r.costs
        order = sorted(range(len(scores)), key=lambda j: -scores[j])  # stable: ties keep the caller's order
        s, c, ids = [scores[j] for j in order], [costs[j] for j in order], [r.ids[j] for j in order]
        z = task_normalised_scores(s)
        if isinstance(self.rule_, CamDFRisk):  # the same function as the lean loader's
            return risk_selection(r, self.rule_.threshold(alpha), self.rule_.membership_.numbers())
        p = self.membership_.predict_task(z, s, ids)
        cols = task_features(s, c, p, lam, self.kind, float(len(r.query)), self.rule_.feature_names(), z=z)
        stop = self.rule_.stop_design(np.array(cols).T, np.array(ids)).tolist()
        depth = stop.index(True) if True in stop else len(stop)
        return Selection([r.tools[j] for j in order[:depth]], depth, [r.names[j] for j in order])
