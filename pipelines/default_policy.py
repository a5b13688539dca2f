"""Default-policy stage: fit the runtime's default policy on every built-in domain and export it as a folder.

Inputs: data/<domain>/ of every domain in conf/transfer/lodo.yaml (make data), conf/default_policy.yaml.
Outputs: outputs/policies/default/ (policy.json, boosters/, manifest.json with its provenance) and an MLflow
run (tag kind=default_policy) holding the same files.
Make target: `make default-policy` (copies the folder into camdf/runtime/default_policy/; run by make reproduce).
"""

from pathlib import Path

import hydra
from omegaconf import DictConfig

import camdf.pipeline.resolvers  # noqa: F401  (registers resolvers)
from camdf.pipeline.boundary import run_stage, stage
from camdf.pipeline.checks.values import checked, open_tracker


@hydra.main(version_base="1.3", config_path="../conf", config_name="default_policy")
@stage
def main(cfg: DictConfig) -> None:
    resolved = checked(cfg, "default_policy")
    # Heavy modules load after the config checks, so a refused run costs a fraction of a second.
    from camdf.pipeline.assembly import Paths
    from camdf.pipeline.default_policy import fit_default_policy

    paths = Paths(Path(cfg.paths.data_dir), Path(cfg.paths.cache_dir))
    folder, info = fit_default_policy(resolved, paths, open_tracker(resolved), Path(cfg.paths.root_dir))
    tasks = ", ".join(f"{k} {v}" for k, v in info["tasks"].items())
    print(f"default policy {info['method']} (portable) fitted on {tasks}: in-sample mean tools exposed "
          f"{info['mean_exposed']:.2f} -> {folder}")


if __name__ == "__main__":
    run_stage(main, "default_policy")  # the command line checked first; any failure: one line, exit 2 / 1 / 130
