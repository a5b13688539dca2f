"""A27: beyond the ranked prefix: the best set rule against the best prefix rule at the main cells, the grid and the domains."""

from __future__ import annotations

import numpy as np
import pandas as pd

from camdf.common.markdown import signed
from camdf.policies import CARDS
from camdf.reporting.evidence import Evidence, cell_marker
from camdf.reporting.figures import heatmap_png, payoff_vs_tools_png
from camdf.reporting.report import Report
from camdf.reporting.store import methods_of, mkey
from camdf.reporting.tables.base import Figure, TableSpec
from camdf.reporting.tables.grid import cell_flags
from camdf.reporting.tables.notes import protocol_note

DIFF = mkey("cell", "set_minus_prefix")


def best_of_kind(run: pd.Series, flag: str) -> str | None:
    """The method of ``run`` whose row carries ``flag`` (``is_best_prefix_rule`` / ``is_best_set_rule``), else None."""
    hit = [m for m in methods_of(run) if run.get(mkey(m, flag), np.nan) == 1.0]
    return hit[0] if hit else None


def kinds_row(run: pd.Series) -> dict | None:
    """Best prefix rule, best set rule and their paired difference in one cell (None when the cell has no set rule)."""
    if pd.isna(run.get(DIFF, np.nan)):
        return None
    prefix, sets = best_of_kind(run, "is_best_prefix_rule"), best_of_kind(run, "is_best_set_rule")
    verified = pd.notna(run.get(mkey(prefix, "verified_success"), np.nan))
    success = "verified_success" if verified else "success"
    row = {"best prefix rule": prefix, "prefix payoff": run[mkey(prefix, "payoff_mean")],
           "prefix tools": run[mkey(prefix, "n_exposed")], "prefix success": run[mkey(prefix, success)],
           "best set rule": sets, "set payoff": run[mkey(sets, "payoff_mean")],
           "set tools": run[mkey(sets, "n_exposed")],
           "set success": run[mkey(sets, success)], "success is": "verified" if verified else "G_x proxy",
           "set minus prefix": f"{signed(run[DIFF])} [{signed(run[DIFF + '_ci_low'])}, {signed(run[DIFF + '_ci_high'])}]"}
    cv = DIFF + "_cv"
    row["set minus prefix, picked per fit"] = "" if pd.isna(run.get(cv, np.nan)) else \
        f"{signed(run[cv])} [{signed(run[cv + '_ci_low'])}, {signed(run[cv + '_ci_high'])}]"
    for oracle in ("best_prefix", "oracle_set"):
        row[oracle] = run.get(mkey(oracle, "payoff_mean"), np.nan)
    return row


def _label(run: pd.Series, suffix: str = "") -> str:
    """A row's cell name, marked when the cell is degenerate (no stopping rule can gain much there)."""
    return f"{run['p:domain.name']}/{run['p:scorer.label']}{suffix}" + cell_marker(run)


def a27(evidence: Evidence, main: dict) -> list[Report | Figure]:
    """The A27 table (main cells and the other domains) and the heatmap over the lambda x d grid."""
    rows, marks = {}, {}
    for _, run in evidence.main.iterrows():
        row = kinds_row(run)
        if row is not None and run["p:folds.protocol"] == "kfold":
            label = _label(run, " (main cell)")
            rows[label], marks[label] = row, run[DIFF + "_ci_low"] > 0 or run[DIFF + "_ci_high"] < 0
    domains = evidence.domains
    for _, run in (domains[domains["p:payoff"] == "exact"] if not domains.empty else domains).iterrows():
        row = kinds_row(run)
        if row is not None:
            label = _label(run)
            rows[label], marks[label] = row, run[DIFF + "_ci_low"] > 0 or run[DIFF + "_ci_high"] < 0
    if not rows:
        raise LookupError("a27: no FINISHED main-cell run with set rules in the store; run `experiment=table2` "
                          "(and a22, a18) first")
    frame = pd.DataFrame.from_dict(rows, orient="index")
    frame.index.name = "cell"
    kfold = [r for _, r in evidence.main.iterrows() if r["p:folds.protocol"] == "kfold"]
    anchor = kfold[0] if kfold else domains.iloc[0]  # every row's cell was decided this way
    mark = pd.DataFrame(False, index=frame.index, columns=frame.columns)
    mark["set minus prefix"] = pd.Series(marks)
    kinds = ", ".join(m for m in CARDS if not CARDS[m].picks_prefix and CARDS[m].family != "oracle")
    note = (f"Per cell, the deployable prefix rule and the deployable set rule ({kinds}) of highest mean payoff "
            "(each picked on the cell's own tasks, as the best baseline is), their tools exposed and success "
            "(verified where the domain has execution-verified sufficiency, else the G_x proxy), and set minus "
            "prefix with its paired-bootstrap 95% CI († where it excludes 0); best_prefix (the clairvoyant depth) "
            "and oracle_set (A = G_x) bound the two kinds. Set minus prefix, picked per fit: the same difference with each "
            "kind's rule picked per (repeat, fold) fit by its mean payoff on the repeat's other folds (the fit's "
            "training tasks, scored out of fold), never on the fit's own test tasks (camdf.evaluation.picks; what "
            "claim (h) reads). Decisions (every row): "
            f"{protocol_note(anchor)}.")
    out: list[Report | Figure] = [Report("a27", "A27: the best set rule against the best prefix rule", frame,
                                         marks=mark, note=note)]
    for _, run in evidence.main.iterrows():
        if run["p:folds.protocol"] != "kfold" or pd.isna(run.get(DIFF, np.nan)):
            continue
        points = pd.DataFrame.from_dict({m: {k: run[mkey(m, k)] for k in ("payoff_mean", "payoff_ci_low",
                                                                             "payoff_ci_high", "n_exposed")}
                                         for m in methods_of(run)}, orient="index")
        out.append(Figure(f"a27_payoff_vs_tools_{run['p:scorer.label']}.png", payoff_vs_tools_png(
            points, f"{main['domain']}/{run['p:scorer.label']}: lambda = {main['lam']}, d = {main['d']}: "
                    "prefix rules, set rules and oracles")))
    grid = evidence.grid
    if not grid.empty and DIFF in grid and grid[DIFF].notna().any():
        sel = grid[grid[DIFF].notna()]
        long = pd.DataFrame({"lam": sel["lam"], "d": sel["d"], "diff": sel[DIFF], "lo": sel[DIFF + "_ci_low"],
                             "hi": sel[DIFF + "_ci_high"]}).join(cell_flags(sel))
        long["excludes0"] = ((long.lo > 0) | (long.hi < 0)) & ~long.degenerate & ~long.below_zero_everywhere
        out.append(Figure("a27_heatmap.png", heatmap_png(
            long, f"A27: {main['domain']} lambda x d grid, best set rule minus best prefix rule",
            "best set rule minus best prefix rule (> 0 favours a set)")))
    return out


TABLE = TableSpec("a27", order=120, experiments=("table2", "a18", "a22", "a27"), build=a27)

#: The tables this module declares (found by :func:`camdf.reporting.registry.tables`).
SPECS = (TABLE,)
