"""A22 and A23: the other domains at the main cell, exact and partial payoff."""

from __future__ import annotations

import pandas as pd

from camdf.reporting.evidence import DEGENERATE_TEXT, Evidence
from camdf.reporting.report import Report
from camdf.reporting.store import mkey, present_methods
from camdf.reporting.tables.base import TableSpec
from camdf.reporting.tables.notes import protocol_note


def cross_domain(evidence: Evidence, main: dict, kind: str) -> Report:
    """Mean payoff per method in every other domain, for payoff ``kind`` (``exact``: A22, ``partial``: A23)."""
    sel = evidence.domains
    sel = sel[sel["p:payoff"] == kind] if not sel.empty else sel
    if sel.empty:
        raise LookupError(f"A22/A23: no FINISHED cross-domain run with payoff={kind}; run `experiment=a22` first")
    methods = present_methods(sel)
    frame = pd.DataFrame({m: sel[mkey(m, "payoff_mean")].to_numpy() for m in methods},
                         index=sel["p:domain.name"].to_numpy()).sort_index()
    by = sel.set_index("p:domain.name")
    frame.insert(0, "tasks", by[mkey("cell", "n_tasks")].reindex(frame.index).astype(int))
    frame.insert(1, "headroom", by[mkey("cell", "headroom")].reindex(frame.index))
    frame.insert(2, "CAM-DF share of headroom", by[mkey("camdf", "headroom_share")].reindex(frame.index))
    if mkey("camdf", "payoff_repeat_max") in by:
        low, high = by[mkey("camdf", "payoff_repeat_min")], by[mkey("camdf", "payoff_repeat_max")]
        frame.insert(3, "CAM-DF repeat range", [f"{low[d]:.3f}-{high[d]:.3f}" for d in frame.index])
    frame.index = [f"{d} (degenerate)" if by.loc[d, mkey("cell", "degenerate")] == 1.0 else d for d in frame.index]
    frame.index.name = "domain"
    name, what = ("a22", "exact") if kind == "exact" else ("a23", "partial")
    scale = by["p:list_cost"].iloc[0] if "p:list_cost" in by else "None"
    cost_note = ("costs unscaled (mean 1 per catalog)" if scale in ("None", None) else
                 f"costs scaled per domain so that the mean candidate list costs {scale} (retail's 7 tools at mean "
                 "cost 1), which makes lambda the same pressure in catalogs of different size; "
                 "`list_cost=null` gives the unscaled cells")
    small = [d for d in by.index if by.loc[d, mkey("cell", "headroom")] < 0.1]
    why = (f" Headroom < 0.1 in {', '.join(small)}: even the best prefix in hindsight gains little over full access "
           "or exposing nothing there, so no stopper can separate from them." if small else
           " Headroom >= 0.1 in every domain.")
    return Report(name, f"{name.upper()}: other domains at the main cell, {what} payoff (mean)", frame,
                  note=f"Mean payoff per method; every method tuned and evaluated out of fold per domain; {cost_note}. "
                       f"Headroom = best prefix - max(full, none); a domain below {DEGENERATE_TEXT} is marked "
                       f"degenerate.{why} Decisions: {protocol_note(sel.iloc[-1])}.")


def a22(evidence: Evidence, main: dict) -> Report:
    """A22: exact payoff in the other domains."""
    return cross_domain(evidence, main, "exact")


def a23(evidence: Evidence, main: dict) -> Report:
    """A23: partial payoff in the other domains."""
    return cross_domain(evidence, main, "partial")


A22 = TableSpec("a22", order=70, experiments=("a22",), build=a22)
A23 = TableSpec("a23", order=80, experiments=("a22",), build=a23)

#: The tables this module declares (found by :func:`camdf.reporting.registry.tables`).
SPECS = (A22, A23)
