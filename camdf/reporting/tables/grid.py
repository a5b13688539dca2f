"""A18 and A24: the lambda x d grid of CAM-DF minus a tuned rival, as a table and a heatmap."""

from __future__ import annotations

import numpy as np
import pandas as pd

from camdf.common.markdown import signed
from camdf.reporting.evidence import DEGENERATE_TEXT, MARKERS, Evidence, left_out_as
from camdf.reporting.figures import heatmap_png
from camdf.reporting.report import Report
from camdf.reporting.tables.base import Figure, TableSpec
from camdf.reporting.tables.notes import protocol_note
from camdf.reporting.store import mkey


#: A18's claim subject: the rival CAM-DF is compared with over the lambda x d grid (the sweep heatmaps too).
SUBJECT_A18 = "predict_threshold"

def cell_flags(cells: pd.DataFrame) -> pd.DataFrame:
    """Per row of ``cells`` (index kept): ``degenerate``, ``below_zero_everywhere`` (where not degenerate) and the
    label ``marker`` of :func:`camdf.reporting.evidence.cell_marker`: what a grid table and its heatmap mark and count toward no claim."""
    why = [left_out_as(r) for _, r in cells.iterrows()]
    return pd.DataFrame({"degenerate": [w == "degenerate" for w in why], "below_zero_everywhere": [w == "below zero" for w in why],
                         "marker": [MARKERS.get(w, "") for w in why]}, index=cells.index)


def grid_long(cells: pd.DataFrame, rival: str) -> pd.DataFrame:
    """One row per grid cell: CAM-DF minus ``rival`` (``diff``, ``lo``, ``hi``), ``degenerate``, ``below_zero_everywhere`` (no
    deployable method above 0 in a cell that is not degenerate), ``excludes0``.

    Also ``headroom``, CAM-DF's repeat range (``camdf_range``) and whether the rival's payoff equals
    predict-then-threshold's (``same_as``); ``cells`` is :attr:`camdf.reporting.evidence.Evidence.grid`.
    """
    sel = cells
    diff = -sel[mkey(rival, "diff_vs_ref")]
    lo, hi = -sel[mkey(rival, "diff_vs_ref_ci_high")], -sel[mkey(rival, "diff_vs_ref_ci_low")]
    flags = cell_flags(sel)
    long = pd.DataFrame({"lam": sel["lam"], "d": sel["d"], "diff": diff, "lo": lo, "hi": hi,
                         **{c: flags[c].to_numpy() for c in flags},
                         "camdf_range": (sel[mkey("camdf", "payoff_repeat_max")]
                                         - sel[mkey("camdf", "payoff_repeat_min")]).to_numpy()
                         if mkey("camdf", "payoff_repeat_max") in sel else np.nan,
                         "headroom": sel.get(mkey("cell", "headroom"), pd.Series(np.nan, index=sel.index)).to_numpy(),
                         "same_as": (sel[mkey(rival, "payoff_mean")]
                                     - sel[mkey("predict_threshold", "payoff_mean")]).abs()
                         .lt(1e-9).to_numpy() if mkey("predict_threshold", "payoff_mean") in sel else False})
    long["excludes0"] = ((long.lo > 0) | (long.hi < 0)) & ~long.degenerate & ~long.below_zero_everywhere
    long.attrs["difference"] = f"CAM-DF minus {rival} (> 0 favours CAM-DF)"
    return long


def _nothing_text(long: pd.DataFrame) -> str:
    """The note's words on the cells where every method pays below 0 (empty when there are none)."""
    n = int(long.below_zero_everywhere.sum())
    return (f", as are the {n} where every deployable method pays below 0 (each loses to exposing nothing)" if n else "")


def grids_equal(a: pd.DataFrame, b: pd.DataFrame) -> bool:
    """Whether two :func:`grid_long` frames over the same cells hold the same differences and CIs."""
    cols = ["lam", "d", "diff", "lo", "hi"]
    return len(a) == len(b) and bool(np.allclose(a[cols].to_numpy(float), b[cols].to_numpy(float), atol=1e-12,
                                                 equal_nan=True))


def grid(evidence: Evidence, main: dict, rival: str, name: str, title: str) -> list[Report | Figure]:
    """The grid table ``name`` (CAM-DF minus ``rival`` per lambda x d cell, † where the CI excludes 0) and its heatmap."""
    sel = evidence.grid
    if sel.empty:
        raise LookupError(f"{name}: no FINISHED grid run in the store; run `experiment=a18` first")
    long = grid_long(sel, rival)
    text = long.assign(cell=[f"{signed(r.diff)} [{signed(r.lo)}, {signed(r.hi)}]{r.marker}" for r in long.itertuples()])
    frame = text.pivot(index="lam", columns="d", values="cell").sort_index()
    marks = long.pivot(index="lam", columns="d", values="excludes0").sort_index().fillna(False)
    frame.index = [f"{v:g}" for v in frame.index]
    marks.index = frame.index
    frame.columns = [f"d={v:g}" for v in frame.columns]
    marks.columns = frame.columns
    frame.index.name = "lambda"
    live = long[~long.degenerate & ~long.below_zero_everywhere]
    n_pos = int((live.lo > 0).sum())
    n_neg = int((live.hi < 0).sum())
    note = (f"Differences are method minus reference: CAM-DF minus {rival} (> 0 favours CAM-DF), the mean payoff "
            f"difference with its paired-bootstrap 95% CI; † marks cells whose CI "
            f"excludes 0 ({n_pos} favour CAM-DF, {n_neg} favour {rival}, of {len(live)} non-degenerate cells). "
            f"{int(long.degenerate.sum())} of {len(long)} cells are degenerate (headroom best prefix - max(full, none) "
            f"< {DEGENERATE_TEXT}; largest headroom in the grid {long.headroom.max():.3f}), marked and left out of the "
            f"counts{_nothing_text(long)}. Decisions: {protocol_note(sel.iloc[-1])}. Spread over the repeats: CAM-DF's repeat means span at "
            f"most {long.camdf_range.max():.3f} in any cell (median {long.camdf_range.median():.3f}).")
    merged = rival != SUBJECT_A18 and bool(long.same_as.all())
    if merged:  # its heatmap would be A18's, pixel for pixel: none is drawn (the reader looks at A18's)
        note = (f"This table equals A18 cell for cell: the tuned {rival} payoff equals predict-then-threshold's in "
                f"all {len(long)} cells (both rules pick the same prefixes with this ranker), so it adds no finding "
                "of its own and has no heatmap of its own (A18's is the same picture). " + note)
    elif rival != SUBJECT_A18:
        note += (f" The tuned {rival} payoff equals predict-then-threshold's in {int(long.same_as.sum())} of "
                 f"{len(long)} cells.")
    report = Report(name, title, frame, marks=marks, note=note)
    return [report] if merged else [report, Figure(f"{name}_heatmap.png", heatmap_png(long, report.title))]


def a18(evidence: Evidence, main: dict) -> list[Report | Figure]:
    """A18: CAM-DF minus predict-then-threshold over the grid."""
    return grid(evidence, main, SUBJECT_A18, "a18",
                f"A18: {main['domain']} lambda x d grid, CAM-DF minus predict-then-threshold")


def a24(evidence: Evidence, main: dict) -> list[Report | Figure]:
    """A24: CAM-DF minus the tuned score-per-cost threshold over the grid."""
    return grid(evidence, main, "score_per_cost", "a24",
                f"A24: {main['domain']} lambda x d grid, CAM-DF minus the tuned score-per-cost threshold")


A18 = TableSpec("a18", order=20, experiments=("a18",), build=a18)
#: A24 reads A18's cells (conf/experiment/a24.yaml sweeps the same grid, so its cells are A18's).
A24 = TableSpec("a24", order=90, experiments=("a18",), build=a24)

#: The tables this module declares (found by :func:`camdf.reporting.registry.tables`).
SPECS = (A18, A24)
