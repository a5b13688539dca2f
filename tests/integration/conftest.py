"""Integration fixtures, each built once per session: the retail domain (data stage), the smoke grid's
reference sweep and tables, and a loopback `mlflow server`.

The unit tests run first (``testpaths`` in pyproject.toml) and keep one core busy; the builds of these
fixtures are subprocesses, so they start in background threads as soon as the session knows which
fixtures its tests need (``pytest_collection_finish``), and each fixture waits for its build on first
request. A session that needs none of them builds none; a build that fails raises in the fixture.
"""

import json
import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from types import MappingProxyType
from typing import Callable, Mapping, NamedTuple

import pytest

import pandas as pd

from camdf.common.fingerprint import hash_paths

from .test_pipeline import SMOKE, TABLES, _run, _tables

MLFLOW = str(Path(sys.executable).with_name("mlflow"))


def _build_data(base: Path, environ=None) -> tuple[Path, str]:
    data = base / "data"
    _run(["pipelines.data", "domain=retail"], base / "out", data, environ=environ)
    return data, hash_paths([data])


class SmokeReference(NamedTuple):
    tables: Mapping[str, bytes]  # file name -> bytes of outputs/tables/*.{md,csv,tex}, read-only
    wall: float  # seconds the sweep took


def _sweep_reference(out: Path, data: Path, environ=None) -> SmokeReference:
    start = time.time()
    proc = _run(SMOKE, out, data, environ=environ)
    wall = time.time() - start
    assert proc.stdout.count("logged run") == 4, proc.stdout[-2000:]
    _run(TABLES, out, data, environ=environ)
    return SmokeReference(MappingProxyType(_tables(out / "tables")), wall)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


_SERVERS: list[subprocess.Popen] = []  # stopped by the server fixture, or at the end of the session


def _start_server(folder: Path, environ=None) -> str:
    port = _free_port()
    cmd = [MLFLOW, "server", "--backend-store-uri", f"sqlite:///{folder}/server.db",
           "--artifacts-destination", str(folder / "artifacts"), "--host", "127.0.0.1", "--port", str(port),
           "--workers", "1"]
    # The server's background job runners (huey consumers) are not needed here and cost two busy cores.
    env = {**(os.environ if environ is None else environ), "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"}
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True, env=env)
    _SERVERS.append(proc)
    url = f"http://127.0.0.1:{port}"
    _wait_for(f"{url}/health", proc, 120, "mlflow server")
    return url


def _wait_for(url: str, proc: subprocess.Popen, seconds: float, what: str) -> None:
    """Return once ``url`` answers 200; RuntimeError when ``proc`` exits or ``seconds`` pass first."""
    deadline = time.time() + seconds
    while True:
        try:
            with urllib.request.urlopen(url, timeout=2) as resp:
                if resp.status == 200:
                    return
        except OSError:
            pass
        if time.time() > deadline or proc.poll() is not None:
            raise RuntimeError(f"{what} did not answer {url} within {seconds:.0f} s")
        time.sleep(0.5)


def _stop_servers() -> None:
    while _SERVERS:
        proc = _SERVERS.pop()
        if proc.poll() is None:
            os.killpg(proc.pid, 15)
            proc.wait(timeout=30)


# -- background builds -------------------------------------------------------------------------------------

_BUILDS: dict[str, Future] = {}


def pytest_collection_finish(session):
    # Under pytest-xdist (make test: -n 2) every worker collects every test, so a background build here
    # would build each fixture once per worker whether or not its tests land there; the fixtures are
    # then built on first request instead, by the worker that needs them.
    if session.config.option.collectonly or os.environ.get("PYTEST_XDIST_WORKER"):
        return
    wanted = {name for item in session.items for name in item.fixturenames}
    factory = session.config._tmp_path_factory  # what the tmp_path_factory fixture returns
    # The environment as the session starts: tests running meanwhile may monkeypatch os.environ.
    environ = dict(os.environ)
    pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="integration-fixture")
    if "server" in wanted:
        _BUILDS["server"] = pool.submit(_start_server, factory.mktemp("mlflow_server"), environ)
    if "data_dir" in wanted:
        data = _BUILDS["data_dir"] = pool.submit(_build_data, factory.mktemp("retail_data"), environ)
        if "smoke_reference" in wanted:
            out = factory.mktemp("smoke_reference")
            _BUILDS["smoke_reference"] = pool.submit(lambda: _sweep_reference(out, data.result()[0], environ))
    pool.shutdown(wait=False)


def pytest_sessionfinish(session):
    _stop_servers()  # one whose fixture was never reached (a session stopped early by -x, say)


def _built(name: str, build: Callable):
    """The background build of ``name`` if the session started one, else ``build()`` now."""
    future = _BUILDS.pop(name, None)
    return future.result() if future is not None else build()


@pytest.fixture(scope="session")
def data_dir(tmp_path_factory) -> Path:
    """A ``paths.data_dir`` holding ``retail/``, built by ``python -m pipelines.data domain=retail``.

    Built once per session (only if a test asks for it) and shared by every test. The later stages only
    read ``paths.data_dir`` (their caches live under ``paths.output_dir``), so sharing is safe; a test
    that must write into the data folder takes a private copy
    (``shutil.copytree(data_dir, tmp_path / "data")``), and the check at the end of the session fails
    if the shared folder changed after it was built.
    """
    data, built = _built("data_dir", lambda: _build_data(tmp_path_factory.mktemp("retail_data")))
    yield data
    assert hash_paths([data]) == built, f"{data} changed during the session: a test wrote into the shared data folder"


@pytest.fixture(scope="session")
def smoke_reference(tmp_path_factory, data_dir) -> SmokeReference:
    """The smoke grid swept once on Hydra's basic launcher into a fresh local store, and its tables.

    Every other way of running the grid (a second store, an interrupted sweep, other launchers, racing
    sweeps) must end with these tables. The store stays private to this fixture: tests get the tables as
    read-only bytes, so no test can change what another compares against.
    """
    return _built("smoke_reference", lambda: _sweep_reference(tmp_path_factory.mktemp("smoke_reference"), data_dir))


@pytest.fixture(scope="session")
def trained(tmp_path_factory, data_dir):
    """The train stage exactly as `make reproduce` runs it (the default config: the champion of the candidates),
    once per session: its store, the logged model's URI, the recorded decisions and requests."""
    tmp = tmp_path_factory.mktemp("runtime")
    data, out = data_dir, tmp / "out"
    proc = _run(["pipelines.train"], out, data)
    uri = f"sqlite:///{out}/mlflow.db"
    import mlflow

    client = mlflow.MlflowClient(tracking_uri=uri, registry_uri=uri)
    exp = client.get_experiment_by_name("camdf")
    run = client.search_runs([exp.experiment_id], "tags.kind = 'policy'")[0]
    model_uri = re.search(r"logged (\S+)", proc.stdout).group(1)
    folder = tmp / "dl"
    decisions = pd.read_parquet(client.download_artifacts(run.info.run_id, "decisions.parquet", str(folder)))
    reqs = [json.loads(line) for line in
            Path(client.download_artifacts(run.info.run_id, "requests.jsonl", str(folder))).read_text().splitlines()]
    candidates = pd.read_csv(client.download_artifacts(run.info.run_id, "candidates.csv", str(folder)),
                             index_col="method")
    grouped = pd.read_csv(client.download_artifacts(run.info.run_id, "candidates_group.csv", str(folder)),
                          index_col="method")
    return {"uri": uri, "run_id": run.info.run_id, "model_uri": model_uri, "decisions": decisions,
            "requests": reqs, "tmp": tmp, "stdout": proc.stdout, "candidates": candidates, "client": client,
            "method": run.data.tags["policy_method"], "candidates_group": grouped,
            "reason": run.data.tags["champion_reason"]}


@pytest.fixture(scope="session")
def served(trained):
    """The URL of `mlflow models serve` for the ``trained`` model on loopback, one per session."""
    yield from serve_model(trained)


def serve_model(trained, **extra_env: str):
    """Serve the ``trained`` model with `camdf serve` (its checks, then `mlflow models serve`) on loopback
    (``extra_env`` added to its environment); yields its URL, stops it after. For fixtures:
    ``yield from serve_model(...)``."""
    port = _free_port()
    # No PATH given: camdf serve puts the interpreter's folder on it for the `uvicorn` MLflow starts by name.
    env = {**os.environ, "MLFLOW_TRACKING_URI": trained["uri"], **extra_env}
    proc = subprocess.Popen([sys.executable, "-m", "camdf.cli", "serve", "--policy", trained["model_uri"],
                             "-p", str(port)], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_for(f"{url}/ping", proc, 180, "camdf serve")
        yield url
    finally:
        os.killpg(proc.pid, 15)
        proc.wait(timeout=30)


@pytest.fixture(scope="session")
def server(tmp_path_factory):
    """The URL of a real `mlflow server` on loopback (SQLite backend, artifact proxy), one per session.

    Starting it takes seconds, so the tests share it; each test that writes to it uses its own
    MLflow experiment (``tracking.experiment``), so none sees another's runs.
    """
    yield _built("server", lambda: _start_server(tmp_path_factory.mktemp("mlflow_server")))
    _stop_servers()
