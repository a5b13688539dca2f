"""Calibration of the membership probabilities per ranker and per tool at the main cell: ECE and reliability."""

from __future__ import annotations

import numpy as np
import pandas as pd

from camdf.reporting.evidence import Evidence, main_cell, main_scorers
from camdf.reporting.report import Report
from camdf.reporting.tables.base import TableSpec
from camdf.reporting.tables.notes import protocol_note


def calibration(evidence: Evidence, main: dict) -> Report:
    """Per ranking source, calibration source and tool: positions, base rate, mean p, ECE, worst bin gap, reliability.

    Read from each main cell's ``calibration.csv`` (every repeat's out-of-fold probabilities: each
    fold's calibrators fitted on its training tasks only); figures are means over the repeats, the
    reliability text that of the first repeat.
    """
    if evidence.artifacts is None:
        raise LookupError("calibration: the cells' artifacts are not read")
    frames, anchor = [], None
    for scorer in main_scorers(main):
        try:
            run = main_cell(evidence.main, "calibration", scorer)
        except LookupError:
            continue
        table = evidence.artifacts.calibration(run["run_id"])
        if table is None or table.empty:
            continue
        anchor = run
        first = table[table["repeat"] == table["repeat"].min()].set_index(["source", "tool"])["reliability"]
        means = table.groupby(["source", "tool"], sort=False)[["positions", "base rate", "mean p", "ECE",
                                                                "worst bin gap"]].mean()
        means["reliability (first repeat)"] = first.reindex(means.index).fillna("")
        frames.append(means.reset_index().assign(ranker=scorer))
    if not frames:
        raise LookupError("calibration: no main-cell run with calibration.csv in the store; run `experiment=table2`")
    frame = pd.concat(frames, ignore_index=True)
    frame.index = [f"{r} / {s} / {t}" for r, s, t in zip(frame["ranker"], frame["source"], frame["tool"])]
    frame.index.name = "ranker / calibration / tool"
    frame = frame.drop(columns=["ranker", "source", "tool"])
    frame["positions"] = frame["positions"].round().astype(np.int64)
    return Report(
        "calibration", f"Calibration of membership probabilities per ranker and tool ({main['domain']} main cell)",
        frame, digits=3,
        note="Every probability is out of fold: each fold's membership model and calibrators are fitted on its "
             "training tasks only and applied to its test tasks. Sources: the membership model (one slope on the "
             "ranker's score for every tool, tool identity an intercept); its probabilities calibrated per tool by "
             "Platt scaling shrunk towards one global map (precision 10: what plugin_set and learned_set use) and "
             "not shrunk (precision 0.01); and the ranker's own raw score calibrated per tool (cv_set's "
             "plugin/score member). ECE: expected calibration error over 5 equal-width bins (per tool: that "
             "tool's positions; all: every position; per-tool mean: the positions-weighted mean of the per-tool "
             "ECEs); worst bin gap: the largest |frequency - mean p| over the bins; reliability: mean p -> "
             f"frequency (positions) per bin. Means over the repeats; decisions: {protocol_note(anchor)}.")


#: The calibration table reads the main cells.
TABLE = TableSpec("calibration", order=127, experiments=("table2",), build=calibration)
SPECS = (TABLE,)
