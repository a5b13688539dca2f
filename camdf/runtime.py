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

import json
import math
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
import pandas as pd

from camdf.features import state_features
from camdf.instances import Instances
from camdf.labels import walk
from camdf.membership import MembershipModel, cross_fit
from camdf.policies import StateBatch
from camdf.policies.camdf import CamDF, CamDFLite
from camdf.features import FEATURES

REQUEST_FIELDS = {"query", "tools", "scores", "costs", "lam"}


def tool_name(tool: Any, i: int) -> tuple[str, dict]:
    """Name and a plain ``{name, description, parameters}`` view of one tool in any supported format."""
    if not isinstance(tool, dict):
        raise ValueError(f"tools[{i}]: expected an object (OpenAI function tool or MCP tool), got {type(tool).__name__}")
    spec = tool.get("function") if tool.get("type") == "function" or "function" in tool else tool
    if not isinstance(spec, dict):
        raise ValueError(f"tools[{i}].function: expected an object")
    name = spec.get("name")
    if not isinstance(name, str) or not name.strip():
        raise ValueError(f"tools[{i}].name: must be a non-empty string, got {name!r}")
    desc = spec.get("description") or ""
    if not isinstance(desc, str):
        raise ValueError(f"tools[{i}].description: must be a string")
    params = spec.get("parameters", spec.get("inputSchema"))
    return name, {"name": name, "description": desc, "parameters": params if isinstance(params, dict) else None}


def _numbers(values: Any, field: str, n: int, positive: bool) -> np.ndarray:
    if not isinstance(values, (list, tuple, np.ndarray)):
        raise ValueError(f"{field}: expected a list of {n} numbers, got {type(values).__name__}")
    if len(values) != n:
        raise ValueError(f"{field}: length {len(values)} does not match the {n} tools")
    out = np.empty(n)
    for i, v in enumerate(values):
        if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)):
            raise ValueError(f"{field}[{i}]: expected a number, got {v!r}")
        if not math.isfinite(float(v)):
            raise ValueError(f"{field}[{i}]: must be finite, got {v!r}")
        if positive and v <= 0:
            raise ValueError(f"{field}[{i}]: must be > 0, got {v!r}")
        out[i] = float(v)
    return out


@dataclass
class Selection:
    """What to expose: the tools (in the caller's format, ranked order), the depth and the ranking."""

    tools: list
    depth: int
    ranked: list[str]

    def to_json(self) -> dict:
        return {"tools": self.tools, "depth": self.depth, "ranked": self.ranked,
                "exposed": self.ranked[: self.depth]}


class StopPolicy:
    """A fitted CAM-DF stopper for run-time use.

    Parameters
    ----------
    method : {"camdf", "camdf_lite"}
    kind : {"exact", "partial"}
    lam : float
        Default lambda (the one it was trained at).
    lam_grid : sequence of float or None
        Train one lambda-conditioned model across these lambdas (lambda is a
        feature), so lambda is a run-time dial without retraining.
    random_state : int
    """

    def __init__(self, method: str = "camdf_lite", kind: str = "exact", lam: float = 0.12,
                 lam_grid: Sequence[float] | None = None, random_state: int = 0):
        self.method = method
        self.kind = kind
        self.lam = lam
        self.lam_grid = lam_grid
        self.random_state = random_state

    def _rule(self):
        if self.method == "camdf_lite":
            if self.lam_grid:
                raise ValueError("method: the lambda-conditioned policy is the full camdf model, not camdf_lite")
            return CamDFLite()
        if self.method == "camdf":
            features = list(FEATURES) if self.lam_grid else None  # FEATURES includes "lam"
            return CamDF(features=features, random_state=self.random_state)
        raise ValueError(f"method: expected 'camdf' or 'camdf_lite', got {self.method!r}")

    def fit(self, inst: Instances, costs: dict[str, float] | None = None) -> "StopPolicy":
        """Fit on every task of ``inst`` (rankings, costs, true G_x)."""
        self.vocab_ = list(inst.vocab)
        self.costs_ = dict(costs or {})
        p = cross_fit(inst, inst.member, random_state=self.random_state)
        lams = list(self.lam_grid) if self.lam_grid else [self.lam]
        batches = [StateBatch.make(inst, p, lam, self.kind, train=True) for lam in lams]
        self.rule_ = self._rule().fit(concat_batches(batches))
        self.membership_ = MembershipModel().fit(inst, inst.member)
        return self

    # -- deciding ---------------------------------------------------------------------------------
    def depths(self, inst: Instances, lam: float | None = None) -> np.ndarray:
        """Depth for every task of ``inst`` (its ranking and costs; labels are not read)."""
        lam = self.lam if lam is None else lam
        p = self.membership_.predict_proba(inst)
        batch = StateBatch(inst, p, lam, self.kind, state_features(inst, p, lam, self.kind))
        return walk(self.rule_.stop_matrix(batch), inst.n)

    def instances(self, requests: list[dict]) -> tuple[Instances, list[list[int]], list[list]]:
        """Validate requests and pad them into :class:`Instances` (ranked by score, stable)."""
        index = {name: i for i, name in enumerate(self.vocab_)}
        parsed = [self._parse(r, k if len(requests) > 1 else None) for k, r in enumerate(requests)]
        T = len(parsed)
        N = max((len(p[0]) for p in parsed), default=0)
        tools = np.full((T, N), "", dtype=object)
        scores = np.full((T, N), np.nan)
        costs = np.zeros((T, N))
        ids = np.full((T, N), -1, dtype=np.int64)
        n = np.zeros(T, dtype=np.int64)
        orders, originals = [], []
        for i, (names, sc, co, original) in enumerate(parsed):
            order = sorted(range(len(names)), key=lambda j: -sc[j])  # stable: ties keep the caller's order
            k = len(names)
            n[i] = k
            tools[i, :k] = [names[j] for j in order]
            scores[i, :k] = sc[order]
            costs[i, :k] = co[order]
            ids[i, :k] = [index.get(names[j], -1) for j in order]
            orders.append(order)
            originals.append(original)
        inst = Instances(
            task_ids=np.arange(T).astype(str).astype(object), tools=tools, scores=scores, costs=costs,
            member=np.zeros((T, N), bool), success=np.zeros((T, N + 1), bool), partial=np.zeros((T, N + 1)),
            n=n, folds=np.zeros(T, np.int64), text_len=np.array([len(r.get("query") or "") for r in requests], float),
            tool_ids=ids, vocab=self.vocab_,
        )
        return inst, orders, originals

    def _parse(self, request: dict, k: int | None):
        where = "" if k is None else f"requests[{k}]."
        if not isinstance(request, dict):
            raise ValueError(f"{where or 'request'}: expected a JSON object with `tools`")
        unknown = sorted(set(request) - REQUEST_FIELDS)
        if unknown:
            raise ValueError(f"{where}{unknown[0]}: unknown field (expected some of {sorted(REQUEST_FIELDS)})")
        tools = request.get("tools")
        if not isinstance(tools, list) or not tools:
            raise ValueError(f"{where}tools: expected a non-empty list of tools")
        names, plain = [], []
        for i, tool in enumerate(tools):
            try:
                name, view = tool_name(tool, i)
            except ValueError as err:
                raise ValueError(f"{where}{err}") from None
            if name in names:
                raise ValueError(f"{where}tools[{i}].name: duplicate tool name {name!r}")
            names.append(name)
            plain.append(view)
        query = request.get("query")
        if query is not None and not isinstance(query, str):
            raise ValueError(f"{where}query: must be a string")
        if request.get("scores") is not None:
            scores = _numbers(request["scores"], f"{where}scores", len(names), positive=False)
        else:
            if not query:
                raise ValueError(f"{where}scores: missing; give scores or a `query` for the built-in bm25 ranker")
            scores = bm25_tool_scores(query, plain)
        if request.get("costs") is not None:
            costs = _numbers(request["costs"], f"{where}costs", len(names), positive=True)
        else:
            costs = np.array([self.costs_.get(name, 1.0) for name in names])
        return names, scores, costs, tools

    def select(self, tools: list, scores=None, costs=None, lam: float | None = None, query: str | None = None
               ) -> Selection:
        """The prefix of the ranking to expose for one task."""
        request = {"tools": tools, "scores": scores, "costs": costs, "query": query}
        return self.select_batch([request], lam=lam)[0]

    def select_batch(self, requests: list[dict], lam: float | None = None) -> list[Selection]:
        """:meth:`select` for many tasks at once (one vectorised pass); a request's own ``lam`` wins."""
        lams = {check_lam(r.get("lam", lam if lam is not None else self.lam), "lam") for r in requests
                if isinstance(r, dict)}
        inst, orders, originals = self.instances(requests)
        depth = np.zeros(inst.T, dtype=np.int64)
        for value in sorted(lams):
            rows = np.array([check_lam(r.get("lam", lam if lam is not None else self.lam), "lam") == value
                             for r in requests])
            depth[rows] = self.depths(inst.subset(rows), value)
        out = []
        for i in range(inst.T):
            d = int(depth[i])
            ranked = [str(x) for x in inst.tools[i, : inst.n[i]]]
            out.append(Selection([originals[i][j] for j in orders[i][:d]], d, ranked))
        return out


def check_lam(value: Any, field: str = "lam") -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise ValueError(f"{field}: must be a finite number >= 0, got {value!r}")
    return float(value)


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
    return StateBatch(
        inst, cat(lambda b: b.p), first.lam, first.kind, {k: cat(lambda b: b.feats[k]) for k in first.feats},
        cat(lambda b: b.u), cat(lambda b: b.delta), cat(lambda b: b.label), cat(lambda b: b.weight),
    )


def bm25_tool_scores(query: str, tools: list[dict]) -> np.ndarray:
    """Built-in ranker for callers without scores: bm25 of the query against each tool's document."""
    from camdf.data.model import Tool
    from camdf.rankers.lexical import bm25_scores
    from camdf.rankers.text import tool_document

    docs = [tool_document(Tool(t["name"], t["description"], t["parameters"])) for t in tools]
    return bm25_scores([query], docs)[0]


# -- MLflow pyfunc ------------------------------------------------------------------------------------
def _pyfunc_class():
    import mlflow.pyfunc

    class StopPolicyModel(mlflow.pyfunc.PythonModel):
        """Input: a column ``request`` of JSON requests; output: a column ``response`` of JSON selections."""

        def load_context(self, context):
            import pickle

            with open(context.artifacts["policy"], "rb") as fh:
                self.policy = pickle.load(fh)

        def predict(self, context, model_input, params=None):
            requests = [json.loads(r) if isinstance(r, str) else r for r in model_input["request"]]
            selections = self.policy.select_batch(requests)
            return pd.DataFrame({"response": [json.dumps(s.to_json()) for s in selections]})

    return StopPolicyModel


def log_policy(policy: StopPolicy, name: str = "policy", example: dict | None = None,
               registered_model_name: str | None = None) -> str:
    """Log the policy as an MLflow pyfunc model in the active run; returns its model URI."""
    import pickle
    import tempfile
    from pathlib import Path

    import mlflow
    from mlflow.models import infer_signature

    import logging
    import warnings

    logging.getLogger("mlflow.pyfunc").setLevel(logging.ERROR)
    with tempfile.TemporaryDirectory() as tmp, warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        path = Path(tmp, "policy.pkl")
        path.write_bytes(pickle.dumps(policy))
        frame = pd.DataFrame({"request": [json.dumps(example or {})]})
        out = pd.DataFrame({"response": [json.dumps({"tools": [], "depth": 0, "ranked": [], "exposed": []})]})
        info = mlflow.pyfunc.log_model(
            name=name, python_model=_pyfunc_class()(), artifacts={"policy": str(path)},
            signature=infer_signature(frame, out), input_example=frame,
            registered_model_name=registered_model_name,
        )
    return info.model_uri


def load_policy(uri: str) -> StopPolicy:
    """Load a policy from an MLflow model URI (``runs:/``, ``models:/``) or a local model folder."""
    import mlflow.pyfunc

    return mlflow.pyfunc.load_model(uri).unwrap_python_model().policy
