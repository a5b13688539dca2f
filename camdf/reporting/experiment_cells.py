"""An experiment's cells found by their key: the tables stage computes the cell keys each experiment's sweep makes at
the current code and data (:func:`camdf.pipeline.sweeps.experiment_keys`); here they become one frame per
experiment (:func:`experiment_frame`, read through :meth:`camdf.reporting.evidence.Evidence.cells`), and the
paper's named sweeps read the cells of the experiments :data:`SWEEPS` lists (:func:`cells_of`)."""

from __future__ import annotations

from typing import Any

import pandas as pd


#: An experiment's cells by key, as :func:`camdf.pipeline.sweeps.experiment_keys` finds them:
#: ``{experiment: {cell key: {swept key: value}}}``.
ExperimentCells = dict[str, dict[str, dict[str, Any]]]


def all_keys(cells: ExperimentCells | None) -> set[str] | None:
    """Every cell key of ``cells`` (None: None, every cell)."""
    return None if cells is None else {key for keyed in cells.values() for key in keyed}


def experiment_frame(runs: pd.DataFrame, keyed: dict[str, dict[str, Any]]) -> pd.DataFrame:
    """An experiment's cells: the latest FINISHED run of each of its cell keys (rows oldest first), with one
    column per key its sweep varies (``cost.lam``, ``scorer``, ...: the value that cell was run with).

    Parameters
    ----------
    runs : DataFrame
        :func:`camdf.reporting.store.runs_frame`'s rows.
    keyed : dict
        ``{cell key: {swept key: value}}``, one experiment of :data:`ExperimentCells`.
    """
    if runs.empty or "t:cell_key" not in runs:
        return runs.iloc[0:0]
    sel = runs[runs["t:cell_key"].isin(keyed)].sort_values("start", kind="stable")
    sel = sel.drop_duplicates("t:cell_key", keep="last")
    swept = dict.fromkeys(k for values in keyed.values() for k in values)
    return sel.assign(**{k: [keyed[key].get(k) for key in sel["t:cell_key"]] for k in swept})


#: The experiments whose cells each named sweep of :class:`camdf.reporting.evidence.Evidence` slices (the paper's
#: tables and claims read them by these names); a cell two experiments share is counted once. The smoke grid
#: (``make reproduce-smoke``, the README's walkthrough) stands in for the main cell and the grid when asked for.
SWEEPS: dict[str, tuple[str, ...]] = {
    "main": ("table2", "table2_group", "fold_seeds", "smoke"), "ablations": ("a20",), "grid": ("a18", "smoke"), "noise": ("a19",),
    "rankers": ("a21", "a21_oracle", "smoke"), "label_sources": ("a25", "smoke"), "domains": ("a22", "smoke"),
    "risk": ("a26", "a26_supervised"), "catalog": ("a28", "a28_unseen"), "fallback": ("a29", "a29_catalog"),
    "transfer": ("a30", "a30_in_domain"),
}


def cells_of(frames: dict[str, pd.DataFrame], names: tuple[str, ...]) -> pd.DataFrame:
    """The cells of the experiments ``names`` (each once, rows oldest first)."""
    parts = [frames[n] for n in names if n in frames and not frames[n].empty]
    if not parts:
        return pd.DataFrame()
    both = pd.concat(parts, ignore_index=True) if len(parts) > 1 else parts[0]
    return both.sort_values("start", kind="stable").drop_duplicates("t:cell_key", keep="last")
