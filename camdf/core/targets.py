"""Stop/continue targets for every state of every task, and the walk of a stopping rule.

Delta_t = U(A_t) - max_{k>t} U(A_k) for t = 0..n-1; label stop iff Delta_t >= 0,
sample weight |Delta_t|. Computed with one reversed running maximum over all tasks.
"""

from __future__ import annotations

import numpy as np


def deltas(u: np.ndarray) -> np.ndarray:
    """Delta_t for every task and decision depth.

    Parameters
    ----------
    u : ndarray, shape (T, N + 1)
        Prefix payoffs, ``-inf`` at unreachable depths (see :func:`camdf.core.payoff.prefix_payoffs`).

    Returns
    -------
    ndarray, shape (T, N)
        ``Delta[i, t] = u[i, t] - max_{k > t} u[i, k]``; NaN where ``t >= n[i]``
        (no decision is taken there: the walk must stop at ``n``).
    """
    # suffix[:, t] = max_{k >= t} u[:, k]; the decision at t compares against suffix[:, t+1].
    suffix = np.maximum.accumulate(u[:, ::-1], axis=1)[:, ::-1]
    nxt = suffix[:, 1:]
    with np.errstate(invalid="ignore"):
        d = u[:, :-1] - nxt
    return np.where(np.isfinite(u[:, :-1]) & np.isfinite(nxt), d, np.nan)


def stop_labels(delta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Label (stop iff Delta >= 0) and weight |Delta|; shapes as ``delta``; NaN stays invalid (weight 0)."""
    valid = ~np.isnan(delta)
    label = valid & (np.nan_to_num(delta, nan=-1.0) >= 0)
    weight = np.where(valid, np.abs(np.nan_to_num(delta)), 0.0)
    return label, weight


def walk(stop: np.ndarray, n: np.ndarray) -> np.ndarray:
    """Depth reached by walking each ranking and stopping at the first ``stop``.

    Parameters
    ----------
    stop : ndarray of bool, shape (T, N)
        The rule's decision at every depth (only ``t < n[i]`` is read).
    n : ndarray of int, shape (T,)

    Returns
    -------
    ndarray of int, shape (T,)
        The first ``t`` with ``stop[i, t]``, or ``n[i]`` when the rule never stops.
    """
    N = stop.shape[1]
    s = stop & (np.arange(N)[None, :] < n[:, None])
    first = np.argmax(s, axis=1)
    return np.where(s.any(axis=1), first, n)


def path_regret(delta: np.ndarray, depth: np.ndarray, n: np.ndarray) -> np.ndarray:
    """Sum of |Delta_t| over the wrong decisions a rule took on its visited path.

    The rule continued at every ``t < depth`` (wrong where Delta_t >= 0) and stopped
    at ``depth`` (wrong where Delta_depth < 0; no decision when depth == n).
    Theorem 1: this equals best-prefix payoff minus the rule's payoff.
    """
    T, N = delta.shape
    t = np.arange(N)[None, :]
    d = np.nan_to_num(delta, nan=0.0)
    cont_wrong = (t < depth[:, None]) & (d >= 0)
    stop_wrong = (t == depth[:, None]) & (depth[:, None] < n[:, None]) & (d < 0)
    return np.where(cont_wrong | stop_wrong, np.abs(d), 0.0).sum(axis=1)
