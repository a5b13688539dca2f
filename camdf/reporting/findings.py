"""The headline findings: one-sentence verdicts read from the evidence and the tables already built."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from camdf.policies import FULL_ACCESS, REFERENCE, is_oracle
from camdf.reporting.evidence import Evidence, main_cell, main_scorers
from camdf.reporting.report import Report
from camdf.reporting.store import methods_of, mkey
from camdf.reporting.tables.a26 import MISS_LEVEL
from camdf.reporting.tables.grid import grid_long, grids_equal
from camdf.reporting.tables.notes import baseline_of, ours_deployable
from camdf.reporting.verdicts import wording


def headlines(evidence: Evidence, main: dict, reports: Sequence[Report]) -> list[str]:
    """One-sentence findings (main cell, grids, verified non-inferiority, family, A26, claims).

    ``evidence`` is what the tables were built from and ``reports`` the tables built
    (:func:`camdf.reporting.build.build_all`): the family verdict, A26 and the claims
    are read from their tables, not rebuilt; a table that is absent gives no finding.
    """
    built = {r.name: r for r in reports}
    out = []
    try:
        run = main_cell(evidence.main, "headline", main["scorer"])
        g = lambda m, k: run[mkey(m, k)]  # noqa: E731
        c = evidence.judge.compare(run, REFERENCE, FULL_ACCESS)
        power = "" if np.isnan(c.mdd) else f"; MDD {c.mdd:.3f}"
        out.append(f"Main cell (Table 2): CAM-DF payoff {g(REFERENCE, 'payoff_mean'):.3f} against full access "
                   f"{g(FULL_ACCESS, 'payoff_mean'):.3f}; CAM-DF minus full {c.text}"
                   f"{power}: CAM-DF {wording(c, 'full access')} here, exposing "
                   f"{g(REFERENCE, 'n_exposed'):.2f} of {g(FULL_ACCESS, 'n_exposed'):.0f} tools.")
        best = max((m for m in methods_of(run) if not is_oracle(m)),
                   key=lambda m: g(m, "payoff_mean"))
        out.append(f"Best deployable method at the main cell: `{best}` ({g(best, 'payoff_mean'):.3f}).")
    except LookupError:
        pass  # no main cell at the anchor: the findings below read each ranker's own
    ours_vs = []
    protocols = list(dict.fromkeys(evidence.main["p:folds.protocol"])) if not evidence.main.empty else []
    for scorer, protocol in [(s, p) for s in main_scorers(main) for p in protocols]:
        try:
            r = main_cell(evidence.main, "ours vs baselines", scorer, protocol)
        except LookupError:
            continue
        base, ours = baseline_of(r), ours_deployable(r)
        if base is None or not ours:
            continue
        top = max(ours, key=lambda m: r[mkey(m, "payoff_mean")])
        try:
            c = evidence.judge.compare(r, top, base)
        except LookupError:
            continue
        mdd = "" if np.isnan(c.mdd) else f", MDD {c.mdd:.3f}"
        fits = "" if c.per_fit is None else f", higher in {c.fits_higher} of {c.n_fits} fits"
        ours_vs.append(f"`{scorer}`, {protocol} folds: `{top}` {r[mkey(top, 'payoff_mean')]:.3f} minus `{base}` "
                       f"{r[mkey(base, 'payoff_mean')]:.3f} = {c.text}"
                       f"{fits}{mdd}: "
                       f"`{top}` {wording(c, base)}")
    if ours_vs:
        out.append("Best of ours against the best tuned baseline (the field's peers included) at each main cell "
                   f"and fold protocol ({' and '.join(protocols)}"
                   + ("; group folds keep each task template whole in one fold" if "group" in protocols else "")
                   + "): "
                   + "; ".join(ours_vs) + ".")
    exposure = []
    for scorer in main_scorers(main):
        try:
            r = main_cell(evidence.main, "exposure", scorer)
        except LookupError:
            continue
        g_size = r.get(mkey("oracle_set", "n_exposed"), np.nan)  # a grid without the oracle (the smoke grid) has none
        g_text = "" if pd.isna(g_size) else f"G_x has {g_size:.2f}; "
        exposure.append(f"{r[mkey('camdf', 'n_exposed')]:.2f} of {r[mkey('full', 'n_exposed')]:.0f} tools "
                        f"with `{scorer}` "
                        f"({g_text}{r[mkey('camdf', 'fewer_tools_vs_full_pct')]:.1f}% fewer than full access)")
    if exposure:
        out.append("Exposure at the main cell: CAM-DF exposes " + "; ".join(exposure) + ". The paper reports about "
                   "4.4 tools (~37% fewer than full access).")
    if not evidence.grid.empty:
        grids = [(name, rival, grid_long(evidence.grid, rival)) for name, rival in
                 (("A18", "predict_threshold"), ("A24", "score_per_cost"))
                 if mkey(rival, "diff_vs_ref") in evidence.grid]
        if len(grids) == 2 and grids_equal(grids[0][2], grids[1][2]):
            # One finding, said once: the two rivals coincide at every cell (same prefixes, same payoffs).
            grids = [("A18 and A24 (identical cell for cell: the tuned score-per-cost threshold picks the same "
                      "prefixes as predict-then-threshold in every cell)", "predict_threshold", grids[0][2])]
        for name, rival, long in grids:
            live = long[~long.degenerate & ~long.below_zero_everywhere]
            n_above, n_below = int((live.lo > 0).sum()), int((live.hi < 0).sum())
            out.append(f"{name}: over the {len(live)} non-degenerate lambda x d cells (of {len(long)}), CAM-DF minus "
                       f"{rival} has a CI above 0 in {n_above} {_cells(n_above)} and below 0 in {n_below}.")
    verified = []
    for scorer in main_scorers(main):  # each ranker's main cell: CAM-DF and the best of ours
        try:
            r = main_cell(evidence.main, "A25", scorer)
        except LookupError:
            continue
        ours = ours_deployable(r)
        best = max(ours, key=lambda m: r[mkey(m, "payoff_mean")]) if ours else None
        for m in dict.fromkeys([REFERENCE, *([best] if best else [])]):
            if pd.isna(r.get(mkey(m, "verified_noninferior_vs_full"), np.nan)):
                continue
            yes = bool(r[mkey(m, "verified_noninferior_vs_full")])
            verified.append(f"`{m}` with `{scorer}`: {'yes' if yes else 'no'} (success "
                            f"{r[mkey(m, 'verified_success')]:.3f} vs {r[mkey(FULL_ACCESS, 'verified_success')]:.3f}, "
                            f"TOST p = {r[mkey(m, 'verified_tost_p_vs_full')]:.4f})")
    if verified:
        out.append("A25: under execution-verified sufficiency, shown non-inferior to full access in success at "
                   "delta = 0.05 (CAM-DF and the best of ours at each ranker's main cell): " + "; ".join(verified) + ".")
    if "family" in built:
        fam = built["family"].frame
        parts = []
        for cell in dict.fromkeys(i.rsplit(" / ", 1)[0] for i in fam.index):
            rows = fam[[i.rsplit(" / ", 1)[0] == cell for i in fam.index]]
            top = rows["payoff"].astype(float).idxmax()
            parts.append(f"{cell}: best member `{top.rsplit(' / ', 1)[1]}` minus {rows.loc[top, 'best tuned baseline']} "
                         f"{rows.loc[top, 'method minus baseline (95% CI)']} ({rows.loc[top, 'verdict']})")
        wins = int((fam["verdict"] == "beats it").sum())
        out.append("Family verdict: " + "; ".join(parts) + f". {wins} of {len(fam)} (cell, member) pairs beat the best "
                   "tuned baseline (CI above 0 and the gain in most fits).")
    if "a26" in built:
        risk = built["a26"].frame
        live = risk[risk["could expose less"] == "yes"]
        apart = [i for i in risk.index if i not in live.index]
        above = [i for i in live.index if live.loc[i, "miss rate above alpha"] == "yes"]
        out.append(f"A26: camdf_risk's miss rate is shown above alpha (one-sided t-test over tasks, misses "
                   f"clustered by task, p < {MISS_LEVEL:g}) in {len(above)} of the {len(live)} cells where it could "
                   "have exposed less (alpha = 0.01, 0.05, 0.1 over the domains and rankers)"
                   + (f": {', '.join(above)}" if above else "")
                   + (f"; the other {len(apart)} expose every tool or all but one and test nothing: "
                      f"{', '.join(apart)}." if apart else "."))
    if "a27" in built:
        kinds = built["a27"].frame
        mains = [i for i in kinds.index if "(main cell)" in i]
        parts = [f"{i.split(' ')[0]}: {kinds.loc[i, 'best set rule']} minus {kinds.loc[i, 'best prefix rule']} "
                 f"{kinds.loc[i, 'set minus prefix']} ({kinds.loc[i, 'set tools']:.2f} against "
                 f"{kinds.loc[i, 'prefix tools']:.2f} tools)" for i in mains]
        domains = evidence.domains
        lows = (domains.loc[domains["p:payoff"] == "exact", mkey("cell", "set_minus_prefix_ci_low")].dropna()
                if not domains.empty and mkey("cell", "set_minus_prefix_ci_low") in domains else pd.Series(dtype=float))
        if parts:
            out.append("A27, beyond the ranked prefix: the best set rule minus the best prefix rule at the main cells, "
                       + "; ".join(parts) + f"; on the other domains (A22) the difference's CI is above 0 in "
                       f"{int((lows > 0).sum())} of {len(lows)}.")
    if "claims" in built:
        verdicts = built["claims"].frame["verdict"]
        counts = verdicts.value_counts()
        out.append("Claims table: " + ", ".join(f"{int(counts.get(v, 0))} {v}" for v in
                                                 ("holds", "does not hold", "inconclusive"))
                   + f" of {len(verdicts)} rows (each verdict by the rule stated under the table).")
    return out


def _cells(n: int) -> str:
    return "cell" if n == 1 else "cells"
