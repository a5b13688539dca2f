"""Read the MLflow store for the tables: FINISHED cell runs as a frame, selection by params, methods present."""

from __future__ import annotations

from typing import Any

import pandas as pd

from camdf.policies import methods
from camdf.tracking.client import METRICS_TABLE
from camdf.tracking.runs import is_cell


#: The prefix of a metric's column in :func:`runs_frame` (params ``p:``, tags ``t:``).
METRIC = "m:"


def mkey(method: str, metric: str) -> str:
    """The :func:`runs_frame` column of ``method``'s metric ``metric`` as the cell logged it (``<method>/<metric>``;
    ``cell`` and ``ranking`` hold the cell's own metrics)."""
    return f"{METRIC}{method}/{metric}"


def cell_metrics(tracker, run) -> dict[str, float]:
    """Every metric of a cell run: its :data:`~camdf.tracking.client.METRICS_TABLE` artifact over the
    few metrics it logged (a run logged before the table existed has all of them logged)."""
    from mlflow.exceptions import MlflowException

    metrics = dict(run.data.metrics)
    try:
        table = tracker.load_table(run.info.run_id, METRICS_TABLE)
    except (MlflowException, OSError):  # no such artifact: a store older than the table
        return metrics
    return {**metrics, **dict(zip(table["metric"], table["value"].astype(float)))}


def cell_row(tracker, run) -> dict[str, Any]:
    """One run as a :func:`runs_frame` row: ``run_id``, ``start``, ``p:<param>``, ``m:<metric>``, ``t:<tag>``."""
    row: dict[str, Any] = {"run_id": run.info.run_id, "start": run.info.start_time}
    row.update({f"p:{k}": v for k, v in run.data.params.items()})
    row.update({f"{METRIC}{k}": v for k, v in sorted(cell_metrics(tracker, run).items())})
    row.update({f"t:{k}": v for k, v in run.data.tags.items()})
    return row


def runs_frame(tracker) -> pd.DataFrame:
    """One row per FINISHED cell run (:func:`cell_row`)."""
    rows = [cell_row(tracker, run) for run in tracker.runs()
            if is_cell(run)]  # not the tables stage's figures run, a trained policy, a sweep
    return pd.DataFrame(rows)


def cells_of(tracker, keys: set[str] | None) -> pd.DataFrame:
    """:func:`runs_frame` restricted to the cell keys ``keys`` (None: every cell run)."""
    runs = runs_frame(tracker)
    if keys is None or runs.empty:
        return runs
    return runs[runs["t:cell_key"].isin(keys)].reset_index(drop=True)


def select(runs: pd.DataFrame, **params: Any) -> pd.DataFrame:
    """Runs whose params equal the given values (``cost__lam=0.12`` means param ``cost.lam``)."""
    if runs.empty:
        return runs
    mask = pd.Series(True, index=runs.index)
    for key, value in params.items():
        col = "p:" + key.replace("__", ".")
        if col not in runs:
            return runs.iloc[0:0]
        mask &= runs[col] == str(value)
    out = runs[mask].sort_values("start", kind="stable")
    # The latest run of each cell key wins.
    return out.drop_duplicates("t:cell_key", keep="last")


def methods_of(run: pd.Series) -> list[str]:
    """Methods with a payoff in one run, in display order (the registry's, read live; unknown ones after, sorted)."""
    present = {c.split("/")[0][len(METRIC):] for c in run.index if c.startswith(METRIC) and c.endswith("/payoff_mean")}
    present = {m for m in present if pd.notna(run.get(mkey(m, "payoff_mean")))}
    order = methods()
    return [m for m in order if m in present] + sorted(present - set(order))


def present_methods(sel: pd.DataFrame) -> list[str]:
    """Methods with a payoff in any of the selected runs (columns from other runs' methods are dropped)."""
    return [m for m in methods() if mkey(m, "payoff_mean") in sel and sel[mkey(m, "payoff_mean")].notna().any()]


#: The default-policy run's artifact holding the ranking across catalogs (camdf.pipeline.default_policy).
RANKING_ARTIFACT = "ranker/ranking_across_catalogs.parquet"


def ranking_frame(tracker) -> pd.DataFrame:
    """The ranking-across-catalogs rows of the latest FINISHED default-policy run that logged them (with its
    ``git_commit`` column), or an empty frame."""
    from mlflow.exceptions import MlflowException

    for run in reversed(tracker.runs("tags.kind = 'default_policy'")):
        try:
            rows = tracker.load_table(run.info.run_id, RANKING_ARTIFACT)
        except (MlflowException, OSError):  # a run from before the ranker was fitted there
            continue
        return rows.assign(git_commit=run.data.tags.get("git_commit", ""))
    return pd.DataFrame()
