"""Out of fold on a harness builder's tasks: the freshly fitted candidates against the base policy.

Each task is decided once by a candidate fitted without it (inner K-fold, or group K-fold when the tasks
name groups, seeded) and once by the base policy, over the same ranked list at the same costs and
lambda. Its payoff is ``success - cost / task_value`` (lambda = 1 / task value per token of schema). The
comparison is the paired difference of the mean payoffs with a seeded percentile bootstrap CI over tasks;
:func:`comparison_lines` renders it for the shell.
"""

from __future__ import annotations

import logging
from typing import Any

import numpy as np

from camdf.core.instances import Instances
from camdf.core.sets import set_payoffs, set_success
from camdf.runtime.fit_range import warning_kind

#: Bootstrap resamples of the paired difference, and its two-sided level.
N_RESAMPLES = 2000
LEVEL = 0.95


def task_payoffs(inst: Instances, masks: np.ndarray, lam: float) -> dict[str, np.ndarray]:
    """Per task, (T,): ``payoff`` = success - lam * cost, ``success``, ``tools`` and ``cost`` of each exposed mask
    (T, N) over the ranked positions of ``inst`` (exact success: G_x inside the exposed set)."""
    sets, present = inst.sufficient()
    masks = masks & inst.valid
    return {"payoff": set_payoffs(masks, inst.costs, lam, "exact", sets, present),
            "success": set_success(masks, sets, present).astype(float),
            "tools": masks.sum(axis=1).astype(float), "cost": np.where(masks, inst.costs, 0.0).sum(axis=1)}


class _Quiet(logging.Filter):
    """Drops the ``camdf`` logger's decision lines while the base decides the held-out tasks (a thousand tasks
    would log a line each); their warnings are counted by kind in the report instead."""

    def filter(self, record: logging.LogRecord) -> bool:
        return False


def base_masks(base, views: list[dict], inst: Instances, lam: float) -> tuple[np.ndarray, dict[str, int]]:
    """The base policy's exposed ranked positions on each task of ``inst``, (T, N) bool, and how many of its
    decisions warned of each kind (the warning's text up to its colon).

    Each task is one request: its ranked tools (``views[j]`` by catalog index, in ranked order), its scores,
    its costs and ``lam``, as a harness would send them."""
    requests = []
    for i in range(inst.T):
        row = inst.tool_ids[i, : inst.n[i]]
        requests.append({"tools": [views[j] for j in row], "scores": inst.scores[i, : inst.n[i]].tolist(),
                         "costs": inst.costs[i, : inst.n[i]].tolist(), "lam": lam})
    quiet, log = _Quiet(), logging.getLogger("camdf")
    log.addFilter(quiet)
    try:
        selections = base.select_batch(requests)
    finally:
        log.removeFilter(quiet)
    masks = np.zeros(inst.tools.shape, dtype=bool)
    kinds: dict[str, int] = {}
    for i, s in enumerate(selections):
        # Requests are in ranked order with non-increasing scores, so the base ranks them as the rows are.
        masks[i, list(range(s.depth)) if s.depth is not None else s.positions] = True
        for w in s.warnings:
            kinds[warning_kind(w)] = kinds.get(warning_kind(w), 0) + 1
    return masks, kinds


def paired(diff: np.ndarray, random_state: int) -> dict[str, float]:
    """Mean of the paired differences (T,) and its percentile bootstrap CI at :data:`LEVEL`, seeded."""
    rng = np.random.default_rng(random_state)
    T = len(diff)
    means = np.empty(N_RESAMPLES)
    for start in range(0, N_RESAMPLES, 200):  # in blocks: a (200, T) index matrix at a time
        idx = rng.integers(0, T, (min(200, N_RESAMPLES - start), T))
        means[start: start + len(idx)] = diff[idx].mean(axis=1)
    tail = (1 - LEVEL) / 2 * 100
    low, high = np.percentile(means, [tail, 100 - tail])
    return {"mean": float(diff.mean()), "ci_low": float(low), "ci_high": float(high),
            "higher_in": int((diff > 0).sum()), "lower_in": int((diff < 0).sum()), "tasks": T}


def summary(outcomes: dict[str, np.ndarray]) -> dict[str, float]:
    """Means over tasks of :func:`task_payoffs`'s arrays."""
    return {k: float(v.mean()) for k, v in outcomes.items()}


def comparison_lines(report: dict[str, Any]) -> list[str]:
    """The report as lines for the shell: one row per policy, the paired difference and the verdict."""
    rows = [f"out of fold on {report['tasks']} tasks ({report['folds']} inner folds, {report['cv']}), "
            f"task value {report['task_value']:g} tokens (lam {1 / report['task_value']:.3g} per token):",
            f"{'policy':<24}{'payoff':>9}{'success':>9}{'tools':>8}{'tokens':>9}"]
    for name, s in [("base " + report["base"]["method"], report["base"]["oof"]),
                    *[(m, c["oof"]) for m, c in report["candidates"].items()]]:
        rows.append(f"{name:<24}{s['payoff']:>9.3f}{s['success']:>9.3f}{s['tools']:>8.2f}{s['cost']:>9.0f}")
    d = report["difference"]
    rows.append(f"{report['best']} minus base: {d['mean']:+.3f} [{d['ci_low']:+.3f}, {d['ci_high']:+.3f}] "
                f"({LEVEL:.0%} bootstrap CI; higher in {d['higher_in']}, lower in {d['lower_in']} of {d['tasks']} tasks)")
    for kind, count in sorted(report["base"].get("warned", {}).items()):
        rows.append(f"the base warned on {count} of {report['tasks']} tasks: {kind}")
    rows.append(report["verdict"])
    return rows
