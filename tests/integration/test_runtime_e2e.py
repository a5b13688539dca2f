"""A policy logged by the train stage, loaded back by URI, served over HTTP and used from the CLI."""

import json
import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pandas as pd
import pytest

from .test_pipeline import ROOT, _run

MLFLOW = str(Path(sys.executable).with_name("mlflow"))


@pytest.fixture(scope="module")
def trained(tmp_path_factory, data_dir):
    tmp = tmp_path_factory.mktemp("runtime")
    data, out = data_dir, tmp / "out"
    proc = _run(["pipelines.train", "folds.n_folds=3"], out, data)
    uri = f"sqlite:///{out}/mlflow.db"
    import mlflow

    client = mlflow.MlflowClient(tracking_uri=uri)
    exp = client.get_experiment_by_name("camdf")
    run = client.search_runs([exp.experiment_id], "tags.kind = 'policy'")[0]
    model_uri = re.search(r"logged (\S+)", proc.stdout).group(1)
    folder = tmp / "dl"
    decisions = pd.read_parquet(client.download_artifacts(run.info.run_id, "decisions.parquet", str(folder)))
    reqs = [json.loads(line) for line in
            Path(client.download_artifacts(run.info.run_id, "requests.jsonl", str(folder))).read_text().splitlines()]
    return {"uri": uri, "run_id": run.info.run_id, "model_uri": model_uri, "decisions": decisions,
            "requests": reqs, "tmp": tmp, "stdout": proc.stdout}


def test_train_stage_prints_the_ten_lite_coefficients(trained):
    lines = [line for line in trained["stdout"].splitlines() if re.match(r"^\w+\s+[+-]\d", line)]
    assert len([line for line in lines if not line.startswith("intercept")]) == 10


@pytest.mark.parametrize("how", ["runs", "models", "folder"])
def test_loaded_policy_makes_the_recorded_decisions(trained, how, monkeypatch):
    import mlflow

    from camdf.runtime import load_policy

    monkeypatch.setenv("MLFLOW_TRACKING_URI", trained["uri"])
    mlflow.set_tracking_uri(trained["uri"])
    if how == "runs":
        uri = f"runs:/{trained['run_id']}/policy"
    elif how == "models":
        uri = trained["model_uri"]
    else:
        uri = mlflow.artifacts.download_artifacts(trained["model_uri"], dst_path=str(trained["tmp"] / how))
    policy = load_policy(uri)
    depths = [s.depth for s in policy.select_batch(trained["requests"])]
    assert depths == trained["decisions"]["depth"].tolist()
    one_by_one = [policy.select_batch([r])[0].depth for r in trained["requests"]]  # the single-request path
    assert one_by_one == depths


def test_cli_select_matches_and_refuses_bad_json(trained, tmp_path):
    env = {**os.environ, "MLFLOW_TRACKING_URI": trained["uri"]}
    req = tmp_path / "req.json"
    req.write_text(json.dumps(trained["requests"][0]))
    proc = subprocess.run([sys.executable, "-m", "camdf.cli", "select", "--policy", trained["model_uri"],
                           "--input", str(req)], capture_output=True, text=True, env=env, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["depth"] == int(trained["decisions"]["depth"].iloc[0])
    bad = subprocess.run([sys.executable, "-m", "camdf.cli", "select", "--policy", trained["model_uri"]],
                         input='{"tools": [', capture_output=True, text=True, env=env, cwd=ROOT)
    assert bad.returncode == 2 and "request: invalid JSON at line 1" in bad.stderr
    neg = subprocess.run([sys.executable, "-m", "camdf.cli", "select", "--policy", trained["model_uri"], "--lam",
                          "-1"], input=json.dumps(trained["requests"][0]), capture_output=True, text=True, env=env,
                         cwd=ROOT)
    assert neg.returncode == 2 and "lam: must be a finite number >= 0" in neg.stderr


def test_mlflow_models_serve_gives_the_same_decisions(trained):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    # mlflow starts `uvicorn` by name: the venv's bin folder must be on PATH, as after `source .venv/bin/activate`.
    env = {**os.environ, "MLFLOW_TRACKING_URI": trained["uri"],
           "PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}"}
    proc = subprocess.Popen([MLFLOW, "models", "serve", "-m", trained["model_uri"], "--env-manager", "local",
                             "-h", "127.0.0.1", "-p", str(port)], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.time() + 180
        while time.time() < deadline:
            try:
                urllib.request.urlopen(f"{url}/ping", timeout=2)
                break
            except OSError:
                time.sleep(0.5)
        reqs = trained["requests"][:20]
        body = {"dataframe_split": {"columns": ["request"], "data": [[json.dumps(r)] for r in reqs]}}
        http = urllib.request.Request(f"{url}/invocations", data=json.dumps(body).encode(),
                                      headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(http, timeout=60) as resp:
            preds = json.loads(resp.read())["predictions"]
        depths = [json.loads(p["response"])["depth"] for p in preds]
        assert depths == trained["decisions"]["depth"].tolist()[:20]
    finally:
        os.killpg(proc.pid, 15)
        proc.wait(timeout=30)


def test_readme_harness_example_runs(trained):
    text = (ROOT / "README.md").read_text()
    block = text.split("<!-- example:harness -->", 1)[1].split("```python", 1)[1].split("```", 1)[0]
    env = {**os.environ, "MLFLOW_TRACKING_URI": trained["uri"], "CAMDF_POLICY": trained["model_uri"]}
    proc = subprocess.run([sys.executable, "-c", block], capture_output=True, text=True, env=env, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.strip().splitlines()
    assert len(lines) == 2 and all(re.match(r"^\d+ \[", line) for line in lines)
