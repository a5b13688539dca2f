"""Scoring stage: scores, ranking quality and tool costs for one (domain, scorer, cost regime).

Inputs: ``data/<domain>/`` (``make data``), ``conf/scorer/``, ``conf/cost/``, the folds in ``conf/scores.yaml``.
Outputs: ``outputs/cache/scores/<domain>/<scorer>/<key>.parquet`` + ``.json`` (quality),
``outputs/cache/costs/<domain>/<regime>-d<d>/<key>.parquet``; a markdown row (a table after a multirun).
Make target: none yet; all scorers x domains:
``python -m pipelines.scores -m domain=retail,airline,telecom,bfcl_multi_turn scorer=bm25,dense,supervised,hybrid,prior``.
"""

import hydra
from omegaconf import DictConfig

import camdf.pipeline.resolvers  # noqa: F401  (registers resolvers)
from camdf.pipeline.boundary import run_stage, stage
from camdf.pipeline.checks.values import checked


@hydra.main(version_base="1.3", config_path="../conf", config_name="scores")
@stage
def main(cfg: DictConfig) -> dict:
    c = checked(cfg, "scores")
    # Heavy modules load after the config checks, so a refused run costs a fraction of a second.
    from camdf.pipeline.scores_stage import run_costs, run_scores
    import pandas as pd

    from camdf.rankers import quality_table

    where = dict(data_dir=c["paths"]["data_dir"], cache_dir=c["paths"]["cache_dir"], force=c["force"])
    record = run_scores(c["domain"], c["scorer"], c["folds"], random_state=c["random_state"], **where)
    cost = run_costs(c["domain"], c["cost"], **where)
    print(quality_table(pd.DataFrame([record])))
    print(f"{record['domain']}/{record['scorer']}: {'cached' if record['cached'] else 'scored'} -> {record['path']}")
    print(f"costs {cost['regime']} d={cost['d']:g}: cv {cost['cv']:.3f}, range "
          f"[{cost['min']:.3f}, {cost['max']:.3f}] -> {cost['path']}")
    return record


if __name__ == "__main__":
    run_stage(main, "scores")  # the command line checked first; any failure: one line, exit 2 / 1 / 130
