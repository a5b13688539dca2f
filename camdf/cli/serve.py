"""``camdf serve``: the fitted stopper as a service on loopback, through ``mlflow models serve``, every wait bounded.

``mlflow models serve -m models:/...`` run by itself resolves the URI with MLflow's own HTTP client (120 s a
call, 7 retries with back-off) before any camdf code runs: against a stalling registry it waited past 100 s.
``camdf serve`` first checks, within the bounds of :mod:`camdf.common.waits`, what that server will need: the
``CAMDF_SERVE_*`` settings (:mod:`camdf.runtime.serve_limits`), the store (one probe) and the policy itself (read
as ``camdf select`` reads it). A refusal is one line and exit 2; an unreachable store one line and exit 1. Then
the process becomes ``mlflow models serve`` on the same URI, with MLflow's HTTP waits bounded
(:func:`camdf.common.waits.http_waits`), ``MLFLOW_TRACKING_URI`` set to the store the check read and the
interpreter's folder on ``PATH`` (MLflow starts ``uvicorn`` by name).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path


def _served_uri(uri: str) -> str:
    """``uri`` when ``mlflow models serve`` can serve it (an MLflow model URI or folder); ValueError otherwise."""
    from camdf.runtime.export import is_export

    folder = Path(uri[len("file://"):] if uri.startswith("file://") else uri)
    if not uri.startswith(("models:/", "runs:/")) and folder.is_dir() and is_export(folder):
        raise ValueError(f"policy: {uri} is an exported folder (camdf export), not an MLflow model: serve the "
                         "model URI it was exported from, or use it with camdf select / load_policy")
    return uri


def cmd_serve(args: argparse.Namespace) -> int:
    """Check the CAMDF_SERVE_* settings, the tracking store and the policy within bounded waits (one line and exit 2 or
    1 when one fails), then run `mlflow models serve` on the policy (docs/stopper.md)."""
    from camdf.common.waits import http_waits
    from camdf.runtime import load_policy
    from camdf.runtime.loading import default_tracking_uri
    from camdf.runtime.serve_limits import serve_limits

    http_waits()  # this check's MLflow calls, and the server's (inherited below)
    try:
        if not 0 < args.port < 65536:
            raise ValueError(f"--port: expected a TCP port in 1..65535, got {args.port}")
        serve_limits(os.environ)
        uri = _served_uri(args.policy)
        load_policy(uri, lean=True)  # a missing, unreadable or hostile model folder is refused here, in one line
    except ValueError as err:
        print(f"camdf serve: {err}", file=sys.stderr)
        return 2
    bin_dir = str(Path(sys.executable).parent)
    env = {**os.environ, "MLFLOW_TRACKING_URI": default_tracking_uri(),
           "PATH": os.pathsep.join([bin_dir, *filter(None, [os.environ.get("PATH")])])}
    argv = [sys.executable, "-m", "mlflow", "models", "serve", "-m", uri, "--env-manager", "local",
            "-h", args.host, "-p", str(args.port)]
    print(f"camdf serve: {uri} checked; serving it at http://{args.host}:{args.port}/invocations", file=sys.stderr,
          flush=True)
    sys.stdout.flush()
    os.execve(sys.executable, argv, env)  # not a wait: this process becomes the server
    return 0  # not reached


def add_serve_command(sub) -> None:
    """Register ``camdf serve`` on the command line's subparsers."""
    from camdf.cli.options import command
    from camdf.runtime.loading import CHAMPION_URI

    serve = command(sub, "serve", cmd_serve,
                    help="serve the stopper on loopback (mlflow models serve, after bounded checks)")
    serve.add_argument("--policy", default=CHAMPION_URI,
                       help=f"an MLflow model URI or model folder (default: {CHAMPION_URI})")
    serve.add_argument("--host", default="127.0.0.1", help="the address to listen on (default: loopback)")
    serve.add_argument("--port", "-p", type=int, default=5001, help="the port (default 5001)")
