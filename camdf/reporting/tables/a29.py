"""A29: what to preload when a miss is not the end (the recovery payoff: a search over the deferred tools).

One row per cell (ranker, search cost, k): the payoff (95% CI) of the product default (defer everything
and search every time: ``none``), an always-loaded set plus search (``static_set``), full access,
CAM-DF-lite (trained on the fallback's Delta labels, or the exact ones with ``search.aware: false``), the
plug-in set whose estimate scores a miss as lost, and the fallback-aware set (``fallback_set``); its
difference with the product default and with the unaware plug-in set (paired over tasks), its success,
tools preloaded, searches per task, tools the search loaded and cost. A figure of payoff against the search's price per method; claim (j).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from camdf.policies import CARDS, FULL_ACCESS, NO_TOOLS, is_oracle
from camdf.reporting.evidence import Evidence, cell_marker, cuts_to_top_n
from camdf.reporting.figures import log_x_panels_png, method_style
from camdf.reporting.report import Report
from camdf.reporting.tables.base import Figure, TableSpec
from camdf.reporting.tables.notes import MDD_NOTE, ci_text, protocol_note
from camdf.reporting.verdicts import Comparison, Judge, reason
from camdf.reporting.store import methods_of, mkey

#: The rule that chooses what to preload knowing the fallback (claim j's subject), and its unaware twin.
SUBJECT_PRELOAD = "fallback_set"
SUBJECT_UNAWARE = "plugin_set"
#: The methods of the table and the figure, with what each stands for under the recovery payoff.
SHOWN = {NO_TOOLS: "defer everything + search", "static_set": "always-loaded set + search",
         FULL_ACCESS: "full access", "camdf_lite": "CAM-DF-lite", SUBJECT_UNAWARE: "plug-in set (miss = lost)",
         SUBJECT_PRELOAD: "fallback-aware set", "best_prefix": "best prefix (oracle)"}


def preload_vs(judge: Judge, run: pd.Series, rival: str = NO_TOOLS, rival_run: pd.Series | None = None
               ) -> Comparison | None:
    """The fallback-aware set of ``run`` minus ``rival`` (default: defer everything) of ``rival_run`` (default: the
    same cell), paired over the tasks the two share; None when not available."""
    try:
        return judge.compare(run, SUBJECT_PRELOAD, rival, run_b=rival_run)
    except LookupError:
        return None


def search_off_cell(evidence: Evidence, main: dict, run: pd.Series) -> pd.Series | None:
    """The exact-payoff cell over the same tasks, folds, lambda, d and candidate list as the recovery cell ``run``:
    Table 2's main cell (same ranker) on the main domain, A28's in-distribution cell at the same N on the catalog;
    None when the store holds none."""
    domain, scorer = run["p:domain.name"], run["p:scorer.label"]
    same = lambda r: all(str(r.get(k)) == str(run.get(k)) for k in ("p:cost.lam", "p:cost.d", "p:seed"))  # noqa: E731
    top_k = str(run.get("p:candidates.top_k", "None"))
    if top_k != "None":  # A28's cells, and A28's over lambda
        frames = [f for f in (evidence.catalog, evidence.cells("a28_lambda")) if not f.empty]
        if not frames:
            return None
        cat = pd.concat(frames, ignore_index=True)
        by = cat["p:folds.group_by"].astype(str) if "p:folds.group_by" in cat else pd.Series("None", index=cat.index)
        hit = cat[(cat["p:domain.name"] == domain) & (cat["p:scorer.label"] == scorer)
                  & (cat["p:folds.protocol"] == "kfold") & by.isin(["None", "nan"])
                  & (cat["p:candidates.top_k"].astype(str) == top_k)]
    else:
        cells = evidence.main
        if cells.empty or domain != main["domain"]:
            return None
        hit = cells[(cells["p:scorer.label"] == scorer) & (cells["p:folds.protocol"] == run["p:folds.protocol"])]
    hit = hit[[same(r) for _, r in hit.iterrows()]] if not hit.empty else hit
    return None if hit.empty else hit.iloc[-1]


def strongest_rival(evidence: Evidence, main: dict, run: pd.Series) -> tuple[str, str, pd.Series] | None:
    """(label, method, its cell) of the rival of the fallback-aware set with the highest mean payoff: another
    deployable rule A29 shows (:data:`SHOWN`: deferring everything, the always-loaded set, the plug-in set,
    CAM-DF-lite and full access, with the search), or the best deployable rule without a search
    (:func:`search_off_cell`, exposing nothing included); None when there is none."""
    pay = lambda r, m: float(r.get(mkey(m, "payoff_mean"), np.nan))  # noqa: E731
    options = [(f"{m} + search", m, run) for m in SHOWN
               if m != SUBJECT_PRELOAD and not is_oracle(m) and np.isfinite(pay(run, m))]
    off = search_off_cell(evidence, main, run)
    if off is not None:
        rules = [m for m in methods_of(off) if m in CARDS and not is_oracle(m) and np.isfinite(pay(off, m))]
        if rules:
            best = max(rules, key=lambda m: (pay(off, m), -rules.index(m)))
            options.append((f"{best}, no search", best, off))
    return max(options, key=lambda o: pay(o[2], o[1])) if options else None


def _diff(c: Comparison | None) -> str:
    return "" if c is None else f"{ci_text(c.mean, c.lo, c.hi)} ({reason(c)})"


def fallback_use(evidence: Evidence, run: pd.Series, method: str) -> tuple[float, float]:
    """(searches per task, tools the search loaded per task) of ``method`` in ``run``; nan without outcomes."""
    outcomes = evidence.artifacts.outcomes(run["run_id"]) if evidence.artifacts is not None else None
    if outcomes is None or "searched" not in outcomes or not (outcomes["method"] == method).any():
        return np.nan, np.nan
    rows = outcomes[outcomes["method"] == method]
    searches = "rounds" if "rounds" in rows else "searched"  # rounds paid (outcomes before search.rounds: 0 or 1)
    per_task = rows.groupby("task_id")[[searches, "loaded"]].mean()
    return float(per_task[searches].mean()), float(per_task["loaded"].mean())


def _label(run: pd.Series, with_domain: bool = False, with_lambda: bool = False) -> str:
    cost = "no fallback" if not np.isfinite(run["search_cost"]) else f"{run['search_cost']:g}"
    label = (f"{run['p:domain.name'] + ' / ' if with_domain else ''}{f'lambda {run.lam:g} / ' if with_lambda else ''}"
             f"{run['p:scorer.label']} / S={cost} / k={run['search_k']}")
    if run.get("search_rounds", 1) > 1:
        label += f" / {run['search_rounds']} rounds"
    if run["search_noise"] > 0:
        label += f" / noise {run['search_noise']:g}"
    if not run["aware"]:
        label += " / unaware"
    return label + cell_marker(run)


def _where(cells: pd.DataFrame) -> str:
    """One domain's cells: its name, lambda(s), d and (a cut list) its candidates N."""
    r = cells.iloc[-1]
    cut = f", the ranker's top N = {r['p:candidates.top_k']} of the catalog" if cuts_to_top_n(cells).iloc[-1] else ""
    lams = ", ".join(f"{v:g}" for v in sorted(set(cells["lam"])))
    return f"{r['p:domain.name']} at lambda = {lams}, d = {r['p:cost.d']}{cut}"


def below_zero(cells: pd.DataFrame) -> list[str]:
    """Per domain where it happens: in how many of its cells every shown method but the oracles pays less than 0,
    what neither exposing nor searching anything pays (the search's price and the tools outweigh the success)."""
    deployable = [m for m in SHOWN if not is_oracle(m)]
    out = []
    for domain, group in cells.groupby("p:domain.name", sort=False):
        best = group[[mkey(m, "payoff_mean") for m in deployable if mkey(m, "payoff_mean") in group]].max(axis=1)
        if (best < 0).any():
            out.append(f"{domain}: every method but the oracle pays less than 0 (what exposing nothing and not "
                       f"searching pays) in {int((best < 0).sum())} of {len(group)} cells")
    return out


def _row(evidence: Evidence, main: dict, run: pd.Series) -> dict:
    g = lambda m, k: run.get(mkey(m, k), np.nan)  # noqa: E731
    row = {f"{what}": g(m, "payoff_mean") for m, what in SHOWN.items() if m != SUBJECT_PRELOAD}
    searches, loaded = fallback_use(evidence, run, SUBJECT_PRELOAD)
    defer = preload_vs(evidence.judge, run)
    row.update({
        "fallback-aware set (95% CI)": ci_text(g(SUBJECT_PRELOAD, "payoff_mean"), g(SUBJECT_PRELOAD, "payoff_ci_low"),
                                               g(SUBJECT_PRELOAD, "payoff_ci_high")),
        "minus defer everything": _diff(defer),
        "MDD": np.nan if defer is None else defer.mdd,
        "minus plug-in set (awareness)": _diff(preload_vs(evidence.judge, run, SUBJECT_UNAWARE)),
        "strongest rival (claim j)": "" if (rival := strongest_rival(evidence, main, run)) is None else rival[0],
        "minus strongest rival": "" if rival is None else _diff(preload_vs(evidence.judge, run, *rival[1:])),
        "success": g(SUBJECT_PRELOAD, "success"), "tools preloaded": g(SUBJECT_PRELOAD, "n_exposed"),
        "searches per task": searches, "tools loaded by search": loaded, "cost": g(SUBJECT_PRELOAD, "cost"),
        "defer everything: success": g(NO_TOOLS, "success"),
        "defer everything: searches per task": fallback_use(evidence, run, NO_TOOLS)[0],
    })
    return row


def off_scale(lines: dict, at_most: int = 2) -> set:
    """The lines (at most ``at_most``, the lowest first) whose lowest value lies so far below the others that
    drawing them would flatten the rest: more than twice the span of the middle line's low to the highest value
    (at least 0.5) below that low (full access to a long list, or deferring everything at a high search price)."""
    lows = {m: float(np.nanmin(v)) for m, v in lines.items() if np.isfinite(v).any()}
    if len(lows) < 3:
        return set()
    middle = float(np.median(list(lows.values())))
    top = max(float(np.nanmax(v)) for v in lines.values() if np.isfinite(v).any())
    below = middle - 2 * max(top - middle, 0.5)
    return set(sorted((m for m in lows if lows[m] < below), key=lows.get)[:at_most])


def payoff_vs_search_png(cells: pd.DataFrame, title: str) -> bytes:
    """Mean payoff of each shown method against the price of a search round (log axis), one panel per
    (domain, lambda, ranker, k); one round a solid (or dashed) line, more rounds dotted in the same colour (the
    figure's title says so)."""
    live = cells[np.isfinite(cells["search_cost"])]
    panels = list(dict.fromkeys(zip(live["p:domain.name"], live["lam"], live["p:scorer.label"], live["search_k"])))
    several = live["p:domain.name"].nunique() > 1
    lams = live.groupby("p:domain.name")["lam"].nunique()

    def draw(ax, panel) -> str:
        domain, lam, scorer, k = panel
        sel = live[(live["p:domain.name"] == domain) & (live["lam"] == lam) & (live["p:scorer.label"] == scorer)
                   & (live["search_k"] == k) & live["aware"]]
        sel = sel[sel["search_noise"] == sel["search_noise"].min()]
        by_rounds = {r: part.sort_values("search_cost") for r, part in sel.groupby("search_rounds", sort=True)}
        lines = {(m, r): part[mkey(m, "payoff_mean")].to_numpy(dtype=float)
                 for r, part in by_rounds.items() for m in SHOWN if mkey(m, "payoff_mean") in part}
        off = off_scale(lines, at_most=2 * len(by_rounds))
        notes = []
        for (m, r), values in lines.items():
            colour, marker = method_style(m)
            dashed = m in (NO_TOOLS, FULL_ACCESS) or is_oracle(m)
            style = dict(marker=marker, color=colour, linestyle=":" if r > 1 else "--" if dashed else "-")
            label = SHOWN[m] + (f", {r} rounds" if r > 1 else "")
            if (m, r) in off:  # in the legend, not on the axes: drawn, it would flatten every other line
                ax.plot([], [], label=label, **style)
                notes.append(f"{label} off scale ({np.nanmin(values):.1f} to {np.nanmax(values):.1f})")
                continue
            ax.plot(by_rounds[r]["search_cost"], values, label=label, **style)
        return (f"{domain + ', ' if several else ''}{f'lambda {lam:g}, ' if lams[domain] > 1 else ''}{scorer}, k = {k}"
                + "".join(f"\n{n}" for n in notes))

    return log_x_panels_png(panels, draw, title=title, xlabel="price of one search round (mean tools)",
                            ylabel="mean payoff (recovery)", sharey=not several)


def a29(evidence: Evidence, main: dict) -> list[Report | Figure]:
    """The A29 table and its figure (LookupError when the store holds no recovery cell)."""
    cells = evidence.fallback
    if cells.empty:
        raise LookupError("a29: no FINISHED recovery-payoff cell in the store; run `experiment=a29`")
    domains = list(dict.fromkeys(cells["p:domain.name"]))
    several = len(domains) > 1
    lams = cells.groupby("p:domain.name")["lam"].nunique()
    rows = {_label(r, several, lams[r["p:domain.name"]] > 1): _row(evidence, main, r) for _, r in cells.iterrows()}
    frame = pd.DataFrame.from_dict(rows, orient="index")
    frame.index.name = ("domain / " if several else "") + "ranker / search price S / k"
    where = "; ".join(_where(cells[cells["p:domain.name"] == d]) for d in domains)
    note = (
        f"{where}. Recovery payoff "
        "(camdf.core.recovery): the preloaded tools A are paid; if no sufficient set lies inside A, one search round "
        "is paid (S times the task's mean candidate cost: the search tool, the extra round trip) and the search's top "
        "k of the deferred tools are loaded and paid; the task succeeds if A plus them holds a sufficient set "
        "(alternatives count), else scores 0. The search ranks the deferred tools with the cell's ranker on the task "
        "text (noise 0: optimistic, the agent's query is not the task text). Defer everything (none) is the "
        "tool-search default: nothing preloaded, a search on every task that needs a tool; full access needs no "
        "search where the list holds G_x. CAM-DF-lite: trained on CAM-DF's Delta labels under the recovery payoff "
        "(the exact payoff's in an unaware cell; CAM-DF's LightGBM rule is left out of A29 for make reproduce's "
        "budget); the unaware plug-in set: its estimate scores a miss as lost; the fallback-aware set "
        "(fallback_set) estimates the recovery payoff with the search's chance of completing the set "
        "(camdf.core.recovery.fallback_set). Searches per task, tools loaded: the fallback-aware set's, per task "
        "mean over the repeats. Strongest rival (claim j): the highest mean payoff among deferring everything, the "
        "always-loaded set, the plug-in set and CAM-DF-lite, each with the search, full access, and the best deployable rule of "
        "the same tasks and folds without a search (Table 2's main cell; the catalog's A28 cell at the same N), each "
        "tuned on training folds and picked on the cell's own tasks. "
        "Differences paired over tasks (95% bootstrap CI; the wording rule's share of fits "
        f"in brackets). {MDD_NOTE}. " + "".join(f"{line}. " for line in below_zero(cells)) + "Decisions: "
        + "; ".join(f"{d}: {protocol_note(cells[cells['p:domain.name'] == d].iloc[-1])}" for d in domains) + ".")
    out: list[Report | Figure] = [Report("a29", "A29: what to preload when the deferred tools can be searched",
                                         frame, note=note)]
    if np.isfinite(cells["search_cost"]).any():
        more = sorted(set(cells["search_rounds"]) - {1})
        out.append(Figure("a29_payoff_vs_search_cost.png", payoff_vs_search_png(
            cells, f"A29: {', '.join(domains)}, lambda = {', '.join(f'{v:g}' for v in sorted(set(cells['lam'])))}: "
                   "payoff against the price of a search round (dashed: defer everything, full access, the oracle"
                   + (f"; dotted: {', '.join(map(str, more))} search rounds)" if more else ")"))))
    return out


TABLE = TableSpec("a29", order=129, experiments=("a29", "a29_catalog", "table2", "a28", "a28_lambda"), build=a29)

#: The tables this module declares (found by :func:`camdf.reporting.registry.tables`).
SPECS = (TABLE,)
