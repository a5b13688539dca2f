"""A31: success for tokens, the trade-off a harness builder decides on: each rule's success against the mean cost
it exposes, over the lambda grid, per domain (retail: A18's grid at the main d; the catalog: A28 over lambda),
beside the operating points harnesses use (a search's fixed top-5 page, all tools, defer everything and search, an
always-loaded set and search). One row per operating point: the best success of ours at no more cost, and the
paired difference in success (95% CI) — at equal tokens, whose success is higher.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from camdf.policies import CARDS, FULL_ACCESS, NO_TOOLS, in_camdf_family
from camdf.reporting.evidence import Evidence, main_cell
from camdf.reporting.report import Report
from camdf.reporting.store import methods_of, mkey
from camdf.reporting.tables.base import Figure, TableSpec
from camdf.reporting.tables.notes import MDD_NOTE
from camdf.reporting.verdicts import verdict_text

#: The operating points harnesses use, by method: what each stands for. The first two decide the same at every
#: lambda (their success and cost do not depend on it); the last two are read from A29's recovery cells.
FIXED_POINTS = {"top5": "fixed top-5 (a tool search's page)", FULL_ACCESS: "all listed tools"}
SEARCH_POINTS = {NO_TOOLS: "defer everything + search", "static_set": "always-loaded set + search"}
#: A29's cell the search operating points come from: a search round priced as one mean tool, returning 5 tools.
SEARCH_CELL = {"search_cost": 1.0, "search_k": 5}


def frontier(cells: pd.DataFrame) -> pd.DataFrame:
    """Every (cell, method) point of ``cells``: lambda, method, mean cost, success and tools, whether it is ours."""
    rows = []
    for _, run in cells.iterrows():
        for m in methods_of(run):
            if m not in CARDS or CARDS[m].family == "oracle" or pd.isna(run.get(mkey(m, "cost"), np.nan)):
                continue
            rows.append({"lam": float(run["p:cost.lam"]), "method": m, "ours": in_camdf_family(m),
                         "cost": float(run[mkey(m, "cost")]), "success": float(run[mkey(m, "success")]),
                         "tools": float(run[mkey(m, "n_exposed")]), "run_id": run["run_id"]})
    return pd.DataFrame(rows)


def operating_points(evidence: Evidence, domain: str, scorer: str,
                     fixed_run: pd.Series | None) -> list[tuple[str, str, pd.Series]]:
    """(method, what it stands for, its cell) of each operating point found for ``domain`` and ``scorer``."""
    out = []
    if fixed_run is not None:
        out += [(m, what, fixed_run) for m, what in FIXED_POINTS.items() if mkey(m, "success") in fixed_run
                and pd.notna(fixed_run[mkey(m, "success")])]
    cells = evidence.fallback
    if not cells.empty:
        hit = cells[(cells["p:domain.name"] == domain) & (cells["p:scorer.label"] == scorer) & cells["aware"]
                    & (cells["search_noise"] == 0)
                    & (cells["search_cost"] == SEARCH_CELL["search_cost"]) & (cells["search_k"] == SEARCH_CELL["search_k"])
                    & (cells["search_rounds"] == 1)]
        if not hit.empty:
            run = hit.iloc[-1]
            out += [(m, f"{what} (S = {SEARCH_CELL['search_cost']:g}, k = {SEARCH_CELL['search_k']}, "
                        f"tuned at lambda = {float(run['p:cost.lam']):g})", run)
                    for m, what in SEARCH_POINTS.items() if mkey(m, "success") in run and pd.notna(run[mkey(m, "success")])]
    return out


def _rows(evidence: Evidence, domain: str, cells: pd.DataFrame, points: pd.DataFrame, operating: list) -> dict:
    runs = {r["run_id"]: r for _, r in cells.iterrows()}
    rows = {}
    for method, what, run in operating:
        cost, success = float(run[mkey(method, "cost")]), float(run[mkey(method, "success")])
        row = rows[f"{domain} / {what}"] = {"its success": success, "its cost": cost}
        ours = points[points["ours"] & (points["cost"] <= cost)]
        if not ours.empty:
            best = ours.sort_values(["success", "cost"], ascending=[False, True], kind="stable").iloc[0]
            row.update({"best of ours at no more cost": f"{best['method']} at lambda = {best['lam']:g}",
                        "success": best["success"], "cost": best["cost"]})
            try:
                c = evidence.judge.compare(runs[best["run_id"]], best["method"], method, run_b=run, column="success")
                row.update({"success difference": c.text, "MDD": c.mdd,
                            "verdict": verdict_text(c, "ours higher", "ours lower")})
            except LookupError:
                row["verdict"] = "not paired (the two cells do not share their tasks and folds)"
        else:
            row["best of ours at no more cost"] = "none: every rule of ours costs more at every lambda"
    return rows


def success_vs_cost_png(panels: dict[str, tuple[pd.DataFrame, list]], title: str) -> bytes:
    """Success against mean cost exposed (log axis), one panel per domain: each rule of ours across lambda (a line),
    the baselines' points, and the operating points as large markers."""
    from camdf.reporting.figures import log_x_panels_png, method_style

    def draw(ax, domain: str) -> str:
        points, fixed = panels[domain]
        points = points[points["cost"] > 0]  # exposing nothing (cost 0) has no place on a log axis
        for method, sel in points.groupby("method", sort=True):
            sel = sel.sort_values("cost")
            colour, marker = method_style(method)
            if sel["ours"].iloc[0]:
                ax.plot(sel["cost"], sel["success"], "-", marker=marker, color=colour, label=method)
            else:
                ax.plot(sel["cost"], sel["success"], ":", marker=marker, color=colour, linewidth=0.8, markersize=4, label=method)
        for method, what, run in fixed:
            if float(run[mkey(method, "cost")]) <= 0:
                continue
            colour, marker = method_style(method)
            ax.plot([float(run[mkey(method, "cost")])], [float(run[mkey(method, "success")])], linestyle="none",
                    marker="*", markersize=14, markeredgecolor="black", color=colour,
                    label=what.split(" (")[0])  # the table row names its details
        ax.set_ylabel("success (share of tasks)")
        return f"{domain}: each point one lambda (cost 0 left off)"

    return log_x_panels_png(list(panels), draw, title=title, ylabel="success (share of tasks)",
                            xlabel="mean cost exposed (mean-tool units; d = 1: proportional to schema tokens)",
                            width=5.6, height=4.6, sharey=False, ncols=2)


def a31(evidence: Evidence, main: dict) -> list[Report | Figure]:
    """The A31 table and figure (LookupError when neither domain's lambda sweep is in the store)."""
    sources = {}
    grid = evidence.grid
    if not grid.empty:
        at_d = grid[grid["d"] == float(main["d"])]
        if not at_d.empty:
            try:
                fixed = main_cell(evidence.main, "a31", main["scorer"])
            except LookupError:
                fixed = None
            sources[str(at_d.iloc[-1]["p:domain.name"])] = (at_d, fixed)
    catalog = evidence.cells("a28_lambda")
    if not catalog.empty:  # one ranker's frontier: the main cell's (A29's searches rank with it), else the first
        from camdf.reporting.tables.a28 import ranker_order

        catalog = catalog[catalog["p:scorer.label"] == ranker_order(catalog, main)[0]]
        sources[str(catalog.iloc[-1]["p:domain.name"])] = (catalog, catalog.iloc[-1])
    if not sources:
        raise LookupError("a31: neither A18's grid nor A28 over lambda is in the store; run `experiment=a18` and "
                          "`experiment=a28_lambda`")
    rows, panels = {}, {}
    for domain, (cells, fixed_run) in sources.items():
        points = frontier(cells)
        operating = operating_points(evidence, domain, str(cells.iloc[-1]["p:scorer.label"]), fixed_run)
        rows.update(_rows(evidence, domain, cells, points, operating))
        panels[domain] = (points, operating)
    frame = pd.DataFrame.from_dict(rows, orient="index")
    frame.index.name = "domain / operating point"
    lams = {d: ", ".join(f"{v:g}" for v in sorted(set(c["p:cost.lam"].astype(float)))) for d, (c, _) in sources.items()}
    note = (
        "Each rule's success (the share of tasks whose exposed tools hold a sufficient set; under the search fallback, "
        "after the search) against the mean cost it exposes, one point per lambda: "
        + "; ".join(f"{d} at lambda = {lam} (d = {sources[d][0].iloc[-1]['p:cost.d']}, "
                    f"{sources[d][0].iloc[-1]['p:scorer.label']})" for d, lam in lams.items())
        + ". Cost: in units of the domain's mean tool (the schema-token regime at d = 1 scales token counts, so a "
        "cost is proportional to the tokens exposed); under the search fallback it counts the search's price and "
        "the tools it loads. Operating points: a fixed top-5 and all listed tools decide the same at every lambda "
        "(read from the main cell; the catalog's from its own cells), defer everything and an always-loaded set with "
        f"one search round priced as {SEARCH_CELL['search_cost']:g} mean tool returning {SEARCH_CELL['search_k']} "
        "tools from A29's cells. Best of ours at no more cost: the highest success among the points of CAM-DF's "
        "family and our set rules whose mean cost is at most the operating point's, picked on the cells' own tasks "
        "(so it is optimistic by the choice among points); the success difference is paired over tasks across "
        f"the two cells (same tasks and folds; 95% bootstrap CI; the wording rule's share of fits). {MDD_NOTE}.")
    where = ", ".join(f"{d} ({c.iloc[-1]['p:scorer.label']}, d = {c.iloc[-1]['p:cost.d']})"
                      for d, (c, _) in sources.items())
    fig = Figure("a31_success_vs_cost.png", success_vs_cost_png(
        panels, f"A31: success against mean cost exposed, each rule across lambda: {where}\n(stars: the operating "
                "points harnesses use)"))
    return [Report("a31", "A31: success for tokens: each rule across lambda beside the operating points harnesses use",
                   frame, note=note), fig]


TABLE = TableSpec("a31", order=135, experiments=("a18", "table2", "a28_lambda", "a29", "a29_catalog"), build=a31)

#: The tables this module declares (found by :func:`camdf.reporting.registry.tables`).
SPECS = (TABLE,)
