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

import math
import reprlib
from dataclasses import dataclass
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

# Values quoted in a refusal are clipped: a request may hold a megabyte where a name belongs.
_REPR = reprlib.Repr()
_REPR.maxstring = _REPR.maxother = 80
_REPR.maxlist = _REPR.maxdict = 4
shown = _REPR.repr

REQUEST_FIELDS = {"query", "tools", "scores", "costs", "lam", "alpha"}
#: The rules a StopPolicy can be: the train stage fits each and ships the best out of fold.
POLICY_METHODS = ("camdf_lite", "camdf", "camdf_argmax", "camdf_risk")
# Single requests with at most this many tools take the plain-Python path (numpy pays off beyond).
SHORT_RANKING = 64


def _spec(tool: Any, i: int) -> dict:
    if not isinstance(tool, dict):
        raise ValueError(f"tools[{i}]: expected an object (OpenAI function tool or MCP tool), got {type(tool).__name__}")
    spec = tool.get("function") if tool.get("type") == "function" or "function" in tool else tool
    if not isinstance(spec, dict):
        raise ValueError(f"tools[{i}].function: expected an object")
    return spec


def tool_name(tool: Any, i: int) -> str:
    """The name of one tool given as an OpenAI function tool or an MCP tool description.

    Raises ValueError naming ``tools[i]`` when it is neither, or when its name or
    description is not a (non-empty) string.
    """
    # Fast path for plain dicts with a string name and description (the common case).
    if type(tool) is dict:
        spec = tool["function"] if "function" in tool else (None if tool.get("type") == "function" else tool)
        if type(spec) is dict:
            name, desc = spec.get("name"), spec.get("description")
            if type(name) is str and name.strip() and (desc is None or type(desc) is str):
                return name
    spec = _spec(tool, i)
    name = spec.get("name")
    if not isinstance(name, str) or not name.strip():
        raise ValueError(f"tools[{i}].name: must be a non-empty string, got {shown(name)}")
    if not isinstance(spec.get("description") or "", str):
        raise ValueError(f"tools[{i}].description: must be a string")
    return name


def tool_view(tool: dict) -> dict:
    """A plain ``{name, description, parameters}`` view of a tool :func:`tool_name` accepted."""
    spec = _spec(tool, 0)
    params = spec.get("parameters", spec.get("inputSchema"))
    return {"name": spec["name"], "description": spec.get("description") or "",
            "parameters": params if isinstance(params, dict) else None}


_PLAIN_NUMBERS = frozenset({int, float, np.float64, np.float32, np.int64, np.int32})


def _numbers(values: Any, where: str, name: str, n: int, positive: bool) -> list[float]:
    """``values`` as floats after checking them; errors name ``<where><name>[i]``."""
    field = where + name
    if not isinstance(values, (list, tuple, np.ndarray)):
        raise ValueError(f"{field}: expected a list of {n} numbers, got {type(values).__name__}")
    if len(values) != n:
        raise ValueError(f"{field}: length {len(values)} does not match the {n} tools")
    # Fast path: every value a plain number, finite (and > 0 for costs); numpy checks long lists.
    try:
        if isinstance(values, np.ndarray) or (n > SHORT_RANKING and set(map(type, values)) <= _PLAIN_NUMBERS):
            arr = np.asarray(values)
            if arr.dtype.kind in "iuf" and np.isfinite(arr).all() and (not positive or (arr > 0).all()):
                return arr.astype(float).tolist()
        elif (set(map(type, values)) <= _PLAIN_NUMBERS and all(map(math.isfinite, values))
              and (not positive or min(values) > 0)):
            return list(map(float, values))
    except OverflowError:  # an int beyond float range: named below
        pass
    # Slow path: any other numeric types (numpy's small ints and floats); name the first bad value.
    out = []
    for i, v in enumerate(values):
        if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)):
            raise ValueError(f"{field}[{i}]: expected a number, got {shown(v)}")
        try:
            x = float(v)
        except OverflowError:
            x = math.inf
        if not math.isfinite(x):
            raise ValueError(f"{field}[{i}]: must be finite, got {shown(v)}")
        if positive and x <= 0:
            raise ValueError(f"{field}[{i}]: must be > 0, got {shown(v)}")
        out.append(x)
    return out


def _values_ok(parsed: list["Request"]) -> bool:
    """Whether every score and cost of a batch is a finite plain number (costs > 0), and every
    request's score range is finite: the checks of :func:`_numbers`, over the whole batch at once."""
    flat = [list(chain.from_iterable([r.scores for r in parsed])), list(chain.from_iterable([r.costs for r in parsed]))]
    if not all(set(map(type, values)) <= _PLAIN_NUMBERS for values in flat):
        return False
    try:
        scores, costs = np.array(flat[0], dtype=float), np.array(flat[1], dtype=float)
    except OverflowError:
        return False
    if not (np.isfinite(scores).all() and np.isfinite(costs).all() and (costs > 0).all()):
        return False
    start = np.cumsum([0] + [len(r.scores) for r in parsed[:-1]])
    return bool(np.isfinite(np.maximum.reduceat(scores, start) - np.minimum.reduceat(scores, start)).all())


@dataclass(slots=True)
class Request:
    """One validated request: tool names, their vocabulary ids, scores and costs in the caller's order."""

    names: list[str]
    ids: list[int]
    scores: list[float]
    costs: list[float]
    tools: list
    query: str
    lam: float | None
    alpha: float | None = None


@dataclass(slots=True)
class Selection:
    """What to expose: the tools (in the caller's format, ranked order), the depth and the ranking."""

    tools: list
    depth: int
    ranked: list[str]

    def to_json(self) -> dict:
        return {"tools": self.tools, "depth": self.depth, "ranked": self.ranked,
                "exposed": self.ranked[: self.depth]}


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
        if not isinstance(requests, (list, tuple)) or not requests:
            raise ValueError("requests: expected a non-empty list of requests")
        if len(requests) == 1:
            return [self._parse(requests[0], "")]
        # A batch checks its scores and costs all at once; when anything is wrong, the requests
        # are checked again one by one, so that the error names the first problem in order.
        try:
            parsed = [self._parse(r, f"requests[{k}].", numbers=False) for k, r in enumerate(requests)]
            if _values_ok(parsed):
                return parsed
        except ValueError:
            pass
        return [self._parse(r, f"requests[{k}].") for k, r in enumerate(requests)]

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
        """One request, validated (``numbers=False``: a plain list of scores or costs of the right
        length is taken as it is, for :func:`_values_ok` to check with the rest of the batch)."""
        if not isinstance(request, dict):
            raise ValueError(f"{where.rstrip('.') or 'request'}: expected a JSON object with `tools`")
        if not request.keys() <= REQUEST_FIELDS:
            unknown = sorted(set(request) - REQUEST_FIELDS)[0]
            raise ValueError(f"{where}{unknown}: unknown field (expected some of {sorted(REQUEST_FIELDS)})")
        tools = request.get("tools")
        if not isinstance(tools, list) or not tools:
            raise ValueError(f"{where}tools: expected a non-empty list of tools")
        try:
            names = [tool_name(tool, i) for i, tool in enumerate(tools)]
        except ValueError as err:
            raise ValueError(f"{where}{err}") from None
        if len(set(names)) < len(names):
            seen = set()
            for i, name in enumerate(names):
                if name in seen:
                    raise ValueError(f"{where}tools[{i}].name: duplicate tool name {shown(name)}")
                seen.add(name)
        query = request.get("query")
        if query is not None and not isinstance(query, str):
            raise ValueError(f"{where}query: must be a string")
        if request.get("scores") is not None:
            scores = request["scores"]
            if numbers or type(scores) is not list or len(scores) != len(names):
                scores = _numbers(scores, where, "scores", len(names), positive=False)
                if not math.isfinite(max(scores) - min(scores)):
                    raise ValueError(f"{where}scores: max - min overflows a float; rescale the scores")
        elif query:
            scores = bm25_tool_scores(query, [tool_view(tool) for tool in tools]).tolist()
        else:
            raise ValueError(f"{where}scores: missing; give scores or a `query` for the built-in bm25 ranker")
        if request.get("costs") is not None:
            costs = request["costs"]
            if numbers or type(costs) is not list or len(costs) != len(names):
                costs = _numbers(costs, where, "costs", len(names), positive=True)
        else:
            costs = [float(self.costs_.get(name, 1.0)) for name in names]
        index = self.index_
        lam = request.get("lam")
        return Request(names, [index.get(name, -1) for name in names], scores, costs, tools, query or "",
                       None if lam is None else check_lam(lam, f"{where}lam"),
                       self._check_alpha(request.get("alpha"), f"{where}alpha"))

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
        if isinstance(self.rule_, CamDFRisk):
            depth = self.rule_.decide_task(z, s, ids, alpha)
            return Selection([r.tools[j] for j in order[:depth]], depth, [r.names[j] for j in order])
        p = self.membership_.predict_task(z, s, ids)
        cols = task_features(s, c, p, lam, self.kind, float(len(r.query)), self.rule_.feature_names(), z=z)
        stop = self.rule_.stop_design(np.array(cols).T, np.array(ids)).tolist()
        depth = stop.index(True) if True in stop else len(stop)
        return Selection([r.tools[j] for j in order[:depth]], depth, [r.names[j] for j in order])


def check_lam(value: Any, field: str = "lam") -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise ValueError(f"{field}: must be a finite number >= 0, got {shown(value)}")
    return float(value)


def bm25_tool_scores(query: str, tools: list[dict]) -> np.ndarray:
    """Built-in ranker for callers without scores: bm25 of the query against each tool's document."""
    from camdf.data.model import Tool
    from camdf.rankers.lexical import _tokenize, bm25_scores
    from camdf.rankers.text import tool_document

    docs = [tool_document(Tool(t["name"], t["description"], t["parameters"])) for t in tools]
    # bm25 needs words on both sides (two or more letters, not stop words); refused here, with the field.
    words = "two or more letters, not English stop words"
    if not any(_tokenize([query])[0]):
        raise ValueError(f"query: no word the built-in bm25 ranker can use ({words}); give `scores` instead")
    if not any(map(any, _tokenize(docs))):
        raise ValueError(f"tools: no tool name, description or parameter has a word the built-in bm25 ranker "
                         f"can use ({words}); give `scores` instead")
    return bm25_scores([query], docs)[0]
