"""State features at every decision depth, for all tasks at once.

The state at depth t holds the prefix A_t (top t tools) and looks at the next
tool, position t. Every feature is a (T, N) array; invalid positions (t >= n) are
ignored downstream.
"""

from __future__ import annotations

import numpy as np

from camdf.instances import Instances
from camdf.labels import deltas
from camdf.payoff import cumulative_costs

FEATURES = (
    "depth",            # t
    "rel_depth",        # t / n
    "n_candidates",     # n
    "next_score",       # raw score of the next tool
    "next_score_norm",  # next score min-max normalised within the task
    "gap_prev",         # normalised score of the last exposed tool minus the next one (0 at t = 0)
    "gap_next",         # normalised score of the next tool minus the one after it
    "next_cost",        # c of the next tool
    "lam_cost",         # lambda * c of the next tool
    "score_per_cost",   # normalised next score / its cost
    "cum_score",        # sum of normalised scores in A_t
    "cum_cost",         # C(A_t)
    "lam_cum_cost",     # lambda * C(A_t)
    "remaining_score",  # sum of normalised scores beyond A_t
    "remaining_cost",   # total cost beyond A_t
    "p_next",           # cross-fitted P(next tool in G_x)
    "p_suff",           # estimated P(G_x inside A_t)
    "p_suff_next",      # estimated P(G_x inside A_{t+1})
    "delta_hat",        # plug-in estimate of Delta_t from those probabilities
    "text_len",         # task text length (characters)
    "score_entropy",    # entropy of the softmax of the task's normalised scores
    "lam",              # lambda itself (for the lambda-conditioned policy)
)
COST_FEATURES = (
    "next_cost", "lam_cost", "score_per_cost", "cum_cost", "lam_cum_cost", "remaining_cost", "delta_hat",
)
MEMBERSHIP_FEATURES = ("p_next", "p_suff", "p_suff_next", "delta_hat")
LITE_FEATURES = (
    "rel_depth", "next_score_norm", "gap_prev", "lam_cost", "score_per_cost",
    "lam_cum_cost", "p_next", "p_suff", "delta_hat", "score_entropy",
)


def normalised_scores(inst: Instances) -> np.ndarray:
    """Scores min-max normalised within each task to [0, 1] (0.5 where all are equal); 0 in padding."""
    s = np.where(inst.valid, inst.scores, np.nan)
    lo = np.nanmin(s, axis=1, keepdims=True)
    hi = np.nanmax(s, axis=1, keepdims=True)
    span = hi - lo
    with np.errstate(invalid="ignore", divide="ignore"):
        z = np.where(span > 0, (s - lo) / np.where(span > 0, span, 1.0), 0.5)
    return np.where(inst.valid, z, 0.0)


def sufficiency_curve(p: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """P(G_x inside A_t) for t = 0..N under independent memberships: prod_{j >= t} (1 - p_j).

    Returns shape (T, N + 1); 1 at t = n.
    """
    q = np.where(valid, 1.0 - np.clip(p, 0.0, 1.0), 1.0)
    tail = np.cumprod(q[:, ::-1], axis=1)[:, ::-1]
    return np.concatenate([tail, np.ones((p.shape[0], 1))], axis=1)


def expected_partial_curve(p: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """Plug-in expected partial value sum_{j<t} p_j / sum_j p_j, shape (T, N + 1)."""
    pv = np.where(valid, p, 0.0)
    cum = np.concatenate([np.zeros((p.shape[0], 1)), np.cumsum(pv, axis=1)], axis=1)
    total = cum[:, -1:]
    return np.where(total > 0, cum / np.where(total > 0, total, 1.0), 1.0)


def plugin_payoffs(inst: Instances, p: np.ndarray, lam: float, kind: str = "exact") -> np.ndarray:
    """Estimated prefix payoffs from membership probabilities, (T, N + 1), -inf beyond n."""
    value = sufficiency_curve(p, inst.valid) if kind == "exact" else expected_partial_curve(p, inst.valid)
    u = value - lam * cumulative_costs(inst.costs)
    return np.where(inst.valid_depth, u, -np.inf)


def state_features(inst: Instances, p: np.ndarray, lam: float, kind: str = "exact") -> dict[str, np.ndarray]:
    """Every feature of :data:`FEATURES` as a (T, N) array.

    Parameters
    ----------
    inst : Instances
    p : ndarray, shape (T, N)
        Cross-fitted membership probabilities of the ranked tools.
    lam : float
    kind : {"exact", "partial"}
    """
    T, N = inst.T, inst.N
    valid = inst.valid
    n = inst.n[:, None].astype(float)
    t = np.broadcast_to(np.arange(N, dtype=float)[None, :], (T, N))
    z = normalised_scores(inst)
    z_prev = np.concatenate([z[:, :1], z[:, :-1]], axis=1)
    z_next = np.concatenate([z[:, 1:], np.zeros((T, 1))], axis=1)
    z_next = np.where(np.arange(N)[None, :] + 1 < inst.n[:, None], z_next, 0.0)
    cost = inst.costs
    cum_cost = cumulative_costs(cost)[:, :-1]
    cum_score = np.concatenate([np.zeros((T, 1)), np.cumsum(z, axis=1)], axis=1)[:, :-1]
    total_score = z.sum(axis=1, keepdims=True)
    total_cost = cost.sum(axis=1, keepdims=True)
    suff = sufficiency_curve(p, valid)
    delta_hat = deltas(plugin_payoffs(inst, p, lam, kind))
    ez = np.where(valid, np.exp(z), 0.0)
    prob = ez / ez.sum(axis=1, keepdims=True)
    entropy = -(np.where(prob > 0, prob * np.log(np.where(prob > 0, prob, 1.0)), 0.0)).sum(axis=1, keepdims=True)
    safe_cost = np.where(cost > 0, cost, 1.0)
    feats = {
        "depth": t,
        "rel_depth": t / np.maximum(n, 1.0),
        "n_candidates": np.broadcast_to(n, (T, N)),
        "next_score": np.nan_to_num(inst.scores),
        "next_score_norm": z,
        "gap_prev": np.where(t > 0, z_prev - z, 0.0),
        "gap_next": z - z_next,
        "next_cost": cost,
        "lam_cost": lam * cost,
        "score_per_cost": z / safe_cost,
        "cum_score": cum_score,
        "cum_cost": cum_cost,
        "lam_cum_cost": lam * cum_cost,
        "remaining_score": total_score - cum_score,
        "remaining_cost": total_cost - cum_cost,
        "p_next": p,
        "p_suff": suff[:, :-1],
        "p_suff_next": suff[:, 1:],
        "delta_hat": np.nan_to_num(delta_hat),
        "text_len": np.broadcast_to(inst.text_len[:, None], (T, N)),
        "score_entropy": np.broadcast_to(entropy, (T, N)),
        "lam": np.full((T, N), float(lam)),
    }
    return {k: np.where(valid, v, 0.0) for k, v in feats.items()}


def design(feats: dict[str, np.ndarray], names: tuple[str, ...] | list[str], valid: np.ndarray) -> np.ndarray:
    """Stack the chosen features of the valid states into a matrix (S, F), row-major over (task, depth)."""
    return np.stack([feats[name][valid] for name in names], axis=1)
