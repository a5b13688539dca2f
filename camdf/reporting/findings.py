"""The headline findings: one-sentence verdicts read from the store (main cell, grids, verified success)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from camdf.reporting.claims import claims
from camdf.reporting.store import main_params, methods_of, one_run, select
from camdf.reporting.tables import a26, family_verdict, grid

def headlines(runs: pd.DataFrame, main: dict) -> list[str]:
    """One-sentence findings read from the store (main cell, grids, verified non-inferiority)."""
    out = []
    try:
        run = one_run(runs, "headline", **main_params(main), method__names=str(list(main["methods"])))
        g = lambda m, k: run[f"m:{m}/{k}"]  # noqa: E731
        lo, hi = -g("full", "diff_vs_ref_ci_high"), -g("full", "diff_vs_ref_ci_low")
        verdict = "better than" if lo > 0 else ("worse than" if hi < 0 else "not distinguishable from")
        out.append(f"Main cell (Table 2): CAM-DF payoff {g('camdf', 'payoff_mean'):.3f} against full access "
                   f"{g('full', 'payoff_mean'):.3f}; CAM-DF minus full {-g('full', 'diff_vs_ref'):+.3f} "
                   f"[{lo:+.3f}, {hi:+.3f}]: CAM-DF is {verdict} full access here, exposing "
                   f"{g('camdf', 'n_exposed'):.2f} of {g('full', 'n_exposed'):.0f} tools.")
        best = max((m for m in methods_of(run) if m not in ("oracle_set", "best_prefix")),
                   key=lambda m: g(m, "payoff_mean"))
        out.append(f"Best deployable method at the main cell: `{best}` ({g(best, 'payoff_mean'):.3f}).")
    except LookupError:
        pass
    exposure = []
    for scorer in dict.fromkeys([main["scorer"], *main.get("table2_scorers", ())]):
        try:
            r = one_run(runs, "exposure", **{**main_params(main), "scorer__label": scorer},
                        method__names=str(list(main["methods"])))
        except LookupError:
            continue
        exposure.append(f"{r['m:camdf/n_exposed']:.2f} of {r['m:full/n_exposed']:.0f} tools with `{scorer}` "
                        f"(G_x has {r['m:oracle_set/n_exposed']:.2f}; {r['m:camdf/fewer_tools_vs_full_pct']:.1f}% "
                        f"fewer than full access)")
    if exposure:
        out.append("Exposure at the main cell: CAM-DF exposes " + "; ".join(exposure) + ". The paper reports about "
                   "4.4 tools (~37% fewer than full access).")
    for name, rival in (("A18", "predict_threshold"), ("A24", "score_per_cost")):
        try:
            _, long = grid(runs, main, rival, name.lower(), name)
        except LookupError:
            continue
        live = long[~long.degenerate]
        out.append(f"{name}: over the {len(live)} non-degenerate lambda x d cells (of {len(long)}), CAM-DF minus "
                   f"{rival} has a CI above 0 in {int((live.lo > 0).sum())} cells and below 0 in "
                   f"{int((live.hi < 0).sum())}.")
    p = main_params(main)
    sel = select(runs, **p, method__names=str(list(main["methods"])))
    if not sel.empty and "m:camdf/verified_noninferior_vs_full" in sel:
        r = sel.iloc[-1]
        if pd.notna(r.get("m:camdf/verified_noninferior_vs_full", np.nan)):
            yes = bool(r["m:camdf/verified_noninferior_vs_full"])
            out.append(f"A25: under execution-verified sufficiency, CAM-DF's success is "
                       f"{'' if yes else 'not '}shown non-inferior to full access at delta = 0.05 "
                       f"(success {r['m:camdf/verified_success']:.3f} vs {r['m:full/verified_success']:.3f}, "
                       f"TOST p = {r['m:camdf/verified_tost_p_vs_full']:.4f}, paired p = "
                       f"{r['m:camdf/verified_success_p_vs_full']:.4f}).")
    try:
        fam = family_verdict(runs, main).frame
        parts = []
        for cell in dict.fromkeys(i.rsplit(" / ", 1)[0] for i in fam.index):
            rows = fam[[i.rsplit(" / ", 1)[0] == cell for i in fam.index]]
            top = rows["payoff"].astype(float).idxmax()
            parts.append(f"{cell}: best member `{top.rsplit(' / ', 1)[1]}` minus {rows.loc[top, 'best tuned baseline']} "
                         f"{rows.loc[top, 'method minus baseline (95% CI)']} ({rows.loc[top, 'verdict']})")
        wins = int((fam["verdict"] == "beats it").sum())
        out.append("Family verdict: " + "; ".join(parts) + f". {wins} of {len(fam)} (cell, member) pairs beat the best "
                   "tuned baseline with a CI above 0.")
    except LookupError:
        pass
    try:
        risk = a26(runs, main).frame
        ok = int((risk["within alpha + 2 SE"] == "yes").sum())
        out.append(f"A26: camdf_risk's miss rate is within alpha + 2 SE in {ok} of {len(risk)} cells (alpha = 0.01, "
                   "0.05, 0.1 over the domains and rankers).")
    except LookupError:
        pass
    try:
        verdicts = claims(runs, main).frame["verdict"]
        counts = verdicts.value_counts()
        out.append("Claims table: " + ", ".join(f"{int(counts.get(v, 0))} {v}" for v in
                                                 ("holds", "does not hold", "inconclusive"))
                   + f" of {len(verdicts)} rows (each verdict by the rule stated under the table).")
    except LookupError:
        pass
    return out
