"""A policy logged by the train stage, loaded back by URI, served over HTTP and used from the CLI."""

import json
import os
import re
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pandas as pd
import pytest

from .test_pipeline import ROOT, _run



def test_train_stage_prints_the_ten_lite_coefficients_and_a_named_method_does_not_move_the_alias(tmp_path, data_dir):
    import mlflow

    proc = _run(["pipelines.train", "policy.method=camdf_lite", "folds.n_folds=3"], tmp_path / "out", data_dir)
    assert "logged models:/camdf-stopper/1 " in proc.stdout  # registered, but not as the champion
    uri = f"sqlite:///{tmp_path}/out/mlflow.db"
    assert mlflow.MlflowClient(tracking_uri=uri, registry_uri=uri).get_registered_model("camdf-stopper").aliases == {}
    lines = [line for line in proc.stdout.splitlines() if re.match(r"^\w+\s+[+-]\d", line)]
    assert len([line for line in lines if not line.startswith("intercept")]) == 10
    bare = _run(["pipelines.train", "policy.method=camdf_lite", "folds.n_folds=3", "policy.registered_name=null"],
                tmp_path / "bare", data_dir)
    assert re.search(r"logged models:/m-\S+ ", bare.stdout)  # not registered: the logged model's own URI


def test_the_shipped_policy_is_the_simplest_that_ties_the_best_under_both_fold_protocols(trained):
    from omegaconf import OmegaConf

    table, grouped, method = trained["candidates"], trained["candidates_group"], trained["method"]
    candidates = list(OmegaConf.load(ROOT / "conf" / "train.yaml").policy.candidates)
    # Both kinds compete: prefix rules (a depth) and set rules (any subset of the ranking).
    assert {"camdf_lite", "camdf_risk"} <= set(candidates) and {"plugin_set", "risk_set"} <= set(candidates)
    assert set(candidates) <= set(table.index) and set(candidates) <= set(grouped.index)
    mean = (table.loc[candidates, "payoff_mean"] + grouped.loc[candidates, "payoff_mean"]) / 2
    best = mean.idxmax()  # the best out of fold, over the k-fold and the group folds
    assert candidates.index(method) <= candidates.index(best)  # the shipped one is it, or a simpler one
    reason = trained["reason"]
    assert f"`{method}` ships" in reason and f"`{best}`" in reason and "kfold folds" in reason \
        and "group folds" in reason
    if method != best:  # a simpler candidate: its difference with the best reaches 0 under both protocols
        assert "cannot be told apart" in reason and reason.count("each CI reaches 0") == 1
    assert trained["model_uri"] == "models:/camdf-stopper@champion"
    version = trained["client"].get_model_version_by_alias("camdf-stopper", "champion")
    assert version.run_id == trained["run_id"] and version.tags["method"] == method
    assert reason in version.description and "Out of fold, group folds" in version.description
    # It helps: out of fold it exposes fewer tools than full access on average, but not none.
    assert 0 < table.loc[method, "n_exposed"] < table.loc["full", "n_exposed"] == 7
    exposed = trained["decisions"]["exposed"].map(tuple)
    assert len(exposed) == 110 and exposed.nunique() > 1


@pytest.mark.parametrize("how", ["runs", "models", "folder"])
def test_loaded_policy_makes_the_recorded_decisions(trained, how, monkeypatch):
    import mlflow

    from camdf.runtime import load_policy

    monkeypatch.setenv("MLFLOW_TRACKING_URI", trained["uri"])
    mlflow.set_tracking_uri(trained["uri"])
    if how == "runs":
        uri = f"runs:/{trained['run_id']}/policy"
    elif how == "models":
        uri = trained["model_uri"]  # the alias models:/camdf-stopper@champion
    elif how == "folder":
        uri = mlflow.artifacts.download_artifacts(trained["model_uri"], dst_path=str(trained["tmp"] / how))
    policy = load_policy(uri)
    recorded = [list(e) for e in trained["decisions"]["exposed"]]
    batch = policy.select_batch(trained["requests"])
    assert [s.exposed for s in batch] == recorded
    assert [s.depth for s in batch] == [None if pd.isna(d) else int(d) for d in trained["decisions"]["depth"]]
    one_by_one = [policy.select_batch([r])[0].exposed for r in trained["requests"]]  # the single-request path
    assert one_by_one == recorded


def test_cli_select_matches_and_refuses_bad_json(trained, tmp_path):
    env = {**os.environ, "MLFLOW_TRACKING_URI": trained["uri"]}
    req = tmp_path / "req.json"
    req.write_text(json.dumps(trained["requests"][0]))
    proc = subprocess.run([sys.executable, "-m", "camdf.cli", "select", "--policy", trained["model_uri"],
                           "--input", str(req)], capture_output=True, text=True, env=env, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["exposed"] == list(trained["decisions"]["exposed"].iloc[0])
    bad = subprocess.run([sys.executable, "-m", "camdf.cli", "select", "--policy", trained["model_uri"]],
                         input='{"tools": [', capture_output=True, text=True, env=env, cwd=ROOT)
    assert bad.returncode == 2 and "request: line 1 column 12: invalid JSON" in bad.stderr
    neg = subprocess.run([sys.executable, "-m", "camdf.cli", "select", "--policy", trained["model_uri"], "--lam",
                          "-1"], input=json.dumps(trained["requests"][0]), capture_output=True, text=True, env=env,
                         cwd=ROOT)
    assert neg.returncode == 2 and "lam: must be a finite number >= 0" in neg.stderr
    # A flag wins over the request's own value: --lam 50 on a request saying lam 0 decides as lam 50.
    def select(request, *flags):
        proc = subprocess.run([sys.executable, "-m", "camdf.cli", "select", "--policy", trained["model_uri"], *flags],
                              input=json.dumps(request), capture_output=True, text=True, env=env, cwd=ROOT)
        assert proc.returncode == 0, proc.stderr
        return json.loads(proc.stdout)["exposed"]

    request = {k: v for k, v in trained["requests"][0].items() if k != "lam"}
    free, dear = select({**request, "lam": 0.0}), select({**request, "lam": 50.0})
    assert free != dear and select({**request, "lam": 0.0}, "--lam", "50") == dear


def test_mlflow_models_serve_gives_the_same_decisions(trained, served):
    """The model served by `mlflow models serve` decides as the library (its refusals: hostile/test_served_hostile.py)."""
    reqs = trained["requests"][:20]
    # The typed signature: one row per request, the request's own fields as columns.
    body = {"dataframe_records": reqs}
    status, preds = _post(f"{served}/invocations", body)
    assert status == 200, preds
    assert [p["exposed"] for p in preds["predictions"]] == [list(e) for e in trained["decisions"]["exposed"]][:20]
    assert all(set(p["exposed"]) <= set(p["ranked"]) for p in preds["predictions"])
    assert all(p["depth"] is None or p["exposed"] == p["ranked"][: p["depth"]] for p in preds["predictions"])
    # The run-time dials are params: a larger lambda never exposes more.
    status, dear = _post(f"{served}/invocations", {**body, "params": {"lam": 10.0}})
    assert status == 200 and all(len(d["exposed"]) <= len(p["exposed"])
                                 for d, p in zip(dear["predictions"], preds["predictions"]))


def _post(url: str, body) -> tuple[int, dict]:
    http = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(http, timeout=60) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read() or b"{}")


def test_loader_names_the_store_when_the_champion_is_missing(tmp_path):
    env = {**os.environ, "MLFLOW_TRACKING_URI": f"sqlite:///{tmp_path}/empty.db"}
    proc = subprocess.run([sys.executable, "-m", "camdf.cli", "select", "--policy", "models:/camdf-stopper@champion"],
                          input='{"tools": [{"name": "a"}], '
                          '"scores": [1]}', capture_output=True, text=True, env=env, cwd=ROOT)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert f"cannot load 'models:/camdf-stopper@champion' in the tracking store sqlite:///{tmp_path}/empty.db" \
        in proc.stderr and "make reproduce" in proc.stderr


def test_foreign_requests_get_sensible_decisions(trained, monkeypatch):
    """A request from outside the training catalog: the README's 3 tools, and airline's tools as an MCP list."""
    from camdf.integrations.tau2.convert import convert_customer_service
    from camdf.runtime import load_policy

    monkeypatch.setenv("MLFLOW_TRACKING_URI", trained["uri"])
    policy = load_policy("models:/camdf-stopper@champion")
    airline = convert_customer_service("airline")
    mcp = [{"name": t.name, "description": t.description, "inputSchema": t.parameters or {}} for t in airline.tools
           if t.name not in policy.vocab_]  # airline's own tools: none of them was seen in training
    assert len(mcp) >= 5
    query = airline.tasks[0].text
    ranked = policy.select(mcp, query=query)
    assert ranked.ranked[0] in {t["name"] for t in mcp} and sorted(ranked.ranked) == sorted(t["name"] for t in mcp)
    assert set(ranked.exposed) <= set(ranked.ranked)  # a set rule may expose none of 14 unseen tools at cost 1 each
    assert len(policy.select(mcp, query=query, lam=0.0).exposed) >= 1  # free tools: something is exposed
    three = [{"name": "a", "description": "x"}, {"name": "b", "description": "y"}, {"name": "c", "description": "z"}]
    if policy.method == "camdf_risk":
        strict = policy.select(mcp, query=query, alpha=0.001)  # floor(0.001 (n + 1)) = 0: everything
        assert strict.depth == len(mcp)
        depths = [policy.select(three, scores=[3.0, 2.0, 1.0], alpha=a).depth for a in (0.01, 0.05, 0.2, 0.5)]
        assert depths == sorted(depths, reverse=True) and depths[0] == 3
    else:
        assert len(policy.select(three, scores=[3.0, 2.0, 1.0], lam=0.0).exposed) >= 1


def test_champion_has_a_typed_signature_and_installable_requirements(trained, tmp_path):
    """models:/camdf-stopper@champion: request columns in, selection columns out, the dials as params, and
    a requirements.txt whose camdf wheel (logged with the model) installs and loads the logged policy."""
    import mlflow

    mlflow.set_tracking_uri(trained["uri"])
    mlflow.set_registry_uri(trained["uri"])
    info = mlflow.models.get_model_info(trained["model_uri"])
    sig = info.signature
    assert [c.name for c in sig.inputs.inputs] == ["tools", "scores", "costs", "query"]
    assert [c.required for c in sig.inputs.inputs] == [True, False, False, False]
    assert [c.name for c in sig.outputs.inputs] == ["depth", "exposed", "ranked", "tools"]
    params = {p.name: p for p in sig.params.params}
    from camdf.runtime.signature import dial_params

    assert set(params) == {"lam", *dial_params()} >= {"lam", "alpha"} and params["lam"].default > 0  # every rule's dial
    folder = Path(mlflow.artifacts.download_artifacts(trained["model_uri"], dst_path=str(tmp_path / "model")))
    reqs = (folder / "requirements.txt").read_text().split()
    wheels = [r for r in reqs if r.endswith(".whl")]
    assert len(wheels) == 1 and (folder / wheels[0]).is_file(), reqs
    assert any(r.startswith("mlflow==") for r in reqs)
    # The wheel installs on its own (into a bare target folder) and its camdf reads the logged policy.
    target = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index", "--target",
                    str(target), str(folder / wheels[0])], check=True, capture_output=True)
    assert (target / "camdf" / "runtime" / "policy.py").is_file()
    code = ("import sys, camdf, pathlib; from camdf.runtime import load_policy; "
            f"assert pathlib.Path(camdf.__file__).is_relative_to({str(target)!r}), camdf.__file__; "
            f"p = load_policy({str(folder)!r}); print(p.method)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path,
                          env={**os.environ, "PYTHONPATH": str(target)})
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == trained["method"]
