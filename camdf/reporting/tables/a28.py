"""A28: decisions at catalog scale: the 2,479-API StableToolBench catalog cut to the ranker's top N.

One row per (fold protocol, ranker, N): the ranker's recall at N, the best of our rules (either
kind: CAM-DF's family and the set rules) and the best tuned baseline with their paired
difference, the field's view (BoR's coverage at the mean number of tools exposed), the
clairvoyant bounds and full access; a figure of payoff against N per family; claim (i).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from camdf.policies import BEST_PREFIX, CARDS, FULL_ACCESS, NO_TOOLS, in_camdf_family, is_oracle
from camdf.reporting.evidence import Evidence, cell_marker
from camdf.reporting.figures import log_x_panels_png
from camdf.reporting.report import Report
from camdf.reporting.store import methods_of, mkey
from camdf.reporting.tables.base import Figure, TableSpec
from camdf.reporting.tables.notes import MDD_NOTE, baseline_of, ci_text
from camdf.reporting.verdicts import Comparison, Judge, verdict_text

#: Rules a catalog cell does not run, and why (named in the table, never dropped silently). Empty: every rule
#: of conf/method/main.yaml runs at 2,479 APIs (A28 uses that list) (StaticSet.fit and cv_set's inner CV take seconds there).
NOT_RUN: dict[str, str] = {}
#: The figure's families: the best method of each, by mean payoff, per cell.
FAMILIES = {
    "ours, prefix": lambda m: in_camdf_family(m) and CARDS[m].picks_prefix,
    "ours, set": lambda m: in_camdf_family(m) and not CARDS[m].picks_prefix,
    "tuned baselines": lambda m: CARDS[m].family == "baseline" and m not in (FULL_ACCESS, NO_TOOLS),
    "peers (top5, bor_depth)": lambda m: CARDS[m].family == "peer",
    "oracles": is_oracle,
}
PROTOCOLS = {"kfold": "in-distribution (k-fold)", "group:tool_group": "unseen tools",
             "group:category_group": "unseen categories"}


def best_of(run: pd.Series, keep) -> str | None:
    """The method of ``run`` with the highest mean payoff among those ``keep`` accepts (ties: display order)."""
    found = [m for m in methods_of(run) if m in CARDS and keep(m)]
    return max(found, key=lambda m: (run[mkey(m, "payoff_mean")], -found.index(m))) if found else None


def best_ours(run: pd.Series) -> str | None:
    """Our best deployable rule of either kind (CAM-DF's family, the set rules included) by mean payoff."""
    return best_of(run, in_camdf_family)


def coverage_at(run: pd.Series, k: float) -> float:
    """BoR's coverage@k (G_x inside the top k) at a real k: linear between the logged integer depths (k >= 1)."""
    depths = sorted(int(c.rsplit("_", 1)[1]) for c in run.index
                    if c.startswith(mkey("ranking", "coverage_at_depth_")) and pd.notna(run[c]))
    if not depths or not np.isfinite(k):
        return np.nan
    values = [run[mkey("ranking", f"coverage_at_depth_{d}")] for d in depths]
    return float(np.interp(k, [0, *depths], [0.0, *values]))


def ours_vs_baseline(judge: Judge, run: pd.Series) -> tuple[str, str, Comparison] | None:
    """(best of ours, best tuned baseline, ours minus baseline) of one cell; None without both."""
    ours, base = best_ours(run), baseline_of(run)
    if ours is None or base is None:
        return None
    try:
        return ours, base, judge.compare(run, ours, base)
    except LookupError:
        return None


def protocol_label(value: str) -> str:
    return PROTOCOLS.get(value, value)


def ours_columns(run: pd.Series, ours: str, base: str, c: Comparison, extra: dict | None = None) -> dict:
    """A catalog row's comparison columns: the best of ours (payoff with its CI, success, tools, then ``extra``), the
    best tuned baseline and its payoff, ours minus it (``c``, paired) and the MDD."""
    g = lambda m, k: run.get(mkey(m, k), np.nan)  # noqa: E731
    return {"best of ours": ours,
            "payoff (95% CI)": ci_text(g(ours, "payoff_mean"), g(ours, "payoff_ci_low"), g(ours, "payoff_ci_high")),
            "success": g(ours, "success"), "tools": g(ours, "n_exposed"), **(extra or {}),
            "best tuned baseline": base, "baseline payoff": g(base, "payoff_mean"), "ours minus baseline": c.text,
            "MDD": c.mdd}


def _row(judge: Judge, run: pd.Series) -> dict:
    g = lambda m, k: run.get(mkey(m, k), np.nan)  # noqa: E731
    row = {"recall@N (G_x listed)": g("full", "success"), "gold APIs listed": g("full", "success_partial")}
    pair = ours_vs_baseline(judge, run)
    if pair is not None:
        ours, base, c = pair
        row.update(ours_columns(run, ours, base, c, {"cost": g(ours, "cost")}))
        row["BoR coverage@k (k = tools)"] = coverage_at(run, g(ours, "n_exposed"))
    row.update({"best_prefix": g("best_prefix", "payoff_mean"), "oracle_set": g("oracle_set", "payoff_mean"),
                "full access": g("full", "payoff_mean"), "full access tools": g("full", "n_exposed")})
    return row


def _label(run: pd.Series) -> str:
    label = f"{protocol_label(run['protocol'])} / {run['p:scorer.label']} / N={run['top_n']}"
    return label + cell_marker(run)


#: The figure's line style per ranker (rankers sorted by name) and each style's name in the caption.
LINE_STYLES = {"-": "solid", "--": "dashed", ":": "dotted", "-.": "dash-dot"}


def style_legend(scorers) -> str:
    """``bm25 solid, pairwise dashed, ...``: which line is which ranker in :func:`payoff_vs_n_png`."""
    return ", ".join(f"{s} {name}" for s, name in zip(sorted(scorers), LINE_STYLES.values()))


def payoff_vs_n_png(cells: pd.DataFrame, title: str) -> bytes:
    """Payoff of each family's best method against N (log axis), one panel per fold protocol, one line style per ranker;
    a protocol run at one N only is a panel of one column per ranker."""
    protocols = [p for p in PROTOCOLS if p in set(cells["protocol"])] + sorted(set(cells["protocol"]) - set(PROTOCOLS))
    scorers = sorted(set(cells["p:scorer.label"]))
    colours = dict(zip(FAMILIES, ["tab:red", "tab:purple", "tab:blue", "tab:green", "0.4"]))
    styles = dict(zip(scorers, LINE_STYLES))

    def draw(ax, protocol: str) -> str:
        mine = cells[cells["protocol"] == protocol]
        cuts = sorted(set(mine["top_n"]))
        if len(cuts) == 1:  # one cut (the held-out protocols): a column per ranker, not one point column on a log axis
            return _one_cut(ax, mine, protocol, cuts[0])
        for scorer in scorers:
            sel = mine[mine["p:scorer.label"] == scorer].sort_values("top_n")
            for family, keep in FAMILIES.items():
                points = [(r["top_n"], r[mkey(m, "payoff_mean")]) for _, r in sel.iterrows()
                          if (m := best_of(r, keep)) is not None]
                if points:
                    x, y = zip(*points)
                    ax.plot(x, y, styles[scorer], marker="o", color=colours[family], label=f"{family} ({scorer})")
        return protocol_label(protocol)

    def _one_cut(ax, mine: pd.DataFrame, protocol: str, n: int) -> str:
        here = [s for s in scorers if s in set(mine["p:scorer.label"])]  # a column per ranker this protocol ran
        for i, scorer in enumerate(here):
            for j, (family, keep) in enumerate(FAMILIES.items()):
                points = [r[mkey(m, "payoff_mean")] for _, r in mine[mine["p:scorer.label"] == scorer].iterrows()
                          if (m := best_of(r, keep)) is not None]
                if points:  # the families side by side within the ranker's column, in the legend's order
                    ax.plot([i + (j - (len(FAMILIES) - 1) / 2) * 0.09], points[:1], styles[scorer], marker="o",
                            color=colours[family], label=f"{family} ({scorer})")
        ax.set_xscale("linear")
        ax.set_xticks(range(len(here)), here)
        ax.set_xlim(-0.6, len(here) - 0.4)
        ax.set_xlabel(f"ranker (this protocol cuts N = {n} only)")
        return f"{protocol_label(protocol)}, N = {n}"

    return log_x_panels_png(protocols, draw, title=title, xlabel="N: candidates cut from the 2,479-API catalog",
                            ylabel="payoff of the family's best method (mean)", width=4.2, height=4.0)


def a28(evidence: Evidence, main: dict) -> list[Report | Figure]:
    """The A28 table and its figure (LookupError when the store holds no catalog cell)."""
    cells = evidence.catalog
    if cells.empty:
        raise LookupError("a28: no FINISHED catalog cell in the store; run `experiment=a28` and `experiment=a28_unseen` "
                          "with the StableToolBench folder (make reproduce STABLETOOLBENCH=<folder>)")
    judge = evidence.judge
    rows = {_label(r): _row(judge, r) for _, r in cells.iterrows()}
    frame = pd.DataFrame.from_dict(rows, orient="index")
    frame.index.name = "protocol / ranker / N"
    anchor = cells.iloc[-1]
    risky = [m for m in ("camdf_risk", "risk_set") if mkey(m, "n_exposed") in cells]
    alpha = 0.05  # the conformal rules' target miss rate in every A28 cell (method.alpha)
    exposes_all = [r for _, r in cells.iterrows()
                   if any(r.get(mkey(m, "n_exposed"), 0) >= r.get(mkey("full", "n_exposed"), np.inf) for m in risky)]
    unreachable = [r for r in exposes_all if 1 - float(r[mkey("full", "success")]) > alpha]
    not_run = "; ".join(f"{m}: {why}" for m, why in NOT_RUN.items()) or "none (every rule of Table 2 runs)"
    note = (
        f"{anchor['p:domain.name']}: every ranker ranks the whole catalog of 2,479 APIs for each of the "
        f"{int(anchor[mkey('cell', 'n_tasks')])} queries and every rule decides over its top N; a gold API below N "
        "is a miss "
        "no rule can avoid, and every task stays in every row. recall@N: queries whose every gold API is in the top N "
        "(G_x listed), and the share of gold APIs listed. Costs: schema tokens (the packaged MiniLM tokenizer) of each "
        "API's definition, scaled so the catalog's mean API costs 1, what a retail tool costs on average; never scaled "
        "by the list's length (exposing 1,000 APIs costs 1,000 APIs). Full access here means exposing all N listed "
        "APIs (the whole catalog, 1.74M characters of schemas, fits no context). Best of ours: the highest mean payoff "
        "among CAM-DF's family and our set rules (either kind); best tuned baseline: the cell's best of the paper's "
        "baselines and the field's peers (the one definition every table uses); both picked on the cell's own tasks; ours minus baseline is paired over tasks (95% bootstrap CI). "
        "BoR coverage@k: the share of queries whose G_x lies in the ranker's top k at k = the tools best of ours "
        "exposes on average (interpolated between integer depths), the field's measure of the same list. "
        f"Fold protocols: in-distribution = {anchor['p:folds.n_folds']}-fold over the queries; unseen tools and "
        "unseen categories = grouped folds whose test queries' gold tools (categories) are the gold of no training "
        "query (connected components of the query x tool and query x category graphs). Each learned ranker "
        "(pairwise, rerank) is cross-fitted inside the training folds (nested). Catalog-scale bound: every model (membership "
        f"and rules) learns from each training query's first {anchor.get('p:candidates.fit_depth', 'None')} states "
        "(features and Delta labels computed on the whole list first; camdf.policies.StateBatch.head); a prefix rule "
        "that learns stops by that depth at the latest (it saw no state past it), while the set rules and the untuned "
        f"ones (full access, top5) decide over the whole top-N list. Not run: {not_run}. "
        + (f"The conformal rules (camdf_risk, risk_set) expose every listed API in {len(exposes_all)} of {len(cells)} "
           f"rows; in {len(unreachable)} of them their target miss rate alpha = {alpha:g} is below the miss rate no "
           "rule can avoid at that N (1 - recall@N), so no depth meets it"
           + ("" if len(unreachable) == len(exposes_all) else
              "; in the others (1 - recall@N below alpha) the cause is not established by these cells")
           + ". " if exposes_all else "")
        + f"{MDD_NOTE}. Repeats: {anchor['p:folds.repeats']} cross-fit per cell.")
    out: list[Report | Figure] = [Report("a28", "A28: decisions at catalog scale (2,479 APIs, top N)", frame,
                                         note=note)]
    out.append(Figure("a28_payoff_vs_n.png", payoff_vs_n_png(
        cells, f"A28: {anchor['p:domain.name']}, lambda = {main['lam']}: the best method of each family against N "
               f"({style_legend(set(cells['p:scorer.label']))})")))
    return out


def solvable_success(evidence: Evidence, run: pd.Series, method: str) -> float:
    """``method``'s success on the tasks the clairvoyant prefix (``best_prefix``) solves in every repeat: how often
    a rule finds the gold where a depth that holds it pays; nan without the cell's outcomes."""
    outcomes = evidence.artifacts.outcomes(run["run_id"]) if evidence.artifacts is not None else None
    if outcomes is None or not {BEST_PREFIX, method} <= set(outcomes["method"]):
        return np.nan
    per_task = outcomes.pivot_table(index="task_id", columns="method", values="success", aggfunc="mean")
    solved = per_task[BEST_PREFIX] == 1.0
    return float(per_task.loc[solved, method].mean()) if solved.any() else np.nan


def _lambda_row(evidence: Evidence, run: pd.Series) -> dict:
    g = lambda m, k: run.get(mkey(m, k), np.nan)  # noqa: E731
    row = {"tuned fixed depth (fixed_k tools)": g("fixed_k", "n_exposed"),
           "clairvoyant prefix: payoff": g(BEST_PREFIX, "payoff_mean"),
           "clairvoyant prefix: success": g(BEST_PREFIX, "success"),
           "clairvoyant prefix: tools": g(BEST_PREFIX, "n_exposed")}
    pair = ours_vs_baseline(evidence.judge, run)
    if pair is not None:
        ours, base, c = pair
        row.update(ours_columns(run, ours, base, c, {
            "success where the clairvoyant prefix succeeds": solvable_success(evidence, run, ours)}))
        row["verdict"] = verdict_text(c, "ours beats it", "ours is worse")
    row.update({"expose nothing": g(NO_TOOLS, "payoff_mean"), "full access": g(FULL_ACCESS, "payoff_mean")})
    return row


def payoff_vs_lambda_png(cells: pd.DataFrame, rows: pd.DataFrame, title: str) -> bytes:
    """Per ranker: mean payoff (with its CI for ours and the baseline) and the tuned fixed depth against lambda (log
    axis), two panels a ranker."""
    scorers = list(dict.fromkeys(cells["p:scorer.label"]))

    def draw(ax, panel: str) -> str:
        kind, scorer = panel.split(": ", 1)
        mine = cells[cells["p:scorer.label"] == scorer]
        lams, own = mine["lam"].to_numpy(dtype=float), rows[(cells["p:scorer.label"] == scorer).to_numpy()]
        if kind == "depth":
            ax.plot(lams, own["tuned fixed depth (fixed_k tools)"], "o-", color="tab:blue",
                    label="tuned fixed depth (fixed_k)")
            ax.plot(lams, own["clairvoyant prefix: tools"], "s--", color="0.4", label="clairvoyant prefix depth")
            ax.set_ylabel("tools exposed (mean over tasks)")
            return f"{scorer}: where the decision moves, depth against lambda"
        for label, pick, colour, style in (("best of ours", best_ours, "tab:red", "o-"),
                                           ("best tuned baseline", baseline_of, "tab:blue", "s-")):
            picked = [(pick(r), r) for _, r in mine.iterrows()]
            mean, lo, hi = ([r.get(mkey(m, key), np.nan) if m else np.nan for m, r in picked]
                            for key in ("payoff_mean", "payoff_ci_low", "payoff_ci_high"))
            ax.plot(lams, mean, style, color=colour, label=label)
            ax.fill_between(lams, lo, hi, color=colour, alpha=0.15)
        ax.plot(lams, mine[mkey(BEST_PREFIX, "payoff_mean")], "s--", color="0.4", label="clairvoyant prefix")
        return f"{scorer}: payoff against lambda (bands: 95% CI; full access, far below, in the table)"

    return log_x_panels_png([f"{kind}: {s}" for s in scorers for kind in ("payoff", "depth")], draw, title=title,
                            xlabel="lambda (cost pressure; log)", ylabel="payoff (mean)", width=5.0, height=4.0,
                            sharey=False, ncols=2)


def ranker_order(cells: pd.DataFrame, main: dict) -> list[str]:
    """The rankers of ``cells``: the main cell's first, then the others by name."""
    scorers = set(cells["p:scorer.label"])
    return [main["scorer"]] * (main["scorer"] in scorers) + sorted(scorers - {main["scorer"]})


def a28_lambda(evidence: Evidence, main: dict) -> list[Report | Figure]:
    """A28 over lambda at N = 100 (k-fold), per ranker: the table and its figure (LookupError without its cells)."""
    cells = evidence.cells("a28_lambda")
    if cells.empty:
        raise LookupError("a28_lambda: no FINISHED cell of experiment a28_lambda in the store; run "
                          "`experiment=a28_lambda` with the StableToolBench folder")
    order = {s: i for i, s in enumerate(ranker_order(cells, main))}
    cells = cells.assign(lam=cells["p:cost.lam"].astype(float), ranker=cells["p:scorer.label"].map(order))
    cells = cells.sort_values(["ranker", "lam"], kind="stable").drop(columns="ranker")
    rows = pd.DataFrame([_lambda_row(evidence, r) for _, r in cells.iterrows()],
                        index=[f"{r['p:scorer.label']} / lambda = {lam:g}{cell_marker(r)}"
                               for lam, (_, r) in zip(cells["lam"], cells.iterrows())])
    rows.index.name = "ranker / lambda"
    anchor = cells.iloc[0]
    marked = [i for i, (_, r) in zip(rows.index, cells.iterrows()) if cell_marker(r)]
    moves = []
    for scorer in order:
        own = (cells["p:scorer.label"] == scorer).to_numpy()
        depth, lams = rows["tuned fixed depth (fixed_k tools)"].to_numpy(dtype=float)[own], cells["lam"][own]
        moves.append(f"{scorer} {depth[0]:.1f} tools at lambda = {lams.iloc[0]:g} to {depth[-1]:.1f} at "
                     f"{lams.iloc[-1]:g}")
    note = (
        f"{anchor['p:domain.name']}, each ranker's top N = {anchor['p:candidates.top_k']} of 2,479 APIs "
        f"({', '.join(order)}), {protocol_label(anchor['p:folds.protocol'])}, d = {anchor['p:cost.d']}; the "
        "catalog's mean API costs 1 (A28's costs). The grid, from the data: the tuned fixed depth (fixed_k, picked on "
        f"the training folds) moves from {'; '.join(moves)}, so the cells span the lambdas where how many APIs to "
        "expose is a decision. "
        "Best of ours and the best tuned baseline as in A28 (the one definition every table uses), both picked on "
        "the cell's own tasks; ours minus baseline paired over tasks (95% bootstrap CI). Success where the "
        "clairvoyant prefix succeeds: best of ours' success on the tasks whose best prefix (chosen knowing G_x) "
        "succeeds, i.e. how often the rule finds a depth holding the gold where one pays. "
        + (f"Marked rows ({', '.join(marked)}) are counted by no claim. " if marked else "")
        + f"{MDD_NOTE}. Repeats: {anchor['p:folds.repeats']} cross-fit per cell.")
    return [Report("a28_lambda", f"A28 over lambda: the catalog at N = {anchor['p:candidates.top_k']} "
                                 "where a decision matters", rows, note=note),
            Figure("a28_lambda.png", payoff_vs_lambda_png(
                cells, rows, f"A28 over lambda: {anchor['p:domain.name']}, N = {anchor['p:candidates.top_k']}, "
                             "in-distribution folds, per ranker"))]


#: The ranking quality A28's rankers are read for (the cell stage's ``ranking/...`` metrics), by column.
RANKING_COLUMNS = {"recall@1": "recall_at_1", "recall@5": "recall_at_5", "nDCG@10": "ndcg_at_10", "MRR": "mrr",
                   "G_x in top 10": "coverage_at_10", "G_x in top 20": "coverage_at_20"}


def a28_rankers(evidence: Evidence, main: dict) -> Report:
    """How well each ranker ranks the whole catalog (A28's in-distribution cells at the largest N): recall, nDCG,
    MRR, the share of queries whose every gold API is in the top 10 / 20 / N (LookupError without the cells)."""
    cells = evidence.catalog
    cells = cells[cells["protocol"] == "kfold"] if not cells.empty else cells
    if cells.empty:
        raise LookupError("a28_rankers: no FINISHED in-distribution catalog cell in the store; run `experiment=a28`")
    rows = {}
    for scorer, sel in cells.groupby("p:scorer.label", sort=False):
        run = sel.sort_values("top_n").iloc[-1]
        row = {name: run.get(mkey("ranking", key), np.nan) for name, key in RANKING_COLUMNS.items()}
        row.update({"N": int(run["top_n"]), "G_x in top N": run.get(mkey("full", "success"), np.nan)})
        for _, r in sel.sort_values("top_n").iterrows():
            ours = best_ours(r)
            if ours is not None:
                k = r.get(mkey(ours, "n_exposed"), np.nan)
                row[f"G_x in the top k best of ours exposes at N = {int(r['top_n'])}"] = (
                    f"{coverage_at(r, k):.3f} (k = {k:.2f})")
        rows[scorer] = row
    frame = pd.DataFrame.from_dict(rows, orient="index")
    frame.index.name = "ranker"
    anchor = cells.iloc[-1]
    best20 = frame["G_x in top 20"].max()
    note = (f"{anchor['p:domain.name']}: each ranker ranks the whole catalog of 2,479 APIs for each of the "
            f"{int(anchor[mkey('cell', 'n_tasks')])} queries ({protocol_label('kfold')}; each learned ranker "
            "cross-fitted inside the training folds: pairwise, a logistic model of bm25 and MiniLM pair features; "
            "rerank, a LightGBM re-ranker of those plus each sentence of the query, the API's catalog neighbours and "
            "its cross-fitted rate in the training G_x, camdf.rankers.rerank). recall@k: the share of a query's gold APIs in its top k; nDCG@10 and MRR over "
            "binary relevance; G_x in top k: queries whose every gold API is in the top k (camdf.rankers.quality), the "
            "ceiling of any rule that exposes k APIs. The issue's goal for the best ranker, G_x in top 20 >= 0.85: "
            f"{'met' if best20 >= 0.85 else 'not met'} ({best20:.3f}). The last columns: the same share at the "
            "number of APIs the cell's best rule of ours exposes on average (interpolated).")
    return Report("a28_rankers", "A28's rankers: how well each ranks the 2,479-API catalog", frame, note=note)


TABLE = TableSpec("a28", order=125, experiments=("a28", "a28_unseen"), build=a28)
RANKERS_TABLE = TableSpec("a28_rankers", order=124, experiments=("a28",), build=a28_rankers)
LAMBDA_TABLE = TableSpec("a28_lambda", order=126, experiments=("a28_lambda",), build=a28_lambda)

#: The tables this module declares (found by :func:`camdf.reporting.registry.tables`).
SPECS = (RANKERS_TABLE, TABLE, LAMBDA_TABLE)
