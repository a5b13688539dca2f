"""Tracing (camdf.runtime.tracing, issue 51 point 5) against hostile stores, in a real MLflow: a query's secrets
never reach a span; with no tracking URI no store appears in the caller's folder; a trace store that refuses,
never answers, answers once and then stalls, or cannot be opened costs one warning, a decision of seconds and an
exit of seconds.

Decisions go through :class:`camdf.runtime.toolset.ToolChooser` with the package's default policy. The servers
are plain sockets built here: what matters is what the MLflow client sees.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
import warnings

import mlflow
import pytest

from camdf.common import uri as shown
from camdf.runtime import tracing
from camdf.runtime.toolset import ToolChooser

TOOLS = [{"name": f"{verb}_{topic}", "description": f"{verb.capitalize()} a {topic} of the customer by its id"}
         for topic in ("order", "refund", "shipping", "weather") for verb in ("get", "update")]
QUERY = "I want a refund for my order"
#: Seconds a first traced decision may take against a store that fails (the check's bound is 2.5 x 1.5 s).
DECISION = 6.0
#: Seconds a whole process (imports, the default policy, one decision, exit) may take on a busy 2-core machine;
#: before the bound it ran past 110 s.
EXIT = 40.0
#: The one warning a failing store costs.
WARNING = "camdf: tracing is on but"
#: Secret shapes the project's redaction of shown text knows (camdf.common.uri.safe_uri): query -> secret.
SECRETS = {
    "password in a URI": ("connect to https://ana:{s}@db.example/orders", "hunter2-Pa55"),
    "api key in a URI query": ("call https://api.example/v1/refund?api_key={s}", "sk-live-51HxQzA9"),
    "token after another query value": ("see https://api.example/v1?order=7&token={s}", "tok-9f8e7d6c5b"),
    "a registered secret": ("my key is {s} please", "registered-7f3a9c1e"),
    "a password in prose": ("my password is {s}, thanks", "hunter2-Pa55"),
    "a provider key in prose": ("use {s} for the refund API", "sk-proj-Abc123def456GHI789jk"),
    "a bearer token in prose": ("send Authorization: Bearer {s}", "abcdefgh12345678"),
    "basic credentials in a header": ("curl -H 'Authorization: Basic {s}' https://api.example", "YWxhZGRpbjpvcGVu"),
    "an AWS secret key named": ("aws_secret_access_key={s} in my env", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"),
}


class Server:
    """A TCP server on 127.0.0.1 that accepts and never answers; with ``probe=True`` it answers the first request
    (tracing's check of the store) with an MLflow-like JSON and stalls on every later one."""

    def __init__(self, probe: bool = False):
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.uri, self.probe, self.held = f"http://127.0.0.1:{self.sock.getsockname()[1]}", probe, []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.held.append(conn)
            if self.probe:
                self.probe = False
                conn.recv(65536)
                body = b'{"experiments": []}'
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
                             + str(len(body)).encode() + b"\r\nConnection: close\r\n\r\n" + body)
                conn.close()

    def close(self) -> None:
        self.sock.close()
        for c in self.held:
            c.close()


def _refused() -> str:
    with socket.create_server(("127.0.0.1", 0)) as s:
        return f"http://127.0.0.1:{s.getsockname()[1]}"  # closed on exit: nothing listens there


@pytest.fixture(scope="module")
def chooser():
    """The default policy, loaded once (a decision's cost is then the decision's and the trace store's)."""
    c = ToolChooser()
    c.loaded()
    return c


@pytest.fixture
def traced_at(monkeypatch):
    """``traced_at(uri)``: tracing on, ``MLFLOW_TRACKING_URI`` set to ``uri`` (None: unset); all undone after."""
    def at(uri: str | None) -> None:
        # First: clearing a URI an earlier test set also unsets MLFLOW_TRACKING_URI, so it goes before the setenv.
        mlflow.set_tracking_uri(None)
        monkeypatch.delenv("MLFLOW_EXPERIMENT_ID", raising=False)  # mlflow.set_experiment sets it: restored after
        if uri is None:
            monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
        else:
            monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
        tracing.enable()

    yield at
    tracing.enable(False)
    mlflow.set_tracking_uri(None)
    monkeypatch.undo()


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """A SQLite store and its experiment, made once (making one costs seconds): ``(uri, experiment id, seen ids)``."""
    folder = tmp_path_factory.mktemp("traces")
    uri = f"sqlite:///{folder / 'mlflow.db'}"
    # An artifact folder of its own: by default MLflow writes trace artifacts to ./mlruns of the working folder.
    experiment = mlflow.MlflowClient(uri).create_experiment("hostile-tracing",
                                                            artifact_location=(folder / "artifacts").as_uri())
    return uri, experiment, set()


def _ours(got: list) -> list[str]:
    return [str(w.message) for w in got if str(w.message).startswith(WARNING)]


@pytest.mark.parametrize("shape", SECRETS)
def test_a_query_s_secret_never_reaches_the_trace(shape, store, traced_at, chooser, monkeypatch):
    uri, experiment, seen = store
    template, secret = SECRETS[shape]
    if shape == "a registered secret":  # as the pipeline registers a value taken from the environment
        monkeypatch.setattr(shown, "_SECRETS", set(shown._SECRETS))
        shown.add_secrets([secret])
    traced_at(uri)
    mlflow.set_experiment(experiment_id=experiment)
    chooser.choose(TOOLS, f"{QUERY}: {template.format(s=secret)}")
    new = [t for t in mlflow.search_traces(locations=[experiment], return_type="list", flush=True)
           if t.info.trace_id not in seen]
    seen.update(t.info.trace_id for t in new)
    assert len(new) == 1
    text = json.dumps(new[0].to_dict())  # the trace's info (request preview) and every span's inputs and attributes
    (span,) = new[0].data.spans
    assert secret not in text
    assert span.inputs["query"].startswith(QUERY)  # the rest of the query is kept


def test_no_tracking_uri_makes_no_store_in_the_caller_s_folder(tmp_path, monkeypatch, traced_at, chooser):
    monkeypatch.chdir(tmp_path)
    traced_at(None)
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        chooser.choose(TOOLS, f"{QUERY} (no tracking URI)")
        chooser.choose(TOOLS, f"{QUERY} (no tracking URI, again)")
    assert list(tmp_path.iterdir()) == []
    (message,) = _ours(got)  # once, not per decision
    assert "MLFLOW_TRACKING_URI" in message and "mlflow.set_tracking_uri" in message


def _unusable(kind: str, tmp_path, request) -> str:
    if kind == "refused port":
        return _refused()
    if kind == "silent server":
        server = Server()
        request.addfinalizer(server.close)
        return server.uri
    (tmp_path / "a_file").write_text("not a folder")
    if kind == "sqlite under a file":
        return f"sqlite:///{tmp_path / 'a_file' / 'mlflow.db'}"
    if kind == "sqlite file that is a folder":  # MLflow's engine retries one it cannot open for 100 s
        (tmp_path / "mlflow.db").mkdir()
        return f"sqlite:///{tmp_path / 'mlflow.db'}"
    assert kind == "folder store under a file"
    return str(tmp_path / "a_file" / "mlruns")


@pytest.mark.parametrize("kind", ["refused port", "silent server", "sqlite under a file",
                                  "sqlite file that is a folder", "folder store under a file"])
def test_an_unusable_store_costs_one_warning_and_seconds(kind, tmp_path, request, traced_at, chooser):
    uri = _unusable(kind, tmp_path, request)
    traced_at(uri)
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        start = time.monotonic()
        first = chooser.choose(TOOLS, f"{QUERY} ({kind})")
        took = time.monotonic() - start
        start = time.monotonic()
        chooser.choose(TOOLS, f"{QUERY} ({kind}, again)")
        again = time.monotonic() - start
    assert first.exposed and took < DECISION and again < 1.0, (took, again)
    (message,) = _ours(got)
    assert "cannot be used" in message and uri in message


#: One traced decision in a fresh process, from a folder of its own.
SCRIPT = f"""
import time
import mlflow  # imported before the clock starts, as in a harness that traces its own calls
from camdf.runtime.toolset import ToolChooser
chooser = ToolChooser()
chooser.loaded()
start = time.monotonic()
chooser.choose({TOOLS!r}, {QUERY!r})
print(f"decision {{time.monotonic() - start:.2f}}", flush=True)
"""


def test_a_process_that_traced_exits_in_seconds_and_a_healthy_store_keeps_its_trace(tmp_path):
    servers = {"silent": Server(), "stalls after the check": Server(probe=True)}
    uris = {"refused": _refused(), **{k: s.uri for k, s in servers.items()},
            "healthy": f"sqlite:///{tmp_path / 'store' / 'mlflow.db'}"}
    # The child gets MLflow's own HTTP waits (this process's tracing set shorter ones in its environment) and
    # its default experiment.
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MLFLOW_HTTP_REQUEST_", "MLFLOW_EXPERIMENT_"))}
    start = time.monotonic()
    procs = {}
    try:
        for kind, uri in uris.items():
            (tmp_path / kind).mkdir()
            procs[kind] = subprocess.Popen([sys.executable, "-c", SCRIPT], cwd=tmp_path / kind, text=True,
                                           env={**env, "CAMDF_TRACING": "1", "MLFLOW_TRACKING_URI": uri},
                                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        for kind, proc in procs.items():
            out, err = proc.communicate(timeout=max(0.1, EXIT - (time.monotonic() - start)))
            assert proc.returncode == 0 and "Traceback" not in err and "decision" in out, err[-3000:]
            warned = [ln for ln in err.splitlines() if WARNING in ln]
            if kind in ("stalls after the check", "healthy"):  # the check passed: traced, the exit flush bounded
                assert warned == [] and (kind != "healthy" or "dropped" not in err), err[-3000:]
            else:  # the first decision waited for the check only (4 processes share 2 cores here)
                assert len(warned) == 1 and uris[kind] in warned[0], err[-3000:]
                assert float(out.split()[-1]) < DECISION, (kind, out)
            assert list((tmp_path / kind).iterdir()) == []
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
        for server in servers.values():
            server.close()
    assert time.monotonic() - start < EXIT
    mlflow.set_tracking_uri(uris["healthy"])
    try:  # the batched span reached the store before the process ended
        assert len(mlflow.search_traces(locations=["0"], return_type="list")) == 1
    finally:
        mlflow.set_tracking_uri(None)
