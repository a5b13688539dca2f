"""Train stage: pick the stopper out of fold, fit it on every task of one cell, log and register it.

Inputs: data/<domain>/ and the cell config (scorer, cost regime, lambda, d) of conf/train.yaml.
Outputs: an MLflow run (tag kind=policy) with the pyfunc model `policy` registered as
`models:/camdf-stopper@champion`, candidates.csv and candidates_group.csv (the out-of-fold comparisons and
the pick's reason: camdf.pipeline.champion), decisions.parquet, requests.jsonl and, for camdf_lite, its 10
named coefficients.
Make target: `make reproduce` (after the experiments); alone: `python -m pipelines.train`.
"""

from pathlib import Path

import hydra
from omegaconf import DictConfig

import camdf.pipeline.resolvers  # noqa: F401  (registers resolvers)
from camdf.pipeline.boundary import run_stage, stage
from camdf.pipeline.checks.values import checked, open_tracker


@hydra.main(version_base="1.3", config_path="../conf", config_name="train")
@stage
def main(cfg: DictConfig) -> None:
    resolved = checked(cfg, "train")
    # Heavy modules load after the config checks, so a refused run costs a fraction of a second.
    from camdf.pipeline.assembly import Paths
    from camdf.pipeline.policy_job import train_policy

    tracker = open_tracker(resolved)
    paths = Paths(Path(cfg.paths.data_dir), Path(cfg.paths.cache_dir))
    uri, info = train_policy(resolved, paths, tracker, Path(cfg.paths.root_dir), unresolved=cfg)
    for comparison in info.get("comparisons", ()):
        table = comparison.summary[["payoff_mean", "payoff_ci_low", "payoff_ci_high", "n_exposed", "success"]]
        print(f"out-of-fold comparison at the cell, {comparison.protocol} folds (mean over tasks and repeats):")
        print(table.to_string(float_format=lambda v: f"{v:.4f}"))
    if "reason" in info:
        print(info["reason"])
    print(f"policy {info['method']}: logged {uri} (in-sample mean tools exposed {info['mean_exposed']:.2f})")
    if "coefficients" in info:
        print(info["coefficients"].to_string(float_format=lambda v: f"{v:+.4f}"))


if __name__ == "__main__":
    run_stage(main, "train")  # the command line checked first; any failure: one line, exit 2 / 1 / 130
