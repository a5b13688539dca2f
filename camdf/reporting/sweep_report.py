"""A sweep's report on its parent run: the table of its cells, its summary metrics, heatmaps and description.

:func:`sweep_report` reads the sweep's cell runs from the store (:func:`camdf.reporting.store.cell_row`)
and returns what :class:`camdf.pipeline.sweep_run.SweepRun` logs on the parent: ``sweep.csv`` and
``sweep.md`` (one row per cell, CAM-DF against its cell's best baseline), the A18 heatmaps of a
lambda x d grid (:func:`grid_heatmaps`), the metrics ``sweep/n_camdf_above`` / ``sweep/n_camdf_below``,
each method's payoff along the sweep's lambda as metric series the run's charts draw (:func:`lambda_curves`)
and a one-paragraph description.
"""

from __future__ import annotations

import pandas as pd


def sweep_summary(cells: pd.DataFrame) -> tuple[pd.DataFrame, dict[str, float]]:
    """The table of a sweep's cells and its summary metrics.

    Parameters
    ----------
    cells : DataFrame
        The sweep's cell runs as :func:`camdf.reporting.store.runs_frame` rows.

    Returns
    -------
    table : DataFrame
        One row per cell (index: the run name): its grid values, CAM-DF's payoff, the best
        baseline's, their difference with its 95% CI, and the tools each exposes.
    metrics : dict
        ``sweep/n_camdf_above`` / ``sweep/n_camdf_below``: cells whose CI of CAM-DF minus the
        best baseline lies wholly above / below 0.
    """
    from camdf.policies import REFERENCE
    from camdf.reporting.store import mkey

    rows, above, below = [], 0, 0
    for _, run in cells.iterrows():
        baselines = [c.split("/")[0][2:] for c in run.index
                     if c.endswith("/is_best_baseline") and run[c] == 1.0]
        base = baselines[0] if baselines else None
        diff = mkey(REFERENCE, "diff_vs_best_baseline")
        row = {"run": run.get("t:mlflow.runName", run["run_id"]), "domain": run.get("p:domain.name"),
               "scorer": run.get("p:scorer.label"), "lambda": run.get("p:cost.lam"), "d": run.get("p:cost.d"),
               "protocol": run.get("p:folds.protocol"), "camdf_payoff": run.get(mkey(REFERENCE, "payoff_mean")),
               "best_baseline": base, "baseline_payoff": run.get(mkey(base, "payoff_mean")) if base else None,
               "camdf_minus_baseline": run.get(diff), "ci_low": run.get(diff + "_ci_low"),
               "ci_high": run.get(diff + "_ci_high"), "camdf_tools": run.get(mkey(REFERENCE, "n_exposed")),
               "baseline_tools": run.get(mkey(base, "n_exposed")) if base else None}
        above += bool(pd.notna(row["ci_low"]) and row["ci_low"] > 0)
        below += bool(pd.notna(row["ci_high"]) and row["ci_high"] < 0)
        rows.append(row)
    table = pd.DataFrame(rows).set_index("run") if rows else pd.DataFrame()
    return table, {"sweep/n_camdf_above": above, "sweep/n_camdf_below": below}


#: Facets beyond which a sweep gets no heatmaps (its description says so; sweep.md still has every cell).
MAX_FACETS = 12
#: Params that never tell cells apart in a figure (bookkeeping that differs with the machine or the store).
_NOT_FACETS = ("p:paths.", "p:tracking.")


def facet_keys(cells: pd.DataFrame) -> list[str]:
    """The params (``p:`` columns) that vary across a sweep's cells besides lambda and d, one per dimension.

    A param that the keys already chosen determine (``scorer.name`` and the scorer's settings once
    ``scorer.label`` is chosen) adds no facet: keys are taken finest first, a ``.label`` param, then
    the shortest name, standing for the params that split the cells alike.
    """
    text = cells.astype(str)
    varying = [c for c in cells if c.startswith("p:") and c not in ("p:cost.lam", "p:cost.d")
               and not c.startswith(_NOT_FACETS) and text[c].nunique() > 1]
    varying.sort(key=lambda c: (-text[c].nunique(), not c.endswith(".label"), len(c), c))
    keys: list[str] = []
    for c in varying:
        if not keys or (text.groupby(keys)[c].nunique() > 1).any():
            keys.append(c)
    return keys


def grid_heatmaps(cells: pd.DataFrame, title: str) -> tuple[dict[str, bytes], str]:
    """The A18 heatmaps (CAM-DF minus predict-then-threshold per lambda x d) of a sweep, one per facet.

    A facet is one combination of the other keys that vary (:func:`facet_keys`, e.g. the scorer), so a
    figure never mixes cells that differ in anything but lambda and d. Returns ``{artifact path: PNG}``
    (``figures/heatmap.png`` for a sweep with one facet, ``figures/heatmap_<key>=<value>....png``
    otherwise) and a sentence for the sweep's description: what was drawn, or why nothing was (no
    predict-then-threshold, one (lambda, d) per facet, more than :data:`MAX_FACETS` facets).
    """
    from camdf.reporting.figures import heatmap_png
    from camdf.reporting.store import mkey
    from camdf.reporting.tables.grid import SUBJECT_A18 as rival, grid_long

    if cells.empty or mkey(rival, "diff_vs_ref") not in cells or "p:cost.lam" not in cells:
        return {}, ""
    cells = cells.assign(lam=cells["p:cost.lam"].astype(float), d=cells["p:cost.d"].astype(float))
    keys = facet_keys(cells)
    groups = list(cells.groupby([cells[k].astype(str) for k in keys], sort=True)) if keys else [((), cells)]
    if len(groups) > MAX_FACETS:
        return {}, (f" No heatmap: the cells vary in {', '.join(k[2:] for k in keys)} besides lambda and d "
                    f"({len(groups)} combinations, more than {MAX_FACETS} figures); sweep.md has every cell.")
    files: dict[str, bytes] = {}
    for values, group in groups:
        values = values if isinstance(values, tuple) else (values,)
        facet = " ".join(f"{k[2:]}={v}" for k, v in zip(keys, values))
        group = group[group[mkey(rival, "diff_vs_ref")].notna()]
        if len(group) < 2 or group.duplicated(["lam", "d"]).any():
            continue  # one (lambda, d): nothing to map (duplicates cannot occur once every varying key is a facet)
        name = "figures/heatmap.png" if not keys else f"figures/heatmap_{facet.replace(' ', '_')}.png"
        files[name] = heatmap_png(grid_long(group, rival), f"{title}" + (f"\n{facet}" if facet else ""))
    if not files:
        return {}, ""
    where = ", ".join(files)
    split = f", one per {' x '.join(k[2:] for k in keys)}" if keys else ""
    return files, f" {where}: CAM-DF minus predict-then-threshold over the lambda x d grid{split}."


#: A curve's step is lambda times this (steps are integers): step 120 is lambda 0.12.
LAMBDA_STEP = 1000


def lambda_curves(cells: pd.DataFrame) -> dict[str, list[tuple[int, float]]]:
    """Each method's payoff along the sweep's lambda, one series per facet (d, and each other key that varies):
    ``Sweep/<facet>/<method>`` (CAM-DF's 95% CI too, ``Sweep/<facet>/camdf_ci_low`` / ``_ci_high``), each point
    ``(step, payoff)`` with step = lambda x :data:`LAMBDA_STEP`, so the parent run's charts (Model metrics)
    draw payoff against lambda with no configuration. Empty when the sweep has one lambda or more than
    :data:`MAX_FACETS` facets.
    """
    from camdf.policies import REFERENCE
    from camdf.reporting.store import mkey

    if cells.empty or "p:cost.lam" not in cells or cells["p:cost.lam"].astype(float).nunique() < 2:
        return {}
    cells = cells.assign(step=(cells["p:cost.lam"].astype(float) * LAMBDA_STEP).round().astype(int))
    keys = [*(["p:cost.d"] if "p:cost.d" in cells else []), *facet_keys(cells)]
    groups = list(cells.groupby([cells[k].astype(str) for k in keys], sort=True)) if keys else [((), cells)]
    if len(groups) > MAX_FACETS:
        return {}
    methods = sorted(c[2:-len("/payoff_mean")] for c in cells if c.startswith("m:") and c.endswith("/payoff_mean"))
    columns = {m: mkey(m, "payoff_mean") for m in methods}
    columns |= {f"{REFERENCE}_ci_{end}": mkey(REFERENCE, f"payoff_ci_{end}") for end in ("low", "high")}
    series: dict[str, list[tuple[int, float]]] = {}
    for values, group in groups:
        values = values if isinstance(values, tuple) else (values,)
        facet = " ".join(f"{k[2:]} {v}" for k, v in zip(keys, values)) or "all"
        for name, column in columns.items():
            if column in group:
                points = sorted((int(st), float(v)) for st, v in zip(group["step"], group[column]) if pd.notna(v))
                if points:
                    series[f"Sweep/{facet}/{name}"] = points
    return series


def sweep_report(tracker, experiment: str, run_ids: list[str]
                 ) -> tuple[dict[str, bytes | str], dict[str, float], dict[str, list[tuple[int, float]]], str]:
    """A sweep's files, summary metrics, lambda curves (:func:`lambda_curves`) and description, from its cell runs
    ``run_ids`` (repeats counted once)."""
    from camdf.common.markdown import markdown_table
    from camdf.reporting.store import cell_row, mkey

    cells = pd.DataFrame([cell_row(tracker, tracker.client.get_run(r)) for r in dict.fromkeys(run_ids)])
    table, metrics = sweep_summary(cells)
    files: dict[str, bytes | str] = {}
    if not table.empty:
        shown = table.map(lambda v: f"{v:.3f}" if isinstance(v, float) else ("" if v is None else str(v)))
        files["sweep.csv"] = table.to_csv(float_format="%.6g", lineterminator="\n")
        files["sweep.md"] = "\n".join(markdown_table(["run", *shown.columns],
                                                     ([i, *r.tolist()] for i, r in shown.iterrows()))) + "\n"
    domains = ", ".join(sorted(cells["p:domain.name"].dropna().astype(str).unique())) if "p:domain.name" in cells else ""
    heatmaps, heatmap_text = grid_heatmaps(cells, f"sweep {experiment}{f' ({domains})' if domains else ''}: "
                                                  "CAM-DF minus predict-then-threshold")
    files.update(heatmaps)
    n = len(table)
    text = (f"Sweep of experiment {experiment}: {n} cells. CAM-DF's 95% CI against its cell's best baseline lies "
            f"above 0 in {metrics['sweep/n_camdf_above']} and below 0 in {metrics['sweep/n_camdf_below']} of them "
            "(sweep.md has one row per cell; the children are the cells' runs)." + heatmap_text)
    curves = lambda_curves(cells)
    if curves:
        text += (f" The run's charts (Model metrics, section Sweep) draw each method's payoff against lambda "
                 f"(step = lambda x {LAMBDA_STEP}), one chart per method and facet.")
    return files, metrics, curves, text
