"""Asking a tracking server once, with a short timeout, before an MLflow client is made.

A tracking server (an ``http(s)://`` URI) is asked one read (:func:`check_server`): an
unreachable one raises :class:`TrackingUnreachable` in seconds instead of after
MLflow's minutes of HTTP retries.
"""

from __future__ import annotations

import errno
import logging
import os
import socket
from typing import Iterator

from camdf.common.uri import safe_uri
from camdf.common.waits import PROBE, WaitExpired, http_get, http_waits

PROBE_PATH = "/api/2.0/mlflow/experiments/search?max_results=1"  # a read every MLflow server answers
PROBE_TIMEOUT = PROBE  # seconds to connect, and to wait for the answer, when checking a server


def quiet_mlflow() -> None:
    """Keep MLflow's own loggers (and its database's) to warnings; bound its HTTP waits
    (:func:`camdf.common.waits.http_waits`)."""
    http_waits()
    for name in ("mlflow", "alembic", "sqlalchemy"):
        logger = logging.getLogger(name)
        logger.setLevel(logging.WARNING if name == "mlflow" else logging.CRITICAL)
        for handler in logger.handlers:  # MLflow's own handler: its ERROR lines come back as the exception
            if _NoErrors not in map(type, handler.filters):
                handler.addFilter(_NoErrors())
        if _NoErrors not in map(type, logger.filters):
            logger.addFilter(_NoErrors())


class _NoErrors(logging.Filter):
    """Drop the store's ERROR records: the store raises what it logged, and the boundary shows that in one line
    (on a full disk MLflow logged 95 lines of it before)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno < logging.ERROR


class TrackingUnreachable(RuntimeError):
    """The tracking URI names a server that does not answer as MLflow; the message is one line naming the URI.

    Stage entry points print it and exit 2. ``uri`` is the URI; the exception pickles
    (a worker process may raise it).
    """

    def __init__(self, uri: str, message: str):
        super().__init__(uri, message)

    @property
    def uri(self) -> str:
        return self.args[0]

    def __str__(self) -> str:
        return self.args[1]


def _exceptions(exc: BaseException) -> Iterator[BaseException]:
    """An exception and everything it wraps (causes, contexts, ``reason``, exception args), each once."""
    todo, seen = [exc], set()
    while todo:
        e = todo.pop(0)
        if id(e) in seen:
            continue
        seen.add(id(e))
        yield e
        todo += [x for x in (e.__cause__, e.__context__, getattr(e, "reason", None), *e.args)
                 if isinstance(x, BaseException)]


def _reason(exc: BaseException, timeout: float) -> str:
    """Why a request failed, in a few words (``connection refused``, ``host name not found`` ...)."""
    import requests

    if isinstance(exc, requests.exceptions.SSLError):
        return f"TLS error: {str(exc)[:200]}"
    if isinstance(exc, requests.exceptions.Timeout):
        return f"no answer within {timeout:g} s"
    for e in _exceptions(exc):
        if isinstance(e, ConnectionRefusedError):
            return "connection refused"
        if isinstance(e, socket.gaierror):
            return "host name not found"
        if isinstance(e, (socket.timeout, TimeoutError)):
            return f"no answer within {timeout:g} s"
        if isinstance(e, ConnectionResetError):
            return "connection reset"
        if isinstance(e, OSError) and e.errno in (errno.EHOSTUNREACH, errno.ENETUNREACH):
            return os.strerror(e.errno).lower()
    return f"{type(exc).__name__}: {str(exc)[:200]}"


def check_server(uri: str, timeout: float = PROBE_TIMEOUT) -> None:
    """Ask an ``http(s)://`` tracking URI one read (``GET <uri>/api/2.0/mlflow/experiments/search``); raise if it fails.

    Other URIs (SQLite, files) are left alone. The server passes when it answers
    that read with JSON, or with 401/403 (it wants the credentials the MLflow
    client sends) or an MLflow error (the client reports it itself, without
    retrying). No answer (refused, unknown host, timeout, TLS failure), a page that
    is not MLflow's (404, HTML) or a server error raises
    :class:`TrackingUnreachable` within about ``2.5 * timeout`` seconds, name
    resolution included. The request goes through ``requests`` as MLflow's does
    (same proxies and CA bundle) and honours ``MLFLOW_TRACKING_INSECURE_TLS``,
    ``MLFLOW_TRACKING_SERVER_CERT_PATH`` and ``MLFLOW_TRACKING_CLIENT_CERT_PATH``.
    """
    if not uri.lower().startswith(("http://", "https://")):
        return
    http_waits()
    from_env = os.environ.get("MLFLOW_TRACKING_URI") == uri
    unset = "unset MLFLOW_TRACKING_URI" if from_env else "point tracking.uri at another store"
    url = uri.rstrip("/") + PROBE_PATH
    shown = safe_uri(uri)  # messages never carry the URI's credentials
    insecure = os.environ.get("MLFLOW_TRACKING_INSECURE_TLS", "").lower() in ("true", "1")
    verify = False if insecure else (os.environ.get("MLFLOW_TRACKING_SERVER_CERT_PATH") or True)
    try:
        resp = http_get(url, timeout, "the tracking probe", verify=verify, allow_redirects=True,
                        cert=os.environ.get("MLFLOW_TRACKING_CLIENT_CERT_PATH") or None)
    except Exception as exc:  # noqa: BLE001 - every failure becomes the one error below
        reason = f"no answer within {exc.seconds:g} s" if isinstance(exc, WaitExpired) else _reason(exc, timeout)
        raise TrackingUnreachable(uri, f"tracking.uri: cannot reach the MLflow tracking server at {shown} ({reason}); "
                                       f"start it (make ui / mlflow server) or {unset}") from None
    try:
        body = resp.json()
    except ValueError:
        body = None
    mlflow_error = isinstance(body, dict) and "error_code" in body
    if (resp.ok and isinstance(body, dict)) or resp.status_code in (401, 403) or \
            (400 <= resp.status_code < 500 and mlflow_error):
        return
    path = PROBE_PATH.split("?")[0]
    if resp.status_code == 404 or (resp.ok and not isinstance(body, dict)):
        what = f"HTTP {resp.status_code}" if not resp.ok else "a page that is not MLflow's JSON"
        raise TrackingUnreachable(uri, f"tracking.uri: {shown} answers, but not as an MLflow tracking server "
                                       f"({what} for GET {path}); check its host, port and path, or {unset}")
    detail = f": {str(body.get('message'))[:200]}" if mlflow_error else ""
    raise TrackingUnreachable(uri, f"tracking.uri: the MLflow tracking server at {shown} answered HTTP "
                                   f"{resp.status_code} to GET {path}{detail}; check the server, or {unset}")


def connect(uri: str):
    """An :class:`mlflow.MlflowClient` for ``uri``, once a tracking server has answered (:func:`check_server`)."""
    check_server(uri)  # before importing mlflow (a second or so): a refusal comes at once
    import mlflow

    quiet_mlflow()
    return mlflow.MlflowClient(tracking_uri=uri)
