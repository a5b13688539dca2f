"""A25: verified sufficiency at the main cell, per training label source; agreement; tests; noise re-scored."""

from __future__ import annotations

import numpy as np
import pandas as pd

from camdf.policies import FULL_ACCESS
from camdf.reporting.evidence import Evidence
from camdf.reporting.report import Report
from camdf.reporting.store import mkey, present_methods
from camdf.reporting.tables.base import TableSpec

SOURCES = {"data": "derived", "annotated": "annotated", "partial": "partial"}


def a25(evidence: Evidence, main: dict) -> list[Report]:
    """A25 (a)-(d): the label sources' verified success, the proxy's agreement, the tests, A19 re-scored."""
    sel = evidence.label_sources
    if sel.empty:
        raise LookupError("A25: no FINISHED label-source run with verified metrics; run `experiment=a25` first")
    sel = sel.set_index("p:label_source")
    order = [s for s in SOURCES if s in sel.index]
    methods = present_methods(sel)
    cols = {}
    for s in order:
        r = sel.loc[s]
        cols[f"verified success ({SOURCES[s]})"] = [r.get(mkey(m, "verified_success"), np.nan) for m in methods]
        cols[f"tools ({SOURCES[s]})"] = [r.get(mkey(m, "n_exposed"), np.nan) for m in methods]
        cols[f"payoff ({SOURCES[s]})"] = [r.get(mkey(m, "payoff_mean"), np.nan) for m in methods]
    main_frame = pd.DataFrame(cols, index=pd.Index(methods, name="method"))
    agree = pd.DataFrame(
        {k: [int(sel.loc[s, mkey("agreement", k)]) for s in order] for k in ("both", "proxy_only", "verified_only",
                                                                               "neither")},
        index=pd.Index([SOURCES[s] for s in order], name="label source"),
    )
    agree.columns = ["proxy and verified", "proxy only", "verified only", "neither"]
    tests = []
    for s in order:
        r = sel.loc[s]
        for m in methods:
            if m == FULL_ACCESS or pd.isna(r.get(mkey(m, "verified_tost_p_vs_full"), np.nan)):
                continue
            tests.append({"label source / method": f"{SOURCES[s]} / {m}",
                          "verified success minus full": r[mkey(m, "verified_diff_vs_full")],
                          "paired p": r[mkey(m, "verified_success_p_vs_full")],
                          "TOST p (delta 0.05)": r[mkey(m, "verified_tost_p_vs_full")],
                          "non-inferior": "yes" if r[mkey(m, "verified_noninferior_vs_full")] else "no"})
    tests_frame = pd.DataFrame(tests).set_index("label source / method") if tests else pd.DataFrame()
    reports = [
        Report("a25", "A25 (b): verified success, tools exposed and payoff at the main cell, per training label source",
               main_frame, note="Verified success: the exposed set passes the execution-based sufficiency check "
               "(camdf.sufficiency) on tau2's real tools. Payoff uses the G_x of the label source."),
        Report("a25_agreement", "A25 (a): the G_x proxy against verified sufficiency, over every set any method exposed",
               agree, note="Counts of (method, task, repeat) outcomes at the main cell."),
        Report("a25_tests", "A25 (c): verified success against full access: a paired test and TOST non-inferiority",
               tests_frame, digits=4, note="Differences are method minus reference, the reference being full "
               "access (verified success minus full's). Paired p: exact McNemar with one repeat; with R > 1 repeats the sign-flip "
               "test on the per-task success shares over the repeats (McNemar needs binary outcomes). Non-inferior: "
               "TOST lower one-sided p < 0.05 at margin delta = 0.05 on the per-task success."),
    ]
    noise = evidence.noise
    if not noise.empty:  # A25 (d) re-scores the main ranking source's noise sweep
        noise = noise[noise["p:scorer.label"] == main["scorer"]]
    verified = mkey("camdf", "verified_success")
    if not noise.empty and verified in noise and noise[verified].notna().all():
        nm = [m for m in present_methods(noise)
              if mkey(m, "verified_success") in noise and noise[mkey(m, "verified_success")].notna().all()]
        frame = pd.DataFrame({m: noise[mkey(m, "verified_success")].to_numpy() for m in nm},
                             index=pd.Index([f"{e:g}" for e in noise["eps"]], name="epsilon"))
        reports.append(Report("a25_noise", "A25 (d): the A19 noise study re-scored by verified success", frame))
    return reports


#: A25 (d) re-scores A19's cells.
TABLE = TableSpec("a25", order=100, experiments=("a25", "a19"), build=a25)

#: The tables this module declares (found by :func:`camdf.reporting.registry.tables`).
SPECS = (TABLE,)
