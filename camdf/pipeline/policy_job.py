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


def model_description(name: str, alias: str) -> str:
    """The registered model's description: what it decides and how to use it (markdown; the UI renders it)."""
    return (f"The run-time stopper of camdf: given a ranked tool list, their costs and lambda, which tools to "
            f"expose before an agent runs. Each version is fitted by `make reproduce` (`python -m pipelines.train`) "
            f"at the main cell; `@{alias}` is the version chosen out of fold among the candidates, under the cell's "
            f"folds and under group folds, the simplest of those that cannot be told apart from the best "
            f"(camdf.pipeline.champion; each version's description has the comparison and the reason; the "
            f"`candidates.csv` artifacts of its run have every number).\n\n"
            "Use it:\n\n"
            "```python\n"
            "from camdf.runtime import load_policy\n"
            f"policy = load_policy(\"models:/{name}@{alias}\")\n"
            "choice = policy.select([{\"name\": \"get_order\"}, {\"name\": \"cancel_order\"}], "
            "query=\"cancel my pending order\")\n"
            "print(choice.exposed)\n"
            "```\n\n"
            f"From the shell: `echo '{{\"query\": \"...\", \"tools\": [...]}}' | camdf select` "
            f"(default `--policy models:/{name}@{alias}`); served: `camdf serve --policy models:/{name}@{alias}` "
            "(its checks, then `mlflow models serve`).")


def version_description(cfg: dict[str, Any], method: str, info: dict, comparisons: list | None,
                        run_id: str) -> str:
    """A model version's description: the rule shipped, the cell it was fitted at, and (``auto``) the
    candidates' out-of-fold comparisons it was chosen by, with the reason (markdown)."""
    c = cfg["cost"]
    text = (f"Rule `{method}` fitted on every task of {cfg['domain']['name']} ranked by "
            f"{cfg['scorer'].get('label', cfg['scorer']['name'])}, {c['regime']} costs at lambda={float(c['lam']):g}, "
            f"d={float(c['d']):g}; in sample it exposes {info['mean_exposed']:.2f} tools per task. Run `{run_id}` "
            "(artifacts: `candidates.csv`, `decisions.parquet`, `requests.jsonl`).")
    if comparisons:
        text += f"\n\n{info['reason']}."
        for comparison in comparisons:
            rows = ["| candidate | payoff (95% CI, out of fold) | tools | success |", "| --- | --- | ---: | ---: |"]
            shown = comparison.summary.loc[[m for m in cfg["policy"]["candidates"] if m in comparison.summary.index]]
            for m, r in shown.sort_values("payoff_mean", ascending=False).iterrows():
                mark = " (shipped)" if m == method else ""
                rows.append(f"| {m}{mark} | {r.payoff_mean:.3f} [{r.payoff_ci_low:.3f}, {r.payoff_ci_high:.3f}] | "
                            f"{r.n_exposed:.2f} | {r.success:.3f} |")
            text += f"\n\nOut of fold, {comparison.protocol} folds:\n\n" + "\n".join(rows)
    return text


def train_policy(cfg: dict[str, Any], paths: Paths, tracker, root: Path, unresolved: Any = None) -> tuple[str, dict]:
    """Fit the run-time stopper on every task of the cell, log it as an MLflow model and register it.

    With ``policy.method: auto`` each of ``policy.candidates`` is first evaluated out of fold
    at the cell, under its folds and under group folds (:func:`camdf.pipeline.champion.compare`), and
    the simplest candidate that cannot be told apart from the best is shipped
    (:func:`camdf.pipeline.champion.pick`); the comparisons are logged with the run (``candidates.csv``
    and ``candidates_<protocol>.csv``, metrics ``candidate/<method>/...`` of the cell's folds). The model is registered as ``policy.registered_name``
    with the alias ``policy.alias`` moved to the new version (``models:/camdf-stopper@champion``) when
    it was chosen out of fold (``auto``); an explicitly named method is registered without moving it.
    The candidates may be prefix and set rules alike. The run also records the policy's decision for
    every task (``decisions.parquet``: its depth, null for a set rule, and its exposed tools)
    and the matching run-time requests (``requests.jsonl``), so a loaded policy can be
    checked against what the pipeline decided. It is held with a heartbeat
    (:meth:`~camdf.tracking.client.Tracker.kind_run`): it ends FAILED on an error, KILLED on
    Ctrl-C, and a run left RUNNING by a killed train stage is ended by the next one. Its params
    are the cell's (:func:`~camdf.pipeline.cell_job.cell_params`: values taken from the
    environment redacted, given ``unresolved``, the config before interpolation).

    Returns
    -------
    model_uri : str
        ``models:/<name>@<alias>`` (auto), ``models:/<name>/<version>`` (a named method), or the
        logged model's URI when not registered.
    info : dict
        ``run_id``, ``method``, ``mean_exposed`` and (a prefix rule) ``mean_depth`` (in-sample),
        ``comparisons`` (auto: :class:`camdf.pipeline.champion.Comparison`, the cell's folds first) and
        ``reason`` (auto), ``coefficients`` (camdf_lite).
    """
    import mlflow

    from camdf.runtime import StopPolicy, log_policy
    from camdf.pipeline.cell_job import cell_params, cell_tags
    from camdf.pipeline.champion import compare, pick
    from camdf.pipeline.provenance import git_commit
    from camdf.tracking.locations import portable

    pol = cfg["policy"]
    comparisons, reason = [], None
    method = pol["method"]
    if method == "auto":
        candidates = list(pol["candidates"])
        comparisons, skipped = compare(cfg, paths, candidates)
        method, reason = pick(comparisons, candidates, int(cfg["stats"]["n_resamples"]), int(cfg["seed"]))
        reason += f" ({skipped})" if skipped else ""
    inst, domain, costs, _ = cell_instances(cfg, paths)
    policy = StopPolicy(method=method, kind=cfg["payoff"], lam=float(cfg["cost"]["lam"]),
                        lam_grid=pol.get("lam_grid") or None, random_state=int(cfg["seed"]),
                        dials=dict(cfg["method"].get("dials") or {}) or None)
    policy.fit(inst, costs=costs.to_dict())
    # A prefix rule's decision is a depth; a set rule's any subset of the ranking (its depth is null).
    exposed = policy.exposed(inst)
    depth = policy.depths(inst) if policy.picks_prefix else None
    requests = task_requests(domain, inst)
    mlflow.set_tracking_uri(tracker.uri)
    mlflow.set_registry_uri(tracker.uri)
    key = cell_key(cfg, paths.data_dir)
    tags = {**cell_tags(cfg), "git_commit": git_commit(root), "cell_key": key, "policy_method": method}
    name = pol.get("registered_name") or None
    with tracker.kind_run("policy", f"policy/{method}/{cell_name(cfg)}", tags) as held, \
            mlflow.start_run(run_id=held.info.run_id) as run:
        mlflow.log_params(portable(cell_params(cfg, unresolved), tracker.roots))
        uri = log_policy(policy, example=requests[0], registered_model_name=name)
        decisions = pd.DataFrame({"task_id": inst.task_ids,
                                  "depth": depth if depth is not None else pd.array([None] * inst.T, dtype="Int64"),
                                  "exposed": [list(inst.tools[i][row]) for i, row in enumerate(exposed)]})
        files = {"decisions.parquet": parquet_bytes(decisions),
                 "requests.jsonl": "".join(json.dumps(r) + "\n" for r in requests)}
        info = {"run_id": run.info.run_id, "method": method, "mean_exposed": float(exposed.sum(axis=1).mean())}
        if depth is not None:
            info["mean_depth"] = float(depth.mean())
        if comparisons:  # the cell's own folds first: candidates.csv and the candidate/ metrics
            cell = comparisons[0].summary
            files["candidates.csv"] = cell.to_csv(float_format="%.6g")
            files.update({f"candidates_{c.protocol}.csv": c.summary.to_csv(float_format="%.6g")
                          for c in comparisons[1:]})
            mlflow.set_tag("champion_reason", reason[:5000])
            info["comparisons"], info["reason"] = comparisons, reason
            mlflow.log_metrics({f"candidate/{m}/{k}": float(cell.loc[m, k]) for m in cell.index
                                for k in ("payoff_mean", "payoff_ci_low", "payoff_ci_high", "n_exposed", "success")})
        coefficients = policy.coefficients()
        if coefficients is not None:
            files["lite_coefficients.csv"] = coefficients.to_csv()
            mlflow.log_metrics({f"lite_coef/{k}": float(v) for k, v in coefficients.items()})
            info["coefficients"] = coefficients
        tracker.log_files(run.info.run_id, files)
        mlflow.log_metrics({f"policy/{k}": info[k] for k in ("mean_depth", "mean_exposed") if k in info})
    if name:
        client = mlflow.MlflowClient(tracking_uri=tracker.uri, registry_uri=tracker.uri)
        version = max(client.search_model_versions(f"run_id = '{run.info.run_id}'"), key=lambda v: int(v.version))
        client.set_model_version_tag(name, version.version, "method", method)
        client.update_model_version(name, version.version, version_description(cfg, method, info, comparisons,
                                                                                run.info.run_id))
        client.update_registered_model(name, model_description(name, pol.get("alias") or "champion"))
        info["version"] = int(version.version)
        info["logged_uri"] = uri
        uri = f"models:/{name}/{version.version}"
        if comparisons:  # only a champion chosen out of fold moves the alias
            alias = pol.get("alias") or "champion"
            client.set_registered_model_alias(name, alias, version.version)
            uri = f"models:/{name}@{alias}"
    return uri, info
