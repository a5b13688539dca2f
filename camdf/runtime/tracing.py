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

What a span may cost, and hold:

- **No secrets.** The query and a fail-open error pass through the project's redaction of shown
  text (:func:`camdf.common.uri.safe_uri`: a URI's ``user:password@`` and query values, and every
  secret the pipeline registered); a key or password in plain prose is not a shape it knows.
- **No store in the caller's folder.** With no tracking URI set (``MLFLOW_TRACKING_URI`` or
  ``mlflow.set_tracking_uri``), MLflow would create ``./mlflow.db`` wherever the caller runs:
  tracing turns itself off instead, with one warning saying how to set the URI.
- **Bounded waits.** The store is checked once per tracking URI before the first span (a server is
  asked one read, :func:`camdf.tracking.probe.check_server`, within ``waits.STORE_CHECK`` x 2.5 s; a
  SQLite file is opened if it is a regular file; a folder store's folder is made). A store that fails costs one warning and
  turns tracing off; no decision waits on it again. MLflow's HTTP calls get a timeout and no retries
  (:func:`camdf.common.waits.http_waits`), and the flush of the traces still queued at exit is
  bounded to ``waits.EXIT_FLUSH`` seconds (one warning when traces are dropped), in place of MLflow's
  unbounded one.
"""

from __future__ import annotations

import atexit
import contextvars
import os
import sys
import threading
import time
import warnings
from typing import Any, Callable

from camdf.common.waits import EXIT_FLUSH, STORE_CHECK, WaitExpired, call, http_waits, open_sqlite

#: Whether decisions are traced (read by the decision paths; change it with :func:`enable`).
ON = os.environ.get("CAMDF_TRACING", "").strip().lower() in {"1", "true", "yes", "on"}
SPAN_NAME = "camdf.select"
SPAN_TYPE = "TOOL_SELECTION"
_INSIDE: contextvars.ContextVar[bool] = contextvars.ContextVar("camdf_tracing_inside", default=False)
#: Tracking URI -> whether its store answered the check (each URI is checked once per process).
_STORES: dict[str, bool] = {}
_STORES_LOCK = threading.Lock()
_EXIT_BOUNDED: set[int] = set()  # ids of the export queues whose exit flush is bounded here


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


def _warn(message: str) -> None:
    """One warning naming why decisions are not traced; tracing is turned off, so it is not said again."""
    enable(False)
    warnings.warn(f"camdf: tracing is on but {message}; decisions are not traced", RuntimeWarning, stacklevel=4)


def _check_store(uri: str) -> None:
    """Raise when the store at ``uri`` cannot take traces, within seconds (no MLflow client, no retries)."""
    from urllib.parse import unquote, urlparse

    from camdf.tracking.probe import check_server

    http_waits()  # the exporter's HTTP calls: a timeout each, no retries
    scheme = urlparse(uri).scheme.lower()
    if scheme in ("http", "https"):
        check_server(uri, timeout=STORE_CHECK)
    elif scheme == "sqlite":
        path = unquote(uri[len("sqlite:///"):].split("?")[0]) if uri.lower().startswith("sqlite:///") else ""
        if path and path != ":memory:":
            os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)  # as MLflow does
            # One open and one read: MLflow's own engine retries a file it cannot open for 100 s.
            db = open_sqlite(path)
            try:
                db.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchall()
            finally:
                db.close()
    elif scheme in ("", "file") or len(scheme) == 1:  # a folder store (a Windows drive letter reads as a scheme)
        path = unquote(urlparse(uri).path) if scheme == "file" else uri
        os.makedirs(path, exist_ok=True)
        if not os.access(path, os.W_OK):
            raise PermissionError(f"the folder {path} is not writable")


def _store_ok(mlflow: Any) -> bool:
    """Whether traces may go to the current tracking store: a URI is set and its store passed the check once."""
    from mlflow.tracking._tracking_service.utils import is_tracking_uri_set

    if not is_tracking_uri_set():
        _warn("no MLflow tracking URI is set (MLflow's default would create ./mlflow.db in the working folder); "
              "set MLFLOW_TRACKING_URI (e.g. sqlite:////abs/path/mlflow.db or http://host:5000) "
              "or call mlflow.set_tracking_uri")
        return False
    uri = mlflow.get_tracking_uri()
    ok = _STORES.get(uri)
    if ok is None:
        with _STORES_LOCK:
            ok = _STORES.get(uri)
            if ok is None:
                from camdf.common.uri import safe_uri

                try:
                    _check_store(uri)
                    ok = True
                except Exception as err:  # noqa: BLE001 - any failure: one warning, no trace
                    ok = False
                    _warn(f"the trace store {safe_uri(uri)} cannot be used ({safe_uri(_one_line(err))})")
                _STORES[uri] = ok
    return ok


def _one_line(err: BaseException) -> str:
    text = " ".join(str(err).split())
    return (text[:300] + "...") if len(text) > 300 else text or type(err).__name__


def _bound_exit_flush() -> None:
    """Replace the exit flush of MLflow's trace export queue (unbounded: minutes against a stalling
    store) with one that waits :data:`EXIT_FLUSH` seconds and says once what it dropped."""
    try:
        from mlflow.tracing.provider import _get_trace_exporter

        queue = getattr(_get_trace_exporter(), "_async_queue", None)
    except Exception:  # noqa: BLE001 - another MLflow: its own exit flush stays
        return
    if queue is None or id(queue) in _EXIT_BOUNDED or not callable(getattr(queue, "_at_exit_callback", None)):
        return
    with _STORES_LOCK:
        if id(queue) in _EXIT_BOUNDED:
            return
        _EXIT_BOUNDED.add(id(queue))  # the queue stays referenced by atexit, so its id is not reused
        atexit.unregister(queue._at_exit_callback)
        atexit.register(_flush_at_exit, queue)


def _drain(queue: Any) -> None:
    """The spans still batched in the span processor to the export queue, then the queue to the store."""
    try:
        from mlflow.tracing.provider import _get_span_processor

        processor = _get_span_processor()
        if processor is not None:
            processor.force_flush(int(EXIT_FLUSH * 1e3))
    except Exception:  # noqa: BLE001 - at exit: what is batched is lost, as it would be without this
        pass
    queue.flush(terminate=True)


def _flush_at_exit(queue: Any) -> None:
    # Registered after MLflow's tracer provider, so this runs before its shutdown: the batched spans are
    # exported here, within the bound, and the provider's own shutdown finds nothing left to send.
    try:
        call(lambda: _drain(queue), EXIT_FLUSH, "the trace flush at exit")
    except WaitExpired:
        print(f"camdf: traces not yet in the trace store after {EXIT_FLUSH:g} s at exit were dropped "
              "(is the tracking server answering?)", file=sys.stderr, flush=True)
    except Exception as err:  # noqa: BLE001 - at exit: one line, not a traceback
        from camdf.common.uri import safe_uri

        print(f"camdf: traces queued at exit were dropped ({safe_uri(_one_line(err))})", file=sys.stderr, flush=True)


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
    if mlflow is None or not _store_ok(mlflow):
        return decide()
    from camdf.common.uri import safe_uri
    origin = _origin(policy)
    lam_used = float(getattr(policy, "lam", float("nan")) if lam is None else lam)
    defaults = policy.dial_defaults() if callable(getattr(policy, "dial_defaults", None)) else {}
    dials_used = {**defaults, **{k: v for k, v in (dials or {}).items() if v is not None}}
    token = _INSIDE.set(True)
    try:
        with mlflow.start_span(name=SPAN_NAME, span_type=SPAN_TYPE) as span:
            span.set_inputs({"query": None if query is None else safe_uri(query), "candidates": candidates})
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
                span.set_attribute("camdf.error", safe_uri(str(getattr(result, "error", ""))))
            span.set_outputs({"exposed": exposed})
    finally:
        _INSIDE.reset(token)
    _bound_exit_flush()  # the exporter exists once a span has ended
    return result
