"""The smoke grid against a real `mlflow server` on loopback (SQLite backend), read back over REST."""

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from .test_pipeline import _run

MLFLOW = str(Path(sys.executable).with_name("mlflow"))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _post(url: str, body: dict) -> dict:
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as resp:
        return json.loads(resp.read())


@pytest.fixture()
def server(tmp_path):
    port = _free_port()
    cmd = [MLFLOW, "server", "--backend-store-uri", f"sqlite:///{tmp_path}/server.db",
           "--artifacts-destination", str(tmp_path / "artifacts"), "--host", "127.0.0.1", "--port", str(port),
           "--workers", "1"]
    # The server's background job runners (huey consumers) are not needed here and cost two busy cores.
    env = {**os.environ, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"}
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True, env=env)
    url = f"http://127.0.0.1:{port}"
    deadline = time.time() + 120
    while time.time() < deadline:
        try:
            with urllib.request.urlopen(f"{url}/health", timeout=2) as resp:
                if resp.status == 200:
                    break
        except OSError:
            time.sleep(0.5)
    else:
        proc.kill()
        raise RuntimeError("mlflow server did not answer /health within 120 s")
    yield url
    os.killpg(proc.pid, 15)
    proc.wait(timeout=30)


def test_smoke_grid_through_tracking_server_and_rest_api(server, tmp_path, data_dir):
    data = data_dir
    out = tmp_path / "out"
    proc = _run(["pipelines.evaluate", "-m", "experiment=smoke"], out, data, uri=server)
    assert proc.stdout.count("logged run") == 4
    assert not (out / "mlflow.db").exists()  # nothing went to the local default store
    exp = _post(f"{server}/api/2.0/mlflow/experiments/get-by-name".replace("get-by-name", "search"),
                {"max_results": 10, "filter": "name = 'camdf'"})["experiments"][0]
    runs = _post(f"{server}/api/2.0/mlflow/runs/search",
                 {"experiment_ids": [exp["experiment_id"]], "filter": "attributes.status = 'FINISHED'",
                  "max_results": 100})["runs"]
    assert len(runs) == 4
    keys = {t["value"] for r in runs for t in r["data"]["tags"] if t["key"] == "cell_key"}
    assert len(keys) == 4
    metrics = {m["key"] for m in runs[0]["data"]["metrics"]}
    assert {"camdf/payoff_mean", "predict_threshold/diff_vs_ref_ci_low", "ranking/recall_at_3"} <= metrics
    # Artifacts went through the server's artifact proxy.
    listing = urllib.request.urlopen(
        f"{server}/api/2.0/mlflow/artifacts/list?run_id={runs[0]['info']['run_id']}", timeout=30)
    files = {f["path"] for f in json.loads(listing.read())["files"]}
    assert {"outcomes.parquet", "summary.csv", "figures", ".hydra"} <= files
    _run(["pipelines.tables", "update_readme=false", "experiments=[smoke]", "main.methods=${grid_methods.names}"], out, data, uri=server)
    assert (out / "tables" / "a18.md").is_file()
