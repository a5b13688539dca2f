"""What a policy was fitted on, and the requests outside it: a warning instead of a silent empty selection.

A policy fitted in one cost unit and asked about costs in another (tokens against a catalog scaled to mean 1),
or about a 300-tool list when it saw lists of 7, may expose nothing and say nothing. :func:`fit_range` records,
when the policy is fitted, the range of what it saw: list lengths ``n``, tool costs, each list's mean cost,
each list's score span (max - min; scores are normalised within a list, but the membership model also reads
them raw) and the lambdas. :func:`range_warnings` compares one request with that record in a few comparisons
and returns a human-readable line per quantity beyond it by more than a factor (:data:`SLACK`, :data:`LAM_SLACK`),
and one when nothing is exposed. The front door
(:mod:`camdf.runtime.door`) puts them on the selection's ``warnings`` and logs them as one line through the
``camdf`` logger. Plain Python on the request's lists: the lean loader uses it without numpy's help.
"""

from __future__ import annotations

import logging
import re
from typing import Sequence

import numpy as np

#: The record's fields: each a ``[low, high]`` pair.
FIELDS = ("n", "cost", "mean_cost", "score_span", "lam")
#: A quantity is flagged when it lies beyond the fitted range by more than this factor: the range of a few hundred
#: tasks is narrow, and a list a little longer or dearer than all of them is no sign of trouble; a change of cost
#: units or of ranker scale (a factor of tens) is.
SLACK = 2.0
#: A rule is fitted at a few lambdas but lambda (the task value) is a dial of every payoff rule: only a lambda more
#: than this factor beyond the fitted ones is flagged (a change of units, not a turn of the dial).
LAM_SLACK = 10.0

log = logging.getLogger("camdf")


def fit_range(inst, lams: Sequence[float]) -> dict[str, list[float]]:
    """The range of what a policy is fitted on.

    Parameters
    ----------
    inst : Instances
        The training tasks: their ranked lists (``n``), costs and scores, shapes (T, N).
    lams : sequence of float
        The lambdas the rule was fitted at.

    Returns
    -------
    dict
        ``{field: [low, high]}`` for every field of :data:`FIELDS` (JSON-ready floats).
    """
    valid = inst.valid
    has = inst.n > 0
    n = inst.n[has]
    costs = np.where(valid, inst.costs, 0.0)[has]
    scores = inst.scores[has]
    mean_cost = costs.sum(axis=1) / n
    span = np.nanmax(np.where(valid[has], scores, np.nan), axis=1) - np.nanmin(np.where(valid[has], scores, np.nan),
                                                                              axis=1)
    pair = lambda a: [float(np.min(a)), float(np.max(a))]  # noqa: E731
    return {"n": pair(n), "cost": pair(inst.costs[valid]), "mean_cost": pair(mean_cost), "score_span": pair(span),
            "lam": pair(np.asarray(list(lams), dtype=float))}


def _outside(value: float, pair: Sequence[float], slack: float = SLACK) -> bool:
    return value < pair[0] / slack or value > pair[1] * slack


def _g(x: float) -> str:
    return f"{x:.4g}"


def range_warnings(fitted: dict | None, costs: list[float], scores: list[float], lam: float,
                   exposed: int) -> list[str]:
    """The lines saying how a request (after any top-N cut) lies beyond what the policy was fitted on.

    Parameters
    ----------
    fitted : dict or None
        :func:`fit_range`'s record (None: a policy fitted before records were kept; only the empty selection
        is flagged).
    costs, scores : list of float
        The request's tools' costs and scores, in any order.
    lam : float
        The lambda it was decided at.
    exposed : int
        How many tools the decision exposes.
    """
    out = []
    if fitted is not None:
        n = len(costs)
        if _outside(n, fitted["n"]):
            lo, hi = fitted["n"]
            out.append(f"list length {n}: the policy was fitted on lists of {lo:.0f} to {hi:.0f} tools")
        low, high = min(costs), max(costs)
        if _outside(low, fitted["cost"]) or _outside(high, fitted["cost"]):
            out.append(f"tool costs {_g(low)} to {_g(high)}: the policy was fitted on costs {_g(fitted['cost'][0])} "
                       f"to {_g(fitted['cost'][1])} (are the costs in the policy's units?)")
        mean = sum(costs) / n
        if _outside(mean, fitted["mean_cost"]):
            out.append(f"mean tool cost {_g(mean)}: the policy was fitted on lists of mean cost "
                       f"{_g(fitted['mean_cost'][0])} to {_g(fitted['mean_cost'][1])}")
        span = max(scores) - min(scores)
        if _outside(span, fitted["score_span"]):
            out.append(f"score span {_g(span)} (max - min): the policy was fitted on spans {_g(fitted['score_span'][0])} "
                       f"to {_g(fitted['score_span'][1])} (another ranker's scale?)")
        lo, hi = fitted["lam"]
        if _outside(lam, fitted["lam"], LAM_SLACK):
            out.append(f"lam {_g(lam)}: more than {LAM_SLACK:g}x beyond the lambdas the policy was fitted at "
                       f"({_g(lo)} to {_g(hi)}; lam is per unit of cost: 1 / task value for costs in tokens)")
    if exposed == 0:
        out.append("nothing exposed: the policy judged every tool not worth its cost at this lambda")
    return out


def warning_kind(text: str) -> str:
    """What a line of :func:`range_warnings` is about: its leading words (``list length``, ``tool costs``,
    ``mean tool cost``, ``score span``, ``lam``, ``nothing exposed``)."""
    return re.match(r"[a-z ]*", text).group().strip()


def report(warnings: list[str]) -> None:
    """One line through the ``camdf`` logger for a decision with warnings."""
    if warnings:
        log.warning("camdf decision: %s", "; ".join(warnings))
