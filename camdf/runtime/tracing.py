"""A trace per decision: one MLflow span for each select, off by default.

Turn it on with ``CAMDF_TRACING=1`` in the environment or :func:`enable` (then MLflow's tracking
URI and experiment say where traces go, as for any MLflow trace). Each decision through
:meth:`StopPolicy.select <camdf.runtime.StopPolicy.select>` or an adapter
(:class:`camdf.runtime.toolset.ToolChooser`) records one span ``camdf.select`` with the
attributes below; inside a harness's own trace (LangChain's or the OpenAI Agents SDK's MLflow
autolog, or any ``@mlflow.trace`` function) the span joins that trace as a child, since MLflow
parents a span on the active one.

========================  =====================================================================
``camdf.rule``            the policy's rule (its method)
``camdf.lam``             lambda of the decision
``camdf.dials``           the rule's run-time dials of the decision (an object)
``camdf.candidates``      the candidate tools' names, in the caller's order
``camdf.exposed``         the exposed names (ranked order)
``camdf.cost``            the exposed tools' summed cost (the request's costs, else the policy's)
``camdf.policy_uri``      where the policy was loaded from (``origin_``), else null
``camdf.policy_version``  its registered version, else null
``camdf.latency_ms``      the decision's wall time
``camdf.fail_open``       (adapters) true when the policy failed and every tool was exposed
``camdf.error``           (adapters, on failing open) the policy's error
========================  =====================================================================

When tracing is off, a decision pays one module-attribute read (``make bench``: runtime).
"""

from __future__ import annotations

import contextvars
import os
import time
import warnings
from typing import Any, Callable

#: Whether decisions are traced (read by the decision paths; change it with :func:`enable`).
ON = os.environ.get("CAMDF_TRACING", "").strip().lower() in {"1", "true", "yes", "on"}
SPAN_NAME = "camdf.select"
SPAN_TYPE = "TOOL_SELECTION"
_INSIDE: contextvars.ContextVar[bool] = contextvars.ContextVar("camdf_tracing_inside", default=False)


def enable(on: bool = True) -> None:
    """Trace every decision from now on (``on=False``: stop)."""
    global ON
    ON = bool(on)


def _mlflow():
    """MLflow, or None (with one warning, and tracing turned off) in an install without it."""
    try:
        import mlflow
    except ImportError:
        enable(False)
        warnings.warn("camdf: tracing is on but MLflow is not installed (pip install mlflow-tracing); "
                      "decisions are not traced", RuntimeWarning, stacklevel=3)
        return None
    return mlflow


def inside() -> bool:
    """Whether a camdf decision span is already open in this context (a nested select records no second one)."""
    return _INSIDE.get()


def names(tools: Any) -> list[str]:
    """The tools' names for a span (a malformed list gives what it can: the decision itself refuses it)."""
    from camdf.runtime.requests import tool_name

    out = []
    try:
        for i, t in enumerate(tools):
            out.append(tool_name(t, i))
    except (TypeError, ValueError):
        pass
    return out


def _plain(value: Any) -> Any:
    """A dial's value as a JSON scalar (numpy numbers to Python's)."""
    return value.item() if hasattr(value, "item") else value


def _origin(policy: Any) -> dict:
    origin = getattr(policy, "origin_", None)
    return origin if isinstance(origin, dict) else {}


def _cost(policy: Any, names: list[str], costs: list | None, candidates: list[str]) -> float:
    if costs is not None:
        by_name = dict(zip(candidates, costs))
        return float(sum(float(by_name.get(n, 1.0)) for n in names))
    door = getattr(policy, "door", None)
    defaults = getattr(door, "costs", None) or {}
    return float(sum(float(defaults.get(n, 1.0)) for n in names))


def traced(policy: Any, decide: Callable[[], Any], *, query: str | None, candidates: list[str],
           costs: list | None = None, lam: float | None = None, dials: dict | None = None,
           fail_open: Callable[[Any], bool] | None = None) -> Any:
    """Run ``decide()`` (returning a :class:`~camdf.runtime.requests.Selection`) inside one span.

    The span carries the attributes of the module's table; an error raised by ``decide`` is
    recorded on the span (status ERROR) and raised again. ``fail_open(result)`` says whether a
    result is an adapter's fail-open answer.
    """
    mlflow = _mlflow()
    if mlflow is None:
        return decide()
    origin = _origin(policy)
    lam_used = float(getattr(policy, "lam", float("nan")) if lam is None else lam)
    defaults = policy.dial_defaults() if callable(getattr(policy, "dial_defaults", None)) else {}
    dials_used = {**defaults, **{k: v for k, v in (dials or {}).items() if v is not None}}
    token = _INSIDE.set(True)
    try:
        with mlflow.start_span(name=SPAN_NAME, span_type=SPAN_TYPE) as span:
            span.set_inputs({"query": query, "candidates": candidates})
            span.set_attributes({
                "camdf.rule": str(getattr(policy, "method", type(policy).__name__)), "camdf.lam": lam_used,
                "camdf.dials": {k: _plain(v) for k, v in dials_used.items()}, "camdf.candidates": candidates,
                "camdf.policy_uri": origin.get("uri"), "camdf.policy_version": origin.get("version")})
            start = time.perf_counter()
            try:
                result = decide()
            finally:
                span.set_attribute("camdf.latency_ms", (time.perf_counter() - start) * 1e3)
            exposed = list(result.exposed)
            failed = bool(fail_open(result)) if fail_open else False
            span.set_attributes({"camdf.exposed": exposed, "camdf.cost": _cost(policy, exposed, costs, candidates),
                                 "camdf.fail_open": failed})
            if failed:
                span.set_attribute("camdf.error", str(getattr(result, "error", "")))
            span.set_outputs({"exposed": exposed})
            return result
    finally:
        _INSIDE.reset(token)
