"""The served model's door in front of MLflow's scoring server (``mlflow models serve``): one job, HTTP only.

:func:`guard_scoring_server` takes JSON only, at most :data:`MAX_BODY_BYTES`, integer scores and costs
as floats, and answers every refusal as one JSON line with no stack trace; :class:`InvalidRequest` is the
refusal the served model (:mod:`camdf.runtime.model`) raises for a request it cannot decide.
"""

from __future__ import annotations

import functools
import json
import logging
import math
import re

from mlflow.exceptions import MlflowException
from mlflow.protos.databricks_pb2 import INVALID_PARAMETER_VALUE

from camdf.runtime.jsonio import parse_json
from camdf.common.waits import WaitExpired, within
from camdf.runtime.serve_limits import Admission, ServeLimits, serve_limits


class InvalidRequest(MlflowException, ValueError):
    """A request the policy refuses: a ValueError for library callers, an HTTP 400 (no stack trace) when served.

    The message stays the field's own: MLflow's scoring server rewrites an exception's
    ``message`` to ``Failed to predict data '<the whole frame>'. Error: ...``, which would
    bury it (and echo the body back); the first message set is kept.
    """

    def __init__(self, message: str):
        super().__init__(message, error_code=INVALID_PARAMETER_VALUE)

    @property
    def message(self) -> str:
        return self._field_message

    @message.setter
    def message(self, value: str) -> None:
        if not hasattr(self, "_field_message"):
            self._field_message = value


#: The largest request body the served model reads, in bytes (4 MiB): a 1,000-tool request with
#: descriptions and parameter schemas of ~3 KB per tool fits; a bigger one is refused with a 413
#: before it is parsed (from its ``Content-Length``, else once that many bytes have arrived).
MAX_BODY_BYTES = 4 * 1024 * 1024

#: The one content type the served model takes (``charset=utf-8`` allowed): the typed signature's list
#: columns (tools, scores, costs) have no CSV or Parquet form that MLflow parses back.
CONTENT_TYPE = "application/json"

#: The request columns whose numbers the signature types as doubles: JSON integers there are taken as
#: floats, as ``camdf select`` takes them.
_NUMBER_COLUMNS = ("scores", "costs")

#: MLflow's scoring server prefixes a predict error with the whole input frame; the refusal is what follows.
_PREDICT_PREFIX = re.compile(r"^Failed to predict data .*?\nError: ", re.DOTALL)

#: The longest message a refusal carries (a message quoting a value is cut, the body is never echoed back).
_MAX_MESSAGE = 500

_logger = logging.getLogger(__name__)


class _Refused(Exception):
    """A request refused before MLflow sees it: the HTTP status, MLflow's error code and the message."""

    def __init__(self, status: int, code: str, message: str):
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


def _one_line(message: str) -> str:
    """``message`` without MLflow's frame prefix, on one line, at most :data:`_MAX_MESSAGE` characters."""
    text = " ".join(_PREDICT_PREFIX.sub("", message).split())
    return text if len(text) <= _MAX_MESSAGE else text[: _MAX_MESSAGE - 3] + "..."


def _error(status: int, code: str, message: str, headers: dict | None = None):
    """The JSON response of a refusal: ``{"error_code": ..., "message": <one line>}``, no stack trace."""
    from starlette.responses import Response

    return Response(content=json.dumps({"error_code": code, "message": _one_line(message)}),
                    status_code=status, media_type="application/json", headers=headers)


#: The served model's bounds (:mod:`camdf.runtime.serve_limits`), set by :func:`guard_scoring_server`.
_limits = ServeLimits()
_admission = Admission(_limits.max_inflight)


def _check_content_type(value: str | None) -> None:
    """Refuse (415) a missing content type or any but :data:`CONTENT_TYPE` with at most ``charset=utf-8``."""
    if value is None:
        raise _Refused(415, "INVALID_PARAMETER_VALUE", f"Content-Type: missing (expected {CONTENT_TYPE})")
    # As strict as MLflow's own parsing of it (which follows), so that every refusal is this one JSON line.
    mime, *rest = [part.strip() for part in value.split(";")]
    params = [part.partition("=") for part in rest]
    if mime != CONTENT_TYPE or any(k != "charset" or v.lower() != "utf-8" for k, _, v in params):
        raise _Refused(415, "INVALID_PARAMETER_VALUE",
                       f"Content-Type: {value[:100]!r} is not accepted (expected {CONTENT_TYPE}, UTF-8)")


async def _read_body(request) -> bytes:
    """The request's body, refused (413) past :data:`MAX_BODY_BYTES`: from ``Content-Length`` before
    anything is read, else (a chunked body) as soon as that many bytes have arrived."""
    declared = request.headers.get("content-length")
    if declared is not None:
        if not declared.strip().isdigit():
            raise _Refused(400, "INVALID_PARAMETER_VALUE", f"Content-Length: {declared[:40]!r} is not a byte count")
        if int(declared) > MAX_BODY_BYTES:
            raise _Refused(413, "RESOURCE_EXHAUSTED", f"request body: {int(declared)} bytes exceeds the limit of "
                           f"{MAX_BODY_BYTES} bytes; split the batch into smaller requests")
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            raise _Refused(413, "RESOURCE_EXHAUSTED", f"request body: more than the limit of {MAX_BODY_BYTES} "
                           "bytes; split the batch into smaller requests")
        chunks.append(chunk)
    return b"".join(chunks)


def _replayed(request, body: bytes):
    """A new request over the same connection whose body is ``body`` (already read and checked)."""
    from starlette.requests import Request

    sent = False

    async def receive():
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await request.receive()  # a disconnect, should the client go away meanwhile

    return Request(request.scope, receive)


def _guard_handler(handler):
    """MLflow's ``/invocations`` handler behind the checks of the door: content type and body size first,
    then every error answered as one JSON line (an MlflowException with its own status, anything else
    500), never with a stack trace."""

    @functools.wraps(handler)
    async def guarded(request):
        if not _admission.enter():  # answered at once: a request over the bound never waits in a queue
            return _error(503, "TEMPORARILY_UNAVAILABLE", f"server busy: {_admission.limit} requests in flight, "
                          "the limit (CAMDF_SERVE_MAX_INFLIGHT); retry shortly", {"Retry-After": "1"})
        try:
            _check_content_type(request.headers.get("content-type"))
            body = await within(_read_body(request), _limits.read_timeout, "request body")
            return await handler(_replayed(request, body))  # MLflow decides it in a worker thread
        except WaitExpired:  # the connection is closed: a stalled client holds nothing longer than this
            return _error(408, "REQUEST_TIMEOUT", f"request body: not received within {_limits.read_timeout:g} s "
                          "(CAMDF_SERVE_READ_TIMEOUT)", {"Connection": "close"})
        except _Refused as err:
            return _error(err.status, err.code, err.message)
        except MlflowException as err:
            return _error(err.get_http_status_code(), err.error_code, err.message)
        except Exception:  # a fault of the server, not of the request: logged here, named there
            _logger.exception("the served model failed on a request")
            return _error(500, "INTERNAL_ERROR", "the served model failed on this request; see the server log")
        finally:
            _admission.leave()

    return guarded


def _floats(values):
    """``values`` with every JSON integer as a float (an integer beyond a float's range as inf, which the
    policy then refuses as not finite); anything else is left for the signature check to name."""
    if type(values) is not list:
        return values
    return [_float(v) if type(v) is int else v for v in values]


def _float(value: int) -> float:
    try:
        return float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf


def _coerce_numbers(body: dict) -> dict:
    """``body`` (a decoded request) with integer scores and costs as floats, in every input format MLflow
    reads (``dataframe_records``, ``dataframe_split``, ``inputs``/``instances`` as rows or columns)."""
    rows = [body.get(key) for key in ("dataframe_records", "inputs", "instances")]
    for table in rows:
        if isinstance(table, list):
            for row in table:
                if isinstance(row, dict):
                    for col in _NUMBER_COLUMNS:
                        if col in row:
                            row[col] = _floats(row[col])
        elif isinstance(table, dict):
            for col in _NUMBER_COLUMNS:
                if type(table.get(col)) is list:
                    table[col] = [_floats(v) for v in table[col]]
    split = body.get("dataframe_split")
    if isinstance(split, dict) and type(split.get("columns")) is list and type(split.get("data")) is list:
        at = [i for i, c in enumerate(split["columns"]) if c in _NUMBER_COLUMNS]
        for row in split["data"]:
            if type(row) is list:
                for i in at:
                    if i < len(row):
                        row[i] = _floats(row[i])
    return body


def guard_scoring_server() -> None:
    """Put the door of the served model in front of MLflow's scoring server (``mlflow models serve``).

    Installed once per process when a served model loads (:meth:`StopPolicyModel.load_context`), which
    MLflow's server does before it builds its app, so both hooks below are in place for every request:

    - The ``/invocations`` handler (MLflow wraps it in ``_async_catch_mlflow_exception`` when it builds
      the app; :func:`_guard_handler` takes that wrapper's place): a content type other than ``application/json`` (UTF-8), a missing one included, is
      refused with a 415; a body larger than :data:`MAX_BODY_BYTES` with a 413, from its
      ``Content-Length`` before the body is read, else as soon as that many bytes arrived, so nothing
      bigger is ever parsed; every error is answered as ``{"error_code", "message"}`` on one line,
      without MLflow's stack trace or the input frame it would quote.
    - The JSON decoder (``_decode_json_input``): the body is first checked by
      :func:`camdf.runtime.jsonio.parse_json` (UTF-8, depth, number length, JSON syntax), whose refusal
      becomes an :class:`InvalidRequest` (400) naming the line and column; integer scores and costs
      are then taken as floats (the signature types them as doubles, ``camdf select`` takes both).

    - The bounds of :mod:`camdf.runtime.serve_limits`, read from the environment here: at most
      ``CAMDF_SERVE_MAX_INFLIGHT`` requests in flight (one more: 503 at once, ``Retry-After: 1``) and
      ``CAMDF_SERVE_READ_TIMEOUT`` seconds for a body to arrive (else 408 and the connection closed).

    A server without either hook is left as it is for that hook.
    """
    from mlflow.pyfunc import scoring_server

    global _limits, _admission
    catch = getattr(scoring_server, "_async_catch_mlflow_exception", None)
    if catch is not None and not getattr(catch, "camdf_guarded", False):
        _limits = serve_limits()  # ValueError naming the variable: the server does not start
        _admission = Admission(_limits.max_inflight)
        # In place of MLflow's catcher, whose answer to an MlflowException carries its stack_trace.
        _guard_handler.camdf_guarded = True
        scoring_server._async_catch_mlflow_exception = _guard_handler

    decode = getattr(scoring_server, "_decode_json_input", None)
    if decode is None or getattr(decode, "camdf_guarded", False):
        return

    def guarded(json_input):
        if isinstance(json_input, (bytes, str)):
            data = json_input.encode("utf-8", "surrogatepass") if isinstance(json_input, str) else json_input
            try:
                body = parse_json(data, "request body")
            except ValueError as err:
                raise InvalidRequest(str(err)) from None
            if isinstance(body, dict):
                return decode(_coerce_numbers(body))
        return decode(json_input)

    guarded.camdf_guarded = True
    scoring_server._decode_json_input = guarded
