"""Hand-made runs sorted into experiments, as the tables stage finds cells by their key."""


def by_experiment(**experiments: list) -> dict:
    """``{experiment: {cell key: {}}}`` (:data:`camdf.reporting.experiment_cells.ExperimentCells`) from each experiment's
    runs (dicts or Series with a ``t:cell_key``) or cell keys."""
    def key(r):
        return r if isinstance(r, str) else r["t:cell_key"]
    return {name: {key(r): {} for r in runs} for name, runs in experiments.items()}

