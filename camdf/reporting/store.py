"""Read the MLflow store for the tables: FINISHED cell runs as a frame, and selection of cells by config."""

from __future__ import annotations

from typing import Any

import pandas as pd

from camdf.policies import methods
from camdf.tracking.runs import is_cell

#: Methods in display order (their registry cards' ``order``).
METHOD_ORDER = methods()


def runs_frame(tracker) -> pd.DataFrame:
    """One row per FINISHED run: ``run_id``, ``start``, ``p:<param>``, ``m:<metric>``, ``t:<tag>``."""
    rows = []
    for run in tracker.runs():
        if not is_cell(run):  # the tables stage's figures run, a trained policy, a sweep: not a cell
            continue
        row: dict[str, Any] = {"run_id": run.info.run_id, "start": run.info.start_time}
        row.update({f"p:{k}": v for k, v in run.data.params.items()})
        row.update({f"m:{k}": v for k, v in run.data.metrics.items()})
        row.update({f"t:{k}": v for k, v in run.data.tags.items()})
        rows.append(row)
    return pd.DataFrame(rows)


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


def one_run(runs: pd.DataFrame, what: str, **params) -> pd.Series:
    """The latest run matching ``params``; LookupError naming ``what`` when there is none."""
    sel = select(runs, **params)
    if sel.empty:
        raise LookupError(f"{what}: no FINISHED run in the store with {params}; run its experiment first")
    return sel.iloc[-1]


def methods_of(run: pd.Series) -> list[str]:
    """Methods with a payoff in one run, in :data:`METHOD_ORDER` (unknown ones after, sorted)."""
    present = {c.split("/")[0][2:] for c in run.index if c.startswith("m:") and c.endswith("/payoff_mean")}
    present = {m for m in present if pd.notna(run.get(f"m:{m}/payoff_mean"))}
    return [m for m in METHOD_ORDER if m in present] + sorted(present - set(METHOD_ORDER))


def present_methods(sel: pd.DataFrame) -> list[str]:
    """Methods with a payoff in any of the selected runs (columns from other runs' methods are dropped)."""
    return [m for m in METHOD_ORDER if f"m:{m}/payoff_mean" in sel and sel[f"m:{m}/payoff_mean"].notna().any()]


def main_params(main: dict) -> dict:
    """The :func:`select` params of the main cell described by the ``main`` config block."""
    return dict(domain__name=main["domain"], scorer__label=main["scorer"], cost__regime=main["regime"],
                cost__lam=main["lam"], cost__d=main["d"], seed=main["seed"], payoff="exact",
                label_noise=0.0, label_source="data", folds__protocol="kfold")


def sweep(runs: pd.DataFrame, main: dict, vary: tuple[str, ...], methods: str, missing: str,
           need: str | None = None, **fixed: Any) -> pd.DataFrame:
    """FINISHED runs of a sweep over the params ``vary``, every other param at the main cell.

    ``methods`` names the method list (a key of ``main``) the sweep ran; ``fixed`` overrides
    main-cell params. Raises LookupError(``missing``) when there is no such run, or none that
    logged the metric column ``need``. Rows come oldest first (see :func:`select`).
    """
    p = main_params(main)
    for key in vary:
        p.pop(key)
    sel = select(runs, **{**p, **fixed}, method__names=str(list(main[methods])))
    if sel.empty or (need is not None and need not in sel):
        raise LookupError(missing)
    return sel
