"""Tables 2 and A18-A25 as :class:`Report` objects, built from the MLflow store's cell runs alone.

Every function takes the frame of FINISHED cell runs (:func:`camdf.reporting.store.runs_frame`)
and selects cells by their logged config params; nothing is recomputed from data. Where
several runs match one cell (an older code version, say), the latest one is used.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from camdf.reporting.report import Report
from camdf.reporting.store import main_params, methods_of, one_run, present_methods, select, sweep

def _ci(mean, lo, hi, digits=3) -> str:
    return f"{mean:.{digits}f} [{lo:.{digits}f}, {hi:.{digits}f}]"


def protocol_note(run: pd.Series) -> str:
    """How a cell's decisions and intervals were made: R repeats, K folds, the fold protocol."""
    repeats = run.get("p:folds.repeats", np.nan)
    repeats = 1 if pd.isna(repeats) else int(float(repeats))
    text = (f"{repeats} repeated cross-fit{'s' if repeats > 1 else ''} of {run['p:folds.n_folds']} folds "
            f"(protocol {run['p:folds.protocol']}; repeat r seeds folds, rankers and models with seed + r)")
    if repeats > 1:
        text += ("; every figure is the mean over tasks of each task's mean over the repeats, CIs are the paired "
                 "bootstrap over tasks applied to those per-task means, and the spread is the min-max of the "
                 "repeat means")
    return text


def is_degenerate(run: pd.Series) -> bool:
    """A cell whose headroom (best prefix - max(full, none)) is below 0.02: no stopper can gain much there."""
    return bool(run.get("m:cell/degenerate", 0.0) == 1.0)


def table2(runs: pd.DataFrame, main: dict, scorer: str | None = None) -> Report:
    """The main retail cell: every method with payoff (CI), success, tools, cost and difference to CAM-DF.

    ``scorer`` (default: the main cell's) picks the ranking source; another one is written as
    ``table2_<scorer>``.
    """
    scorer = scorer or main["scorer"]
    run = one_run(runs, f"Table 2 ({scorer})", **{**main_params(main), "scorer__label": scorer},
                  method__names=str(list(main["methods"])))
    rows = []
    for m in methods_of(run):
        g = lambda k: run.get(f"m:{m}/{k}", np.nan)  # noqa: E731
        diff = "" if m == "camdf" else _ci(g("diff_vs_ref"), g("diff_vs_ref_ci_low"), g("diff_vs_ref_ci_high"))
        holm_p = g("p_holm_vs_ref")
        rows.append({
            "method": m,
            "payoff (95% CI)": _ci(g("payoff_mean"), g("payoff_ci_low"), g("payoff_ci_high")),
            "payoff": g("payoff_mean"),
            "repeat range": "" if pd.isna(g("payoff_repeat_min")) else
            f"{g('payoff_repeat_min'):.3f}-{g('payoff_repeat_max'):.3f}",
            "share of headroom": g("headroom_share"),
            "success": g("success"),
            "tools exposed": g("n_exposed"),
            "% fewer than full": g("fewer_tools_vs_full_pct"),
            "cost": g("cost"),
            "method minus CAM-DF (95% CI)": diff,
            "Holm p": "" if pd.isna(holm_p) else f"{holm_p:.4f}",
        })
    frame = pd.DataFrame(rows).set_index("method")
    return Report(
        "table2" if scorer == main["scorer"] else f"table2_{scorer}",
        f"Table 2: {main['domain']} main cell (lambda = {main['lam']}, d = {main['d']}, scorer {scorer}, "
        f"costs {main['regime']})",
        frame, bold={"payoff": "max"}, digits=3,
        note=f"{int(run['m:cell/n_tasks'])} tasks, out-of-fold decisions: {protocol_note(run)}. CIs: paired "
             f"bootstrap over tasks ({run['p:stats.n_resamples']} resamples, one shared resample matrix). "
             "Differences are method minus reference, the reference being CAM-DF (> 0: the method beats CAM-DF). "
             "Holm p: the paired sign-flip test's p, Holm-adjusted over the baselines of the cell; the CI is not "
             "adjusted, so a CI that excludes 0 can sit beside a Holm p above 0.05 (a difference shown alone, not "
             "after the correction for comparing every baseline). Headroom best prefix - max(full, none) = "
             f"{run.get('m:cell/headroom', np.nan):.3f}{' (degenerate: < 0.02)' if is_degenerate(run) else ''}; "
             "share of headroom = (method - max(full, none)) / headroom. "
             f"MLflow run {run['run_id']}.",
    )


def grid(runs: pd.DataFrame, main: dict, rival: str, name: str, title: str) -> tuple[Report, pd.DataFrame]:
    sel = sweep(runs, main, ("cost__lam", "cost__d"), "grid_methods",
                 f"{name}: no FINISHED grid run in the store; run `experiment=a18` first")
    sel = sel.assign(lam=sel["p:cost.lam"].astype(float), d=sel["p:cost.d"].astype(float))
    sel = sel.sort_values("start").drop_duplicates(["lam", "d"], keep="last")
    diff = -sel[f"m:{rival}/diff_vs_ref"]
    lo, hi = -sel[f"m:{rival}/diff_vs_ref_ci_high"], -sel[f"m:{rival}/diff_vs_ref_ci_low"]
    degenerate = sel.get("m:cell/degenerate", pd.Series(0.0, index=sel.index)).fillna(0.0) == 1.0
    long = pd.DataFrame({"lam": sel["lam"], "d": sel["d"], "diff": diff, "lo": lo, "hi": hi,
                         "degenerate": degenerate.to_numpy(),
                         "camdf_range": (sel["m:camdf/payoff_repeat_max"] - sel["m:camdf/payoff_repeat_min"]).to_numpy()
                         if "m:camdf/payoff_repeat_max" in sel else np.nan,
                         "headroom": sel.get("m:cell/headroom", pd.Series(np.nan, index=sel.index)).to_numpy(),
                         "same_as": (sel[f"m:{rival}/payoff_mean"] - sel["m:predict_threshold/payoff_mean"]).abs()
                         .lt(1e-9).to_numpy() if "m:predict_threshold/payoff_mean" in sel else False})
    long["excludes0"] = ((long.lo > 0) | (long.hi < 0)) & ~long.degenerate
    text = long.assign(cell=[f"{r.diff:+.3f} [{r.lo:+.3f}, {r.hi:+.3f}]{' (degenerate)' if r.degenerate else ''}"
                             for r in long.itertuples()])
    frame = text.pivot(index="lam", columns="d", values="cell").sort_index()
    marks = long.pivot(index="lam", columns="d", values="excludes0").sort_index().fillna(False)
    frame.index = [f"{v:g}" for v in frame.index]
    marks.index = frame.index
    frame.columns = [f"d={v:g}" for v in frame.columns]
    marks.columns = frame.columns
    frame.index.name = "lambda"
    live = long[~long.degenerate]
    n_pos = int((live.lo > 0).sum())
    n_neg = int((live.hi < 0).sum())
    long.attrs["difference"] = f"CAM-DF minus {rival} (> 0 favours CAM-DF)"
    note = (f"Differences are method minus reference: CAM-DF minus {rival} (> 0 favours CAM-DF), the mean payoff "
            f"difference with its paired-bootstrap 95% CI; † marks cells whose CI "
            f"excludes 0 ({n_pos} favour CAM-DF, {n_neg} favour {rival}, of {len(live)} non-degenerate cells). "
            f"{int(long.degenerate.sum())} of {len(long)} cells are degenerate (headroom best prefix - max(full, none) "
            f"< 0.02; largest headroom in the grid {long.headroom.max():.3f}), marked and left out of the counts. "
            f"Decisions: {protocol_note(sel.iloc[-1])}. Spread over the repeats: CAM-DF's repeat means span at most "
            f"{long.camdf_range.max():.3f} in any cell (median {long.camdf_range.median():.3f}).")
    if rival != "predict_threshold":
        note += (f" The tuned {rival} payoff equals predict-then-threshold's in {int(long.same_as.sum())} of "
                 f"{len(long)} cells.")
    return Report(name, title, frame, marks=marks, note=note), long


def a18(runs, main) -> tuple[Report, pd.DataFrame]:
    return grid(runs, main, "predict_threshold", "a18",
                 f"A18: {main['domain']} lambda x d grid, CAM-DF minus predict-then-threshold")


def a24(runs, main) -> tuple[Report, pd.DataFrame]:
    return grid(runs, main, "score_per_cost", "a24",
                 f"A24: {main['domain']} lambda x d grid, CAM-DF minus the tuned score-per-cost threshold")


def a19(runs, main) -> Report:
    sel = sweep(runs, main, ("label_noise",), "noise_methods",
                 "A19: no FINISHED noise run in the store; run `experiment=a19` first")
    sel = sel.assign(eps=sel["p:label_noise"].astype(float)).sort_values("start").drop_duplicates("eps", keep="last")
    methods = present_methods(sel)
    frame = pd.DataFrame({m: sel[f"m:{m}/payoff_mean"].to_numpy() for m in methods},
                         index=[f"{e:g}" for e in sel["eps"]])
    frame.index.name = "epsilon"
    return Report("a19", "A19: membership noise in the training G_x (evaluated on clean G_x), mean payoff",
                  frame.sort_index(), note="Each required tool dropped and each other candidate added with "
                  "probability epsilon in the training labels only.")


ABLATION_NOTES = (
    "unweighted: labels without |Delta| weights; no_cost / no_membership / no_task: feature groups removed "
    "(no_task: the task-constant n_candidates, text_len, score_entropy); no_identity: without the next tool's "
    "identity; regression: LightGBM regression on Delta, stop iff prediction >= 0; lite: 10-feature weighted "
    "logistic model; argmax: regress each depth's payoff relative to full access and expose the argmax, starting "
    "from the plug-in estimate (argmax_no_margin: from zero; argmax_untuned: one shallow booster, no inner CV; "
    "argmax_identity: with tool identity); plugin_argmax: the plug-in estimate alone; risk: the shallowest prefix "
    "whose calibrated miss risk is within alpha (risk_no_split: calibrated on the training tasks' cross-fitted "
    "probabilities instead of a held-out half, no guarantee)."
)


def a20(runs, main, scorer: str | None = None) -> Report:
    """A20: the family and its ablations at the main cell, for ``scorer`` (default: the main one)."""
    scorer = scorer or main["scorer"]
    run = one_run(runs, f"A20 ({scorer})", **{**main_params(main), "scorer__label": scorer},
                  method__names=str(list(main["ablation_methods"])))
    rows = []
    for m in methods_of(run):
        g = lambda k: run.get(f"m:{m}/{k}", np.nan)  # noqa: E731
        rows.append({
            "method": m,
            "payoff (95% CI)": _ci(g("payoff_mean"), g("payoff_ci_low"), g("payoff_ci_high")),
            "payoff": g("payoff_mean"),
            "repeat range": "" if pd.isna(g("payoff_repeat_min")) else
            f"{g('payoff_repeat_min'):.3f}-{g('payoff_repeat_max'):.3f}",
            "tools exposed": g("n_exposed"),
            "success": g("success"),
            "method minus CAM-DF (95% CI)": "" if m == "camdf" else
            _ci(g("diff_vs_ref"), g("diff_vs_ref_ci_low"), g("diff_vs_ref_ci_high")),
        })
    name = "a20" if scorer == main["scorer"] else f"a20_{scorer}"
    return Report(name, f"A20: the CAM-DF family and its ablations at the main cell (scorer {scorer})",
                  pd.DataFrame(rows).set_index("method"), bold={"payoff": "max"},
                  note=f"{ABLATION_NOTES} Differences are method minus reference, the reference being CAM-DF "
                       f"(> 0: the method beats CAM-DF). Decisions: {protocol_note(run)}. MLflow run {run['run_id']}.")


FAMILY_MAIN = ("camdf", "camdf_lite", "camdf_argmax", "camdf_risk")


def family_verdict(runs, main) -> Report:
    """Does any member of the CAM-DF family beat the best tuned baseline at each main cell? With CIs."""
    cells = []
    for scorer in dict.fromkeys([main["scorer"], *main.get("table2_scorers", ())]):
        for protocol in ("kfold", "group"):
            sel = select(runs, **{**main_params(main), "scorer__label": scorer, "folds__protocol": protocol},
                         method__names=str(list(main["methods"])))
            if not sel.empty:
                cells.append((f"{scorer}, {protocol} folds", sel.iloc[-1]))
    if not cells:
        raise LookupError("family verdict: no FINISHED main-cell run; run `experiment=table2` first")
    rows = []
    for label, run in cells:
        best = [m for m in methods_of(run) if run.get(f"m:{m}/is_best_baseline", np.nan) == 1.0]
        if not best:
            continue
        b = best[0]
        for m in FAMILY_MAIN:
            if pd.isna(run.get(f"m:{m}/diff_vs_best_baseline", np.nan)):
                continue
            lo, hi = run[f"m:{m}/diff_vs_best_baseline_ci_low"], run[f"m:{m}/diff_vs_best_baseline_ci_high"]
            verdict = "beats it" if lo > 0 else ("worse" if hi < 0 else "no difference shown")
            rows.append({"cell / method": f"{label} / {m}", "payoff": run[f"m:{m}/payoff_mean"],
                         "best tuned baseline": f"{b} ({run[f'm:{b}/payoff_mean']:.3f})",
                         "method minus baseline (95% CI)": _ci(run[f"m:{m}/diff_vs_best_baseline"], lo, hi),
                         "verdict": verdict})
    frame = pd.DataFrame(rows).set_index("cell / method")
    wins = [r["cell / method"] for r in rows if r["verdict"] == "beats it"]
    return Report("family", "Does the CAM-DF family beat the best tuned baseline at the main cells?", frame,
                  digits=3, note="Best tuned baseline: the deployable non-CAM-DF method with the highest mean payoff "
                  "in the cell (chosen on the evaluated tasks, which favours the baseline). Differences are method minus "
                  "reference, the reference being that baseline: paired bootstrap over tasks of the per-task means "
                  "over the repeats; beats it = CI above 0. "
                  + (f"A family member beats it in: {', '.join(wins)}." if wins else
                     "No member of the family beats the best tuned baseline at any main cell."))


def a26(runs, main) -> Report:
    """A26: the risk-controlled stopper at each alpha: miss rate (CI), tools, payoff, verified success, TOST."""
    p = main_params(main)
    for key in ("domain__name", "scorer__label"):
        p.pop(key)
    sel = select(runs, **p, method__names=str(list(main["risk_methods"])))
    if sel.empty or "p:method.alpha" not in sel:
        raise LookupError("A26: no FINISHED risk run in the store; run `experiment=a26` and `a26_supervised` first")
    sel = sel.assign(alpha=sel["p:method.alpha"].astype(float))
    sel = sel.drop_duplicates(["p:domain.name", "p:scorer.label", "alpha"], keep="last")
    sel = sel.sort_values(["p:domain.name", "p:scorer.label", "alpha"])
    rows = []
    for _, r in sel.iterrows():
        g = lambda k: r.get(f"m:camdf_risk/{k}", np.nan)  # noqa: E731
        miss, se, alpha = g("miss_rate"), g("miss_rate_se"), r["alpha"]
        tost = g("verified_tost_p_vs_full") if pd.notna(g("verified_tost_p_vs_full")) else g("tost_p_vs_full")
        rows.append({
            "domain / scorer / alpha": f"{r['p:domain.name']} / {r['p:scorer.label']} / {alpha:g}",
            "miss rate (95% CI)": _ci(miss, max(0.0, miss - 1.96 * se), miss + 1.96 * se),
            "within alpha + 2 SE": "yes" if miss <= alpha + 2 * se + 1e-12 else "NO",
            "full-list miss rate": r.get("m:full/miss_rate", np.nan),
            "tools exposed": g("n_exposed"),
            "% fewer than full": g("fewer_tools_vs_full_pct"),
            "payoff": g("payoff_mean"),
            "full payoff": r.get("m:full/payoff_mean", np.nan),
            "verified success": g("verified_success"),
            "TOST p vs full": tost,
            "non-inferior (delta)": "yes" if (g("verified_noninferior_vs_full") if pd.notna(
                g("verified_noninferior_vs_full")) else g("noninferior_vs_full")) == 1.0 else "no",
        })
    frame = pd.DataFrame(rows).set_index("domain / scorer / alpha")
    bad = [i for i, row in frame.iterrows() if row["within alpha + 2 SE"] == "NO"]
    return Report(
        "a26", "A26: the risk-controlled stopper (camdf_risk) at target miss rates alpha", frame, digits=3,
        note="Miss: the exposed prefix does not contain G_x (or an alternative). Miss rate: mean over tasks of each "
             "task's miss share over the repeats; CI mean +- 1.96 SE over tasks. The guarantee P(miss) <= alpha "
             "assumes exchangeable tasks and every G_x on its list (full-list miss rate 0). TOST: success against "
             "full access at margin delta = 0.05 (verified success where the domain executes, else the G_x proxy). "
             f"Costs scaled so every mean candidate list costs {sel['p:list_cost'].iloc[0]}. "
             f"Decisions: {protocol_note(sel.iloc[-1])}. "
             + ("Every cell's miss rate is within alpha + 2 SE." if not bad else
                f"Outside alpha + 2 SE: {', '.join(bad)}."))
def a20_lambda(runs, main) -> Report:
    """A20 (lambda dial): one lambda-conditioned model against per-cell models over the A18 grid."""
    sel = sweep(runs, main, ("cost__lam", "cost__d"), "grid_methods",
                 "A20 (lambda): no FINISHED grid run with camdf_lambda; run `experiment=a18` first",
                 need="m:camdf_lambda/payoff_mean")
    sel = sel.assign(lam=sel["p:cost.lam"].astype(float), d=sel["p:cost.d"].astype(float))
    sel = sel.sort_values("start").drop_duplicates(["lam", "d"], keep="last")
    cond = sel["m:camdf_lambda/payoff_mean"]
    inside = (cond >= sel["m:camdf/payoff_ci_low"] - 1e-12) & (cond <= sel["m:camdf/payoff_ci_high"] + 1e-12)
    long = pd.DataFrame({"lam": sel["lam"], "d": sel["d"], "inside": inside,
                         "cell": [f"{c:.3f} vs {m:.3f} [{lo:.3f}, {hi:.3f}]" for c, m, lo, hi in zip(
                             cond, sel["m:camdf/payoff_mean"], sel["m:camdf/payoff_ci_low"],
                             sel["m:camdf/payoff_ci_high"])]})
    frame = long.pivot(index="lam", columns="d", values="cell").sort_index()
    marks = ~long.pivot(index="lam", columns="d", values="inside").sort_index().astype(bool)
    frame.index = [f"{v:g}" for v in frame.index]
    frame.columns = [f"d={v:g}" for v in frame.columns]
    marks.index, marks.columns = frame.index, frame.columns
    frame.index.name = "lambda"
    share = float(inside.mean())
    return Report("a20_lambda", "A20 (lambda dial): one lambda-conditioned CAM-DF against per-cell CAM-DF models",
                  frame, marks=marks,
                  note=f"Each cell: lambda-conditioned payoff vs per-cell payoff [95% CI]; † marks cells outside the "
                       f"CI. Inside the CI in {int(inside.sum())} of {len(long)} cells ({100 * share:.0f}%).")


def a21(runs, main) -> Report:
    sel = sweep(runs, main, ("scorer__label",), "methods",
                 "A21: no FINISHED scorer runs in the store; run `experiment=a21` first")
    sel = sel.sort_values("start").drop_duplicates("p:scorer.label", keep="last")
    needed = [f"m:{m}/payoff_mean" for m in ("camdf", "predict_threshold", "score_per_cost", "fixed_k", "best_prefix")]
    lacking = [c[2:].split("/")[0] for c in needed if c not in sel or sel[c].isna().any()]
    if lacking:
        raise LookupError(f"A21: the scorer runs at the main cell lack {', '.join(lacking)}; run `experiment=a21` first")
    rows = []
    for _, r in sel.iterrows():
        rows.append({
            "scorer": r["p:scorer.label"],
            "recall@3": r.get("m:ranking/recall_at_3", np.nan),
            "nDCG@10": r.get("m:ranking/ndcg_at_10", np.nan),
            "CAM-DF payoff": r["m:camdf/payoff_mean"],
            "predict-threshold payoff": r["m:predict_threshold/payoff_mean"],
            "score-per-cost payoff": r["m:score_per_cost/payoff_mean"],
            "fixed-k payoff": r["m:fixed_k/payoff_mean"],
            "best prefix": r["m:best_prefix/payoff_mean"],
            "CAM-DF repeat range": f"{r.get('m:camdf/payoff_repeat_min', np.nan):.3f}-"
                                   f"{r.get('m:camdf/payoff_repeat_max', np.nan):.3f}",
            "headroom": r.get("m:cell/headroom", np.nan),
        })
    frame = pd.DataFrame(rows).set_index("scorer").sort_index()
    return Report("a21", "A21: ranking sources at the main cell", frame,
                  note="recall@3 and nDCG@10 of G_x from the same runs (metrics ranking/*, averaged over the "
                       f"repeats). Decisions: {protocol_note(sel.iloc[-1])}.")


def cross_domain(runs, main, kind: str) -> Report:
    p = main_params(main)
    p.pop("domain__name")
    p["payoff"] = kind
    sel = select(runs, **p, method__names=str(list(main["methods"])))
    sel = sel[sel["p:domain.name"] != main["domain"]] if not sel.empty else sel
    if sel.empty:
        raise LookupError(f"A22/A23: no FINISHED cross-domain run with payoff={kind}; run `experiment=a22` first")
    sel = sel.sort_values("start").drop_duplicates("p:domain.name", keep="last")
    methods = present_methods(sel)
    frame = pd.DataFrame({m: sel[f"m:{m}/payoff_mean"].to_numpy() for m in methods},
                         index=sel["p:domain.name"].to_numpy()).sort_index()
    by = sel.set_index("p:domain.name")
    frame.insert(0, "tasks", by["m:cell/n_tasks"].reindex(frame.index).astype(int))
    frame.insert(1, "headroom", by["m:cell/headroom"].reindex(frame.index))
    frame.insert(2, "CAM-DF share of headroom", by["m:camdf/headroom_share"].reindex(frame.index))
    if "m:camdf/payoff_repeat_max" in by:
        frame.insert(3, "CAM-DF repeat range", [f"{by.loc[d, 'm:camdf/payoff_repeat_min']:.3f}-"
                                                f"{by.loc[d, 'm:camdf/payoff_repeat_max']:.3f}" for d in frame.index])
    frame.index = [f"{d} (degenerate)" if by.loc[d, "m:cell/degenerate"] == 1.0 else d for d in frame.index]
    frame.index.name = "domain"
    name, what = ("a22", "exact") if kind == "exact" else ("a23", "partial")
    scale = by["p:list_cost"].iloc[0] if "p:list_cost" in by else "None"
    cost_note = ("costs unscaled (mean 1 per catalog)" if scale in ("None", None) else
                 f"costs scaled per domain so that the mean candidate list costs {scale} (retail's 7 tools at mean "
                 "cost 1), which makes lambda the same pressure in catalogs of different size; "
                 "`list_cost=null` gives the unscaled cells")
    small = [d for d in by.index if by.loc[d, "m:cell/headroom"] < 0.1]
    why = (f" Headroom < 0.1 in {', '.join(small)}: even the best prefix in hindsight gains little over full access "
           "or exposing nothing there, so no stopper can separate from them." if small else
           " Headroom >= 0.1 in every domain.")
    return Report(name, f"{name.upper()}: other domains at the main cell, {what} payoff (mean)", frame,
                  note=f"Mean payoff per method; every method tuned and evaluated out of fold per domain; {cost_note}. "
                       f"Headroom = best prefix - max(full, none); a domain below 0.02 is marked degenerate.{why} "
                       f"Decisions: {protocol_note(sel.iloc[-1])}.")


SOURCES = {"data": "derived", "annotated": "annotated", "partial": "partial"}


def a25(runs: pd.DataFrame, main: dict) -> list[Report]:
    """A25: verified sufficiency at the main cell, per label source; agreement; tests; noise re-scored."""
    sel = sweep(runs, main, ("label_source",), "methods",
                 "A25: no FINISHED label-source run with verified metrics; run `experiment=a25` first",
                 need="m:camdf/verified_success")
    sel = sel[sel["m:camdf/verified_success"].notna()].sort_values("start")
    sel = sel.drop_duplicates("p:label_source", keep="last").set_index("p:label_source")
    order = [s for s in SOURCES if s in sel.index]
    methods = present_methods(sel)
    cols = {}
    for s in order:
        r = sel.loc[s]
        cols[f"verified success ({SOURCES[s]})"] = [r.get(f"m:{m}/verified_success", np.nan) for m in methods]
        cols[f"tools ({SOURCES[s]})"] = [r.get(f"m:{m}/n_exposed", np.nan) for m in methods]
        cols[f"payoff ({SOURCES[s]})"] = [r.get(f"m:{m}/payoff_mean", np.nan) for m in methods]
    main_frame = pd.DataFrame(cols, index=pd.Index(methods, name="method"))
    agree = pd.DataFrame(
        {k: [int(sel.loc[s, f"m:agreement/{k}"]) for s in order] for k in ("both", "proxy_only", "verified_only",
                                                                               "neither")},
        index=pd.Index([SOURCES[s] for s in order], name="label source"),
    )
    agree.columns = ["proxy and verified", "proxy only", "verified only", "neither"]
    tests = []
    for s in order:
        r = sel.loc[s]
        for m in methods:
            if m == "full" or pd.isna(r.get(f"m:{m}/verified_tost_p_vs_full", np.nan)):
                continue
            tests.append({"label source / method": f"{SOURCES[s]} / {m}",
                          "verified success minus full": r[f"m:{m}/verified_diff_vs_full"],
                          "paired p": r[f"m:{m}/verified_success_p_vs_full"],
                          "TOST p (delta 0.05)": r[f"m:{m}/verified_tost_p_vs_full"],
                          "non-inferior": "yes" if r[f"m:{m}/verified_noninferior_vs_full"] else "no"})
    tests_frame = pd.DataFrame(tests).set_index("label source / method") if tests else pd.DataFrame()
    reports = [
        Report("a25", "A25 (b): verified success, tools exposed and payoff at the main cell, per training label source",
               main_frame, note="Verified success: the exposed set passes the execution-based sufficiency check "
               "(camdf.sufficiency) on tau2's real tools. Payoff uses the G_x of the label source."),
        Report("a25_agreement", "A25 (a): the G_x proxy against verified sufficiency, over every set any method exposed",
               agree, note="Counts of (method, task, repeat) outcomes at the main cell."),
        Report("a25_tests", "A25 (c): verified success against full access: a paired test and TOST non-inferiority",
               tests_frame, digits=4, note="Differences are method minus reference, the reference being full "
               "access (verified success minus full's). Paired p: exact McNemar with one repeat; with R > 1 repeats the sign-flip "
               "test on the per-task success shares over the repeats (McNemar needs binary outcomes). Non-inferior: "
               "TOST lower one-sided p < 0.05 at margin delta = 0.05 on the per-task success."),
    ]
    q = main_params(main)
    q.pop("label_noise")
    noise = select(runs, **q, method__names=str(list(main["noise_methods"])))
    if not noise.empty and "m:camdf/verified_success" in noise and noise["m:camdf/verified_success"].notna().all():
        noise = noise.assign(eps=noise["p:label_noise"].astype(float)).sort_values("start")
        noise = noise.drop_duplicates("eps", keep="last").sort_values("eps")
        nm = [m for m in present_methods(noise)
              if f"m:{m}/verified_success" in noise and noise[f"m:{m}/verified_success"].notna().all()]
        frame = pd.DataFrame({m: noise[f"m:{m}/verified_success"].to_numpy() for m in nm},
                             index=pd.Index([f"{e:g}" for e in noise["eps"]], name="epsilon"))
        reports.append(Report("a25_noise", "A25 (d): the A19 noise study re-scored by verified success", frame))
    return reports
