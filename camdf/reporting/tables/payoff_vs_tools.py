"""The payoff-vs-tools figure: every method's mean payoff (CI) against tools exposed at the main cell with d = 0."""

from __future__ import annotations

import pandas as pd

from camdf.reporting.evidence import Evidence, main_cell
from camdf.reporting.figures import payoff_vs_tools_png
from camdf.reporting.store import methods_of
from camdf.reporting.tables.base import Figure, TableSpec


def payoff_vs_tools(evidence: Evidence, main: dict) -> Figure:
    """The figure of the main scorer's k-fold main cell at d = 0 (homogeneous costs)."""
    run = main_cell(evidence.homogeneous, "payoff-vs-tools figure", main["scorer"])
    rows = {}
    for m in methods_of(run):
        rows[m] = {k: run[f"m:{m}/{k}"] for k in ("payoff_mean", "payoff_ci_low", "payoff_ci_high", "n_exposed")}
    table = pd.DataFrame.from_dict(rows, orient="index")
    return Figure("payoff_vs_tools.png", payoff_vs_tools_png(
        table, f"{main['domain']}: lambda = {main['lam']}, d = 0 (homogeneous costs)"))


TABLE = TableSpec("payoff_vs_tools", order=150, experiments=("table2",), build=payoff_vs_tools)

#: The tables this module declares (found by :func:`camdf.reporting.registry.tables`).
SPECS = (TABLE,)
