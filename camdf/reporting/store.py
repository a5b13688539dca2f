"""Tables 2 and A18-A24, and their figures, built from the MLflow store alone.

Every function here takes the frame of FINISHED cell runs (:func:`runs_frame`) and
selects cells by their logged config params; nothing is recomputed from data. Where
several runs match one cell (an older code version, say), the latest one is used.
"""

from __future__ import annotations

import io
from typing import Any

import numpy as np
import pandas as pd

from camdf.reporting.report import Report

METHOD_ORDER = (
    "camdf", "camdf_lite", "camdf_unweighted", "camdf_no_cost", "camdf_no_membership", "camdf_regression",
    "camdf_lambda", "full", "none", "fixed_k", "score_threshold", "score_per_cost", "predict_threshold",
    "sufficiency_threshold", "plugin_argmax", "marginal_rule", "oracle_set", "best_prefix",
)


def runs_frame(tracker) -> pd.DataFrame:
    """One row per FINISHED run: ``run_id``, ``start``, ``p:<param>``, ``m:<metric>``, ``t:<tag>``."""
    rows = []
    for run in tracker.runs():
        if run.data.tags.get("kind"):  # the tables stage's figures run, a trained policy: not a cell
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


def _one(runs: pd.DataFrame, what: str, **params) -> pd.Series:
    sel = select(runs, **params)
    if sel.empty:
        raise LookupError(f"{what}: no FINISHED run in the store with {params}; run its experiment first")
    return sel.iloc[-1]


def _methods(run: pd.Series) -> list[str]:
    present = {c.split("/")[0][2:] for c in run.index if c.startswith("m:") and c.endswith("/payoff_mean")}
    present = {m for m in present if pd.notna(run.get(f"m:{m}/payoff_mean"))}
    return [m for m in METHOD_ORDER if m in present] + sorted(present - set(METHOD_ORDER))


def _present(sel: pd.DataFrame) -> list[str]:
    """Methods with a payoff in any of the selected runs (columns from other runs' methods are dropped)."""
    return [m for m in METHOD_ORDER if f"m:{m}/payoff_mean" in sel and sel[f"m:{m}/payoff_mean"].notna().any()]


def _ci(mean, lo, hi, digits=3) -> str:
    return f"{mean:.{digits}f} [{lo:.{digits}f}, {hi:.{digits}f}]"


def _main_params(main: dict) -> dict:
    return dict(domain__name=main["domain"], scorer__label=main["scorer"], cost__regime=main["regime"],
                cost__lam=main["lam"], cost__d=main["d"], seed=main["seed"], payoff="exact",
                label_noise=0.0, label_source="data")


def _sweep(runs: pd.DataFrame, main: dict, vary: tuple[str, ...], methods: str, missing: str,
           need: str | None = None, **fixed: Any) -> pd.DataFrame:
    """FINISHED runs of a sweep over the params ``vary``, every other param at the main cell.

    ``methods`` names the method list (a key of ``main``) the sweep ran; ``fixed`` overrides
    main-cell params. Raises LookupError(``missing``) when there is no such run, or none that
    logged the metric column ``need``. Rows come oldest first (see :func:`select`).
    """
    p = _main_params(main)
    for key in vary:
        p.pop(key)
    sel = select(runs, **{**p, **fixed}, method__names=str(list(main[methods])))
    if sel.empty or (need is not None and need not in sel):
        raise LookupError(missing)
    return sel


def table2(runs: pd.DataFrame, main: dict) -> Report:
    """The main retail cell: every method with payoff (CI), success, tools, cost and difference to CAM-DF."""
    run = _one(runs, "Table 2", **_main_params(main), method__names=str(list(main["methods"])))
    rows = []
    for m in _methods(run):
        g = lambda k: run.get(f"m:{m}/{k}", np.nan)  # noqa: E731
        diff = "" if m == "camdf" else _ci(-g("diff_vs_ref"), -g("diff_vs_ref_ci_high"), -g("diff_vs_ref_ci_low"))
        holm_p = g("p_holm_vs_ref")
        rows.append({
            "method": m,
            "payoff (95% CI)": _ci(g("payoff_mean"), g("payoff_ci_low"), g("payoff_ci_high")),
            "payoff": g("payoff_mean"),
            "success": g("success"),
            "tools exposed": g("n_exposed"),
            "% fewer than full": g("fewer_tools_vs_full_pct"),
            "cost": g("cost"),
            "CAM-DF minus method (95% CI)": diff,
            "Holm p": "" if pd.isna(holm_p) else f"{holm_p:.4f}",
        })
    frame = pd.DataFrame(rows).set_index("method")
    return Report(
        "table2",
        f"Table 2: {main['domain']} main cell (lambda = {main['lam']}, d = {main['d']}, scorer {main['scorer']}, "
        f"costs {main['regime']})",
        frame, bold={"payoff": "max"}, digits=3,
        note=f"{int(run['m:cell/n_tasks'])} tasks, out-of-fold decisions (5 folds); CIs: paired bootstrap over tasks "
             "(one shared resample matrix); Holm over the baselines of the cell (sign-flip p). "
             f"MLflow run {run['run_id']}.",
    )


def _grid(runs: pd.DataFrame, main: dict, rival: str, name: str, title: str) -> tuple[Report, pd.DataFrame]:
    sel = _sweep(runs, main, ("cost__lam", "cost__d"), "grid_methods",
                 f"{name}: no FINISHED grid run in the store; run `experiment=a18` first")
    sel = sel.assign(lam=sel["p:cost.lam"].astype(float), d=sel["p:cost.d"].astype(float))
    sel = sel.sort_values("start").drop_duplicates(["lam", "d"], keep="last")
    diff = -sel[f"m:{rival}/diff_vs_ref"]
    lo, hi = -sel[f"m:{rival}/diff_vs_ref_ci_high"], -sel[f"m:{rival}/diff_vs_ref_ci_low"]
    long = pd.DataFrame({"lam": sel["lam"], "d": sel["d"], "diff": diff, "lo": lo, "hi": hi})
    long["excludes0"] = (long.lo > 0) | (long.hi < 0)
    text = long.assign(cell=[f"{r.diff:+.3f} [{r.lo:+.3f}, {r.hi:+.3f}]" for r in long.itertuples()])
    frame = text.pivot(index="lam", columns="d", values="cell").sort_index()
    marks = long.pivot(index="lam", columns="d", values="excludes0").sort_index().fillna(False)
    frame.index = [f"{v:g}" for v in frame.index]
    marks.index = frame.index
    frame.columns = [f"d={v:g}" for v in frame.columns]
    marks.columns = frame.columns
    frame.index.name = "lambda"
    n_pos = int(((long.lo > 0)).sum())
    n_neg = int(((long.hi < 0)).sum())
    return Report(name, title, frame, marks=marks,
                  note=f"CAM-DF minus {rival}, mean payoff difference with its paired-bootstrap 95% CI; "
                       f"† marks cells whose CI excludes 0 ({n_pos} favour CAM-DF, {n_neg} favour {rival}, "
                       f"of {len(long)} cells)."), long


def a18(runs, main) -> tuple[Report, pd.DataFrame]:
    return _grid(runs, main, "predict_threshold", "a18",
                 f"A18: {main['domain']} lambda x d grid, CAM-DF minus predict-then-threshold")


def a24(runs, main) -> tuple[Report, pd.DataFrame]:
    return _grid(runs, main, "score_per_cost", "a24",
                 f"A24: {main['domain']} lambda x d grid, CAM-DF minus the tuned score-per-cost threshold")


def a19(runs, main) -> Report:
    sel = _sweep(runs, main, ("label_noise",), "noise_methods",
                 "A19: no FINISHED noise run in the store; run `experiment=a19` first")
    sel = sel.assign(eps=sel["p:label_noise"].astype(float)).sort_values("start").drop_duplicates("eps", keep="last")
    methods = _present(sel)
    frame = pd.DataFrame({m: sel[f"m:{m}/payoff_mean"].to_numpy() for m in methods},
                         index=[f"{e:g}" for e in sel["eps"]])
    frame.index.name = "epsilon"
    return Report("a19", "A19: membership noise in the training G_x (evaluated on clean G_x), mean payoff",
                  frame.sort_index(), note="Each required tool dropped and each other candidate added with "
                  "probability epsilon in the training labels only.")


def a20(runs, main) -> Report:
    run = _one(runs, "A20", **_main_params(main), method__names=str(list(main["ablation_methods"])))
    rows = []
    for m in _methods(run):
        g = lambda k: run.get(f"m:{m}/{k}", np.nan)  # noqa: E731
        rows.append({
            "method": m,
            "payoff (95% CI)": _ci(g("payoff_mean"), g("payoff_ci_low"), g("payoff_ci_high")),
            "payoff": g("payoff_mean"),
            "tools exposed": g("n_exposed"),
            "method minus CAM-DF (95% CI)": "" if m == "camdf" else
            _ci(g("diff_vs_ref"), g("diff_vs_ref_ci_low"), g("diff_vs_ref_ci_high")),
        })
    return Report("a20", "A20: ablations at the main cell", pd.DataFrame(rows).set_index("method"),
                  bold={"payoff": "max"},
                  note="unweighted: labels without |Delta| weights; no_cost / no_membership: feature groups "
                       "removed; regression: LightGBM regression on Delta, stop iff prediction >= 0; "
                       "lite: 10-feature weighted logistic model.")


def a20_lambda(runs, main) -> Report:
    """A20 (lambda dial): one lambda-conditioned model against per-cell models over the A18 grid."""
    sel = _sweep(runs, main, ("cost__lam", "cost__d"), "grid_methods",
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
    sel = _sweep(runs, main, ("scorer__label",), "methods",
                 "A21: no FINISHED scorer runs in the store; run `experiment=a21` first")
    sel = sel.sort_values("start").drop_duplicates("p:scorer.label", keep="last")
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
        })
    frame = pd.DataFrame(rows).set_index("scorer").sort_index()
    return Report("a21", "A21: ranking sources at the main cell", frame,
                  note="recall@3 and nDCG@10 of G_x from the same runs (metrics ranking/*).")


def cross_domain(runs, main, kind: str) -> Report:
    p = _main_params(main)
    p.pop("domain__name")
    p["payoff"] = kind
    sel = select(runs, **p, method__names=str(list(main["methods"])))
    sel = sel[sel["p:domain.name"] != main["domain"]] if not sel.empty else sel
    if sel.empty:
        raise LookupError(f"A22/A23: no FINISHED cross-domain run with payoff={kind}; run `experiment=a22` first")
    sel = sel.sort_values("start").drop_duplicates("p:domain.name", keep="last")
    methods = _present(sel)
    frame = pd.DataFrame({m: sel[f"m:{m}/payoff_mean"].to_numpy() for m in methods},
                         index=sel["p:domain.name"].to_numpy()).sort_index()
    frame.insert(0, "tasks", sel.set_index("p:domain.name")["m:cell/n_tasks"].reindex(frame.index).astype(int))
    frame.index.name = "domain"
    name, what = ("a22", "exact") if kind == "exact" else ("a23", "partial")
    return Report(name, f"{name.upper()}: other domains at the main cell, {what} payoff (mean)", frame,
                  note="Mean payoff per method; every method tuned and evaluated out of fold per domain.")


SOURCES = {"data": "derived", "annotated": "annotated", "partial": "partial"}


def a25(runs: pd.DataFrame, main: dict) -> list[Report]:
    """A25: verified sufficiency at the main cell, per label source; agreement; tests; noise re-scored."""
    sel = _sweep(runs, main, ("label_source",), "methods",
                 "A25: no FINISHED label-source run with verified metrics; run `experiment=a25` first",
                 need="m:camdf/verified_success")
    sel = sel[sel["m:camdf/verified_success"].notna()].sort_values("start")
    sel = sel.drop_duplicates("p:label_source", keep="last").set_index("p:label_source")
    order = [s for s in SOURCES if s in sel.index]
    methods = _present(sel)
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
                          "McNemar p": r[f"m:{m}/verified_mcnemar_p_vs_full"],
                          "TOST p (delta 0.05)": r[f"m:{m}/verified_tost_p_vs_full"],
                          "non-inferior": "yes" if r[f"m:{m}/verified_noninferior_vs_full"] else "no"})
    tests_frame = pd.DataFrame(tests).set_index("label source / method") if tests else pd.DataFrame()
    reports = [
        Report("a25", f"A25 (b): verified success, tools exposed and payoff at the main cell, per training label source",
               main_frame, note="Verified success: the exposed set passes the execution-based sufficiency check "
               "(camdf.sufficiency) on tau2's real tools. Payoff uses the G_x of the label source."),
        Report("a25_agreement", "A25 (a): the G_x proxy against verified sufficiency, over every set any method exposed",
               agree, note="Counts of (method, task) outcomes at the main cell."),
        Report("a25_tests", "A25 (c): verified success against full access: McNemar (exact) and TOST non-inferiority",
               tests_frame, digits=4, note="Non-inferior: TOST lower one-sided p < 0.05 at margin delta = 0.05."),
    ]
    q = _main_params(main)
    q.pop("label_noise")
    noise = select(runs, **q, method__names=str(list(main["noise_methods"])))
    if not noise.empty and "m:camdf/verified_success" in noise and noise["m:camdf/verified_success"].notna().all():
        noise = noise.assign(eps=noise["p:label_noise"].astype(float)).sort_values("start")
        noise = noise.drop_duplicates("eps", keep="last").sort_values("eps")
        nm = [m for m in _present(noise)
              if f"m:{m}/verified_success" in noise and noise[f"m:{m}/verified_success"].notna().all()]
        frame = pd.DataFrame({m: noise[f"m:{m}/verified_success"].to_numpy() for m in nm},
                             index=pd.Index([f"{e:g}" for e in noise["eps"]], name="epsilon"))
        reports.append(Report("a25_noise", "A25 (d): the A19 noise study re-scored by verified success", frame))
    return reports


def heatmap_png(long: pd.DataFrame, title: str) -> bytes:
    """Heatmap of a lambda x d grid of differences, CI-excluding-zero cells outlined."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    grid = long.pivot(index="lam", columns="d", values="diff").sort_index()
    excl = long.pivot(index="lam", columns="d", values="excludes0").sort_index().fillna(False)
    fig, ax = plt.subplots(figsize=(6, 5), dpi=110)
    lim = float(np.nanmax(np.abs(grid.to_numpy()))) or 1.0
    im = ax.imshow(grid.to_numpy(), cmap="RdBu", vmin=-lim, vmax=lim, aspect="auto", origin="lower")
    ax.set_xticks(range(len(grid.columns)), [f"{v:g}" for v in grid.columns])
    ax.set_yticks(range(len(grid.index)), [f"{v:g}" for v in grid.index])
    ax.set_xlabel("cost dispersion d")
    ax.set_ylabel("lambda")
    for i in range(grid.shape[0]):
        for j in range(grid.shape[1]):
            v = grid.iat[i, j]
            if pd.notna(v):
                ax.text(j, i, f"{v:+.2f}" + ("*" if excl.iat[i, j] else ""), ha="center", va="center", fontsize=7)
    fig.colorbar(im, ax=ax, label="payoff difference")
    ax.set_title(title, fontsize=9)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", metadata={"Software": None})
    plt.close(fig)
    return buf.getvalue()


def figure_payoff_vs_tools(runs: pd.DataFrame, main: dict) -> bytes:
    """The per-method payoff vs tools exposed figure of the main cell at d = 0."""
    from camdf.pipeline.cells import payoff_vs_tools_png

    run = _one(runs, "payoff-vs-tools figure", **{**_main_params(main), "cost__d": 0.0},
               method__names=str(list(main["methods"])))
    rows = {}
    for m in _methods(run):
        rows[m] = {k: run[f"m:{m}/{k}"] for k in ("payoff_mean", "payoff_ci_low", "payoff_ci_high", "n_exposed")}
    table = pd.DataFrame.from_dict(rows, orient="index")
    return payoff_vs_tools_png(table, f"{main['domain']}: lambda = {main['lam']}, d = 0 (homogeneous costs)")


def build_all(runs: pd.DataFrame, main: dict) -> tuple[list[Report], dict[str, bytes], list[str]]:
    """Every table and figure the store can support.

    Returns
    -------
    reports : list of Report
    figures : dict file name -> PNG bytes
    missing : list of str
        What could not be built and why (a table whose runs are not in the store).
    """
    reports, figures, missing = [], {}, []
    builders = [
        ("table2", lambda: table2(runs, main)),
        ("a18", lambda: a18(runs, main)),
        ("a19", lambda: a19(runs, main)),
        ("a20", lambda: a20(runs, main)),
        ("a20_lambda", lambda: a20_lambda(runs, main)),
        ("a21", lambda: a21(runs, main)),
        ("a22", lambda: cross_domain(runs, main, "exact")),
        ("a23", lambda: cross_domain(runs, main, "partial")),
        ("a24", lambda: a24(runs, main)),
        ("a25", lambda: a25(runs, main)),
    ]
    for name, build in builders:
        try:
            out = build()
        except LookupError as err:
            missing.append(str(err))
            continue
        if isinstance(out, tuple):
            report, long = out
            figures[f"{name}_heatmap.png"] = heatmap_png(long, report.title)
            reports.append(report)
        else:
            reports += out if isinstance(out, list) else [out]
    try:
        figures["payoff_vs_tools.png"] = figure_payoff_vs_tools(runs, main)
    except LookupError as err:
        missing.append(str(err))
    return reports, figures, missing


def headlines(runs: pd.DataFrame, main: dict) -> list[str]:
    """One-sentence findings read from the store (main cell, grids, verified non-inferiority)."""
    out = []
    try:
        run = _one(runs, "headline", **_main_params(main), method__names=str(list(main["methods"])))
        g = lambda m, k: run[f"m:{m}/{k}"]  # noqa: E731
        lo, hi = -g("full", "diff_vs_ref_ci_high"), -g("full", "diff_vs_ref_ci_low")
        verdict = "better than" if lo > 0 else ("worse than" if hi < 0 else "not distinguishable from")
        out.append(f"Main cell (Table 2): CAM-DF payoff {g('camdf', 'payoff_mean'):.3f} against full access "
                   f"{g('full', 'payoff_mean'):.3f}; CAM-DF minus full {-g('full', 'diff_vs_ref'):+.3f} "
                   f"[{lo:+.3f}, {hi:+.3f}]: CAM-DF is {verdict} full access here, exposing "
                   f"{g('camdf', 'n_exposed'):.2f} of {g('full', 'n_exposed'):.0f} tools.")
        best = max((m for m in _methods(run) if m not in ("oracle_set", "best_prefix")),
                   key=lambda m: g(m, "payoff_mean"))
        out.append(f"Best deployable method at the main cell: `{best}` ({g(best, 'payoff_mean'):.3f}).")
    except LookupError:
        pass
    for name, rival in (("A18", "predict_threshold"), ("A24", "score_per_cost")):
        try:
            _, long = _grid(runs, main, rival, name.lower(), name)
        except LookupError:
            continue
        out.append(f"{name}: over {len(long)} lambda x d cells, CAM-DF minus {rival} has a CI above 0 in "
                   f"{int((long.lo > 0).sum())} cells and below 0 in {int((long.hi < 0).sum())}.")
    p = _main_params(main)
    sel = select(runs, **p, method__names=str(list(main["methods"])))
    if not sel.empty and "m:camdf/verified_noninferior_vs_full" in sel:
        r = sel.iloc[-1]
        if pd.notna(r.get("m:camdf/verified_noninferior_vs_full", np.nan)):
            yes = bool(r["m:camdf/verified_noninferior_vs_full"])
            out.append(f"A25: under execution-verified sufficiency, CAM-DF's success is "
                       f"{'' if yes else 'not '}shown non-inferior to full access at delta = 0.05 "
                       f"(success {r['m:camdf/verified_success']:.3f} vs {r['m:full/verified_success']:.3f}, "
                       f"TOST p = {r['m:camdf/verified_tost_p_vs_full']:.4f}, McNemar p = "
                       f"{r['m:camdf/verified_mcnemar_p_vs_full']:.4f}).")
    return out


def results_markdown(reports: list[Report], command: str, findings: list[str] | None = None) -> str:
    """The README's Results section body: the headline findings and every table, with the command."""
    parts = [f"Generated by `{command}` from the MLflow store (do not edit by hand).", ""]
    if findings:
        parts += [f"- {f}" for f in findings] + [""]
    for r in reports:
        parts.append(r.to_markdown())
    return "\n".join(parts)


def update_readme(readme: str, body: str, start: str = "<!-- results:start -->",
                  end: str = "<!-- results:end -->") -> str:
    """Replace the text between the two markers (which must exist) with ``body``."""
    if start not in readme or end not in readme:
        raise ValueError(f"readme: markers {start} and {end} are missing")
    head, rest = readme.split(start, 1)
    _, tail = rest.split(end, 1)
    return f"{head}{start}\n{body.rstrip()}\n{end}{tail}"


def build_tables(tracker, main: dict, out_dir, readme=None) -> tuple[list, list[str]]:
    """Build every table and figure from the store into ``out_dir`` (and the README's Results).

    Figures are also logged to a ``tables`` run of the tracker's experiment, replaced
    on each build so the UI shows the latest ones.
    """
    from pathlib import Path

    out_dir = Path(out_dir)
    runs = runs_frame(tracker)
    reports, figures, missing = build_all(runs, main)
    if out_dir.is_dir():  # a table the store no longer supports must not linger from an older build
        for old in out_dir.iterdir():
            if old.suffix in (".md", ".csv", ".tex", ".png"):
                old.unlink()
    written = []
    for report in reports:
        written += report.write(out_dir)
    for name, png in figures.items():
        path = out_dir / name
        path.write_bytes(png)
        written.append(path)
    if readme is not None and reports:
        text = Path(readme).read_text(encoding="utf-8")
        body = results_markdown(reports, "make reproduce", headlines(runs, main))
        Path(readme).write_text(update_readme(text, body), encoding="utf-8")
        written.append(Path(readme))
    if figures:
        with tracker.cell_run("tables", "tables", {}, {"kind": "tables"}) as run:
            tracker.log_files(run.info.run_id, {f"figures/{k}": v for k, v in figures.items()})
    return written, missing
