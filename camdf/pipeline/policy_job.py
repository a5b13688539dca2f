"""Train the run-time stopper on a cell and log it, its decisions and its requests as an MLflow model run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd

from camdf.common.files import parquet_bytes
from camdf.data.model import Domain
from camdf.core.instances import Instances
from camdf.pipeline.assembly import Paths, cell_instances
from camdf.pipeline.identity import cell_key, cell_name


def task_requests(domain: Domain, inst: Instances) -> list[dict]:
    """One run-time request per task: its ranked tools as OpenAI function tools, scores, costs, query."""
    by_name = domain.tool_by_name
    texts = {t.id: t.text for t in domain.tasks}
    out = []
    for i, tid in enumerate(inst.task_ids):
        n = inst.n[i]
        tools = [{"type": "function", "function": {"name": name, "description": by_name[name].description,
                                                   "parameters": by_name[name].parameters or {}}}
                 for name in inst.tools[i, :n]]
        out.append({"query": texts[tid], "tools": tools, "scores": inst.scores[i, :n].tolist(),
                    "costs": inst.costs[i, :n].tolist()})
    return out


def train_policy(cfg: dict[str, Any], paths: Paths, tracker, root: Path) -> tuple[str, dict]:
    """Fit the run-time stopper on every task of the cell and log it as an MLflow model.

    The run also records the policy's decision for every task (``decisions.parquet``)
    and the matching run-time requests (``requests.jsonl``), so a loaded policy can be
    checked against what the pipeline decided.

    Returns
    -------
    model_uri : str
    info : dict
        ``run_id``, ``coefficients`` (camdf_lite) and the mean depth.
    """
    import mlflow

    from camdf.runtime import StopPolicy, log_policy
    from camdf.pipeline.tracking import flatten, git_commit

    inst, domain, costs, _ = cell_instances(cfg, paths)
    pol = cfg["policy"]
    policy = StopPolicy(method=pol["method"], kind=cfg["payoff"], lam=float(cfg["cost"]["lam"]),
                        lam_grid=pol.get("lam_grid") or None, random_state=int(cfg["seed"]))
    policy.fit(inst, costs=costs.to_dict())
    depth = policy.depths(inst)
    requests = task_requests(domain, inst)
    mlflow.set_tracking_uri(tracker.uri)
    key = cell_key(cfg, paths.data_dir)
    tags = {"kind": "policy", "git_commit": git_commit(root), "cell_key": key, "policy_method": pol["method"]}
    with mlflow.start_run(experiment_id=tracker.experiment_id, run_name=f"policy/{cell_name(cfg)}", tags=tags) as run:
        mlflow.log_params(flatten(cfg))
        uri = log_policy(policy, example=requests[0], registered_model_name=pol.get("registered_name") or None)
        decisions = pd.DataFrame({"task_id": inst.task_ids, "depth": depth})
        tracker.log_files(run.info.run_id, {
            "decisions.parquet": parquet_bytes(decisions),
            "requests.jsonl": "".join(json.dumps(r) + "\n" for r in requests),
        })
        info = {"run_id": run.info.run_id, "mean_depth": float(depth.mean())}
        coefficients = policy.coefficients()
        if coefficients is not None:
            tracker.log_files(run.info.run_id, {"lite_coefficients.csv": coefficients.to_csv()})
            mlflow.log_metrics({f"lite_coef/{k}": float(v) for k, v in coefficients.items()})
            info["coefficients"] = coefficients
        mlflow.log_metric("policy/mean_depth", info["mean_depth"])
    return uri, info
