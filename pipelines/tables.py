"""Tables stage: Table 2 and A18-A24 with figures, rebuilt from the MLflow store alone.

Inputs: the FINISHED cell runs of the tracking store (MLFLOW_TRACKING_URI or outputs/mlflow.db).
Outputs: outputs/tables/<table>.{md,csv,tex}, outputs/tables/*.png (also logged to MLflow), README Results.
Make target: `make tables` (the last step of `make reproduce`).
"""

from pathlib import Path

import hydra
from omegaconf import DictConfig, OmegaConf

import camdf.pipeline.resolvers  # noqa: F401  (registers resolvers)
from camdf.reporting.build import build_tables
from camdf.pipeline.tracking import Tracker


@hydra.main(version_base="1.3", config_path="../conf", config_name="tables")
def main(cfg: DictConfig) -> None:
    tracker = Tracker(cfg.tracking.uri, cfg.tracking.experiment, cfg.tracking.artifact_root)
    main_cell = OmegaConf.to_container(cfg.main, resolve=True)
    readme = Path(cfg.readme) if cfg.update_readme else None
    written, missing = build_tables(tracker, main_cell, Path(cfg.out_dir), readme)
    for path in written:
        print(f"wrote {path}")
    for what in missing:
        print(f"skipped: {what}")


if __name__ == "__main__":
    main()
