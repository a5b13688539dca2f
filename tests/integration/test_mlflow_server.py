"""The smoke grid against a real `mlflow server` on loopback (SQLite backend), read back over REST.

The server is the session's (``server`` in tests/integration/conftest.py); this test owns its ``camdf``
experiment (the default ``tracking.experiment``)."""

import json
import urllib.request

from .test_pipeline import _run


def _post(url: str, body: dict) -> dict:
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as resp:
        return json.loads(resp.read())


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
    tags = [{t["key"]: t["value"] for t in r["data"]["tags"]} for r in runs]
    sweeps = [r for r, t in zip(runs, tags) if t.get("kind") == "sweep"]
    assert len(sweeps) == 1  # the sweep's parent run, its cells are its children
    parent = sweeps[0]["info"]["run_id"]
    runs = [r for r, t in zip(runs, tags) if t.get("kind") == "cell"]
    assert len(runs) == 4
    assert all(t.get("mlflow.parentRunId") == parent for t in tags if t.get("kind") == "cell")
    keys = {t["value"] for r in runs for t in r["data"]["tags"] if t["key"] == "cell_key"}
    assert len(keys) == 4
    metrics = {m["key"] for m in runs[0]["data"]["metrics"]}
    # The few metrics compared across cells (the rest is in each cell's metrics.parquet).
    assert {"camdf/payoff_mean", "predict_threshold/diff_vs_ref", "ranking/recall_at_3"} <= metrics
    # Artifacts went through the server's artifact proxy.
    listing = urllib.request.urlopen(
        f"{server}/api/2.0/mlflow/artifacts/list?run_id={runs[0]['info']['run_id']}", timeout=30)
    files = {f["path"] for f in json.loads(listing.read())["files"]}
    assert {"outcomes.parquet", "summary.csv", "figures", ".hydra"} <= files
    _run(["pipelines.tables", "update_readme=false", "experiments=[smoke]"], out, data, uri=server)
    assert (out / "tables" / "a18.md").is_file()
