"""The runtime's default policy: one portable rule fitted on every built-in domain, shipped as data in the package.

:func:`fit_default_policy` pools the portable instances of every domain of ``transfer.domains``
(:mod:`camdf.core.portable`: no tool identities, scores normalised per task; costs in schema tokens), fits the
configured rule on all of them (lambda, a per-token price, is one of its features across ``lambda_grid``),
exports it as a policy folder (:mod:`camdf.runtime.export`) under ``policy.out_dir`` with its provenance in the
manifest, and records it as an MLflow run (tag ``kind=default_policy``). ``make default-policy`` copies the
folder into the package (:func:`camdf.runtime.loading.default_policy_dir`), where ``load_policy()``,
``camdf select`` and every adapter find it when no policy is given. A30 measures what this rule does on a
domain it never saw (each transfer cell fits it without that domain).
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pandas as pd

from camdf.common.files import parquet_bytes
from camdf.core.portable import pool
from camdf.costs.units import TOKENS
from camdf.pipeline.assembly import Paths
from camdf.pipeline.identity import code_stamp, data_fingerprint
from camdf.pipeline.transfer import training_part
from camdf.reporting.store import RANKING_ARTIFACT


def pooled_instances(cfg: dict[str, Any], paths: Paths):
    """Every domain of ``transfer.domains`` at the config's scorer, costs and candidate cut, portable and pooled;
    with the number of tasks of each domain."""
    parts, sizes = [], {}
    for name, dom in sorted((cfg.get("transfer") or {}).get("domains", {}).items()):
        parts.append(training_part(cfg, dom, paths))
        sizes[name] = parts[-1].T
    if not parts:
        raise ValueError("transfer.domains: expected the domains the default policy learns from")
    return pool(parts), sizes


def fit_ranker(cfg: dict[str, Any], paths: Paths, source: dict) -> tuple[dict[str, bytes], list[dict]]:
    """The runtime's built-in ranker (the config's scorer, crosscat) fitted on every catalog of
    ``scorer.params.catalogs``, as the files of ``camdf/runtime/ranker_model/`` (the booster's text, a manifest
    with ``source`` and the catalogs' fingerprints), and the ranking-across-catalogs rows
    (:func:`camdf.evaluation.ranking_transfer.transfer_rows`: each catalog ranked by the ranker fitted on the
    others)."""
    import json

    from camdf.evaluation.ranking_transfer import transfer_rows
    from camdf.rankers.loco import fitted, leave_one_out, training_catalogs

    scorer = cfg["scorer"]
    if scorer["name"] != "crosscat":
        raise ValueError(f"scorer: the runtime's built-in ranker is crosscat (scorer=crosscat), got {scorer['name']!r}")
    params = scorer.get("params") or {}
    names, rounds = list(params["catalogs"]), int(params.get("rounds", 100))
    catalogs = training_catalogs(paths.data_dir, names, cache_dir=paths.cache_dir)
    booster = fitted(catalogs, rounds=rounds)
    rows = transfer_rows(catalogs, leave_one_out(catalogs, rounds=rounds), random_state=int(cfg["seed"]))
    manifest = {"kind": "camdf-ranker", "format": 1, "ranker": "crosscat", "rounds": rounds,
                "catalogs": {c.name: {"fingerprint": data_fingerprint(paths.data_dir, c.name),
                                      "queries": len(c.task_ids), "tools": len(c.tools)} for c in catalogs},
                "source": {k: source[k] for k in ("source_fingerprint", "git_commit", "seed")}}
    return {"crosscat.txt": booster.model_to_string().encode(),
            "manifest.json": (json.dumps(manifest, indent=2, sort_keys=True) + "\n").encode()}, rows


def fit_default_policy(cfg: dict[str, Any], paths: Paths, tracker, root: Path) -> tuple[Path, dict]:
    """Fit, export and record the default policy; returns its folder and a summary (``method``, ``tasks`` per
    domain, ``mean_exposed`` in sample, ``run_id``)."""
    import mlflow

    from camdf.pipeline.cell_job import cell_params
    from camdf.pipeline.provenance import git_commit
    from camdf.runtime import StopPolicy
    from camdf.runtime.export import export_policy
    from camdf.tracking.locations import portable as portable_paths

    if cfg["cost"]["regime"] != "runtime_tokens":
        raise ValueError(f"cost.regime: the default policy prices tools in the runtime's schema tokens "
                         f"(runtime_tokens), got {cfg['cost']['regime']!r}")
    inst, sizes = pooled_instances(cfg, paths)
    pol = cfg["policy"]
    policy = StopPolicy(method=pol["method"], kind=cfg["payoff"], lam=float(cfg["cost"]["lam"]),
                        lam_grid=list(cfg.get("lambda_grid") or []) or None, random_state=int(cfg["seed"]),
                        portable=True, fit_depth=(cfg.get("candidates") or {}).get("fit_depth"),
                        top_n=(cfg.get("candidates") or {}).get("top_k"))
    policy.fit(inst)
    # Costs in schema tokens, lambda per token: a request without costs is priced by its tools' schema tokens.
    policy.cost_unit_, policy.task_value_ = TOKENS, 1.0 / float(cfg["cost"]["lam"])
    exposed = policy.exposed(inst)
    info = {"method": pol["method"], "tasks": sizes, "mean_exposed": float(exposed.sum(axis=1).mean())}
    source = {"stage": "default_policy", "source_fingerprint": code_stamp(), "git_commit": git_commit(root),
              "domains": {name: data_fingerprint(paths.data_dir, d["name"])
                          for name, d in sorted(cfg["transfer"]["domains"].items())},
              "scorer": cfg["scorer"]["name"], "cost_regime": cfg["cost"]["regime"],
              "top_k": (cfg.get("candidates") or {}).get("top_k"), "seed": int(cfg["seed"])}
    out = Path(pol["out_dir"])
    ranker_files, ranking = fit_ranker(cfg, paths, source)
    ranker_out = Path(pol["ranker_dir"])
    mlflow.set_tracking_uri(tracker.uri)
    tags = {"domain": "+".join(sorted(sizes)), "policy_method": pol["method"], "git_commit": source["git_commit"]}
    with tracker.kind_run("default_policy", f"default_policy/{pol['method']}", tags) as held, \
            mlflow.start_run(run_id=held.info.run_id) as run:
        mlflow.log_params(portable_paths(cell_params(cfg), tracker.roots))
        # No run id in the manifest: the same commit, data and seed give the same folder, byte for byte.
        if out.exists():
            shutil.rmtree(out)
        export_policy(policy, out, source=source)
        tracker.log_files(run.info.run_id, {f"policy/{p.relative_to(out).as_posix()}": p.read_bytes()
                                            for p in sorted(out.rglob("*")) if p.is_file()})
        if ranker_out.exists():
            shutil.rmtree(ranker_out)
        ranker_out.mkdir(parents=True)
        for name, data in ranker_files.items():
            (ranker_out / name).write_bytes(data)
        tracker.log_files(run.info.run_id, {f"ranker/{name}": data for name, data in ranker_files.items()})
        tracker.log_files(run.info.run_id, {RANKING_ARTIFACT: parquet_bytes(pd.DataFrame(ranking))})
        mlflow.log_metrics({f"ranking/{r['catalog']}/{r['ranker']}/{k.replace('@', '_at_')}": float(r[k])
                            for r in ranking for k in ("recall@5", "all_gold@5", "gold_in_top20", "per_api_recall@5",
                                                       "vs_bm25", "vs_bm25_low", "vs_bm25_high")})
        mlflow.log_metrics({"policy/mean_exposed": info["mean_exposed"],
                            **{f"policy/tasks/{k}": float(v) for k, v in sizes.items()}})
        info["run_id"] = run.info.run_id
    info["ranker_dir"], info["ranking"] = ranker_out, ranking
    return out, info
