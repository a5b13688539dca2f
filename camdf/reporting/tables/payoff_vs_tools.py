"""The payoff-vs-tools figures: every method's mean payoff (CI) against tools exposed at the main cell, one figure per
ranking source of Table 2 (``payoff_vs_tools_<scorer>.png``)."""

from __future__ import annotations

import pandas as pd

from camdf.reporting.evidence import Evidence, main_cell, main_scorers
from camdf.reporting.figures import payoff_vs_tools_png
from camdf.reporting.store import methods_of, mkey
from camdf.reporting.tables.base import Figure, TableSpec


def payoff_vs_tools(evidence: Evidence, main: dict) -> list[Figure]:
    """A figure per ranking source at the main cell (Table 2's: its lambda, d and protocol); LookupError when the
    store holds none of them."""
    figures, missing = [], []
    for scorer in main_scorers(main):
        try:
            run = main_cell(evidence.main, f"payoff-vs-tools figure ({scorer})", scorer)
        except LookupError as err:
            missing.append(str(err))
            continue
        rows = {m: {k: run[mkey(m, k)] for k in ("payoff_mean", "payoff_ci_low", "payoff_ci_high", "n_exposed")}
                for m in methods_of(run)}
        table = pd.DataFrame.from_dict(rows, orient="index")
        title = (f"{main['domain']}, {scorer} ranking: lambda = {main['lam']:g}, d = {main['d']:g} "
                 f"(the main cell, protocol {run['p:folds.protocol']})")
        figures.append(Figure(f"payoff_vs_tools_{scorer}.png", payoff_vs_tools_png(table, title)))
    if not figures:
        raise LookupError(missing[0] if missing else "payoff-vs-tools figure: no ranking source in main")
    return figures


TABLE = TableSpec("payoff_vs_tools", order=150, experiments=("table2",), build=payoff_vs_tools)

#: The tables this module declares (found by :func:`camdf.reporting.registry.tables`).
SPECS = (TABLE,)
