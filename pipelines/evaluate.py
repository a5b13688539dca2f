"""Evaluate stage: one MLflow run per cell, skipped when its cell key already has a FINISHED run.

Inputs: data/<domain>/ (make data), the scorer and cost configs (scores are cached under outputs/cache).
Outputs: an MLflow run with params, `/`-namespaced metrics per method, outcomes.parquet, figures, .hydra/.
Make target: `make reproduce` (through the experiment sweeps); one cell: `python -m pipelines.evaluate`.
"""

from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig

import camdf.pipeline.resolvers  # noqa: F401  (registers resolvers)
from camdf.pipeline.boundary import run_stage, stage
from camdf.pipeline.identity import cell_name
from camdf.pipeline.checks.values import checked, open_tracker


@hydra.main(version_base="1.3", config_path="../conf", config_name="evaluate")
@stage
def main(cfg: DictConfig) -> None:
    resolved = checked(cfg, "evaluate")
    # Heavy modules load after the config checks, so a refused run costs a fraction of a second.
    from camdf.pipeline.assembly import Paths
    from camdf.pipeline.cell_job import run_tracked_cell

    paths = Paths(Path(cfg.paths.data_dir), Path(cfg.paths.cache_dir))
    tracker = open_tracker(resolved)
    hydra = HydraConfig.get()
    hydra_dir = Path(hydra.runtime.output_dir) / ".hydra"
    job = hydra.job.num if hydra.mode.name == "MULTIRUN" else None
    run_id, skipped = run_tracked_cell(resolved, paths, tracker, Path(cfg.paths.root_dir), hydra_dir,
                                       experiment=hydra.runtime.choices.get("experiment"), job=job, unresolved=cfg)
    print(f"{cell_name(resolved)}: {'reused FINISHED run' if skipped else 'logged run'} {run_id}")


if __name__ == "__main__":
    run_stage(main, "evaluate")  # the command line checked first; any failure: one line, exit 2 / 1 / 130
