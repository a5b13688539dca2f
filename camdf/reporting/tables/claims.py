"""The claims table: one row per claim of the paper, its evidence cells, the statistic, a verdict, its power and stability.

Every verdict follows a rule stated in the row (and in :data:`RULES`), read from the
store's cell runs alone, through the same :class:`~camdf.reporting.evidence.Evidence` the tables read.
A win or loss between two methods follows the wording rule of :mod:`camdf.reporting.verdicts`
(CI and the share of fits carrying it). Degenerate cells (headroom below
:data:`camdf.evaluation.headroom.DEGENERATE_HEADROOM`) are left out of every count.

A claim is one function of :data:`ROWS`, ``(evidence, main, judge) -> list of Row``: it reads
every comparison through ``judge``, so the table can re-judge it under other bootstrap seeds
(the verdict's stability); a new claim is one such function and its line in :data:`ROWS`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from camdf.common.markdown import signed
from camdf.evaluation.fits import paired_differences
from camdf.evaluation.picks import pick_counts, picked_outcomes
from camdf.evaluation.summary import deployable_kinds
from camdf.policies import CARDS, FULL_ACCESS, REFERENCE, in_camdf_family, is_oracle
from camdf.reporting.evidence import Evidence, decides_nothing, left_out_as, main_scorers
from camdf.reporting.report import Report
from camdf.reporting.store import methods_of, mkey
from camdf.reporting.tables.a19 import noise_drops
from camdf.reporting.tables.base import TableSpec
from camdf.reporting.tables.notes import MDD_NOTE
from camdf.reporting.verdicts import KNIFE_EDGE, RULE_TEXT, STABILITY_SEEDS, Comparison, Judge, direction, reason

HOLDS, FAILS, UNSURE = "holds", "does not hold", "inconclusive"

#: Claim (f): the largest drop of CAM-DF's payoff under G_x noise that still counts as robust.
NOISE_TOLERANCE = 0.02

RULES = {
    "a": "rivals: every other deployable method of the cell (the paper's baselines, this project's rules and the "
         "field's peers; the oracles are not deployable); holds: CAM-DF beats every rival (wording rule); does not "
         "hold: some rival beats CAM-DF; inconclusive otherwise",
    "b": "over the non-degenerate A18 cells with d >= 1 and lambda >= 0.12: holds if CAM-DF beats every rival "
         "(wording rule) in every such cell; does not hold if a rival beats CAM-DF in any, or CAM-DF beats every "
         "rival in fewer than half; inconclusive otherwise",
    "c": "CAM-DF minus predict-then-threshold over every ranking source (A21) and every cell (lambda, d) of the "
         "A18 grid: holds if CAM-DF beats it (wording rule) in every non-degenerate cell; does "
         "not hold if it is worse in any; inconclusive otherwise",
    "d": "holds: CAM-DF exposes >= 30% fewer tools than full access and TOST shows its (verified where available) "
         "success non-inferior at delta = 0.05; does not hold: fewer than 30% fewer tools, or its success is below "
         "full access's by more than delta; inconclusive otherwise",
    "e": "lite's gain over max(full, none) as a share of CAM-DF's gain: holds if >= 0.5; does not hold if < 0.5; "
         "inconclusive when CAM-DF has no gain to keep",
    "f": f"A19, per ranking source: the drop is CAM-DF's noise-free payoff minus its payoff at each noise level "
         f"(signed, paired over tasks); inconclusive when CAM-DF has no noise-free gain over max(full, none) to keep; "
         f"else holds if every drop is at most {NOISE_TOLERANCE:g}; does not hold if a drop above "
         f"{NOISE_TOLERANCE:g} is shown (the clean cell beats the noisy one by the wording rule); inconclusive "
         "otherwise (without the cells' outcomes: the point drop alone decides)",
    "g": "A24 falsifier: the claim that CAM-DF beats a tuned score-per-cost rule holds if CAM-DF beats it (wording "
         "rule) in more than half the non-degenerate cells; it does not hold (falsified) otherwise",
    "h": "ours (A27), per ranking source at the main cell under k-fold and group folds: the deployable set rule minus the deployable "
         "prefix rule, each picked per (repeat, fold) fit among its kind (peers included) by its mean payoff on the "
         "fit's training tasks (the repeat's other folds, scored out of fold), never on the fit's test tasks; holds "
         "if the set rule beats it (wording rule: CI above 0 and in most fits); does not hold if the prefix rule "
         "beats the set rule; inconclusive otherwise",
    "i": "ours (A28), over the non-degenerate catalog cells (every N, fold protocol and ranker): the best of our "
         "rules of either kind minus the best tuned baseline; holds if ours beats it (wording rule) in every such "
         "cell; does not hold if the baseline beats ours in any; inconclusive otherwise",
    "j": "ours (A29), over the non-degenerate recovery-payoff cells with a fallback (every ranker, search price and "
         "k; rules aware of it): the fallback-aware set (fallback_set, fixed before the cells ran) minus the "
         "strongest rival of the cell, the highest mean payoff among deferring everything to search (none), an "
         "always-loaded set + search (static_set), the plug-in set + search (plugin_set), CAM-DF-lite + search, "
         "full access and the best rule without a search (any deployable rule of the same cell under the exact payoff, exposing "
         "nothing included), each tuned on training folds; holds if it beats that rival (wording rule) in every "
         "such cell; does not hold if the rival beats it in any; inconclusive otherwise",
    "k": "ours (A30), over the left-out domains whose transfer cell is not degenerate: the transferred policy "
         "(camdf_transfer, the runtime's default policy, fixed before the cells ran) minus the best transferred tuned "
         "baseline (picked on the left-out domain's tasks); holds if it beats that baseline (wording rule) in every "
         "such domain; does not hold if the baseline beats it in any; inconclusive otherwise",
}


@dataclass(frozen=True)
class Row:
    """One row of the claims table.

    Attributes
    ----------
    claim, statement, cells, statistic, verdict : str
    mdd : float
        Minimum detectable difference of the comparison behind the verdict (for a row over
        several cells, their median); nan when the cells' outcomes were not read.
    effect : float
        The observed difference the verdict reads (for a row over several cells, their mean):
        what an inconclusive row's power text compares with ``mdd``.
    """

    claim: str
    statement: str
    cells: str
    statistic: str
    verdict: str
    mdd: float = np.nan
    effect: float = np.nan


#: A claim's rows, ``(evidence, main, judge) -> list of Row`` (every comparison read through ``judge``).
RowsFn = Callable[[Evidence, dict, Judge], list[Row]]


def _cell_label(run: pd.Series) -> str:
    return (f"{run['p:domain.name']}/{run['p:scorer.label']}/lambda={run['p:cost.lam']}/d={run['p:cost.d']}/"
            f"{run['p:folds.protocol']}")


def _median(values) -> float:
    v = [x for x in values if np.isfinite(x)]
    return float(np.median(v)) if v else np.nan


#: Our own rules and their ablations (beyond the paper; their cards say ``ours``) and the field's peer baselines
#: (A27). Claim (a) counts them as rivals ("among deployable methods" means every deployable method).
def ours() -> tuple[str, ...]:
    """This project's own rules and the field's peers: a registry query, read live."""
    return tuple(c.name for c in CARDS.values() if c.ours or c.family == "peer")


def claim_a(run: pd.Series, judge: Judge | None = None) -> tuple[str, str, Comparison]:
    """Claim (a) at one main cell: the verdict, its statistic and the comparison that decided it."""
    judge = judge or Judge()
    deployable = [m for m in methods_of(run) if not is_oracle(m) and m != REFERENCE]
    diffs = {m: judge.compare(run, REFERENCE, m) for m in deployable}
    dirs = {m: direction(c) for m, c in diffs.items()}
    if all(d > 0 for d in dirs.values()):
        verdict = HOLDS
    elif any(d < 0 for d in dirs.values()):
        verdict = FAILS
    else:
        verdict = UNSURE
    losers = [m for m in deployable if dirs[m] < 0]
    worst = min(losers or deployable, key=lambda m: diffs[m].mean)
    c = diffs[worst]
    n_ours = sum(m in ours() for m in deployable)
    rivals = (f"rivals: {len(deployable)} deployable methods ({len(deployable) - n_ours} of the paper's baselines, "
              f"{n_ours} of ours and the peers)")
    return verdict, (f"CAM-DF {run[mkey('camdf', 'payoff_mean')]:.3f}; {rivals}; closest/best rival {worst}: "
                     "CAM-DF minus "
                     f"it {c.text} ({reason(c)})"), c


def rows_a(evidence: Evidence, main: dict, judge: Judge) -> list[Row]:
    """(a) per main cell: CAM-DF beats every deployable method."""
    if evidence.main.empty:
        raise LookupError("claims: no FINISHED main-cell run in the store; run `experiment=table2` first")
    out = []
    for _, run in evidence.main.iterrows():
        verdict, stat, c = claim_a(run, judge)
        out.append(Row(f"a ({run['p:scorer.label']}, {run['p:folds.protocol']} folds)",
                       "highest payoff among deployable methods at the main retail cell (the paper's baselines, ours and the "
                       "field's peers)", _cell_label(run),
                       stat, verdict, c.mdd, c.mean))
    return out


def _live(cells: pd.DataFrame) -> pd.DataFrame:
    return cells[[not decides_nothing(r) for _, r in cells.iterrows()]]


def rows_b(evidence: Evidence, main: dict, judge: Judge) -> list[Row]:
    """(b) over the A18 cells with d >= 1 and lambda >= 0.12: CAM-DF beats every rival."""
    grid = evidence.grid
    if grid.empty:
        return []
    cells = grid[(grid.d >= 1) & (grid.lam >= 0.12)]
    live = _live(cells)
    rivals = [m for m in ("predict_threshold", "score_per_cost", FULL_ACCESS) if mkey(m, "diff_vs_ref") in live]
    comps = [[judge.compare(r, REFERENCE, m) for m in rivals] for _, r in live.iterrows()]
    wins = sum(all(direction(c) > 0 for c in cs) for cs in comps)
    losses = sum(any(direction(c) < 0 for c in cs) for cs in comps)
    verdict = HOLDS if len(live) and wins == len(live) else (
        FAILS if losses > 0 or wins < len(live) / 2 else UNSURE)
    closest = [min(cs, key=lambda c: c.mean) for cs in comps if cs]
    return [Row("b", "leads under heterogeneous costs and high lambda",
                f"A18: {len(live)} non-degenerate cells with d >= 1, lambda >= 0.12 (of {len(cells)})",
                f"CAM-DF beats every rival ({', '.join(rivals)}) in {wins}; a rival beats CAM-DF in {losses}",
                verdict, _median(c.mdd for c in closest),
                float(np.mean([c.mean for c in closest])) if closest else np.nan)]


def rows_c(evidence: Evidence, main: dict, judge: Judge) -> list[Row]:
    """(c) CAM-DF beats predict-then-threshold over the ranking sources and the whole lambda x d grid."""
    ranked = [r for _, r in evidence.rankers.iterrows()]
    if not evidence.grid.empty:  # every lambda x d cell, not the main lambda's alone
        ranked += [r for _, r in evidence.grid.iterrows()]
    ranked = [r for r in ranked if not decides_nothing(r) and mkey("predict_threshold", "diff_vs_ref") in r
              and pd.notna(r[mkey("predict_threshold", "diff_vs_ref")])]
    if not ranked:
        return []
    comps = [judge.compare(r, REFERENCE, "predict_threshold") for r in ranked]
    above = sum(direction(c) > 0 for c in comps)
    below = sum(direction(c) < 0 for c in comps)
    verdict = HOLDS if above == len(comps) else (FAILS if below > 0 else UNSURE)
    mean = float(np.mean([c.mean for c in comps]))
    return [Row("c", "consistent gains over predict-then-threshold across ranking sources and cost regimes",
                f"A21 rankers and the A18 lambda x d grid: {len(comps)} non-degenerate cells",
                f"CAM-DF beats it in {above}, is worse in {below}; mean difference {signed(mean)}", verdict,
                _median(c.mdd for c in comps), mean)]


def _kfold_mains(evidence: Evidence) -> list[pd.Series]:
    return [r for _, r in evidence.main.iterrows() if r["p:folds.protocol"] == "kfold"]


def _try(judge: Judge, *args, **kwargs) -> Comparison | None:
    try:
        return judge.compare(*args, **kwargs)
    except LookupError:
        return None


def rows_d(evidence: Evidence, main: dict, judge: Judge) -> list[Row]:
    """(d) per k-fold main cell: fewer tools than full access without a success loss (TOST)."""
    out = []
    for r in _kfold_mains(evidence):
        fewer = r[mkey("camdf", "fewer_tools_vs_full_pct")]
        prefix = "verified_" if pd.notna(r.get(mkey("camdf", "verified_tost_p_vs_full"), np.nan)) else ""
        noninferior = r.get(mkey("camdf", f"{prefix}noninferior_vs_full"), np.nan) == 1.0
        sdiff = r.get(mkey("camdf", f"{prefix}success"), np.nan) - r.get(mkey("full", f"{prefix}success"), np.nan)
        delta = float(r.get("p:stats.delta", 0.05))
        verdict = HOLDS if fewer >= 30 and noninferior else (FAILS if fewer < 30 or sdiff < -delta else UNSURE)
        c = _try(judge, r, REFERENCE, FULL_ACCESS, column="verified" if prefix else "success")
        out.append(Row(f"d ({r['p:scorer.label']})", "~37% fewer tools than full access without a success loss",
                       _cell_label(r),
                       f"{fewer:.1f}% fewer tools; {'verified ' if prefix else ''}success {signed(sdiff)} vs full, "
                       f"TOST p = {r.get(mkey('camdf', f'{prefix}tost_p_vs_full'), np.nan):.4f}", verdict,
                       np.nan if c is None else c.mdd, sdiff))
    return out


def rows_e(evidence: Evidence, main: dict, judge: Judge) -> list[Row]:
    """(e) per k-fold main cell: CAM-DF-lite keeps most of CAM-DF's gain over max(full, none)."""
    out = []
    for r in _kfold_mains(evidence):
        if pd.isna(r.get(mkey("camdf_lite", "payoff_mean"), np.nan)):
            continue
        floor_m = max((FULL_ACCESS, "none"), key=lambda m: r.get(mkey(m, "payoff_mean"), -np.inf))
        floor = r[mkey(floor_m, "payoff_mean")]
        gain, lite = r[mkey("camdf", "payoff_mean")] - floor, r[mkey("camdf_lite", "payoff_mean")] - floor
        share = lite / gain if gain > 0 else np.nan
        verdict = UNSURE if gain <= 0 else (HOLDS if share >= 0.5 else FAILS)
        c = _try(judge, r, REFERENCE, floor_m)  # the power to show CAM-DF's gain, the claim's premise
        out.append(Row(f"e ({r['p:scorer.label']})", "CAM-DF-lite keeps most of the gain", _cell_label(r),
                       f"gain over max(full, none): CAM-DF {signed(gain)}, lite {signed(lite)}"
                       + ("" if gain <= 0 else f" (share {share:.2f})"), verdict,
                       np.nan if c is None else c.mdd, gain))
    return out


def rows_f(evidence: Evidence, main: dict, judge: Judge) -> list[Row]:
    """(f) per ranking source of the main cell: CAM-DF's payoff is robust to G_x noise (A19)."""
    out = []
    noise = evidence.noise
    for scorer in main_scorers(main):
        sel = noise[noise["p:scorer.label"] == scorer] if not noise.empty else noise
        if sel.empty or not (sel.eps == 0).any():
            continue
        try:
            drops = noise_drops(evidence, scorer, judge=judge)
        except LookupError:
            drops = None
        clean = sel[sel.eps == 0].iloc[-1]
        gain = clean[mkey(REFERENCE, "payoff_mean")] - max(clean.get(mkey(m, "payoff_mean"), -np.inf)
                                                           for m in (FULL_ACCESS, "none"))
        if drops:
            worst = max(drops, key=lambda ec: ec[1].mean)[1]
            shown = [e for e, c in drops if c.mean > NOISE_TOLERANCE and direction(c) > 0]
            verdict = FAILS if shown else (HOLDS if worst.mean <= NOISE_TOLERANCE else UNSURE)
            if gain <= 0:
                verdict = UNSURE  # no noise-free gain to keep: robustness of it is vacuous
            stat = "clean minus noisy: " + "; ".join(f"epsilon {e:g} {c.text}" for e, c in drops)
            mdd, effect = max(c.mdd for _, c in drops), worst.mean
            rivals = [m for m in methods_of(clean) if not in_camdf_family(m) and not is_oracle(m)]
            if rivals:  # does the best baseline lose as much? (the same paired drop)
                b = max(rivals, key=lambda m: clean[mkey(m, "payoff_mean")])
                at = dict(noise_drops(evidence, scorer, method=b, judge=judge))
                stat += "; best noise-free baseline " + b + ": " + "; ".join(
                    f"epsilon {e:g} {at[e].text}" for e, _ in drops if e in at)
        else:  # the cells' outcomes were not read: the point drops alone
            points = [(e, clean[mkey(REFERENCE, "payoff_mean")] - r[mkey("camdf", "payoff_mean")]) for e, r in
                      zip(sel.eps, (r for _, r in sel.iterrows())) if e > 0]
            effect = max((d for _, d in points), default=0.0)
            verdict = UNSURE if gain <= 0 else (HOLDS if effect <= NOISE_TOLERANCE else FAILS)
            stat = "clean minus noisy: " + "; ".join(f"epsilon {e:g} {signed(d)}" for e, d in points)
            mdd = np.nan
        out.append(Row(f"f ({scorer})", "robust to G_x noise",
                       f"A19 ({scorer}): epsilon in {', '.join(f'{e:g}' for e in sel.eps)}",
                       f"{stat}; CAM-DF's noise-free gain over max(full, none) {signed(gain)}", verdict, mdd, effect))
    return out


def rows_g(evidence: Evidence, main: dict, judge: Judge) -> list[Row]:
    """(g) the A24 falsifier: CAM-DF beats a tuned score-per-cost rule in more than half the grid."""
    grid = evidence.grid
    if grid.empty:
        return []
    live = _live(grid)
    comps = [judge.compare(r, REFERENCE, "score_per_cost") for _, r in live.iterrows()]
    favour = sum(direction(c) > 0 for c in comps)
    against = sum(direction(c) < 0 for c in comps)
    return [Row("g", "CAM-DF beats a tuned score-per-cost rule across the grid (the falsifier: CIs covering 0)",
                f"A24: {len(live)} non-degenerate lambda x d cells (of {len(grid)})",
                f"CAM-DF beats score-per-cost in {favour}, neither in {len(live) - favour - against}, is worse in "
                f"{against}", HOLDS if favour > len(live) / 2 else FAILS, _median(c.mdd for c in comps),
                float(np.mean([c.mean for c in comps])) if comps else np.nan)]


def cv_kinds(evidence: Evidence, run: pd.Series, judge: Judge) -> tuple[Comparison, str] | None:
    """Set rule minus prefix rule, each picked per fit out of fold (:func:`camdf.evaluation.picks.fold_picks`).

    Returns the comparison (CI drawn with ``judge``'s seed, else the cell's) and the picks as text
    (``set: 25/25 cv_set; prefix: 20/25 camdf, ...``); None without the cell's outcomes. The picks and
    per-task differences read no seed: they are worked out once per run and shared by every seed's judge.
    """
    picked = _cv_picks(evidence, run, judge)
    if picked is None:
        return None
    per_task, per_fit, picks = picked
    lo, hi = judge.seed_ci(run, (run["run_id"], "cv_kinds"), per_task)
    return Comparison(float(per_task.mean()), lo, hi, per_task, per_fit), picks


def _cv_picks(evidence: Evidence, run: pd.Series, judge: Judge) -> tuple[np.ndarray, np.ndarray, str] | None:
    """The per-task and per-fit differences of :func:`cv_kinds` and its picks as text (cached per run)."""
    if evidence.artifacts is None:
        return None
    key = ("cv_kinds", run["run_id"])
    if key in judge._cache:
        return judge._cache[key]
    outcomes = evidence.artifacts.outcomes(run["run_id"])
    out = None
    if outcomes is not None and "fold" in outcomes:
        prefix, sets = deployable_kinds(dict.fromkeys(outcomes["method"]))
        try:
            a, pa = picked_outcomes(outcomes, sets, "set")
            b, pb = picked_outcomes(outcomes, prefix, "prefix")
        except LookupError:
            prefix = sets = None  # no kind to pick among, or a single fold
        if prefix and sets:
            both = pd.concat([a, b], ignore_index=True)
            task, fit = paired_differences(both, "set", both, "prefix")
            out = (task.to_numpy(), fit.to_numpy(),
                   f"set rule picked: {pick_counts(pa)}; prefix rule picked: {pick_counts(pb)}")
    judge._cache[key] = out
    return out


def rows_h(evidence: Evidence, main: dict, judge: Judge) -> list[Row]:
    """(h), ours: the ranked-prefix restriction costs payoff (A27), per ranker's main cell under each fold protocol.

    Each kind's rule is picked per fit out of fold (:func:`cv_kinds`); without the cell's outcomes the
    difference and CI the cell logged for the same picks. Cells without a deployable set rule give no row.
    """
    out = []
    for _, r in evidence.main.iterrows():  # k-fold and group folds (each task template whole in one fold)
        got = cv_kinds(evidence, r, judge)
        if got is None:
            if pd.isna(r.get(mkey("cell", "set_minus_prefix_cv"), np.nan)):
                continue
            c = Comparison(*(float(r[mkey("cell", f"set_minus_prefix_cv{s}")]) for s in ("", "_ci_low", "_ci_high")))
            picks = "picks not read (the cell's outcomes were not read)"
        else:
            c, picks = got
        verdict = HOLDS if direction(c) > 0 else (FAILS if direction(c) < 0 else UNSURE)
        out.append(Row(f"h ({r['p:scorer.label']}, {r['p:folds.protocol']} folds)",
                       "the ranked-prefix restriction costs payoff (ours, A27)",
                       _cell_label(r), f"set rule minus prefix rule, each picked per fit on its training tasks: "
                       f"{c.text} ({reason(c)}); {picks}", verdict, c.mdd, c.mean))
    return out


def _across_cells(key: str, claim: str, evidence: str, comps: list[Comparison], subject: str,
                  rival: str) -> Row:
    """Claim ``key`` judged over many cells (``evidence`` naming them): it holds when ours is ahead in every cell,
    fails when it is behind in any, and is inconclusive otherwise; the lowest CI is quoted, the MDD is the median
    over the cells and the effect their mean."""
    dirs = [direction(c) for c in comps]
    favour, against = sum(d > 0 for d in dirs), sum(d < 0 for d in dirs)
    verdict = FAILS if against else (HOLDS if favour == len(comps) else UNSURE)
    worst = min(comps, key=lambda c: c.lo)
    said = (f"{subject} beats {rival} in {favour}, neither in {len(comps) - favour - against}, is worse in "
            f"{against}; lowest CI: {worst.text} ({reason(worst)})")
    return Row(key, claim, evidence, said, verdict, _median(c.mdd for c in comps),
               float(np.mean([c.mean for c in comps])))


def _domains(cells: pd.DataFrame) -> str:
    return ", ".join(dict.fromkeys(cells["p:domain.name"]))


def _left_out(cells: pd.DataFrame) -> str:
    """How many of ``cells`` no claim counts, by why (empty when none): `` (left out: 6 where every method pays below
    0, 1 degenerate)``."""
    why = [left_out_as(r) for _, r in cells.iterrows()]
    below, degenerate = why.count("below zero"), why.count("degenerate")
    parts = [f"{below} where every method pays below 0"] * bool(below) + [f"{degenerate} degenerate"] * bool(degenerate)
    return f" (left out: {', '.join(parts)})" if parts else ""


def rows_i(evidence: Evidence, main: dict, judge: Judge) -> list[Row]:
    """(i), ours: at catalog scale (A28) the best rule of either kind beats the best tuned baseline; no cells, no row."""
    from camdf.reporting.tables.a28 import ours_vs_baseline

    cells = evidence.catalog
    live = [r for _, r in cells.iterrows() if not decides_nothing(r)] if not cells.empty else []
    comps = [c for *_, c in (p for p in (ours_vs_baseline(judge, r) for r in live) if p is not None)]
    if not comps:
        return []
    ns = sorted({int(r["top_n"]) for r in live})
    return [_across_cells("i", "at catalog scale the best rule of either kind beats the best tuned baseline (ours, A28)",
                          f"{_domains(pd.DataFrame(live))}: {len(comps)} cells (N = {', '.join(map(str, ns))}; "
                          f"{', '.join(sorted(set(cells['protocol'])))}; "
                          f"{', '.join(sorted(set(cells['p:scorer.label'])))}){_left_out(cells)}", comps, "ours",
                          "the baseline")]


def rows_j(evidence: Evidence, main: dict, judge: Judge) -> list[Row]:
    """(j), ours: choosing what to preload beats deferring everything to search (A29); no cells, no row."""
    from camdf.reporting.tables.a29 import SUBJECT_PRELOAD, preload_vs, strongest_rival

    cells = evidence.fallback
    if cells.empty:
        return []
    live = [r for _, r in cells.iterrows()
            if not decides_nothing(r) and r["aware"] and np.isfinite(r["search_cost"])]
    found = [(r, rival) for r in live if (rival := strongest_rival(evidence, main, r)) is not None]
    comps = [c for c in (preload_vs(judge, r, *rival[1:]) for r, rival in found) if c is not None]
    if not comps:
        return []
    costs = sorted({float(r["search_cost"]) for r in live})
    ks = sorted({int(r["search_k"]) for r in live})
    named = ", ".join(f"{m} ({n})" for m, n in Counter(label for _, (label, _, _) in found).most_common())
    return [_across_cells("j", "choosing what to preload beats the strongest rival, searching or not (ours, A29)",
                          f"{_domains(pd.DataFrame(live))}: {len(comps)} cells (search price "
                          f"{', '.join(f'{c:g}' for c in costs)}"
                          f"; k {', '.join(map(str, ks))}; {', '.join(sorted(set(r['p:scorer.label'] for r in live)))}); "
                          f"the strongest rival per cell: {named}"
                          f"{_left_out(cells[cells['aware'] & np.isfinite(cells['search_cost'])])}",
                          comps, SUBJECT_PRELOAD, "the strongest rival")]


def rows_k(evidence: Evidence, main: dict, judge: Judge) -> list[Row]:
    """(k), ours: a policy fitted on other domains beats every transferred baseline on an unseen one (A30)."""
    from camdf.reporting.tables.a30 import SUBJECT_TRANSFER, pairs, transfer_vs_baseline

    cells = [(d, r) for d, r, _ in pairs(evidence.transfer)] if not evidence.transfer.empty else []
    live = [(d, r) for d, r in cells if not decides_nothing(r)]
    found = [(d, p) for d, p in ((d, transfer_vs_baseline(judge, r)) for d, r in live) if p is not None]
    if not found:
        return []
    row = _across_cells(
        "k", "a policy fitted on other domains beats every transferred baseline on an unseen one (ours, A30)",
        f"{len(found)} left-out domains ({', '.join(d for d, _ in found)}; left out (degenerate, or every method below 0): "
        f"{', '.join(d for d, r in cells if decides_nothing(r)) or 'none'})",
        [c for _, (_, c) in found], SUBJECT_TRANSFER, "the best transferred baseline")
    each = "; ".join(f"{d}: minus {b} {c.text}" for d, (b, c) in found)
    return [replace(row, statistic=f"{row.statistic}. {each}")]


#: Every claim, in table order; a new claim is one :data:`RowsFn` and its line here.
ROWS: tuple[RowsFn, ...] = (rows_a, rows_b, rows_c, rows_d, rows_e, rows_f, rows_g, rows_h, rows_i, rows_j, rows_k)


def power_text(row: Row) -> str:
    """Whether the data could have shown the effect behind an inconclusive row (empty for the other rows)."""
    if row.verdict != UNSURE:
        return ""
    if not np.isfinite(row.mdd):
        return "MDD not available (cells' outcomes not read)"
    size = abs(row.effect) if np.isfinite(row.effect) else np.nan
    if not np.isfinite(size):
        return f"a difference of {row.mdd:.3f} or more would have been shown with 80% power"
    if size >= row.mdd:
        return (f"yes: the observed {size:.3f} is at least the MDD {row.mdd:.3f}, so a true difference of that size "
                "would be shown with >= 80% power; the rule leaves it open (fits or cells disagree)")
    return (f"no: the observed {size:.3f} is below the MDD {row.mdd:.3f}; a true difference of that size would be "
            "missed more than 20% of the time")


def stability(evidence: Evidence, main: dict, rows: list[Row]) -> dict[str, float]:
    """Each row's share of :data:`STABILITY_SEEDS` whose re-drawn CIs give the same verdict (empty without outcomes)."""
    judge = evidence.judge
    if not judge.reads_fits:
        return {}
    agree = dict.fromkeys((r.claim for r in rows), 0)
    for seed in STABILITY_SEEDS:
        at = judge.at_seed(seed)
        verdicts = {r.claim: r.verdict for fn in ROWS for r in fn(evidence, main, at)}
        for r in rows:
            agree[r.claim] += verdicts.get(r.claim) == r.verdict
    return {k: v / len(STABILITY_SEEDS) for k, v in agree.items()}


def fold_seed_verdicts(evidence: Evidence, main: dict, rows: list[Row]) -> dict[str, str]:
    """Each row's verdict under every fold seed the store holds main cells at (the main seed first), as
    ``"holds / holds / does not hold (seeds 0 / 100 / 200): changes with the seed"``; a row whose cells ran at the
    main seed alone (the grids, the catalog) is absent."""
    seeds = sorted(evidence.fold_seeds)
    at = {seed: {r.claim: r.verdict for fn in ROWS for r in fn(evidence.at_fold_seed(seed), main, evidence.judge)}
          for seed in seeds}
    out = {}
    for r in rows:
        verdicts = [r.verdict, *(at[seed].get(r.claim) for seed in seeds)]
        if not seeds or any(v is None for v in verdicts):
            continue
        said = " / ".join(verdicts) + f" (seeds {' / '.join(map(str, [main['seed'], *seeds]))})"
        out[r.claim] = said + (": changes with the seed" if len(set(verdicts)) > 1 else ": the same")
    return out


def claims(evidence: Evidence, main: dict) -> Report:
    """The claims table (LookupError when the main cell is not in the store)."""
    rows = [r for fn in ROWS for r in fn(evidence, main, evidence.judge)]
    stable = stability(evidence, main, rows)
    seeded = fold_seed_verdicts(evidence, main, rows)
    frame = pd.DataFrame({
        "claim": [r.claim for r in rows], "statement": [r.statement for r in rows],
        "evidence cells": [r.cells for r in rows], "statistic": [r.statistic for r in rows],
        "verdict": [r.verdict for r in rows], "MDD": [r.mdd for r in rows],
        "could the data show it?": [power_text(r) for r in rows],
        "verdict stability": [stable.get(r.claim, np.nan) for r in rows],
        "knife-edge": ["yes" if stable.get(r.claim, 1.0) < KNIFE_EDGE else "" for r in rows],
        "verdict under other fold seeds": [seeded.get(r.claim, "") for r in rows],
    })
    frame = frame.assign(key=frame["claim"].str[0]).sort_values("key", kind="stable").drop(columns="key")
    frame = frame.set_index("claim")
    note = ("Rules: " + " ".join(f"({k}) {v}." for k, v in RULES.items())
            + f" Wording rule: {RULE_TEXT}. MDD: of the comparison behind the verdict (rows over several cells: the "
            f"median over them); {MDD_NOTE}. Could the data show it (inconclusive rows): whether the observed "
            "difference is at least the MDD. Verdict stability: the share of "
            f"{len(STABILITY_SEEDS)} bootstrap seeds ({STABILITY_SEEDS[0]}-{STABILITY_SEEDS[-1]}; every CI the row "
            f"reads re-drawn with the seed) giving the reported verdict; knife-edge: stability below {KNIFE_EDGE:.0%} "
            "(rows that read no bootstrap CI, d and e, are stable by construction). Non-degenerate: a cell counts "
            "toward a claim unless it is degenerate (headroom best prefix - max(full, none) below the threshold) or every "
            "deployable method pays below 0 there (each loses to exposing nothing, which none of them does, so the cell "
            "tells no rule from another); both kinds are marked in every table that shows them. Verdict under other "
            "fold seeds: "
            "the verdict with the main cells re-run from scratch at other seeds (folds, rankers and models of every "
            "repeat drawn anew; experiment fold_seeds), for the rows that read the main cells alone; empty for rows "
            "whose cells ran at the main seed only.")
    return Report("claims", "Claims of the paper: evidence, statistic and verdict", frame, note=note)


#: The claims read the main cells, the A18 grid, A19, A21, A28 and A29.
TABLE = TableSpec("claims", order=140,
                  experiments=("table2", "table2_group", "fold_seeds", "a18", "a19", "a21", "a21_oracle", "a28", "a28_unseen", "a28_lambda", "a29",
                               "a29_catalog", "a30", "a30_in_domain"),
                  build=claims)

#: The tables this module declares (found by :func:`camdf.reporting.registry.tables`).
SPECS = (TABLE,)
