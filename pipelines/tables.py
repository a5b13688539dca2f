"""Tables stage: every registered table with its figures, rebuilt from the MLflow store alone.

Inputs: the FINISHED cell runs of the tracking store (MLFLOW_TRACKING_URI or outputs/mlflow.db).
Outputs: outputs/tables/<table>.{md,csv,tex}, outputs/tables/*.png (also logged to MLflow), docs/results.md and
the README's headline.
Make target: `make tables` (the last step of `make reproduce`).
"""

from pathlib import Path

import hydra
from omegaconf import DictConfig

import camdf.pipeline.resolvers  # noqa: F401  (registers resolvers)
from camdf.pipeline.boundary import run_stage, stage
from camdf.pipeline.identity import CONF_DIR, code_stamp
from camdf.pipeline.provenance import short_commit
from camdf.pipeline.checks.values import ConfigError, checked, open_tracker, refuse
from camdf.tracking.probe import TrackingUnreachable


@hydra.main(version_base="1.3", config_path="../conf", config_name="tables")
@stage
def main(cfg: DictConfig) -> None:
    c = checked(cfg, "tables")
    # Heavy modules load after the config checks, so a refused run costs a fraction of a second.
    from camdf.reporting.build import build_tables
    from camdf.reporting.evidence import anchor_hints, anchored
    from camdf.reporting.readme import splice_headline
    from camdf.reporting.store import cells_of
    from camdf.pipeline.table_hints import asked_tables, skip_lines, tables_hints
    from camdf.reporting.registry import experiments, tables as declared
    from camdf.pipeline.sweeps import experiment_keys, searchpath_overrides
    from camdf.tracking.experiments import store_has_experiment

    paths = c["paths"]
    try:
        present = store_has_experiment(c["tracking"]["uri"], c["tracking"]["experiment"])
    except TrackingUnreachable as err:
        refuse(err, paths["output_dir"])
    if not present:
        refuse(ConfigError("tracking.experiment", c["tracking"]["experiment"],
                           f"an experiment of the store {c['tracking']['uri']} (run its cells first)"), paths["output_dir"])
    same_paths = [f"paths.{k}={paths[k]}" for k in ("root_dir", "data_dir", "output_dir")]
    names = c["experiments"] or experiments()  # null: the registered tables' experiments
    extra = [*same_paths, *searchpath_overrides(), *c["cell_overrides"]]  # the cells as the stage composes them
    cells, missing = experiment_keys(names, paths["data_dir"], extra)
    tracker = open_tracker(c)
    readme = Path(c["readme"]) if c["update_readme"] else None
    main = anchored(c["main"], c["cell_overrides"])  # the anchor follows the overrides the cells ran with
    tables, one_line = asked_tables(declared(), c["experiments"])
    written, skipped = build_tables(tracker, main, Path(c["out_dir"]), readme, cells=cells, stamp=code_stamp(),
                                    commit=short_commit(CONF_DIR.parent), tables=tables)
    if readme is not None and readme in written:
        written.append(splice_headline(Path(c["headline"]), readme))
    for line in [*(f"wrote {path}" for path in written), *(f"skipped: {m}" for m in missing),
                 *skip_lines(skipped, one_line)]:
        print(line)
    runs = cells_of(tracker, None) if skipped else None  # any cell run, whatever its key
    for hint in tables_hints(runs, names, extra, paths["data_dir"]) if skipped else []:
        print(f"no cell at these overrides; {hint}")
    hints = anchor_hints(runs, main) if skipped else []
    if hints:
        print(f"no cell run at the anchor; the store has main cells with {' or '.join(hints)}")


if __name__ == "__main__":
    run_stage(main, "tables")  # the command line checked first; any failure: one line, exit 2 / 1 / 130
