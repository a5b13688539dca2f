"""A19: membership noise in the training G_x (evaluated on clean G_x), mean payoff per noise level."""

from __future__ import annotations

import pandas as pd

from camdf.reporting.evidence import Evidence
from camdf.reporting.report import Report
from camdf.reporting.store import present_methods
from camdf.reporting.tables.base import TableSpec


def a19(evidence: Evidence, main: dict) -> Report:
    """Each method's mean payoff at each noise level epsilon of the training labels."""
    sel = evidence.noise
    if sel.empty:
        raise LookupError("A19: no FINISHED noise run in the store; run `experiment=a19` first")
    methods = present_methods(sel)
    frame = pd.DataFrame({m: sel[f"m:{m}/payoff_mean"].to_numpy() for m in methods},
                         index=[f"{e:g}" for e in sel["eps"]])
    frame.index.name = "epsilon"
    return Report("a19", "A19: membership noise in the training G_x (evaluated on clean G_x), mean payoff",
                  frame.sort_index(), note="Each required tool dropped and each other candidate added with "
                  "probability epsilon in the training labels only.")


TABLE = TableSpec("a19", ("a19",), a19)
