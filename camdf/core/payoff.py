"""Payoffs of every prefix of every task, and of any exposed set.

U(A, x) = v(A, G_x) - lambda * C(A), with v exact (1 if some sufficient set lies
inside A) or partial (|G_x & A| / |G_x|, 1 when G_x is empty).
"""

from __future__ import annotations

import numpy as np

from camdf.core.instances import Instances

PAYOFF_KINDS = ("exact", "partial")
#: The exact payoff with a search fallback (:mod:`camdf.core.recovery`): a cell's payoff kind, not a label's.
RECOVERY = "recovery"
#: The payoff kinds a cell evaluates: the exact and partial payoffs, and the exact one with a search fallback.
CELL_KINDS = (*PAYOFF_KINDS, RECOVERY)


def has_fallback(kind: str | None) -> bool:
    """Whether the payoff ``kind`` (a cell's ``payoff``) is :data:`RECOVERY`: the exact payoff with a search
    fallback, which the cell's ``search`` config defines."""
    return kind == RECOVERY


def cumulative_costs(costs: np.ndarray) -> np.ndarray:
    """C(A_t) for t = 0..N: shape (T, N + 1), first column 0."""
    return np.concatenate([np.zeros((costs.shape[0], 1)), np.cumsum(costs, axis=1)], axis=1)


def prefix_payoffs(inst: Instances, lam: float, kind: str = "exact") -> np.ndarray:
    """U(A_t) for every task and depth.

    Parameters
    ----------
    inst : Instances
    lam : float
        Cost pressure lambda >= 0.
    kind : {"exact", "partial"}

    Returns
    -------
    ndarray, shape (T, N + 1)
        ``U[i, t] = v_t - lam * C_t``; ``-inf`` at unreachable depths ``t > n[i]``.
    """
    if kind not in PAYOFF_KINDS:
        raise ValueError(f"kind: expected one of {PAYOFF_KINDS}, got {kind!r}")
    if not np.isfinite(lam) or lam < 0:
        raise ValueError(f"lam: must be a finite number >= 0, got {lam}")
    value = inst.success.astype(float) if kind == "exact" else inst.partial
    u = value - lam * cumulative_costs(inst.costs)
    return np.where(inst.valid_depth, u, -np.inf)


def at_depth(curve: np.ndarray, depth: np.ndarray) -> np.ndarray:
    """Pick ``curve[i, depth[i]]`` for every task."""
    return np.take_along_axis(curve, depth[:, None].astype(np.int64), axis=1)[:, 0]


def best_prefix_depth(u: np.ndarray) -> np.ndarray:
    """The depth of highest payoff in hindsight (the smallest on ties), shape (T,)."""
    return np.argmax(u, axis=1)
