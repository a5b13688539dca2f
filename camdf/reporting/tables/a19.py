"""A19: membership noise in the training G_x (evaluated on clean G_x), mean payoff per noise level, per ranking source."""

from __future__ import annotations

import pandas as pd

from camdf.policies import REFERENCE
from camdf.reporting.evidence import Evidence, main_scorers
from camdf.reporting.report import Report
from camdf.reporting.store import mkey, present_methods
from camdf.reporting.tables.base import TableSpec
from camdf.reporting.tables.notes import MDD_NOTE, by_scorer, ci_text, needed_at_scorer, protocol_note
from camdf.reporting.verdicts import Comparison, Judge, fits_text


def noise_drops(evidence: Evidence, scorer: str, method: str = REFERENCE,
                judge: Judge | None = None) -> list[tuple[float, Comparison]]:
    """``method``'s payoff at the noise-free level minus at each noisy level (signed: < 0 when noise helps).

    One (epsilon, comparison) per noisy level of ``scorer``'s A19 sweep, paired over the tasks
    (every level has the same tasks and folds); the CI is drawn from the per-task differences
    with the cells' seed, so it needs the runs' outcomes. Empty without a noise-free cell;
    LookupError (from the judge) when a noisy cell's outcomes cannot be read. ``judge``
    (default: the evidence's) draws the CIs (another bootstrap seed: :meth:`~camdf.reporting.verdicts.Judge.at_seed`).
    """
    judge = judge or evidence.judge
    sel = by_scorer(evidence.noise, scorer)
    clean = sel[sel.eps == 0]
    if clean.empty:
        return []
    base = clean.iloc[-1]
    return [(float(r.eps), judge.compare(base, method, method, run_b=r))
            for _, r in sel[sel.eps > 0].iterrows()]


def a19(evidence: Evidence, main: dict, scorer: str | None = None) -> Report:
    """Each method's mean payoff at each noise level epsilon of the training labels, and CAM-DF's signed drop."""
    scorer = scorer or main["scorer"]
    sel = needed_at_scorer(evidence.noise, scorer, "A19", "noise run in the store", "a19")
    methods = present_methods(sel)
    frame = pd.DataFrame({m: sel[mkey(m, "payoff_mean")].to_numpy() for m in methods},
                         index=[f"{e:g}" for e in sel["eps"]])
    try:
        drops = dict(noise_drops(evidence, scorer))
    except LookupError:
        drops = {}
    frame["CAM-DF clean minus noisy (95% CI)"] = [
        ci_text(drops[e].mean, drops[e].lo, drops[e].hi) if e in drops else "" for e in sel["eps"]]
    frame["fits where noise helps / hurts"] = [fits_text(drops[e]) if e in drops else "" for e in sel["eps"]]
    frame["MDD"] = [drops[e].mdd if e in drops else float("nan") for e in sel["eps"]]
    frame.index.name = "epsilon"
    name = "a19" if scorer == main["scorer"] else f"a19_{scorer}"
    return Report(name, f"A19: membership noise in the training G_x (evaluated on clean G_x), mean payoff "
                        f"(scorer {scorer})", frame.sort_index(),
                  note="Each required tool dropped and each other candidate added with probability epsilon in the "
                       "training labels only. CAM-DF clean minus noisy: its payoff at epsilon = 0 minus at epsilon, "
                       "paired over the same tasks and folds (> 0: noise costs payoff, < 0: noise helps), with the "
                       "paired-bootstrap 95% CI; fits where noise helps / hurts: (repeat, fold) fits where CAM-DF's "
                       f"noisy payoff is above / below its clean one. {MDD_NOTE}. Decisions: {protocol_note(sel.iloc[-1])}.")


#: One A19 per ranking source of the main cell (``a19``, then ``a19_<scorer>``): claim (f) is judged at each.
TABLE = TableSpec("a19", order=30, experiments=("a19",), build=a19, variants=lambda main: [{"scorer": s} for s in main_scorers(main)])

#: The tables this module declares (found by :func:`camdf.reporting.registry.tables`).
SPECS = (TABLE,)
